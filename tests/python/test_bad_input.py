"""Every user error of issue 13 part 5 (outside `hympi sweep`): one line naming the value, exit 2, nothing
launched or written; and the CLI's consistency (part 8): usage lines, -np, the flags README documents."""

from __future__ import annotations

import os
import re
import sqlite3
import sys
from pathlib import Path

import pytest

from conftest import REPO, hympi
from fakeapps import FAKE_APP, FAKE_MPIRUN
from hympi.cli import build_parser
from hympi.errors import UsageError
from hympi.launch.mpirun import LaunchSpec, build_command
from hympi.layout_options import LAUNCH
from hympi.params import resolve, seconds_above_zero
from hympi.place.rankfile import _ALLOCATION_VARS
from hympi.sweep_options import SWEEP
from refusals import assert_refused, files

# No resource manager or hostfile: only this machine's names are valid rankfile hosts.
NO_ALLOCATION = dict.fromkeys(_ALLOCATION_VARS, "")


def timeout_refusal(value: str) -> str:
    """The one line every command's --timeout gives for `value` (the declaration's parser, as in hympi sweep)."""
    with pytest.raises(UsageError) as refused:
        seconds_above_zero("--timeout", value)
    return str(refused.value)


def fake_app_env(tmp: Path) -> dict[str, str]:
    """A bin dir whose hympi-rb3d is the fake app, launched by the mpirun look-alike (hympi-info is the real one)."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    for path, text in ((bin_dir / "hympi-rb3d", FAKE_APP), (tmp / "mpirun", FAKE_MPIRUN)):
        path.write_text(text.replace("PYTHON", sys.executable, 1))
        path.chmod(0o755)
    real = Path(os.environ.get("HYMPI_BIN_DIR") or REPO / "build" / "bin")
    (bin_dir / "hympi-info").symlink_to(real / "hympi-info")
    return {"HYMPI_BIN_DIR": str(bin_dir), "HYMPI_MPIRUN": str(tmp / "mpirun"), "HYMPI_MPI_FLAVOR": "openmpi",
            "FAKE_LOG": str(tmp / "launches.log")}


@pytest.mark.parametrize("command", ["run", "affinity"])
@pytest.mark.parametrize("value", ["nan", "inf", "=-inf", "0", "-1", "soon"])
def test_bad_timeout(command, value, fake_launcher, tmp_path):
    env, marker = fake_launcher
    args = [command, "rb3d"] if command == "run" else [command]
    before = files(tmp_path)
    # argparse reads `--timeout -inf` as a missing value; `--timeout=-inf` reaches the check.
    timeout = ["--timeout" + value] if value.startswith("=") else ["--timeout", value]
    value = value.removeprefix("=")
    proc = hympi(*args, *timeout, env=env)
    assert_refused(proc, timeout_refusal(value))
    assert not marker.exists(), "a launcher was started for bad input"
    assert files(tmp_path) == before


@pytest.mark.parametrize("value", ["nan", "inf", "0"])
def test_profile_bad_timeout(value, tmp_path):
    marker = tmp_path / "ran"
    proc = hympi("profile", "--out", str(tmp_path / "p.json"), "--timeout", value, "--", "touch", str(marker))
    assert_refused(proc, timeout_refusal(value))
    assert files(tmp_path) == []


@pytest.mark.parametrize("command", ["run", "affinity"])
def test_more_virtual_nodes_than_ranks(command, fake_launcher):
    env, marker = fake_launcher
    args = [command, "rb3d"] if command == "run" else [command]
    proc = hympi(*args, "--virtual-nodes", "5", "--ranks", "2", env=env)
    assert_refused(proc, "--virtual-nodes 5")
    assert "--ranks 2" in proc.stderr
    assert not marker.exists()


@pytest.mark.parametrize(
    ("lines", "needle"),
    [
        (["rank 0={host} slot=0:0", "rank 1={host} slot=0:999"], "slot=0:999"),
        (["rank 0={host} slot=99:0", "rank 1={host} slot=0:0"], "slot=99:0"),
        (["rank 0={host} slot=0:0", "rank 1=no-such-node slot=0:0"], "no-such-node"),
        (["rank 0={host} slot=0:0", "rank 0={host} slot=0:0"], "0..1"),
        (["rank 0={host} slot=0-1", "rank 1={host} slot=0:0"], "slot=0-1"),
    ],
)
@pytest.mark.parametrize("command", ["run", "affinity"])
def test_bad_rankfile_is_refused_before_mpirun(command, lines, needle, fake_launcher, tmp_path):
    env, marker = fake_launcher
    rankfile = tmp_path / "rf"
    rankfile.write_text("\n".join(line.format(host=os.uname().nodename) for line in lines) + "\n")
    args = [command, "rb3d"] if command == "run" else [command]
    proc = hympi(*args, "--ranks", "2", "--rankfile", str(rankfile), env={**env, **NO_ALLOCATION})
    assert_refused(proc, needle)
    assert not marker.exists(), "mpirun was started with a bad rankfile"


def test_rankfile_on_localhost_is_accepted(fake_launcher, tmp_path):
    """The checks refuse only what mpirun would: this host's names and existing slots pass (and launch)."""
    env, marker = fake_launcher
    rankfile = tmp_path / "rf"
    rankfile.write_text("rank 0=localhost slot=0:0\n")
    proc = hympi("run", "rb3d", "--rankfile", str(rankfile), env={**env, **NO_ALLOCATION})
    assert marker.exists(), proc.stderr


