"""contract.toml is the one declaration the apps and the CLI share: these tests fail when either side disagrees."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

import forkcli
import skips
from hympi.apps import APPS
from hympi.contract import CONTRACT_PATH, contract
from hympi.errors import UsageError
from hympi.launch.mpirun import BIND_POLICIES, DISTRIBUTIONS, RunOutcome
from hympi.report.hierarchy import LEVEL_ORDER
from hympi.result import ResultError, ResultRecord, parse_record, parse_result
from hympi.settings import load_settings, read_config
from hympi.study_options import STUDY_APPS
from records import full_record

REPO = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("HYMPI_BIN_DIR") or REPO / "build" / "bin")
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_rmaps_base_oversubscribe": "1", "OMP_NUM_THREADS": "1", "HYMPI_MIN_TIME": "0"}
# Each app's quickest verified run (a singleton MPI process, except the ping-pong's 2 ranks).
QUICK_ARGS = {"affinity": (), "stream": ("--elements", "10000", "--repeats", "2"), "rb3d": ("--size", "8"),
              "spmv3d": ("--global", "8", "8", "8"), "bt-mz": ("--class", "S"), "sp-mz": ("--class", "S"),
              "lu-mz": ("--class", "S"), "is": ("--class", "S"), "pencil": ("--grid", "16", "16", "16", "--steps", "2"),
              "blades": ("--blades", "3", "--grid", "12", "8", "4", "--iterations", "2"),
              "pingpong": ("--iterations", "2", "--max-bytes", "8")}


def _app(name: str) -> Path:
    return skips.require_binary(BIN / APPS[name].binary)


def _clean_env(**extra: str) -> dict[str, str]:
    """os.environ without any HYMPI_* (a developer's own settings must not leak in), plus MPI_ENV and `extra`."""
    return {**{k: v for k, v in os.environ.items() if not k.startswith("HYMPI_")}, **MPI_ENV, **extra}


# --- the Python tables agree with what the C++ side was built from and does ----------------------------------------
# The Python tables are read from contract.toml, so comparing them with contract() again could not fail. They are
# compared instead with the C++ view cmake/gen_contract.py wrote at configure time (a second reader of the file, the
# one the apps compile against) and with what the built apps accept and print.
GENERATED = BIN.parent / "generated" / "hympi" / "contract.hpp"


def _generated_header() -> str:
    if not GENERATED.is_file():
        skips.skip(skips.Reason.NOT_BUILT, f"{GENERATED} is not generated (configure the build)")
    return GENERATED.read_text()


def _spelled(names: tuple[str, ...]) -> str:
    """'none, core, numa or package': how the apps list an enum's names in their refusals."""
    return ", ".join(names[:-1]) + " or " + names[-1] if len(names) > 1 else names[0]


def test_python_tables_match_the_generated_cxx_header():
    header = _generated_header()
    texts = {name: tuple(re.findall(r'"((?:[^"\\]|\\.)*)"', body))
             for name, body in re.findall(r"std::array<std::string_view, \d+> k(\w+)Texts\{([^}]*)\}", header)}
    assert texts["BindPolicy"] == BIND_POLICIES and texts["Distribution"] == DISTRIBUTIONS
    assert texts["CommLevel"] == LEVEL_ORDER
    assert texts == contract().enums  # every enum, in declaration order
    apps = re.findall(r'^    \{"([^"]+)", "([^"]+)", "', header[header.index("kApps"):], re.MULTILINE)
    assert apps == [(name, spec.binary) for name, spec in APPS.items()]
    assert {s.name for s in STUDY_APPS} <= {name for name, _ in apps}
    bins = re.search(r"kProfileSizeBins = \{([^}]*)\}", header)
    assert bins is not None and tuple(int(b) for b in bins.group(1).split(",")) == contract().profile_size_bins


def test_the_apps_accept_exactly_the_python_bindings_and_distributions():
    app = _app("affinity")
    for i, bind in enumerate(BIND_POLICIES):
        dist = DISTRIBUTIONS[i % len(DISTRIBUTIONS)]  # every binding and every distribution, in 4 runs
        proc = subprocess.run([str(app), "--bind", bind, "--dist", dist], capture_output=True, text=True, timeout=60,
                              env=_clean_env(), check=False)
        assert proc.returncode == 0, proc.stderr
        record = parse_result(proc.stdout)
        assert record is not None and (record.bind, record.dist) == (bind, dist)
    # The app's refusal lists its own names: the same as Python's, in the same order.
    for flag, names in (("--bind", BIND_POLICIES), ("--dist", DISTRIBUTIONS)):
        proc = subprocess.run([str(app), flag, "nosuch"], capture_output=True, text=True, timeout=60,
                              env=_clean_env(), check=False)
        assert proc.returncode == 2 and f"(expected {_spelled(names)})" in proc.stderr, proc.stderr


def test_pingpong_reports_levels_the_report_orders():
    """The hierarchy report orders the levels the ping-pong measures by LEVEL_ORDER: every level the app prints must
    be one of them (an unknown one would be dropped from the report)."""
    proc = subprocess.run(["mpirun", "-np", "2", "--bind-to", "none", str(_app("pingpong")), *QUICK_ARGS["pingpong"]],
                          capture_output=True, text=True, timeout=300, env=_clean_env(), check=False)
    assert proc.returncode == 0, proc.stderr
    record = parse_result(proc.stdout)
    assert record is not None
    levels = record.metrics["levels"]
    assert levels and set(levels) <= set(LEVEL_ORDER), sorted(levels)


def test_result_record_dataclass_matches_the_declared_fields():
    declared = {f.name: f for f in contract().fields}
    fields = {f.name: f for f in dataclasses.fields(ResultRecord) if f.name != "raw"}
    assert set(fields) == set(declared)
    for name, entry in declared.items():
        optional = fields[name].default is None
        assert optional == (not entry.required), name


def test_every_hympi_variable_in_the_code_is_declared():
    declared = {o.env for o in contract().options}
    # Not options: result prefix, MPI and MPI_T check macros, build settings, the profiler's and the probe's output
    # (set by hympi).
    internal = {"HYMPI_RESULT", "HYMPI_MPI", "HYMPI_CHECK", "HYMPI_DATA_DIR_DEFAULT", "HYMPI_PROFILE_OUT",
                "HYMPI_PROBE_DIR", "HYMPI_SPMV_SIMD", "HYMPI_VERSION", "HYMPI_TEST_DATA", "HYMPI_BUILD_TESTS",
                "HYMPI_WERROR",
                "HYMPI_MARCH", "HYMPI_TEST_DATA_DIR", "HYMPI_TEST_SUPPORT_DIR", "HYMPI_GENERATED_DIR",
                "HYMPI_CONTRACT_BINARIES", "HYMPI_RESULT_", "HYMPI_MPIT"}
    found: set[str] = set()
    for folder in ("python/hympi", "src", "include", "apps"):
        for path in (REPO / folder).rglob("*"):
            if path.suffix in (".py", ".cpp", ".hpp"):
                found |= set(re.findall(r"HYMPI_[A-Z0-9_]+", path.read_text(errors="replace")))
    assert sorted(found - declared - internal) == []


# --- the C++ side agrees -------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(APPS))
def test_each_app_declares_what_the_contract_says(name: str):
    proc = subprocess.run([str(_app(name)), "--contract"], capture_output=True, text=True, timeout=60,
                          env=_clean_env(), check=False)
    assert proc.returncode == 0, proc.stderr
    said = json.loads(proc.stdout)
    entry = contract().app(name)
    assert entry is not None
    assert (said["name"], said["binary"], said["description"]) == (entry.name, entry.binary, entry.description)
    assert {k: tuple(v) for k, v in said["enums"].items()} == contract().enums
    assert [(o["key"], o["env"]) for o in said["options"]] == \
        [(o.key, o.env) for o in contract().options if "app" in o.used_by]
    assert {k: v["required"] for k, v in said["result_fields"].items()} == \
        {f.name: f.required for f in contract().fields}


@pytest.mark.parametrize("name", list(APPS))
def test_each_apps_result_line_is_valid_under_the_contract(name: str):
    launch = ["mpirun", "-np", "2", "--bind-to", "none"] if name == "pingpong" else []
    proc = subprocess.run([*launch, str(_app(name)), *QUICK_ARGS[name]], capture_output=True, text=True, timeout=300,
                          env=_clean_env(), check=False)
    assert proc.returncode == 0, proc.stderr
    record = parse_result(proc.stdout)  # strict: raises ResultError naming the field
    assert record is not None and record.app == name and record.verified


def test_stream_default_size_is_the_contract_rule():
    from hympi.topology import machine_summary
    summary = machine_summary()
    last = max(c[0] for c in summary.caches)
    llc = sum(size * count for level, size, count in summary.caches if level == last)
    proc = subprocess.run([str(_app("stream")), "--repeats", "2"], capture_output=True, text=True, timeout=300,
                          env=_clean_env(), check=False)
    assert proc.returncode == 0, proc.stderr
    record = parse_result(proc.stdout)
    assert record is not None and record.problem == f"{contract().stream.elements(llc, 1)} doubles/array/rank"


# --- the typed record -------------------------------------------------------------------------------------------
def test_a_missing_required_field_is_named():
    data = full_record()
    del data["rate"]
    with pytest.raises(ResultError, match="required field 'rate'"):
        parse_record(data)


@pytest.mark.parametrize(("field", "value", "message"), [
    ("rate", "fast", "'rate' must be of type number"), ("ranks", 1.5, "'ranks' must be of type integer"),
    ("verified", 1, "'verified' must be of type boolean"), ("bind", "socket", "'bind' must be one of"),
    ("surprise", 1, "'surprise' is not declared")])
def test_a_bad_field_is_named(field: str, value: object, message: str):
    with pytest.raises(ResultError, match=message):
        parse_record(full_record(**{field: value}))


def test_a_malformed_record_is_a_recorded_failure_not_a_keyerror():
    bad = json.dumps({k: v for k, v in full_record().items() if k != "time_s"})
    outcome = RunOutcome.of("", 0, 1.0, ["app"], f"HYMPI_RESULT {bad}\n", "")
    assert outcome.status == "failed" and outcome.record is None
    assert "lacks required field 'time_s'" in outcome.stderr_tail()
    garbled = RunOutcome.of("", 0, 1.0, ["app"], "HYMPI_RESULT {not json\n", "")
    assert garbled.status == "failed" and "not valid JSON" in garbled.stderr_tail()


def test_a_valid_record_is_typed():
    record = parse_record(full_record(rate=3, bytes_moved=10))
    assert record.rate == 3.0 and isinstance(record.rate, float) and record.bytes_moved == 10.0
    assert record.timed_repetitions is None


# --- the options layer --------------------------------------------------------------------------------------------
def test_layers_default_config_env_command_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    assert load_settings(environ={}).get("bind").source == "default"
    (tmp_path / "hympi.toml").write_text('bind = "numa"\nmin_time = 0.25\n')
    s = load_settings(environ={})
    assert (s.value("bind"), s.get("bind").source) == ("numa", "config file hympi.toml")
    assert s.value("min_time") == 0.25
    s = load_settings(environ={"HYMPI_BIND": "none"})
    assert (s.value("bind"), s.get("bind").source) == ("none", "env HYMPI_BIND")
    s = s.override("bind", "package", "--bind")
    assert (s.value("bind"), s.get("bind").source) == ("package", "command line")


@pytest.mark.parametrize(("text", "message"), [
    ("bogus = 1\n", "unknown key 'bogus'"), ("[run]\nbind = \"core\"\n", "unknown key 'run.bind'"),
    ('bind = "socket"\n', "unknown binding 'socket'"), ("min_time = -1\n", "min_time must be a finite number"),
    # A section is no option, even an empty one, even one named as an option; the apps word it alike.
    ("[sec]\n", "my.toml: unknown key 'sec'"), ("[bind]\n", "unknown key 'bind'"),
    ("[a.b]\n", "unknown key 'a.b'"), ('mpit_read = ["a"]\n', "my.toml: mpit_read must be a single value"),
    ("oversubscribe = 2\n", "oversubscribe must be 0 or 1, got '2'"), ("virtual_nodes = 2.0\n", "got '2.0'"),
    ("bind = 1979-05-27\n", "bind must be a string, a number, true or false, got 1979-05-27")])
def test_a_bad_config_file_is_rejected_naming_the_key(tmp_path: Path, text: str, message: str):
    path = tmp_path / "my.toml"
    path.write_text(text)
    with pytest.raises(UsageError, match=re.escape(message)):
        load_settings(str(path), environ={})


# A config file's TOML integers, booleans and numbers, as the option's type takes them (the apps read each value's
# text, so `oversubscribe = 1` is 1 there too).
FILE_VALUES = [("oversubscribe = 1", "oversubscribe", True, "1"), ("oversubscribe = 0", "oversubscribe", False, "0"),
               ("oversubscribe = true", "oversubscribe", True, "true"), ("debug = 1", "debug", True, "1"),
               ("disturbed_above = 0.5", "disturbed_above", "0.5", "0.5"), ("min_time = 2", "min_time", 2.0, "2"),
               ('min_time = "0.5"', "min_time", 0.5, "0.5"), ("virtual_nodes = 2", "virtual_nodes", 2, "2"),
               ("node_topology = 3", "node_topology", "3", "3")]


@pytest.mark.parametrize(("text", "key", "value", "app_text"), FILE_VALUES)
def test_a_config_files_numbers_and_booleans_are_taken_where_the_type_allows(tmp_path: Path, text: str, key: str,
                                                                              value: object, app_text: str):
    path = tmp_path / "my.toml"
    path.write_text(text + "\n")
    setting = load_settings(str(path), environ={}).get(key)
    assert (setting.value, setting.source) == (value, f"config file {path}")
    assert read_config(path)[key] == app_text


def test_the_apps_read_a_config_files_values_as_the_cli_does(tmp_path: Path):
    app = _app("rb3d")
    path = tmp_path / "my.toml"
    env = {k: v for k, v in _clean_env().items() if not k.startswith("HYMPI_")}  # MPI_ENV's min_time beats a file's
    for text, key, _, app_text in FILE_VALUES:
        path.write_text(text + "\n")
        proc = subprocess.run([str(app), "--config", str(path), "--show-config"], capture_output=True, text=True,
                              timeout=60, env=env, check=False)
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)[key]["value"] == app_text, text


