"""Issue 30 B.12-B.14, each class on its own: bad input is exit 2 and one line naming the bad value and where it
came from (B.12), in words that say what is wrong (B.13), and nothing typed is silently ignored (B.14); nothing is
launched or written. B.15 (sweep checkpoints) is in test_sweep_checkpoint.py."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

import skips
from conftest import REPO, assert_refused, hympi
from fakeapps import fake_bin_dir, launches
from tunedata import CVARS_JSON, SPACE_TOML

BIN = Path(os.environ.get("HYMPI_BIN_DIR") or REPO / "build" / "bin")


def one_line_exit_2(proc: subprocess.CompletedProcess, *needles: str) -> str:
    """The one stderr line of a process that exited 2; each needle must be in it."""
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def tree(path: Path) -> list[str]:
    """Every path under `path`, to prove that nothing was written there."""
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


def app(name: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`hympi-NAME --validate-ranks 1 ARGS`: the app's own check, no MPI."""
    path = skips.require_binary(BIN / f"hympi-{name}")
    return subprocess.run([str(path), "--validate-ranks", "1", *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "OMP_NUM_THREADS": "1", **(env or {})}, check=False)


def bad_data(tmp_path: Path) -> dict[str, Path]:
    """NPB data files that cannot be used: missing, a directory, not JSON, JSON without the classes."""
    (tmp_path / "dir").mkdir()
    (tmp_path / "text.json").write_text("not json at all\n")
    (tmp_path / "empty.json").write_text("{}\n")
    (tmp_path / "no-keys.json").write_text('{"bt": {"S": {}}, "is": {"S": {}}, "_meta": {}}\n')
    return {"missing": tmp_path / "missing.json", "directory": tmp_path / "dir", "not JSON": tmp_path / "text.json",
            "no sections": tmp_path / "empty.json", "no keys": tmp_path / "no-keys.json"}


# --- B.12: exit 2, not 1, for bad input, naming the file ---------------------------------------------------------

@pytest.mark.parametrize("kind", ["missing", "directory", "not JSON", "no sections", "no keys"])
@pytest.mark.parametrize("name", ["bt-mz", "is"])
def test_a_bad_npb_data_file_is_exit_2_naming_it(name: str, kind: str, fake_launcher, tmp_path: Path):
    env, marker = fake_launcher
    data = bad_data(tmp_path)[kind]
    proc = hympi("run", name, "--ranks", "1", "--", "--class", "S", "--data", str(data), env=env)
    line = one_line_exit_2(proc, str(data))
    assert "validate-ranks" not in line
    assert not marker.exists(), "launched with a bad data file"


@pytest.mark.parametrize("kind", ["missing", "malformed"])
def test_a_bad_hympi_data_dir_is_exit_2_naming_the_file(kind: str, fake_launcher, tmp_path: Path):
    env, marker = fake_launcher
    root = tmp_path / "data"
    if kind == "malformed":
        (root / "npb-mz").mkdir(parents=True)
        (root / "npb-mz" / "verification.json").write_text('{"bt": [1, 2]}\n')
    proc = hympi("run", "bt-mz", "--ranks", "1", "--", "--class", "S", env={**env, "HYMPI_DATA_DIR": str(root)})
    one_line_exit_2(proc, str(root / "npb-mz" / "verification.json"))
    assert not marker.exists()


@pytest.mark.parametrize("name", ["bt-mz", "is"])
def test_an_unknown_class_is_named_first_then_the_file_that_lacks_it(name: str):
    line = one_line_exit_2(app(name, "--class", "Q"), "known:", "verification.json")
    assert line.startswith(f"hympi-{name}: error: unknown class 'Q'"), line


