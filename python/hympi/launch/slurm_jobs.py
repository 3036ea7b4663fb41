"""Talking to a Slurm controller: is it reachable, submitting an sbatch script, a job's state, waiting for its end,
and telling a failed job step from an allocation that ended under it."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, replace
from pathlib import Path

from hympi.errors import HympiFatal
from hympi.launch.mpirun import RunOutcome, one_mpi_job, run_command
from hympi.settings import settings

# scontrol ping answers at once; sbatch, squeue and scontrol show retry an unreachable controller for ~10 s.
QUERY_TIMEOUT_S = 60.0
# States in which a job still holds its allocation, so a failed step is the step's own failure.
ALIVE_STATES = frozenset({"RUNNING", "CONFIGURING", "SUSPENDED", "RESIZING"})
WAITING_STATES = frozenset({"PENDING", "REQUEUED", *ALIVE_STATES, "COMPLETING"})


@dataclass(frozen=True)
class JobState:
    """A Slurm job's state as the controller reports it (RUNNING, COMPLETED, CANCELLED, ...) and its exit code."""

    job_id: str
    state: str
    exit_code: int | None


def slurm_tool(name: str) -> str:
    """Slurm's `name` (sbatch, scontrol): beside $HYMPI_SRUN when that is set, else on PATH; HympiFatal when absent."""
    srun = settings().text("srun")
    if srun:
        beside = Path(srun).parent / name
        if beside.is_file() and os.access(beside, os.X_OK):
            return str(beside)
    found = shutil.which(name)
    if found is None:
        raise HympiFatal(f"{name} not found: --launcher slurm needs Slurm's client commands (slurm-client) on PATH")
    return found