@pytest.mark.parametrize(("text", "env", "words"), [
    ('min_time = "abc"\n', {"HYMPI_MIN_TIME": "1"}, "my.toml: min_time: 'abc' is not a number of seconds"),
    ("min_time = -1\n", {"HYMPI_MIN_TIME": "1"}, "my.toml: min_time must be a finite number of seconds >= 0, got -1"),
    ('bind = "cores"\n', {"HYMPI_BIND": "core"},
     "my.toml: bind: unknown binding 'cores' (expected none, core, numa or package)"),
    ('ignore_load = "maybe"\n', {"HYMPI_IGNORE_LOAD": "1"}, "my.toml: ignore_load must be 0 or 1, got 'maybe'"),
    ("", {"HYMPI_DIST": "spread"}, "HYMPI_DIST: unknown distribution 'spread' (expected compact or scatter)"),
    # strtod took these two (8 s and 5 s) where the CLI refused them; hympi.numbers and hympi/core/numbers.hpp now
    # read one grammar (tests/data/numbers.json).
    ('min_time = "0x1p3"\n', {"HYMPI_MIN_TIME": "1"}, "my.toml: min_time: '0x1p3' is not a number of seconds"),
    ("", {"HYMPI_MIN_TIME": " 5"}, "HYMPI_MIN_TIME: ' 5' is not a number of seconds"),
    ("", {"HYMPI_VIRTUAL_NODES": " 2"}, "HYMPI_VIRTUAL_NODES must be a positive integer, got ' 2'")])