def test_profile_missing_command_launches_nothing(tmp_path):
    proc = hympi("profile", "--out", str(tmp_path / "p.json"), "--", "/nonexistent")
    assert_refused(proc, "/nonexistent")
    assert files(tmp_path) == []


# "unwritable": /proc takes no new file, even from root, for whom os.access says it does (the profile then ran and
# ended in "internal error (bug): FileNotFoundError").
@pytest.mark.parametrize("where", ["missing-dir", "directory", "unwritable"])
def test_profile_bad_out_is_refused_before_the_program_runs(where, tmp_path):
    marker = tmp_path / "ran"
    (tmp_path / "existing").mkdir()
    out = {"missing-dir": tmp_path / "missing" / "p.json", "directory": tmp_path / "existing",
           "unwritable": Path("/proc/p.json")}[where]
    proc = hympi("profile", "--out", str(out), "--", "touch", str(marker))
    assert_refused(proc, str(out))
    assert not marker.exists(), "the program ran although --out was bad"
    assert files(tmp_path) == ["existing"]


@pytest.mark.parametrize("where", ["missing-dir", "directory", "hydra-directory"])
def test_place_bad_out_writes_nothing(where, tmp_path):
    matrix = tmp_path / "m.txt"
    matrix.write_text("0 5\n5 0\n")
    (tmp_path / "existing").mkdir()
    (tmp_path / "rf.hydra").mkdir()
    out = {"missing-dir": tmp_path / "missing" / "rf", "directory": tmp_path / "existing",
           "hydra-directory": tmp_path / "rf"}[where]
    before = files(tmp_path)
    proc = hympi("place", "--matrix", str(matrix), "--out", str(out))
    assert_refused(proc, str(out))
    assert files(tmp_path) == before


BAD_DBS = ("missing", "not-sqlite", "directory", "other-sqlite")


def bad_db(db: Path, kind: str) -> Path:
    """What --db names that is not a hympi results database: nothing, a text file, a directory, another program's
    SQLite file."""
    if kind == "not-sqlite":
        db.write_text("this is not a database\n" * 100)
    elif kind == "directory":
        db.mkdir()
    elif kind == "other-sqlite":
        with sqlite3.connect(db) as conn:
            conn.execute("CREATE TABLE t (x)")
        conn.close()
    return db


