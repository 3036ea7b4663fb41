"""Parameters declared once (hympi.params): the same flag is refused with the same line in every command that takes
it, a value comes from the flag, else the options layer where the user set it, else the command's default; records
round-trip through JSON by keyword; and the sbatch script's command line parses back to the sweep it came from."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

import tunedata
from conftest import hympi
from hympi.cli import build_parser
from hympi.cli.layout import LAYOUT
from hympi.errors import UsageError
from hympi.layout_options import LAUNCH
from hympi.params import MIN_TIME, Param, from_record, register, resolve, rounds, seconds_from_zero
from hympi.place.options import PLACE, PlaceParams
from hympi.program import PROGRAM, PROGRAM_KEYS, program_of
from hympi.study_options import STUDY
from hympi.sweep import SweepParams, program_fields, program_subject, sbatch_command
from hympi.sweep_options import SWEEP
from hympi.tune.options import TUNE_RUN
from hympi.tune.tuner import TuneParams

# (flag, bad value) -> what every command's one line must hold.
SHARED_REFUSALS = [
    (("--min-time", "-1"), "--min-time must be a finite number of seconds >= 0, got -1"),
    (("--min-time", "soon"), "--min-time: 'soon' is not a number of seconds"),
    (("--timeout", "nan"), "--timeout must be a finite number of seconds > 0, got nan"),
    (("--seed", "-3"), "--seed must be >= 0, got -3"),
    (("--seed", str(2**32)), "--seed must be between 0 and 4294967295"),
    (("--repeat", "0"), "--repeat must be >= 1, got 0"),
    (("--repeat", "many"), "--repeat: 'many' is not a number of runs or 'auto'"),
]


def _commands(tmp_path: Path) -> dict[str, list[str]]:
    """sweep, study and tune run, each with what it needs apart from the flag under test."""
    space = tmp_path / "space.toml"
    space.write_text(tunedata.SPACE_TOML)
    return {"sweep": ["sweep", "rb3d", "--dry-run"],
            "study": ["study", "--out", str(tmp_path / "report"), "--db", str(tmp_path / "study.db")],
            "tune run": ["tune", "run", "rb3d", "--space", str(space), "--cvars", str(tunedata.CVARS_JSON),
                         "--db", str(tmp_path / "tune.db")]}


@pytest.mark.parametrize(("flag", "words"), SHARED_REFUSALS)
def test_a_shared_flag_is_refused_alike_by_every_command(tmp_path: Path, flag: tuple[str, str], words: str) -> None:
    lines = {}
    for name, args in _commands(tmp_path).items():
        proc = hympi(*args, *flag)
        assert proc.returncode == 2, (name, proc.stderr)
        assert len(proc.stderr.strip().splitlines()) == 1, (name, proc.stderr)
        lines[name] = proc.stderr.strip()
    assert len(set(lines.values())) == 1 and words in lines["sweep"], lines
    assert not (tmp_path / "report").exists() and not (tmp_path / "study.db").exists()
    assert not (tmp_path / "tune.db").exists()


def _values(params: tuple[Param, ...], *argv: str, known: dict[str, object] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser()
    register(parser, params)
    return dict(resolve(parser.parse_args(list(argv)), params, known))


def test_a_value_comes_from_the_flag_then_the_users_setting_then_the_commands_default(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)  # no hympi.toml here
    monkeypatch.delenv("HYMPI_CONFIG", raising=False)
    monkeypatch.delenv("HYMPI_MIN_TIME", raising=False)
    assert _values(STUDY, "--quick")["min_time"] == 0.5  # the study's own default, --quick
    assert _values(STUDY)["min_time"] == 1.0
    assert _values(SWEEP)["min_time"] == 1.0  # contract.toml's default
    assert _values(SWEEP, known={"app": "pingpong"})["min_time"] == 0.0  # a probe's sweep
    monkeypatch.setenv("HYMPI_MIN_TIME", "0.25")
    assert _values(STUDY, "--quick")["min_time"] == 0.25  # the user's setting beats the command's default
    assert _values(SWEEP)["min_time"] == 0.25
    assert _values(SWEEP, "--min-time", "2")["min_time"] == 2.0  # the flag beats both
    (tmp_path / "hympi.toml").write_text("min_time = 0.75\n")
    monkeypatch.delenv("HYMPI_MIN_TIME")
    assert _values(TUNE_RUN)["min_time"] == 0.75  # hympi.toml, in every command
    assert _values(STUDY)["timeout"] == 1800.0 and _values(STUDY, "--quick")["timeout"] == 120.0
    assert _values(SWEEP)["warmup"] is True and _values(SWEEP, "--no-warmup")["warmup"] is False
    assert _values(SWEEP, known={"app": "pingpong"})["warmup"] is False


def test_a_layout_parameter_of_run_and_affinity_comes_from_hympi_toml_then_hympi_env_then_the_flag(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("HYMPI_CONFIG", "HYMPI_MEMBIND", "HYMPI_VIRTUAL_NODES", "HYMPI_OVERSUBSCRIBE"):
        monkeypatch.delenv(name, raising=False)
    assert _values(LAUNCH)["membinds"] == ("none",) and _values(LAUNCH)["virtual_nodes"] == 1  # contract.toml's
    (tmp_path / "hympi.toml").write_text('membind = "local"\nvirtual_nodes = 2\noversubscribe = true\n')
    values = _values(LAUNCH)
    assert (values["membinds"], values["virtual_nodes"], values["oversubscribe"]) == (("local",), 2, True)
    monkeypatch.setenv("HYMPI_MEMBIND", "interleave")
    monkeypatch.setenv("HYMPI_VIRTUAL_NODES", "3")
    assert (_values(LAUNCH)["membinds"], _values(LAUNCH)["virtual_nodes"]) == (("interleave",), 3)
    values = _values(LAUNCH, "--membind", "location", "--virtual-nodes", "4")
    assert (values["membinds"], values["virtual_nodes"]) == (("location",), 4)


def test_a_layout_parameter_of_hympi_layout_comes_from_hympi_toml_then_hympi_env_then_the_flag(tmp_path: Path) -> None:
    config = tmp_path / "hympi.toml"
    config.write_text('dist = "scatter"\nbind = "numa"\n')
    base = ["layout", "--ranks-per-node", "4", "--for", "openmpi4", "--topology",
            "synthetic:pack:2 numa:2 core:8 pu:2", "--json"]

    def shown(*flags: str, **env: str) -> tuple[str, str]:
        proc = hympi(*base, *flags, env={"HYMPI_CONFIG": str(config), "HYMPI_DIST": "", "HYMPI_BIND": "", **env})
        assert proc.returncode == 0, proc.stderr
        out = json.loads(proc.stdout)
        return out["dist"], out["bind"]

    assert shown() == ("scatter", "numa")
    assert shown(HYMPI_DIST="compact", HYMPI_BIND="package") == ("compact", "package")
    assert shown("--dist", "scatter", "--bind", "core", HYMPI_DIST="compact", HYMPI_BIND="package") == \
        ("scatter", "core")


# (flag, bad value): run, affinity and sweep refuse each with the same one line (the declaration's parser).
LAYOUT_REFUSALS = [("--ranks", "abc"), ("--ranks", "0"), ("--threads", "2,,4"), ("--bind", "bogus"),
                   ("--membind", "bogus"), ("--dist", "bogus"), ("--virtual-nodes", "0"), ("--launcher", "lam"),
                   ("--timeout", "nan")]


@pytest.mark.parametrize(("flag", "value"), LAYOUT_REFUSALS)
def test_a_bad_layout_value_gets_the_same_line_from_run_affinity_and_sweep(
        flag: str, value: str, fake_launcher: tuple[dict[str, str], Path]) -> None:
    env, marker = fake_launcher
    lines = {}
    for command in (["run", "rb3d"], ["affinity"], ["sweep", "rb3d", "--dry-run"]):
        proc = hympi(*command, flag, value, env=env)
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, (command, proc.stderr)
        lines[command[0]] = proc.stderr.strip()
    assert len(set(lines.values())) == 1, lines
    assert flag in lines["run"] and value in lines["run"], lines
    assert not marker.exists()


@pytest.mark.parametrize(("flag", "value"), [("--ranks", "1,2"), ("-n", "2,4"), ("--threads", "1,2"),
                                             ("--bind", "core,numa"), ("--membind", "none,local")])
def test_run_refuses_a_list_naming_hympi_sweep(flag: str, value: str, fake_launcher: tuple[dict[str, str], Path],
                                               ) -> None:
    env, marker = fake_launcher
    proc = hympi("run", "rb3d", flag, value, env=env)
    name = {"-n": "--ranks"}.get(flag, flag)
    assert proc.returncode == 2 and proc.stderr.strip() == (
        f"hympi: error: {name} {value}: hympi run launches one layout; give one value, or sweep them with hympi "
        "sweep"), proc.stderr
    assert not marker.exists()


def test_the_options_layer_value_takes_the_parameters_form(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HYMPI_BIND", "numa")
    monkeypatch.setenv("HYMPI_OVERSUBSCRIBE", "1")
    values = _values(SWEEP)
    assert values["binds"] == ("numa",) and values["oversubscribe"] is True
    assert _values(SWEEP, "--bind", "core,none")["binds"] == ("core", "none")


def test_a_declared_check_names_the_flag() -> None:
    with pytest.raises(UsageError, match=r"^--min-time must be a finite number of seconds >= 0, got inf$"):
        MIN_TIME.check_text(float("inf"))
    assert seconds_from_zero("--min-time", "0") == 0.0


def test_a_record_checks_its_fields_with_the_declarations() -> None:
    with pytest.raises(UsageError, match="--timeout must be a finite number of seconds > 0"):
        SweepParams(app="rb3d", layouts=((1, 1),), timeout=-1.0).check()
    with pytest.raises(UsageError, match="--min-time must be a finite number of seconds >= 0"):
        TuneParams(app="rb3d", app_args=(), strategy="exhaustive", max_runs=1, min_time=float("nan")).check()
    with pytest.raises(UsageError, match="unknown launcher 'lam'"):
        SweepParams(app="rb3d", layouts=((1, 1),), launcher="lam").check()


def test_records_round_trip_through_json_by_keyword() -> None:
    params = SweepParams(app="rb3d", layouts=((1, 2), (2, 1)), binds=("core", "numa"), repeat=3, auto=True,
                         max_repeat=7, confidence=0.9, min_time=0.125, seed=11, warmup=False,
                         mpi_params=(("btl_vader_single_copy_mechanism", "none"),), checkpoint_dir="/tmp/ck",
                         checkpoint_every=5, membinds=("none", "interleave"), app_args=("--size", "16"))
    stored = json.loads(json.dumps(params.as_dict()))
    assert SweepParams.from_dict(stored) == params
    tune = TuneParams(app="is", app_args=("--class", "S"), strategy="guided", max_runs=4, repeat=2, seed=5,
                      timeout=30.0, min_time=0.0, ei_stop=0.01, oversubscribe=True)
    assert TuneParams.from_dict(json.loads(json.dumps(tune.as_dict()))) == tune


def test_a_sweep_recorded_before_a_parameter_existed_keeps_what_it_ran_with() -> None:
    old = {"app": "rb3d", "layouts": [[1, 1], [2, 1]], "binds": ["core"], "dist": "compact", "repeat": 4,
           "app_args": [], "timeout": 60, "oversubscribe": False, "virtual_nodes": 1, "launcher": "mpirun"}
    params = SweepParams.from_dict(old)
    assert (params.min_time, params.seed, params.warmup, params.auto, params.max_repeat) == (0.0, 0, False, False, 4)
    assert params.timeout == 60.0 and isinstance(params.timeout, float)
    assert params.as_dict().keys() == {*old, "min_time", "seed", "warmup", "auto", "max_repeat", "confidence"}


def test_the_sbatch_command_parses_back_to_the_same_sweep(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    params = from_record(SweepParams, {
        "app": "rb3d", "layouts": ((1, 1), (1, 2), (2, 1), (2, 2)), "binds": ("core", "none"), "dist": "scatter",
        "repeat": 3, "auto": True, "max_repeat": 6, "confidence": 0.9, "min_time": 0.3, "seed": 42,
        "warmup": False, "timeout": 77.5, "oversubscribe": True, "virtual_nodes": 2, "launcher": "slurm",
        "checkpoint_dir": str(tmp_path / "ck"), "checkpoint_every": 10, "membinds": ("none", "interleave"),
        "app_args": ("--size", "24")})
    cmd = sbatch_command(params, tmp_path / "r.db")
    argv = cmd[cmd.index("sweep") + 2:cmd.index("--")]
    parser = argparse.ArgumentParser()
    register(parser, SWEEP)
    parser.add_argument("--db")
    parser.add_argument("--resume", action="store_true")
    values = resolve(parser.parse_args(argv), SWEEP, {"app": "rb3d"})
    assert values["repeat"] == "auto" and values["max_repeat"] == 6
    back = from_record(SweepParams, {**values, "app": "rb3d", "app_args": tuple(cmd[cmd.index("--") + 1:]),
                                     "layouts": tuple((r, t) for r in values["ranks"] for t in values["threads"]),
                                     "repeat": 3, "auto": True})
    assert back == params


def test_the_sbatch_command_of_a_program_names_it_by_its_path_with_its_declarations(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Inside the allocation the sweep must find the same program and judge it alike: named by its path (its bare
    name would be looked up as one of hympi's apps) with its metric, unit, verification and output file."""
    monkeypatch.chdir(tmp_path)
    solver = tmp_path / "solver"
    solver.write_text("#!/bin/sh\necho r=1\n")
    solver.chmod(0o755)
    program = program_of(str(solver), {"metric": "r=([0-9]+)", "metric_unit": "steps/s", "verify": "r=",
                                       "output_file": "out.txt"})
    params = from_record(SweepParams, {**program_fields(program), "layouts": ((1, 1), (2, 1)), "repeat": 2,
                                       "launcher": "slurm"})
    cmd = sbatch_command(params, tmp_path / "r.db")
    assert cmd[cmd.index("sweep") + 1] == str(solver)
    parser = argparse.ArgumentParser()
    register(parser, SWEEP)
    register(parser, PROGRAM)
    parser.add_argument("--db")
    parser.add_argument("--resume", action="store_true")
    args = parser.parse_args(cmd[cmd.index("sweep") + 2:])
    assert program_subject(str(solver), resolve(args, PROGRAM)) == program_fields(program)