def test_a_bad_value_under_one_that_overrides_it_is_refused_by_the_cli_and_the_apps_alike(
        tmp_path: Path, text: str, env: dict[str, str], words: str):
    # The value below would be taken the day the one above it goes: bad input now, on either side, in one wording.
    (tmp_path / "my.toml").write_text(text)
    environ = {**{k: v for k, v in _clean_env().items() if not k.startswith("HYMPI_")}, **env}
    cli = _hympi("--config", "my.toml", "config", cwd=tmp_path, env={**environ, "PYTHONPATH": str(REPO / "python")})
    assert (cli.returncode, cli.stderr, cli.stdout) == (2, f"hympi: error: {words}\n", "")
    flag = ["--dist", "compact"] if "HYMPI_DIST" in env else []
    app = subprocess.run([str(_app("rb3d")), "--config", "my.toml", "--show-config", *flag], capture_output=True,
                         text=True, timeout=60, cwd=tmp_path, env=environ, check=False)
    assert (app.returncode, app.stderr, app.stdout) == (2, f"hympi-rb3d: error: {words}\n", "")


@pytest.mark.parametrize(("make", "problem"), [
    (lambda p: p.mkdir(), "is a directory"), (os.mkfifo, "is a FIFO"),
    (lambda p: p.symlink_to("nowhere.toml"), "is a link to a file that does not exist")])
