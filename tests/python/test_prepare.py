"""A program's preparation (--prepare, hympi.prepare): a command run before each launch, with the launch's figures,
in the program's working directory, untimed; one that fails or hangs fails the run and launches nothing; a bad
command line is refused before anything starts; the preparation is part of the sweep and of each run's record."""

from __future__ import annotations

import json
import re
import shlex
import time
from pathlib import Path

import psutil
import pytest

from conftest import assert_refused, hympi, hympi_json
from hympi.errors import HympiError
from hympi.launch.mpirun import LaunchSpec
from hympi.program import program_of
from hympi.store import Store
from hympi.tune.programs import ProfileLaunches
from userprograms import shell_program

# A solver that runs only on a case decomposed for its rank count, as OpenFOAM's run only on the processor*
# directories decomposePar wrote: rank 0 compares the decomposition file with the job's size, and notes its launch
# (shell builtins only: a child such as cat is a process of the job's that never initialised MPI, which the probe
# fails).
SOLVER = """
n=${OMPI_COMM_WORLD_SIZE:-${PMI_SIZE:-1}}
r=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}
[ "$r" = 0 ] || exit 0
echo launched >> launches
d=nothing
read -r d < "${1:-.}/decomposition"
if [ "$d" != "$n" ]; then
  echo "FATAL: case decomposed for $d, run on $n" >&2
  exit 1
fi
echo "End"
"""
# A tune's search space: the rank counts a case must be decomposed for.
SPACE = "[layout]\nranks = [1, 2]\ndefault = { ranks = 1 }\n"
# The preparation: decomposes the case for the launch's ranks, and notes what it was asked (the launch's figures).
DECOMPOSE = """
echo "$1x$2" >> prepared
echo "$1" > "${3:-.}/decomposition"
echo "decomposed into $1"
"""