def test_a_repeated_parameter_is_required_parsed_per_use_and_spelled_back() -> None:
    """hympi place's declarations: --matrix is required, --topology given per node keeps every value in order
    (each checked), --hosts is checked as a whole, and spell() gives a command line that parses back."""
    parser = argparse.ArgumentParser(exit_on_error=False)
    register(parser, PLACE)
    with pytest.raises(SystemExit):
        parser.parse_args(["--topology", "this"])  # no --matrix: argparse's usage error
    args = parser.parse_args(["--matrix", "m.txt", "--topology", "a.xml", "--topology", "synthetic:pack:2 pu:2",
                              "--hosts", "n1,n2", "--groups", "3:1"])
    params = from_record(PlaceParams, resolve(args, PLACE))
    assert params == PlaceParams(matrix="m.txt", topology=("a.xml", "synthetic:pack:2 pu:2"), hosts=("n1", "n2"),
                                 groups="3:1")
    spelled = [word for p in PLACE for word in p.spell(getattr(params, p.name))]
    assert from_record(PlaceParams, resolve(parser.parse_args(spelled), PLACE)) == params
    for bad, words in ((["--hosts", "n1,,n2"], "--hosts 'n1,,n2' has an empty host name"),
                       (["--hosts", "a b"], "--hosts: host name 'a b' is not a rankfile host name"),
                       (["--groups", "3:0"], "--groups '3:0' leaves the fine group empty"),
                       (["--topology", "this", "--topology", "x" * 5000], "--topology")):
        with pytest.raises(UsageError, match=words):
            resolve(parser.parse_args(["--matrix", "m.txt", *bad]), PLACE)


