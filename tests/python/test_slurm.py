"""The Slurm launcher: srun argument lists, the sbatch script, and a sweep run through srun in an allocation."""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

import pytest

from conftest import hympi
from fakeapps import fake_bin_dir, fake_srun, launches
from hympi.errors import UsageError
from hympi.launch.mpirun import LaunchSpec, mpi_flavor
from hympi.launch.slurm import BatchRequest, build_srun_command, sbatch_script
from hympi.launch.slurm_jobs import StepEnd, step_end
from hympi.store import Store


def _no_slurm() -> dict[str, str]:
    """The environment outside any allocation."""
    return {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}


def _srun_env(cmd: list[str]) -> tuple[list[tuple[str, str]], list[str]]:
    """Splits `env VAR=VALUE... srun ...` into the variables (in order) and the srun command."""
    assert cmd[0] == "env", cmd
    at = next(i for i, arg in enumerate(cmd[1:], 1) if "=" not in arg)
    return [tuple(arg.split("=", 1)) for arg in cmd[1:at]], cmd[at:]  # type: ignore[misc]


def test_srun_command_is_an_argument_list_with_the_layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("HYMPI_BIN_DIR", fake_bin_dir(tmp_path)["HYMPI_BIN_DIR"])
    monkeypatch.setenv("HYMPI_MPI_FLAVOR", "openmpi")
    mpi_flavor.cache_clear()  # the flavour is asked once per launcher and process
    spec = LaunchSpec("hympi-rb3d", 4, 2, "numa", "scatter", ("--size", "32"), False, (("HYMPI_VIRTUAL_NODES", "1"),))
    env, cmd = _srun_env(build_srun_command(spec, srun="/opt/slurm/bin/srun"))
    assert cmd[0] == "/opt/slurm/bin/srun"
    assert cmd[cmd.index("--ntasks") + 1] == "4" and cmd[cmd.index("--cpus-per-task") + 1] == "2"
    assert "--cpu-bind=none" in cmd and "--overcommit" not in cmd
    # The layout is set in srun's environment, which --export=ALL carries: srun --export=ALL,VAR=VALUE would let a
    # VAR the user had set win over the layout's.
    assert "--export=ALL" in cmd
    assert env == [("OMP_NUM_THREADS", "2"), ("HYMPI_BIND", "numa"), ("HYMPI_DIST", "scatter"),
                   ("HYMPI_MEMBIND", "none"), ("HYMPI_VIRTUAL_NODES", "1")]
    assert "--mpi=pmix" in cmd  # Open MPI's ranks find each other through PMIx
    assert cmd[-3].endswith("hympi-rb3d") and cmd[-2:] == ["--size", "32"]
    over = build_srun_command(LaunchSpec("hympi-rb3d", 8, 1, oversubscribe=True), srun="srun")
    assert "--overcommit" in over
    monkeypatch.setenv("HYMPI_MPI_FLAVOR", "mpich")
    mpi_flavor.cache_clear()
    assert "--mpi=pmi2" in build_srun_command(LaunchSpec("hympi-rb3d", 2, 1), srun="srun")
    monkeypatch.setenv("HYMPI_SRUN_MPI", "pmix_v4")
    assert "--mpi=pmix_v4" in build_srun_command(LaunchSpec("hympi-rb3d", 2, 1), srun="srun")
    mpi_flavor.cache_clear()  # not to leave "mpich" cached for the next test in this process
    commas = build_srun_command(LaunchSpec("hympi-rb3d", 1, 1, env=(("HYMPI_H5_HINTS", "a=1,b=2"),)), srun="srun")
    assert ("HYMPI_H5_HINTS", "a=1,b=2") in _srun_env(commas)[0]
    with pytest.raises(UsageError, match="not a variable name"):
        build_srun_command(LaunchSpec("hympi-rb3d", 1, 1, env=(("A=B", "c"),)), srun="srun")