@pytest.mark.parametrize("content", ["{not json", '{"format": "hympi-mpit"}', "[]"])
def test_malformed_cvars_content_is_exit_2_naming_the_file(content: str, fake_launcher, tmp_path: Path):
    env, marker = fake_launcher
    cvars = tmp_path / "cvars.json"
    cvars.write_text(content)
    one_line_exit_2(hympi("tune", "params", "--cvars", str(cvars)), str(cvars))
    one_line_exit_2(hympi("run", "rb3d", "--mpi-param", "btl_vader_eager_limit=4096", "--cvars", str(cvars),
                          env=env), str(cvars))
    assert not marker.exists()


@pytest.mark.parametrize("kind", ["missing", "directory"])
def test_a_bad_hympi_profile_lib_is_exit_2_naming_it(kind: str, tmp_path: Path):
    lib = tmp_path / ("missing.so" if kind == "missing" else "libdir")
    if kind == "directory":
        lib.mkdir()
    marker, out = tmp_path / "ran", tmp_path / "p.json"
    proc = hympi("profile", "--out", str(out), "--", "touch", str(marker), env={"HYMPI_PROFILE_LIB": str(lib)})
    one_line_exit_2(proc, "HYMPI_PROFILE_LIB", str(lib))
    assert not marker.exists() and not out.exists()


@pytest.mark.parametrize(("variable", "value", "words"), [
    # Path.is_file raises for a name the system cannot look up: an "internal error (bug)" line before.
    ("HYMPI_BIN_DIR", "d" * 300, "cannot be examined (File name too long)"),
    ("HYMPI_PREFIX", "d" * 300, "cannot be examined (File name too long)"),
    # The launcher was started as given and its absence surfaced as FileNotFoundError, another "bug" line.
    ("HYMPI_MPIRUN", "no-such-mpirun", "MPI launcher 'no-such-mpirun' is not an executable on PATH"),
    ("HYMPI_MPIRUN", "/no/such/mpirun", "MPI launcher '/no/such/mpirun' is not an executable file"),
])
def test_a_variable_naming_a_place_that_cannot_be_used_is_exit_2_naming_it(variable: str, value: str, words: str):
    one_line_exit_2(hympi("run", "stream", env={variable: value}), variable, words)


@pytest.mark.parametrize(("db", "words"), [
    # SQLite opened both: /dev/full failed in a rollback, /proc/version when it wrote the schema ("internal error").
    ("/dev/full", "database path /dev/full is a device"),
    ("/proc/version", "cannot create a database at /proc/version: unable to open database file"),
    ("FIFO", "is a FIFO"),  # "disk I/O error" before
])
def test_a_database_path_that_can_hold_no_database_is_exit_2_saying_why(db: str, words: str, fake_launcher,
                                                                         tmp_path: Path):
    if db == "FIFO":
        db = str(tmp_path / "results.fifo")
        os.mkfifo(db)
    env, marker = fake_launcher
    one_line_exit_2(hympi("sweep", "rb3d", "--repeat", "1", "--ignore-load", "--db", db, env=env), words)
    assert not marker.exists()


# --- B.13: messages that say what is wrong -----------------------------------------------------------------------

def _special(tmp_path: Path, kind: str) -> Path:
    """A config path that exists but is no file: a directory, a FIFO, a device."""
    if kind == "directory":
        return tmp_path
    if kind == "FIFO":
        fifo = tmp_path / "config.fifo"
        os.mkfifo(fifo)
        return fifo
    return Path("/dev/null")


WORDS = {"directory": "is a directory", "FIFO": "is a FIFO", "device": "is a device"}


@pytest.mark.parametrize("kind", ["directory", "FIFO", "device"])
def test_a_config_path_that_is_not_a_file_is_called_what_it_is(kind: str, tmp_path: Path):
    path = _special(tmp_path, kind)
    # hympi names the flag or the variable that gave the path; the apps word it alike.
    flag = one_line_exit_2(hympi("--config", str(path), "config"), f"config file {path} (--config) {WORDS[kind]}")
    env = one_line_exit_2(hympi("config", env={"HYMPI_CONFIG": str(path)}), f"(HYMPI_CONFIG) {WORDS[kind]}")
    direct = one_line_exit_2(app("rb3d", "--config", str(path)), f"(--config) {WORDS[kind]}")
    for line in (flag, env, direct):
        assert "does not exist" not in line