def _help(params: tuple[Param, ...], name: str) -> str:
    return next(p.help for p in params if p.name == name)


def test_the_help_says_the_defaults_the_commands_use() -> None:
    # --repeat auto starts with 4 rounds (the fewest a separation takes); sweep's and tune run's help said 3.
    first = rounds({"repeat": "auto"}).repeat
    assert first == 4
    for params in (SWEEP, TUNE_RUN):
        assert f"auto: {first}, then more rounds" in _help(params, "repeat")
    assert f"auto (the default): {first} rounds" in _help(STUDY, "repeat")
    # The study's --max-repeat follows --quick; its help said contract's 10 for both.
    quick, full = (_values(STUDY, "--quick")["max_repeat"], _values(STUDY)["max_repeat"])
    assert (quick, full) == (5, 10) and f"(default {quick} quick, {full} full)" in _help(STUDY, "max_repeat")
    # Without --stdin, `hympi run` passes hympi's own standard input on (hympi.cli.common.run_program_probed); the
    # help said hympi never does.
    stdin = _help(PROGRAM, "stdin")
    assert "never" not in stdin and "run and affinity pass hympi's own standard input on" in stdin
    assert "each run of a sweep, study or tune reads /dev/null" in stdin


def test_run_affinity_and_layout_ask_for_one_value_where_sweep_takes_a_list() -> None:
    # `hympi run` launches one layout, `hympi layout` spells one (one_value refuses a list); their usage showed
    # sweep's 'R,...'.
    metavars = {p.name: p.metavar for p in LAUNCH}
    assert {name: metavars[name] for name in ("ranks", "threads", "binds", "membinds")} == \
        {"ranks": "R", "threads": "T", "binds": "BIND", "membinds": "POLICY"}
    assert {p.name: p.metavar for p in LAYOUT if p.name in ("threads", "binds")} == {"threads": "T", "binds": "BIND"}
    assert {p.name: p.metavar for p in SWEEP if p.name in ("ranks", "binds")} == {"ranks": "R,...", "binds": "BIND,..."}


def test_the_study_help_names_every_key_of_a_programs_file(capsys: pytest.CaptureFixture[str]) -> None:
    # It listed seven of the ten keys (not output_file, stdin, env).
    with pytest.raises(SystemExit):
        build_parser("study").parse_args(["study", "--help"])
    assert f"entries: {', '.join(PROGRAM_KEYS)})" in " ".join(capsys.readouterr().out.split())
    assert {"output_file", "stdin", "env"} <= set(PROGRAM_KEYS)