def _run(cmd: list[str], cwd: str | None = None) -> subprocess.CompletedProcess[str]:
    """Runs a Slurm client command; HympiFatal when it cannot start or does not answer in QUERY_TIMEOUT_S."""
    try:
        return subprocess.run(cmd, capture_output=True, text=True, errors="replace",
                              timeout=QUERY_TIMEOUT_S, cwd=cwd, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise HympiFatal(f"{cmd[0]} did not answer: {exc}") from None


def _last_line(proc: subprocess.CompletedProcess[str]) -> str:
    """The last non-empty line a Slurm command printed (its error, as a rule)."""
    lines = [line.strip() for line in (proc.stderr + "\n" + proc.stdout).splitlines() if line.strip()]
    return lines[-1] if lines else f"exit code {proc.returncode}"


def check_reachable() -> None:
    """Returns when the Slurm controller answers `scontrol ping`; HympiFatal naming what scontrol said otherwise."""
    proc = _run([slurm_tool("scontrol"), "ping"])
    if proc.returncode != 0 or " is UP" not in proc.stdout:
        first = next((line.strip() for line in (proc.stdout + proc.stderr).splitlines() if line.strip()),
                     f"exit code {proc.returncode}")
        conf = os.environ.get("SLURM_CONF", "the default slurm.conf")
        raise HympiFatal(f"the Slurm controller is not reachable ({first}; configuration: {conf}); nothing submitted")


def submit(script: Path, workdir: str) -> str:
    """Submits `script` with sbatch from `workdir` (where its --output lands); returns the job id, HympiFatal naming
    sbatch's error when the controller refuses it."""
    proc = _run([slurm_tool("sbatch"), "--parsable", str(script)], cwd=workdir)
    job_id = proc.stdout.strip().split(";", 1)[0]  # --parsable: "ID" or "ID;cluster"
    if proc.returncode != 0 or not job_id.isdigit():
        raise HympiFatal(f"sbatch refused {script}: {_last_line(proc)}")
    return job_id


def job_state(job_id: str) -> JobState | None:
    """The job's state from `scontrol show job`; None when the controller no longer knows the job (purged after
    MinJobAge); HympiFatal when the controller does not answer."""
    proc = _run([slurm_tool("scontrol"), "--oneliner", "show", "job", job_id])
    if proc.returncode != 0:
        if "Invalid job id" in proc.stderr + proc.stdout:
            return None
        raise HympiFatal(f"scontrol cannot tell the state of job {job_id}: {_last_line(proc)}")
    state = re.search(r"\bJobState=(\S+)", proc.stdout)
    code = re.search(r"\bExitCode=(\d+):(\d+)", proc.stdout)
    if state is None:
        raise HympiFatal(f"scontrol show job {job_id} names no JobState: {_last_line(proc)}")
    # ExitCode=STATUS:SIGNAL; a job killed by a signal reads as a shell reports it, 128 + the signal.
    exit_code = None if code is None else (128 + int(code.group(2)) if code.group(2) != "0" else int(code.group(1)))
    return JobState(job_id, state.group(1), exit_code)


def wait_for(job_id: str) -> JobState | None:
    """Polls the job until it leaves the queue and returns its final state (None if it was purged before hympi saw
    its end); the first polls are 0.5 s apart, later ones up to 5 s (sbatch --wait polls up to every 10 s, which
    would make a short job look slow). HympiFatal when the controller stops answering."""
    start = time.monotonic()
    while True:
        state = job_state(job_id)
        if state is None or state.state not in WAITING_STATES:
            return state
        time.sleep(min(5.0, max(0.5, (time.monotonic() - start) / 10)))


# Why srun's tasks may not form one MPI job, and the fix (one_mpi_job).
SRUN_REMEDY = "the tasks did not join one job; set HYMPI_SRUN_MPI to the plugin this MPI needs (srun --mpi=list)"


def current_job() -> str | None:
    """The id of the allocation this process runs in ($SLURM_JOB_ID), or None outside one."""
    return os.environ.get("SLURM_JOB_ID") or None


def _tasks(cmd: list[str]) -> int | None:
    """The task count of an srun command line built by build_srun_command (its --ntasks)."""
    try:
        return int(cmd[cmd.index("--ntasks") + 1])
    except (ValueError, IndexError):
        return None


# slurmstepd writes this into the step's own stderr when Slurm ends the step (or the whole job) before its tasks have
# all exited: "slurmstepd: error: *** STEP 1234.0 ON node CANCELLED AT 2024-05-01T12:00:00 ***", with " DUE TO TIME
# LIMIT", " DUE TO PREEMPTION" or " DUE TO NODE FAILURE, ..." for the batch system's own reasons (Slurm's
# src/slurmd/slurmstepd/req.c). It is the step's state as Slurm records it that survives the step everywhere:
# `scontrol show step` forgets a step the moment it ends, and sacct answers only where accounting is configured.
STEP_ENDED = re.compile(r"^slurmstepd(?:-\S+)?: error: \*\*\* (?:STEP (?P<job>\d+)\.(?P<step>\w+)|JOB (?P<whole>\d+)) "
                        r"ON \S+ (?P<state>CANCELLED) AT \S+(?P<reason>(?: DUE TO [^*]*?)?) \*\*\*", re.MULTILINE)
# srun's own word that the controller ended its step while tasks still ran (Slurm's src/api/step_launch.c). srun
# prints it itself, so it is there when slurmstepd's line above, forwarded over the step's I/O connection, is not: an
# srun that gives up waiting for a slow step ("Timed out waiting for job step to complete") exits without it.
STEP_ABORTED = re.compile(r"^srun: Job step aborted: ", re.MULTILINE)
# The launch's own failure: srun's line for tasks that ended with an error or a signal ("srun: error: node7: tasks
# 0-1: Exited with exit code 3", "srun: error: localhost: task 0: Killed", "...: task 85: Out Of Memory"), or
# slurmstepd's word that the step outgrew its memory (jobacct_gather's limit, the cgroup's OOM killer): a program
# that needs more memory than it was given fails the same way every time, no cancel to run again.
OWN_FAILURE = re.compile(r"^(?:srun: error: \S+: tasks? \S+: |slurmstepd(?:-\S+)?: error: (?:Step \S+ exceeded memory "
                         r"limit|Exceeded (?:job|step) memory limit|Detected \d+ oom-kill event))", re.MULTILINE)


@dataclass(frozen=True)
class StepEnd:
    """How Slurm ended a job step: the step ('1234.0', or the job's id when the whole job was ended or srun alone
    said so), its state (CANCELLED; ABORTED when srun's line is the only word) and Slurm's reason, if it gave one
    ('DUE TO TIME LIMIT')."""

    step: str
    state: str
    reason: str

    def text(self) -> str:
        """'step 1234.0 CANCELLED DUE TO TIME LIMIT', as a note says it."""
        if self.state == "ABORTED":
            return f"a step of job {self.step} (srun: Job step aborted)"
        what = f"step {self.step}" if "." in self.step else f"job {self.step}"
        return f"{what} {self.state}{' ' + self.reason if self.reason else ''}"


def step_end(stderr: str, job_id: str) -> StepEnd | None:
    """The end Slurm gave a step of job `job_id`, as slurmstepd announced it in the step's stderr, or srun when
    slurmstepd's line did not reach it; None when Slurm did not end it (its tasks exited on their own). Lines naming
    another job are not this step's. Nor is an end that follows the launch's own failure (OWN_FAILURE): srun's
    --kill-on-bad-exit, or the memory limit, ends the other tasks through the controller, and slurmstepd calls that
    CANCELLED too, but the launch failed."""
    ended = next((m for m in STEP_ENDED.finditer(stderr) if job_id in (m["job"], m["whole"])), None)
    aborted = STEP_ABORTED.search(stderr)
    witness = min((m.start() for m in (ended, aborted) if m is not None), default=None)
    if witness is None:
        return None
    if OWN_FAILURE.search(stderr, 0, witness) is not None:
        return None
    if ended is None:
        return StepEnd(job_id, "ABORTED", "")
    step = f"{ended['job']}.{ended['step']}" if ended["job"] else job_id
    return StepEnd(step, ended["state"], ended["reason"].strip())


def mark_step_end(outcome: RunOutcome, job_id: str) -> RunOutcome:
    """The outcome of an srun step, 'cancelled' when Slurm ended the step, whatever srun's exit code and whatever the
    app printed before: a cancel that lands after the app printed its result but before the step completed leaves
    srun exiting 0 with a verified result, and that run did not run to its end under Slurm."""
    ended = step_end(outcome.stderr, job_id)
    if ended is None:
        return outcome
    note = f"hympi: Slurm ended the launch: {ended.text()} (not the layout's result; --resume runs it again)"
    return replace(outcome, status="cancelled", stderr=f"{outcome.stderr.rstrip()}\n{note}".lstrip())


def step_runner(cmd: list[str], timeout: float, stdin: Path | int | None = None) -> RunOutcome:
    """Runs one srun job step; a step whose tasks did not form one MPI job of --ntasks ranks is failed, and one that
    Slurm ended (scancel of the step, its time limit) is 'cancelled' (mark_step_end), even when srun exited 0. When
    the allocation has ended under the step (scancel of the job, time limit, salloc's allocation revoked), HympiFatal
    instead of an outcome, whatever the step did: the step is not the layout's result, and every later srun would
    fail the same way, so the sweep stops (interrupted) and --resume continues it."""
    tasks = _tasks(cmd)
    outcome = run_command(cmd, timeout, stdin=stdin)  # srun passes it to task 0
    if tasks is not None:
        outcome = one_mpi_job(outcome, tasks, SRUN_REMEDY)
    job_id = current_job()
    if job_id is None:
        return outcome
    # Asked after every step, not only failed ones: a step that printed its result while the allocation was being
    # cancelled is no more a result than one that was killed.
    state = job_state(job_id)
    if state is None or state.state not in ALIVE_STATES:
        ended = "is gone" if state is None else f"has ended ({state.state})"
        raise HympiFatal(f"the Slurm allocation {job_id} {ended}: the run in progress is not recorded; continue "
                         "with --resume in a new allocation")
    return mark_step_end(outcome, job_id)