def test_a_missing_config_given_with_the_flag_is_named_by_the_flag(tmp_path: Path):
    missing = tmp_path / "missing.toml"
    line = one_line_exit_2(hympi("--config", str(missing), "config"), f"{missing} (--config) does not exist")
    assert "HYMPI_CONFIG" not in line
    one_line_exit_2(hympi("config", env={"HYMPI_CONFIG": str(missing)}), f"{missing} (HYMPI_CONFIG) does not exist")


@pytest.mark.parametrize(("value", "words"), [("soon", "'soon' is not a fraction"),
                                              ("inf", "--ei-stop must be a finite fraction >= 0, got inf"),
                                              ("-0.1", "--ei-stop must be a finite fraction >= 0, got -0.1")])
def test_ei_stop_is_described_as_a_fraction(value: str, words: str, tmp_path: Path):
    env = fake_bin_dir(tmp_path)
    space = tmp_path / "space.toml"
    space.write_text(SPACE_TOML)
    proc = hympi("tune", "run", "rb3d", "--space", str(space), "--cvars", str(CVARS_JSON), "--strategy", "guided",
                 "--ei-stop", value, "--db", str(tmp_path / "t.db"), env=env)
    line = one_line_exit_2(proc, words)
    assert "seconds" not in line
    assert not launches(env) and not (tmp_path / "t.db").exists()


def test_tune_predict_names_an_unknown_app_and_a_missing_space_first(tmp_path: Path):
    """Before the store is looked at: an empty or missing database would otherwise be all the user hears of."""
    env = fake_bin_dir(tmp_path)
    space = tmp_path / "space.toml"
    space.write_text(SPACE_TOML)
    db = tmp_path / "none.db"
    one_line_exit_2(hympi("tune", "predict", "nosuch", "--space", str(space), "--db", str(db), env=env),
                    "unknown app 'nosuch'")
    missing = tmp_path / "missing.toml"
    one_line_exit_2(hympi("tune", "predict", "rb3d", "--space", str(missing), "--db", str(db), env=env),
                    f"search space {missing}")
    assert not db.exists() and not launches(env)


def test_an_app_failing_its_check_is_not_described_by_an_option_the_user_never_typed(tmp_path: Path):
    """The app's argument check (`--validate-ranks`, hympi's own call) ends with exit 1: the line says what hympi
    was doing and the app's last line, not the internal option."""
    env = fake_bin_dir(tmp_path)
    broken = Path(env["HYMPI_BIN_DIR"]) / "hympi-rb3d"
    broken.unlink()
    broken.write_text("#!/bin/sh\necho 'hympi-rb3d: error: cannot read /proc/self/maps' >&2\nexit 1\n")
    broken.chmod(0o755)
    proc = hympi("run", "rb3d", "--ranks", "1", env=env)
    assert proc.returncode == 1, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert "validate-ranks" not in line
    assert "checking its arguments" in line and "cannot read /proc/self/maps" in line
    assert not launches(env)


# --- B.14: nothing typed is silently ignored ---------------------------------------------------------------------