@pytest.mark.parametrize("kind", BAD_DBS)
def test_report_bad_db_leaves_no_output_directory(kind, tmp_path):
    db = bad_db(tmp_path / "results.db", kind)
    content = db.read_bytes() if db.is_file() else None
    out = tmp_path / "report"
    proc = hympi("report", "--db", str(db), "--out", str(out))
    assert_refused(proc, str(db))
    assert not out.exists(), "an output directory was left behind"
    if content is not None:
        assert db.read_bytes() == content


def test_report_unknown_sweep_leaves_no_output_directory(tmp_path):
    db = tmp_path / "results.db"
    from hympi.store import Store

    Store.open(db).close()
    out = tmp_path / "report"
    proc = hympi("report", "--db", str(db), "--out", str(out), "--sweep", "42")
    assert proc.returncode == 2 and "42" in proc.stderr
    assert not out.exists()


@pytest.mark.parametrize(("env", "listing", "needle"), [
    # Named as the user set it, not as a flag `report` does not have (the report reads it for tuned programs'
    # profiles).
    ({"HYMPI_DISTURBED_ABOVE": "abc"}, None, "HYMPI_DISTURBED_ABOVE: 'abc' is not a number of cores"),
    # A listing the user named is read whether or not a stored space needs it.
    ({}, '{"format": "other"}', "is not a 'hympi tune params --json' listing"),
])
def test_report_bad_setting_or_listing_leaves_no_output_directory(env, listing, needle, tmp_path):
    db = tmp_path / "results.db"
    from hympi.store import Store

    Store.open(db).close()
    out = tmp_path / "report"
    args = ["report", "--db", str(db), "--out", str(out)]
    if listing is not None:
        (tmp_path / "cvars.json").write_text(listing)
        args += ["--cvars", str(tmp_path / "cvars.json")]
    proc = hympi(*args, env=env)
    assert_refused(proc, needle)
    assert not out.exists(), "an output directory was left behind"


@pytest.mark.parametrize(("command", "flag", "banner"),
                         [("run rb3d", "--help", "hympi-rb3d"), ("run rb3d", "-h", "hympi-rb3d"),
                          ("run stream", "--help", "hympi-stream"), ("affinity", "--help", "hympi-affinity")])
def test_app_help_is_printed_without_a_launch(command, flag, banner, fake_launcher):
    env, marker = fake_launcher
    proc = hympi(*command.split(), "--", flag, env=env)
    assert proc.returncode == 0, proc.stderr
    assert f"Usage: {banner}" in proc.stdout
    assert proc.stderr == ""
    assert not marker.exists(), "the app was launched to print its help"


def test_timed_out_run_names_its_limit(tmp_path):
    env = fake_app_env(tmp_path)
    proc = hympi("run", "rb3d", "--timeout", "1.5", "--", "--hang-at", "1x1", env=env, timeout=60)
    assert proc.returncode == 1
    assert "timed out after 1.5 s and was killed" in proc.stderr
    assert "None" not in proc.stderr


def test_failed_run_names_its_exit_code(tmp_path):
    env = fake_app_env(tmp_path)
    proc = hympi("run", "rb3d", "--", "--fail-at", "1x1", env=env, timeout=60)
    assert proc.returncode == 1
    assert "run failed (exit code 3)" in proc.stderr


def test_exit_0_without_a_record_is_explained(fake_launcher):
    env, marker = fake_launcher  # exits 0 and prints nothing
    proc = hympi("run", "rb3d", env=env)
    assert marker.exists()
    assert proc.returncode == 1
    assert "exited with code 0 but printed no HYMPI_RESULT line" in proc.stderr
    assert "failed (exit code 0)" not in proc.stderr


@pytest.mark.parametrize("command", ["info", "place --matrix m.txt", "report", "export", "study"])
def test_commands_without_app_args_refuse_them(command, fake_launcher):
    env, _marker = fake_launcher
    proc = hympi(*command.split(), "--", "stray", env=env)
    assert_refused(proc, "stray")