def test_a_hympi_toml_present_but_no_file_is_refused_as_the_apps_refuse_it(tmp_path: Path, make, problem: str):
    make(tmp_path / "hympi.toml")
    line = f"config file hympi.toml (read when present) {problem}"
    proc = _hympi("config", cwd=tmp_path, env=_clean_env(PYTHONPATH=str(REPO / "python")))
    assert (proc.returncode, proc.stderr, proc.stdout) == (2, f"hympi: error: {line}\n", "")
    app = subprocess.run([str(_app("rb3d")), "--show-config"], capture_output=True, text=True, timeout=60,
                         cwd=tmp_path, env=_clean_env(), check=False)
    assert (app.returncode, app.stderr) == (2, f"hympi-rb3d: error: {line}\n")


def test_a_named_config_file_must_exist(tmp_path: Path):
    with pytest.raises(UsageError, match="does not exist"):
        load_settings(environ={"HYMPI_CONFIG": str(tmp_path / "missing.toml")})


def _hympi(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(forkcli.command(args),
                          capture_output=True, text=True, timeout=300, cwd=cwd, env=env, check=False)


def test_hympi_run_honours_the_users_bind_and_the_flag_wins(tmp_path: Path):
    """The bug of issue 14: `hympi run` exported its own default HYMPI_BIND over the user's."""
    _app("affinity")
    env = _clean_env(HYMPI_BIN_DIR=str(BIN), PYTHONPATH=str(REPO / "python"))
    bind = {}
    for label, extra, args in (("default", {}, ()), ("env", {"HYMPI_BIND": "none"}, ()),
                               ("flag", {"HYMPI_BIND": "none"}, ("--bind", "core"))):
        proc = _hympi("run", "affinity", "--json", *args, cwd=tmp_path, env={**env, **extra})
        assert proc.returncode == 0, proc.stderr
        bind[label] = json.loads(proc.stdout)["bind"]
    (tmp_path / "hympi.toml").write_text('bind = "none"\n')
    proc = _hympi("run", "affinity", "--json", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    bind["config"] = json.loads(proc.stdout)["bind"]
    assert bind == {"default": "core", "env": "none", "flag": "core", "config": "none"}


def test_hympi_config_shows_values_and_sources(tmp_path: Path):
    (tmp_path / "hympi.toml").write_text("min_time = 0.5\n")
    env = _clean_env(PYTHONPATH=str(REPO / "python"), HYMPI_DIST="scatter")
    del env["HYMPI_MIN_TIME"]
    proc = _hympi("config", "--json", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    shown = json.loads(proc.stdout)
    assert shown["min_time"] == {"value": 0.5, "source": "config file hympi.toml", "env": "HYMPI_MIN_TIME"}
    assert shown["dist"]["source"] == "env HYMPI_DIST" and shown["bind"]["source"] == "default"
    (tmp_path / "hympi.toml").write_text("bogus = 1\n")
    proc = _hympi("config", cwd=tmp_path, env=env)
    assert proc.returncode == 2
    assert proc.stderr.strip() == "hympi: error: config file hympi.toml: unknown key 'bogus'"


def test_an_app_takes_the_same_layers(tmp_path: Path):
    app = _app("rb3d")
    (tmp_path / "hympi.toml").write_text('bind = "none"\nmin_time = 0.5\n')

    def show(*args: str, **env: str) -> dict[str, dict[str, str]]:
        proc = subprocess.run([str(app), "--show-config", *args], capture_output=True, text=True, timeout=60,
                              cwd=tmp_path, env=_clean_env(**env), check=False)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)  # type: ignore[no-any-return]

    assert show()["bind"] == {"value": "none", "source": "config file hympi.toml"}
    assert show(HYMPI_BIND="numa")["bind"] == {"value": "numa", "source": "env HYMPI_BIND"}
    assert show("--bind", "core", HYMPI_BIND="numa")["bind"] == {"value": "core", "source": "command line"}
    assert show()["min_time"] == {"value": "0", "source": "env HYMPI_MIN_TIME"}  # MPI_ENV beats the file
    (tmp_path / "hympi.toml").write_text("bogus = 1\n")
    proc = subprocess.run([str(app), "--size", "8"], capture_output=True, text=True, timeout=60, cwd=tmp_path,
                          env=_clean_env(), check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip() == "hympi-rb3d: error: config file hympi.toml: unknown key 'bogus'"


def test_contract_file_is_where_python_looks():
    # The package's contract.toml is the root's (a link), the one CMake generates the C++ view from.
    assert CONTRACT_PATH.resolve() == (REPO / "contract.toml").resolve() and CONTRACT_PATH.is_file()