@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--checkpoint", "{d}/c.h5", "--checkpoint-every", "0"], "--checkpoint-every: must be a number of steps >= 1"),
        (["--checkpoint-every", "0"], "--checkpoint-every: must be a number of steps >= 1"),
        (["--checkpoint", "{d}/c.h5"], "--checkpoint {d}/c.h5 writes nothing without --checkpoint-every"),
        (["--snapshot", "{d}/s", "--snapshot-every", "0"], "--snapshot-every: must be a number of steps >= 1"),
        (["--snapshot", "{d}/s"], "--snapshot {d}/s writes nothing without --snapshot-every"),
    ],
)
@pytest.mark.parametrize("name", ["rb3d", "bt-mz"])
def test_a_checkpoint_or_snapshot_that_would_write_nothing_is_refused(name: str, args: list[str], words: str,
                                                                      fake_launcher, tmp_path: Path):
    env, marker = fake_launcher
    out = tmp_path / "out"
    out.mkdir()
    args = [a.format(d=out) for a in args]
    proc = hympi("run", name, "--ranks", "1", "--", *args, env=env)
    one_line_exit_2(proc, words.format(d=out))
    assert not marker.exists() and tree(out) == []


@pytest.mark.parametrize("value", ["0", "-3"])
def test_bt_mz_iterations_below_one_is_refused_not_ignored(value: str, fake_launcher):
    env, marker = fake_launcher
    proc = hympi("run", "bt-mz", "--ranks", "1", "--", "--class", "S", f"--iterations={value}", env=env)
    one_line_exit_2(proc, f"--iterations must be >= 1, got {value}", "iterations of class S")
    assert not marker.exists()


@pytest.mark.parametrize("value", ["1e400", "inf", "nan", "-1"])
def test_rb3d_tolerance_must_be_finite(value: str, fake_launcher):
    env, marker = fake_launcher
    proc = hympi("run", "rb3d", "--ranks", "1", "--", f"--tolerance={value}", env=env)
    one_line_exit_2(proc, "--tolerance must be a finite number >= 0")
    assert not marker.exists()


def test_a_finite_tolerance_is_still_taken():
    assert app("rb3d", "--tolerance", "1e-6").returncode == 0


@pytest.mark.parametrize("flags", [("--sbatch", "{d}/job.sbatch"), ("--sbatch", "{d}/job.sbatch", "--launcher",
                                                                     "mpirun")])