def test_sbatch_script_requests_the_largest_layout_and_resumes_the_sweep():
    req = BatchRequest("hympi-sweep-rb3d", 4, 2, 3725.0, "/work/dir with space",
                       ("/venv/bin/hympi", "sweep", "rb3d", "--ranks", "1,2,4", "--launcher", "slurm", "--resume"))
    text = sbatch_script(req)
    lines = text.splitlines()
    assert lines[0] == "#!/bin/bash"
    assert "#SBATCH --ntasks=4" in lines and "#SBATCH --cpus-per-task=2" in lines
    assert "#SBATCH --time=0-01:03:00" in lines  # 3725 s rounded up to whole minutes
    assert "cd '/work/dir with space'" in lines
    assert lines[-1] == "exec /venv/bin/hympi sweep rb3d --ranks 1,2,4 --launcher slurm --resume"
    check = subprocess.run(["bash", "-n"], input=text, text=True, capture_output=True, check=False)
    assert check.returncode == 0, check.stderr


@pytest.mark.parametrize("name", ["q \u00e9.sh", "q\nx%j.sh"])
def test_a_programs_name_is_made_safe_in_the_sbatch_header(tmp_path: Path, name: str):
    """The job and output names are written into #SBATCH lines unquoted: a space would end the value, a newline the
    header (sbatch ignores every #SBATCH line after it), a '%' would be one of Slurm's patterns."""
    program = tmp_path / "dir with space" / name
    program.parent.mkdir()
    program.write_text("#!/bin/sh\necho hi\n")
    program.chmod(0o755)
    script = tmp_path / "s.sbatch"
    proc = hympi("sweep", str(program), "--launcher", "slurm", "--db", str(tmp_path / "r.db"), "--sbatch", str(script),
                 env={**_no_slurm(), **fake_bin_dir(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    body = script.read_text()
    lines = body.splitlines()
    header = [line for line in lines[1:] if line.startswith("#SBATCH")]
    assert lines[1:1 + len(header)] == header and len(header) == 6  # one block, every request in it
    assert all(len(line.split()) == 2 for line in header), header
    stem = "hympi-sweep-" + name.replace(" ", "_").replace("\u00e9", "_").replace("\n", "_").replace("%", "_")
    assert f"#SBATCH --job-name={stem}" in header and f"#SBATCH --output={stem}-%j.out" in header
    exec_line = shlex.split(body[body.index("\nexec ") + 1:])  # the path itself, quoted (a newline and all)
    assert exec_line[2:4] == ["sweep", str(program)]


def test_outside_an_allocation_the_sweep_becomes_an_sbatch_script(tmp_path: Path):
    env = {**_no_slurm(), **fake_bin_dir(tmp_path)}
    db = tmp_path / "r.db"
    script = tmp_path / "job.sbatch"
    proc = hympi("sweep", "rb3d", "--ranks", "1,2", "--threads", "1,2", "--repeat", "2", "--launcher", "slurm",
                 "--db", str(db), "--dry-run", "--", "--size", "16", env=env)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.startswith("#!/bin/bash") and "#SBATCH --ntasks=2" in out
    srun_lines = [line for line in out.splitlines()
                  if line.startswith("env ") and any(Path(arg).name == "srun" for arg in shlex.split(line))]
    assert len(srun_lines) == 12  # 4 layouts (no local PU limit applies to an allocation) x (warm-up + 2 repeats)
    assert all(shlex.split(line)[-3:] == [str(tmp_path / "bin" / "hympi-rb3d"), "--size", "16"] for line in srun_lines)
    assert not db.exists()

    proc = hympi("sweep", "rb3d", "--ranks", "1,2", "--threads", "1,2", "--launcher", "slurm", "--db", str(db),
                 "--no-warmup", "--sbatch", str(script), "--", "--size", "16", env=env)
    assert proc.returncode == 0, proc.stderr
    assert f"sbatch {script}" in proc.stdout
    body = script.read_text()
    exec_line = shlex.split(body.strip().splitlines()[-1])
    assert exec_line[0] == "exec" and exec_line[2:4] == ["sweep", "rb3d"]
    assert exec_line[exec_line.index("--db") + 1] == str(db.resolve())
    assert "--resume" in exec_line and exec_line[exec_line.index("--launcher") + 1] == "slurm"
    assert "--no-warmup" in exec_line  # the allocation's sweep runs the rounds asked for, no more
    assert exec_line[-3:] == ["--", "--size", "16"]
    assert os.access(script, os.X_OK)
    assert not db.exists() and not launches(env)


def test_inside_an_allocation_the_sweep_runs_every_layout_with_srun(tmp_path: Path):
    env = {**_no_slurm(), **fake_bin_dir(tmp_path), **fake_srun(tmp_path)}
    db = tmp_path / "r.db"
    proc = hympi("sweep", "rb3d", "--ranks", "1,2", "--threads", "1,2", "--launcher", "slurm", "--no-warmup",
                 "--db", str(db), "--", "--fail-at", "1x2", env=env)
    assert proc.returncode == 1, proc.stdout + proc.stderr  # 1x2 fails on purpose
    assert "skipping 2x2" in proc.stderr  # the allocation has 2 CPUs (SLURM_NTASKS x SLURM_CPUS_PER_TASK)
    srun_log = (tmp_path / "srun.log").read_text().splitlines()
    assert len(srun_log) == 3 and all("--cpu-bind=none" in line for line in srun_log)
    with Store.open(db, create=False) as store:
        runs = {(r.ranks, r.threads): r for r in store.runs()}
    assert {k: r.status for k, r in runs.items()} == {(1, 1): "ok", (1, 2): "failed", (2, 1): "ok"}
    assert _srun_env(list(runs[(2, 1)].command))[1][0] == env["HYMPI_SRUN"]
    assert runs[(2, 1)].record["rate"] == 21.0  # the fake app saw 2 tasks from srun --ntasks
    assert sorted(launches(env)) == ["1x1", "1x2", "2x1"]


def test_tasks_that_do_not_form_one_mpi_job_fail_the_run(tmp_path: Path):
    env = {**_no_slurm(), **fake_bin_dir(tmp_path), **fake_srun(tmp_path), "FAKE_SRUN_SINGLETONS": "1"}
    db = tmp_path / "r.db"
    proc = hympi("sweep", "rb3d", "--ranks", "1,2", "--launcher", "slurm", "--no-warmup", "--db", str(db), env=env)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    with Store.open(db, create=False) as store:
        runs = {r.ranks: r for r in store.runs()}
    assert runs[1].status == "ok"  # one task is one rank either way
    assert runs[2].status == "failed"
    assert "2 ranks were started but the app ran as an MPI job of 1 rank(s): the tasks did not join one job" in \
        runs[2].stderr_tail


@pytest.mark.parametrize(("line", "expected"), [
    ("slurmstepd: error: *** STEP 4242.3 ON localhost CANCELLED AT 2026-01-01T00:00:00 ***",
     StepEnd("4242.3", "CANCELLED", "")),
    ("slurmstepd-node7: error: *** STEP 4242.0 ON node7 CANCELLED AT 2026-01-01T00:00:00 DUE TO TIME LIMIT ***",
     StepEnd("4242.0", "CANCELLED", "DUE TO TIME LIMIT")),
    ("slurmstepd: error: *** JOB 4242 ON localhost CANCELLED AT 2026-01-01T00:00:00 DUE TO PREEMPTION ***",
     StepEnd("4242", "CANCELLED", "DUE TO PREEMPTION")),
    ("slurmstepd: error: *** STEP 99.0 ON localhost CANCELLED AT 2026-01-01T00:00:00 ***", None),  # another job
    ("*** STEP 4242.0 ON localhost CANCELLED AT 2026-01-01T00:00:00 ***", None),  # not slurmstepd's line
    ("srun: error: localhost: task 1: Exited with exit code 3", None),
])
def test_step_end_is_slurmstepd_s_line_for_this_job(line: str, expected: StepEnd | None) -> None:
    stderr = f"rank 0: starting\n{line}\nsrun: error: localhost: task 0: Killed\n"
    assert step_end(stderr, "4242") == expected


# What srun's stderr held, in order (Slurm 22.05 here; the memory limits' from users' reports).
CANCELLED_BY_SCANCEL = """srun: cluster configuration lacks support for cpu binding
slurmstepd-localhost: error: *** STEP 4242.0 ON localhost CANCELLED AT 2026-11-29T21:45:44 ***
srun: Job step aborted: Waiting up to 4 seconds for job step to finish.
srun: error: localhost: task 0: Killed
srun: launch/slurm: _step_signal: Terminating StepId=4242.0
"""
# srun gave up waiting before slurmstepd's line reached it (put together from srun's own lines, as users report
# them on such a timeout: not seen here).
CANCELLED_LINE_LOST = """srun: Job step aborted: Waiting up to 4 seconds for job step to finish.
srun: error: Timed out waiting for job step to complete
"""
OVER_MEMORY_LIMIT = """slurmstepd: error: Step 4242.0 exceeded memory limit (6776728 > 6291456), being killed
srun: Job step aborted: Waiting up to 32 seconds for job step to finish.
slurmstepd: error: *** STEP 4242.0 ON node008 CANCELLED AT 2024-02-27T11:22:33 ***
srun: error: node008: task 0: Killed
"""
OOM_KILLED = """slurmstepd: error: Detected 1 oom-kill event(s) in StepId=4242.0. Some of your processes may have
srun: error: nid002715: task 85: Out Of Memory
srun: launch/slurm: _step_signal: Terminating StepId=4242.0
slurmstepd: error: *** STEP 4242.0 ON nid002715 CANCELLED AT 2025-01-23T11:58:37 ***
"""
# Task 0 failed on its own; srun's --kill-on-bad-exit ended task 1, which slurmstepd reports as CANCELLED.
TASK_FAILED_FIRST = """rank 0: bad input
srun: error: localhost: task 0: Exited with exit code 3
srun: launch/slurm: _step_signal: Terminating StepId=4242.0
slurmstepd-localhost: error: *** STEP 4242.0 ON localhost CANCELLED AT 2026-11-29T21:45:44 ***
srun: error: localhost: task 1: Terminated
srun: Force Terminated StepId=4242.0
"""
TASK_CRASHED_FIRST = TASK_FAILED_FIRST.replace("Exited with exit code 3", "Segmentation fault (core dumped)")


@pytest.mark.parametrize(("stderr", "expected"), [
    (CANCELLED_BY_SCANCEL, StepEnd("4242.0", "CANCELLED", "")),
    (CANCELLED_LINE_LOST, StepEnd("4242", "ABORTED", "")),
    (OVER_MEMORY_LIMIT, None),
    (OOM_KILLED, None),
    (TASK_FAILED_FIRST, None),
    (TASK_CRASHED_FIRST, None),
    ("rank 0: done\n", None),
])
def test_step_end_is_the_first_word_of_slurm_unless_a_task_failed_before_it(stderr: str,
                                                                             expected: StepEnd | None) -> None:
    assert step_end(stderr, "4242") == expected


def test_a_step_slurm_cancelled_after_the_app_printed_is_an_attempt_and_resume_runs_it(tmp_path: Path) -> None:
    """A cancel that lands after the app printed a verified result, before the step completed: srun exits 0, yet
    Slurm ended the step, so the launch is no result; the sweep goes on, ends interrupted and --resume runs it."""
    env = {**_no_slurm(), **fake_bin_dir(tmp_path), **fake_srun(tmp_path)}
    db = tmp_path / "r.db"
    args = ["sweep", "rb3d", "--ranks", "1,2", "--launcher", "slurm", "--no-warmup", "--seed", "3", "--db", str(db)]
    proc = hympi(*args, env={**env, "FAKE_SRUN_CANCEL_AT": "2x1", "FAKE_SRUN_OTHER_AT": "1x1",
                             "FAKE_SRUN_OTHER_JOB": "99"})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "1 cancelled, 1 ok" in proc.stdout and "--resume" in proc.stdout, proc.stdout
    with Store.open(db, create=False) as store:
        runs, attempts, sweep = store.runs(), store.attempts(), store.sweep(1)
    assert [(r.ranks, r.status) for r in runs] == [(1, "ok")]  # another job's cancel line is not this step's
    (cancelled,) = attempts
    assert (cancelled.ranks, cancelled.status, cancelled.returncode) == (2, "cancelled", 0)
    assert cancelled.record is not None and cancelled.record["verified"] is True  # what the app printed before
    step = launches(env).index("2x1")  # the fake srun numbers its steps in launch order
    assert f"*** STEP 4242.{step} ON localhost CANCELLED AT" in cancelled.stderr_tail
    assert f"hympi: Slurm ended the launch: step 4242.{step} CANCELLED" in cancelled.stderr_tail
    assert sweep.status == "interrupted"

    again = hympi(*args, "--resume", env=env)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "resuming sweep 1" in again.stdout and "1 already recorded" in again.stdout, again.stdout
    with Store.open(db, create=False) as store:
        rerun, kept, sweep = store.runs(), store.attempts(), store.sweep(1)
    assert [(r.ranks, r.status) for r in rerun] == [(1, "ok"), (2, "ok")]
    assert rerun[0].started_at == runs[0].started_at  # the finished run was not repeated
    assert kept == attempts and sweep.status == "finished"
    assert sorted(launches(env)) == ["1x1", "2x1", "2x1"]