@pytest.mark.parametrize(("command", "trailer"),
                         [("run", "[-- APP-ARGS]"), ("affinity", "[-- APP-ARGS]"), ("sweep", "[-- APP-ARGS]"),
                          ("profile", "-- COMMAND [ARG ...]"),
                          # tune's subcommands that launch the program: their usage lines ended at 'app'
                          ("tune run", "[-- APP-ARGS]"), ("tune predict", "[-- APP-ARGS]")])
def test_usage_lines_show_what_follows_double_dash(command, trailer):
    usage = hympi(*command.split(), "--help").stdout.split("\n\n", 1)[0]
    assert usage.startswith(f"usage: hympi {command} ")
    assert usage.rstrip().endswith(trailer), usage


def test_np_is_ranks():
    args, _ = build_parser("run").parse_known_args(["run", "rb3d", "-np", "3"])
    assert resolve(args, LAUNCH)["ranks"] == (3,)
    args, _ = build_parser("affinity").parse_known_args(["affinity", "-n", "2"])
    assert resolve(args, LAUNCH)["ranks"] == (2,)
    args, _ = build_parser("sweep").parse_known_args(["sweep", "rb3d", "-np", "1,2"])
    assert resolve(args, SWEEP)["ranks"] == (1, 2)


def test_readme_names_every_flag_hympi_adds_to_mpirun(tmp_path):
    readme = (REPO / "README.md").read_text()
    env = (("HYMPI_VIRTUAL_NODES", "1"),)  # as launch_of passes it
    cmds = [build_command(LaunchSpec("hympi-rb3d", 2, 1, env=env, rankfile=rf), "mpirun", "openmpi")
            for rf in (None, str(tmp_path / "rf"))]
    flags = {arg for cmd in cmds for arg in cmd[1:] if arg.startswith("-")} | {"--allow-run-as-root"}
    variables = {arg.split("=", 1)[0] for cmd in cmds for arg in cmd if re.match(r"^[A-Z_]+=", arg)}
    assert {"-np", "--bind-to", "--rankfile", "--oversubscribe", "-x"} <= flags
    for word in sorted(flags | variables):
        assert f"`{word}" in readme or f" {word}" in readme, f"README does not mention {word}"


@pytest.mark.parametrize("value", [float("nan"), float("inf"), 0.0, -1.0])
def test_run_command_refuses_a_bad_timeout_before_starting(value, tmp_path):
    """The launch layer's own guard, for callers that bypass the CLI's argument check."""
    from hympi.errors import UsageError
    from hympi.launch.mpirun import run_command

    marker = tmp_path / "ran"
    with pytest.raises(UsageError, match="--timeout"):
        run_command(["touch", str(marker)], value)
    assert not marker.exists()


@pytest.mark.parametrize("kind", BAD_DBS)
def test_export_bad_db_writes_nothing(kind, tmp_path):
    db = bad_db(tmp_path / "results.db", kind)
    before = files(tmp_path)
    proc = hympi("export", "--db", str(db), "--output", str(tmp_path / "runs.csv"))
    assert_refused(proc, str(db))
    assert files(tmp_path) == before


@pytest.mark.parametrize(("db", "out", "needle"),
                         [("st.db", "st.db", "--out st.db is the --db input st.db"),
                          ("junk.db", "report", "junk.db is not a hympi results database")])
def test_study_refuses_its_database_before_the_report_directory_is_made(tmp_path, fake_launcher, db, out, needle):
    """`study --out X --db X` made X the report directory, then refused X as a database that is a directory; a text
    file as --db was refused only once the report directory stood."""
    env, marker = fake_launcher
    (tmp_path / "junk.db").write_text("not a database\n")
    before = files(tmp_path)
    for resume in ((), ("--resume",)):
        proc = hympi("study", "--apps", "rb3d", "--db", str(tmp_path / db), "--out", str(tmp_path / out), *resume,
                     env=env)
        assert_refused(proc, needle.replace(db, str(tmp_path / db)).replace(f"--out {out}", f"--out {tmp_path / out}"))
    assert files(tmp_path) == before and not marker.exists()