def test_sbatch_without_the_slurm_launcher_is_refused(flags: tuple[str, ...], tmp_path: Path):
    env = fake_bin_dir(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    db = tmp_path / "r.db"
    proc = hympi("sweep", "rb3d", "--ranks", "1", "--no-warmup", "--db", str(db),
                 *[f.format(d=out) for f in flags], env=env)
    one_line_exit_2(proc, "--sbatch", "--launcher slurm", "the launcher is mpirun")
    assert tree(out) == [] and not db.exists() and not launches(env)


# --- a value of '--', a file that only another option reads, the space before the library --------------------------
@pytest.mark.parametrize("args", [["sweep", "rb3d", "--db=--"], ["study", "--out=--"], ["study", "--programs=--"],
                                  ["run", "rb3d", "--mpi-param=--"], ["report", "--cvars=--"]])
def test_an_option_given_dash_dash_as_its_value_is_refused(args: list[str], fake_launcher):
    # Python 3.11's argparse handed these commands an empty list (a TypeError or AttributeError traceback before).
    flag = args[-1].partition("=")[0]
    assert_refused(args, f"{flag}: '--' is not a value", fake_launcher)


@pytest.mark.parametrize("command", [["run", "rb3d"], ["sweep", "rb3d"]])
def test_a_cvars_listing_without_mpi_parameters_is_refused_not_ignored(command: list[str], fake_launcher):
    assert_refused([*command, "--cvars", str(CVARS_JSON)], "applies only with --mpi-param", fake_launcher)


def test_tune_run_refuses_a_missing_space_before_asking_the_library(fake_launcher, tmp_path: Path):
    # The control variable listing is read by launching hympi-mpit: a missing space file must stop the tune first.
    assert_refused(["tune", "run", "rb3d", "--space", str(tmp_path / "missing.toml"), "--db", str(tmp_path / "r.db")],
                   "missing.toml", fake_launcher)


@pytest.mark.parametrize("args", [["run", "rb3d", "--rankfile", ""], ["sweep", "rb3d", "--db", ""],
                                  ["study", "--out", ""], ["profile", "--out", "", "--", "true"],
                                  ["--config", "", "config"]])
def test_an_empty_path_is_refused_not_read_as_the_option_absent(args: list[str], fake_launcher):
    # `--rankfile ''` launched without a rankfile before: the empty value read as no value; `--config ''` fell back
    # to ./hympi.toml.
    assert_refused(args, "an empty path names no file", fake_launcher)


@pytest.mark.parametrize("args", [["info", "--topology", ""], ["info", "--all-nodes", "--node-topology", " "]])
def test_an_empty_topology_is_refused_not_read_as_this_machine(args: list[str], fake_launcher):
    assert_refused(args, "an empty value (give one, or leave the option out for its default)", fake_launcher)


# --- the apps: integers beyond their type, grids whose point count overflows -------------------------------------
@pytest.mark.parametrize(("name", "args", "words"), [
    # CLI11 turned these into the type's largest value: the refusal named a number nobody typed.
    ("rb3d", ["--size", "99999999999999999999"], "--size: '99999999999999999999' is out of range"),
    ("spmv3d", ["--global", "8", "8", "-99999999999999999999"], "'-99999999999999999999' is out of range"),
    ("rb3d", ["--dims", "1", "1", "4294967297"], "'4294967297' is out of range (-2147483648 to 2147483647)"),
    # n^3 overflowed a long from n = 2^21 on, before the memory check could refuse the size.
    ("rb3d", ["--size", "2147483648"], "needs an estimated 1.48e+20 GiB"),
])
def test_an_app_refuses_an_integer_it_cannot_hold_naming_it(name: str, args: list[str], words: str):
    one_line_exit_2(app(name, *args), words)


@pytest.mark.parametrize(("name", "args"), [("rb3d", ["--restart", ""]), ("rb3d", ["--checkpoint", " "]),
                                            ("rb3d", ["--snapshot", ""]), ("bt-mz", ["--data", ""]),
                                            ("pencil", ["--groups", ""]), ("is", ["--data", ""]),
                                            ("rb3d", ["--size", ""]), ("rb3d", ["--omega", " "])])
def test_an_app_refuses_an_empty_value_not_read_as_the_option_absent(name: str, args: list[str]):
    # `--restart ''` ran from the start, `--checkpoint ''` wrote none, `--data ''` read the default file, `--size ''`
    # was refused as a size of 0, which nobody typed.
    one_line_exit_2(app(name, *args), f"{args[0]}: an empty value (give one, or leave the option out for its default)")


@pytest.mark.parametrize(("args", "name"), [
    (["export", "--db", "a.db", "--db", "b.db"], "--db"),
    (["layout", "--nodes", "1", "--nodes", "2"], "--nodes"),
    (["run", "rb3d", "-n", "2", "-np", "1"], "--ranks"),  # aliases of one option
    (["--config", "a.toml", "--config", "b.toml", "config"], "--config"),
    (["report", "--out", "r1", "--out", "r2"], "--out"),
])
def test_an_option_given_twice_is_refused_not_the_last_one_taken(args: list[str], name: str, fake_launcher):
    # argparse kept the last value silently: `export --db a.db --db b.db` read b.db.
    assert_refused(args, f"{name} is given twice (give it once)", fake_launcher)


def test_an_output_directory_in_a_missing_directory_is_refused_not_made(tmp_path: Path, fake_launcher):
    # `study --out missing/sub/rep` made the whole tree; every --out FILE refuses a missing directory.
    out = tmp_path / "missing" / "sub" / "rep"
    assert_refused(["study", "--apps", "rb3d", "--db", str(tmp_path / "r.db"), "--out", str(out)],
                   f"output directory {out}: directory {out.parent} does not exist", fake_launcher)
    assert not (tmp_path / "missing").exists() and not (tmp_path / "r.db").exists()