@pytest.fixture
def case(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    shell_program(tmp_path, "solver", SOLVER)
    shell_program(tmp_path, "decompose", DECOMPOSE)
    return tmp_path


def _runs(db: Path) -> list:  # type: ignore[type-arg]
    with Store.open(db, create=False) as store:
        return sorted(store.runs(), key=lambda r: r.id)


def test_each_launch_is_prepared_for_its_layout_and_the_preparation_is_recorded(case: Path):
    """Without the preparation the 2-rank runs fail on a case decomposed for 1; with it every run is ok, each launch
    prepared once just before it with its own figures, and the record holds the command as run. The preparation is
    part of the sweep's identity (another command is another sweep) and a printed plan shows it before each
    launch."""
    sweep = ["sweep", "./solver", "--ranks", "1,2", "--repeat", "2", "--no-warmup", "--ignore-load", "--verify",
             "(?m)^End$"]
    (case / "decomposition").write_text("1\n")
    unprepared = hympi(*sweep, "--db", "u.db")
    assert unprepared.returncode == 1, unprepared.stdout + unprepared.stderr
    assert {(r.ranks, r.status) for r in _runs(case / "u.db")} == {(1, "ok"), (2, "failed")}
    (case / "launches").unlink()
    prepare = ["--prepare", "./decompose {ranks} {threads}"]
    plan = hympi(*sweep, *prepare, "--db", "p.db", "--dry-run")
    lines = plan.stdout.splitlines()
    assert plan.returncode == 0 and len(lines) == 8, plan.stdout + plan.stderr
    assert all(lines[i].startswith(f"{case / 'decompose'} ") for i in (0, 2, 4, 6)), lines
    assert {lines[i] for i in (0, 2, 4, 6)} == {f"{case / 'decompose'} 1 1", f"{case / 'decompose'} 2 1"}
    assert not (case / "prepared").exists() and not (case / "p.db").exists()
    prepared = hympi(*sweep, *prepare, "--db", "p.db")
    assert prepared.returncode == 0, prepared.stdout + prepared.stderr
    runs = _runs(case / "p.db")
    assert [r.status for r in runs] == ["ok"] * 4, [r.stderr_tail for r in runs]
    # One preparation per launch, in the launches' order, each with its launch's figures.
    assert (case / "prepared").read_text().split() == [f"{r.ranks}x{r.threads}" for r in runs]
    assert len((case / "launches").read_text().split()) == 4
    for run in runs:
        assert run.record is not None
        assert run.record["metrics"]["prepare"] == f"{case / 'decompose'} {run.ranks} {run.threads}"
        assert run.command[0] != str(case / "decompose")  # the run's command is the launch, not the preparation
    with Store.open(case / "p.db", create=False) as store:
        (recorded,) = store.sweeps()
    assert recorded.params["prepare"] == "./decompose {ranks} {threads}"
    other = hympi(*sweep, "--prepare", "./decompose {ranks} 9", "--db", "p.db", "--resume")
    assert other.returncode == 0, other.stdout + other.stderr
    with Store.open(case / "p.db", create=False) as store:
        assert [s.params["prepare"] for s in store.sweeps()] == ["./decompose {ranks} {threads}",
                                                                 "./decompose {ranks} 9"]


def test_an_sbatch_plan_shows_each_steps_preparation_as_the_sweeps_not_a_step(case: Path):
    plan = hympi("sweep", "./solver", "--ranks", "1,2", "--repeat", "1", "--no-warmup", "--launcher", "slurm",
                 "--prepare", "./decompose {ranks} {threads}", "--dry-run")
    assert plan.returncode == 0, plan.stdout + plan.stderr
    script, _, steps = plan.stdout.partition("# job steps the script's sweep runs with srun, each after its "
                                             "preparation (run by the sweep itself, on the first node):\n")
    assert "--prepare './decompose {ranks} {threads}'" in script, plan.stdout  # the sweep inside prepares
    lines = steps.splitlines()
    assert [line.split()[0] for line in lines[::2]] == [str(case / "decompose")] * 2, lines
    assert all("srun" in line for line in lines[1::2]), lines


def test_a_failed_preparation_fails_the_run_with_its_reason_and_launches_nothing(case: Path):
    shell_program(case, "broken", 'echo "cannot open system/decomposeParDict" >&2\nexit 3\n')
    proc = hympi("sweep", "./solver", "--ranks", "1", "--repeat", "1", "--no-warmup", "--ignore-load",
                 "--prepare", "./broken {ranks}", "--db", "r.db")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    (run,) = _runs(case / "r.db")
    assert run.status == "failed" and run.record is None
    assert ("--prepare ./broken 1 ended with exit code 3: solver not launched; its last lines: "
            "cannot open system/decomposeParDict") in run.stderr_tail, run.stderr_tail
    assert not (case / "launches").exists()
    # The progress line keeps the preparation's last words (the reason names the command as typed, not its path).
    assert re.search(r"(?m)^  1x1 .* failed .*: solver not launched; its last lines: cannot open", proc.stdout), \
        proc.stdout
    ran = hympi("run", "./solver", "--prepare", "./broken {ranks}")
    assert ran.returncode == 1 and "solver not launched" in ran.stderr, ran.stderr
    assert not (case / "launches").exists()


def test_a_preparation_that_hangs_is_stopped_at_the_timeout_with_what_it_started(case: Path):
    shell_program(case, "hang", "sleep 300 &\necho $! > sleeper\nwait\n")
    started = time.monotonic()
    proc = hympi("sweep", "./solver", "--ranks", "1", "--repeat", "1", "--no-warmup", "--ignore-load",
                 "--prepare", "./hang", "--timeout", "2", "--db", "r.db")
    assert proc.returncode == 1 and time.monotonic() - started < 60, proc.stdout + proc.stderr
    (run,) = _runs(case / "r.db")
    assert run.status == "failed"
    assert "--prepare ./hang was still running after 2 s and was stopped: solver not launched" in run.stderr_tail
    assert not (case / "launches").exists()
    sleeper = int((case / "sleeper").read_text())
    deadline = time.monotonic() + 10
    while _alive(sleeper):
        assert time.monotonic() < deadline, "the preparation's child outlived its timeout"
        time.sleep(0.1)


def _alive(pid: int) -> bool:
    """Whether process `pid` still runs (a zombie waits only to be reaped; one gone between two calls is gone)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_hympi_affinity_prepares_a_program_that_cannot_start_without_it(case: Path):
    """`hympi affinity PROGRAM` takes what the program needs to start: its preparation too."""
    unprepared = hympi("affinity", "./solver", "--ranks", "2")
    assert unprepared.returncode == 1 and "FATAL: case decomposed for nothing, run on 2" in unprepared.stderr, \
        unprepared.stderr
    prepared = hympi("affinity", "./solver", "--ranks", "2", "--prepare", "./decompose {ranks} {threads}")
    assert prepared.returncode == 0, prepared.stdout + prepared.stderr
    assert (case / "prepared").read_text().split() == ["2x1"]


def test_the_preparations_time_is_recorded_beside_the_runs_and_never_in_it(case: Path):
    """The run's time is its launch's; a preparation of 5 s (a decomposition of a large case) is recorded apart."""
    code, record = hympi_json("run", "./solver", "--prepare", "sh -c 'sleep 5 && ./decompose {ranks} {threads}'",
                              "--verify", "End", "--json")
    assert code == 0 and record["verified"], record
    assert record["metrics"]["prepare_s"] >= 5.0 > record["time_s"], record


def test_the_preparation_and_the_launch_share_the_launchs_own_directory(case: Path):
    """`{run}` in the preparation alone makes the directory, and the program is given the same one."""
    code, record = hympi_json("run", "./solver", "--ranks", "2", "--prepare", "./decompose {ranks} {threads} {run}",
                              "--verify", "End", "--json", "--", "{run}")
    assert code == 0 and record["verified"], record
    (made,) = (case / "hympi-runs").iterdir()
    assert (made / "decomposition").read_text().strip() == "2"
    assert record["metrics"]["prepare"] == f"{case / 'decompose'} 2 1 {made}"


def test_a_tune_prepares_every_configuration_and_its_best_command_names_the_preparation(case: Path):
    (case / "space.toml").write_text(SPACE)
    proc = hympi("tune", "run", "./solver", "--space", "space.toml", "--db", "t.db", "--verify", "(?m)^End$",
                 "--prepare", "./decompose {ranks} {threads}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    runs = _runs(case / "t.db")
    assert {r.ranks for r in runs} == {1, 2} and {r.status for r in runs} == {"ok"}, [r.stderr_tail for r in runs]
    assert len((case / "prepared").read_text().split()) == len(runs)
    best = hympi("tune", "best", "--db", "t.db", "--format", "flags")
    assert best.returncode == 0, best.stderr
    words = shlex.split(best.stdout)
    assert words[words.index("--prepare") + 1] == "./decompose {ranks} {threads}", words


def test_a_preparation_edited_during_a_sweep_stops_it_and_an_edited_one_is_another_sweep(case: Path):
    """The preparation's program is the user's as much as the program is: edited while a sweep runs (the next
    decomposition method tried in the same script), the runs after it would measure another setup. Its file is
    watched as the program's is: the sweep stops before the next launch, the runs before kept, and the edited script
    is another sweep, which `--resume` names as the difference."""
    # The second launch edits the preparation (a user at work beside the sweep).
    shell_program(case, "solver", 'echo End\nn=$(cat count 2>/dev/null || echo 0); echo $((n + 1)) > count\n'
                                  'if [ "$n" -eq 1 ]; then echo "# method scotch" >> decompose; fi\n')
    sweep = ["sweep", "./solver", "--ranks", "1", "--repeat", "3", "--no-warmup", "--ignore-load", "--verify",
             "(?m)^End$", "--prepare", "./decompose {ranks} {threads}", "--db", "r.db"]
    proc = hympi(*sweep)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stderr.splitlines()[-1].startswith(
        f"hympi: error: --prepare {case / 'decompose'} has changed (its sha256 is no longer "), proc.stderr
    assert [r.status for r in _runs(case / "r.db")] == ["ok", "ok"]
    with Store.open(case / "r.db", create=False) as store:
        (recorded,) = store.sweeps()
    assert len(recorded.params["prepare_sha256"]) == 64
    resumed = hympi(*sweep, "--resume")
    assert "differs in the --prepare program's file" in resumed.stdout + resumed.stderr, resumed.stdout + resumed.stderr
    refused = hympi(*sweep, "--resume", "1")
    assert refused.returncode == 2 and refused.stderr.splitlines() == [
        f"hympi: error: --prepare {case / 'decompose'} has changed since this sweep was recorded (sha256 "
        f"{recorded.params['prepare_sha256'][:12]}...): start a new sweep"], refused.stderr


def test_a_run_directory_the_preparation_names_is_checked_before_anything_runs(case: Path, fake_launcher):
    (case / "hympi-runs").write_text("")
    assert_refused(["sweep", "./solver", "--ranks", "1", "--db", "r.db", "--prepare", "./decompose {ranks} 1 {run}"],
                   f"{{run}} in --prepare: {case / 'hympi-runs'} is not a directory", fake_launcher)
    # A programs file's entry is named with its key, not by a flag nobody typed.
    (case / "programs.toml").write_text('[[program]]\nname = "p"\ncommand = ["./solver"]\n'
                                        'prepare = "./decompose {ranks} 1 {run}"\n')
    assert_refused(["study", "--quick", "--programs", "programs.toml", "--db", "r.db"],
                   f"programs.toml: program 'p': {{run}} in 'prepare': {case / 'hympi-runs'} is not a directory",
                   fake_launcher)
    assert not (case / "r.db").exists() and not (case / "prepared").exists()


def test_a_programs_file_declares_the_preparation_relative_to_its_directory(case: Path, tmp_path_factory,
                                                                          monkeypatch: pytest.MonkeyPatch):
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    monkeypatch.chdir(elsewhere)
    programs = case / "programs.toml"
    programs.write_text('[[program]]\nname = "foam"\ncommand = ["./solver"]\nverify = "End"\n'
                        'prepare = "./decompose {ranks} {threads}"\n')
    proc = hympi("study", "--quick", "--programs", str(programs), "--out", str(elsewhere / "report"),
                 "--db", str(elsewhere / "r.db"), "--ignore-load")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    runs = _runs(elsewhere / "r.db")
    assert runs and {r.status for r in runs} == {"ok"}, [r.stderr_tail for r in runs]
    assert len((case / "prepared").read_text().split()) == len(runs)


@pytest.mark.parametrize(("prepare", "needle"), [
    ("./decompose 'unbalanced", "--prepare \"./decompose 'unbalanced\" cannot be split into words: No closing"),
    ("  ", "--prepare needs a command"),
    ("no-such-preparer {ranks}", "--prepare: program no-such-preparer is not on PATH"),
    ("./missing {ranks}", "--prepare: program ./missing: no such file"),
    ("./notexec", "--prepare: program ./notexec is not executable"),
    ("./{ranks}/decompose", "the command's name './{ranks}/decompose' names {ranks}"),
    ("./decompose\nrm -rf /", "--prepare must be a command on one line of printable text"),
    (f"./{'x' * 300} {{ranks}}", "--prepare: program: a path component of 300 bytes ('xxxxxxxxxxxxxxxxxxxx...') "
                                 "exceeds 255 bytes"),
])
def test_a_bad_preparation_is_refused_in_one_line_before_anything_runs(case: Path, fake_launcher, prepare: str,
                                                                       needle: str):
    (case / "notexec").write_text("echo\n")
    (case / "space.toml").write_text(SPACE)
    for command in (["run", "./solver"], ["sweep", "./solver", "--ranks", "1", "--db", "r.db"],
                    ["tune", "run", "./solver", "--space", "space.toml", "--db", "r.db"]):
        assert_refused([*command, "--prepare", prepare], needle, fake_launcher)
    assert not (case / "r.db").exists()
    (case / "programs.toml").write_text(f'[[program]]\nname = "p"\ncommand = ["./solver"]\n'
                                        f'prepare = {json.dumps(prepare)}\n')
    assert_refused(["study", "--quick", "--programs", "programs.toml", "--db", "r.db"],
                   "programs.toml: program 'p': 'prepare'", fake_launcher)


def test_a_preparation_is_refused_for_hympis_own_apps(fake_launcher):
    assert_refused(["run", "rb3d", "--prepare", "true"], "--prepare is for a program of your own", fake_launcher)


def test_a_profiled_launch_is_prepared_first_and_a_failed_preparation_says_why(case: Path):
    """tune predict profiles a program at one layout and checks its threads at another: each launch is prepared."""
    program = program_of("./solver", {"prepare": "./decompose {ranks} {threads}"})
    launches = ProfileLaunches(profile=LaunchSpec(str(case / "solver"), 2, 1), thread_check=None, program=program)
    launches.launched(LaunchSpec(str(case / "solver"), 2, 1), 30.0)
    assert (case / "prepared").read_text().split() == ["2x1"]
    broken = program_of("./solver", {"prepare": "sh -c 'echo no licence >&2; exit 4'"})
    with pytest.raises(HympiError, match=r"solver at 1x2: --prepare sh -c 'echo no licence >&2; exit 4' ended with "
                                         r"exit code 4: solver not launched; its last lines: no licence"):
        ProfileLaunches(profile=LaunchSpec(str(case / "solver"), 1, 2), thread_check=None,
                        program=broken).launched(LaunchSpec(str(case / "solver"), 1, 2), 30.0)
