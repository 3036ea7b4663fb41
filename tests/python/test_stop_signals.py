"""SIGTERM and SIGHUP to hympi while it runs a program: the program's whole process group is killed (also a program
that never calls MPI_Init, which mpirun leaves running when it goes) and hympi exits as killed by the signal."""

from __future__ import annotations

import csv
import io
import os
import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest

import forkcli
import skips
from fakeapps import pid_alive
from hympi.errors import StoppedBySignal
from hympi.launch.stop import stop_if_signalled, stop_signals
from hympi.store import Store
from userprograms import shell_program

pytestmark = skips.needs_apps()

# Long enough that only a kill ends them; what the test waits on is a file or a process's end, never this.
LIMIT_S = 60.0


def _signals_default() -> None:
    """In the child: the stop signals at their defaults, whatever the test run inherited (`nohup make test`)."""
    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(signum, signal.SIG_DFL)


def _hanging_program(tmp_path: Path) -> tuple[Path, Path]:
    """A program that never calls MPI_Init and starts a child that would outlive it, writing that child's pid."""
    pid_file = tmp_path / "child.pid"
    program = shell_program(tmp_path, "hang.sh", f"sleep 1000 &\necho $! > {pid_file}.part\n"
                                                 f"mv {pid_file}.part {pid_file}\necho hanging\nwait\n")
    return program, pid_file


def _wait_for(pid_file: Path, proc: subprocess.Popen[str]) -> int:
    deadline = time.monotonic() + LIMIT_S
    while not pid_file.exists():
        assert proc.poll() is None, f"hympi ended before the program started: {proc.communicate()}"
        assert time.monotonic() < deadline, "the program did not start"
        time.sleep(0.05)
    return int(pid_file.read_text())


def _stopped(args: list[str], cwd: Path, pid_file: Path, signum: int) -> tuple[int, str, str]:
    """`hympi ARGS` in `cwd`, sent `signum` once the program it runs has written its child's pid into `pid_file`: its
    exit code and output, after checking that the child did not outlive it (killed in any case)."""
    proc = subprocess.Popen(forkcli.command(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=cwd, start_new_session=True,
                            preexec_fn=_signals_default)  # noqa: PLW1509 - signal calls only, no locks
    child = None
    try:
        child = _wait_for(pid_file, proc)
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=LIMIT_S)
        assert _gone(child), "the program's child outlived hympi"
        return proc.returncode, out, err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        if child is not None and pid_alive(child):
            psutil.Process(child).kill()


def _gone(pid: int) -> bool:
    """Whether `pid` has ended (within LIMIT_S: a SIGTERM takes a moment to end a process)."""
    deadline = time.monotonic() + LIMIT_S
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not pid_alive(pid)


@pytest.mark.parametrize(("command", "signum"), [
    ("run", signal.SIGTERM),
    ("run", signal.SIGHUP),
    ("affinity", signal.SIGTERM),
    ("profile", signal.SIGHUP),
])
def test_a_stopped_hympi_leaves_no_process_of_its_program_running(tmp_path: Path, command: str, signum: int):
    program, pid_file = _hanging_program(tmp_path)
    args = (["profile", "--out", str(tmp_path / "p.json"), "--", "mpirun", "-np", "1", str(program)]
            if command == "profile" else [command, str(program)])
    code, _, err = _stopped(args, tmp_path, pid_file, signum)
    assert code == 128 + signum, err
    assert f"hympi: stopped by {signal.Signals(signum).name}" in err
    assert not (tmp_path / "p.json").exists()


def test_a_signal_the_caller_ignores_stays_ignored():
    before = signal.signal(signal.SIGHUP, signal.SIG_IGN)  # as under nohup
    try:
        with stop_signals():
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
            assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
    finally:
        signal.signal(signal.SIGHUP, before)


def test_a_signal_noted_under_stop_signals_is_raised_by_every_later_check():
    before = signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        with stop_signals() as check:
            with stop_signals() as inner:  # nested: the outer handlers stay in force
                assert signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, before)
                with pytest.raises(StoppedBySignal) as raised:
                    os.kill(os.getpid(), signal.SIGTERM)
                    inner()  # the handler raised already, or the check does
                assert raised.value.exit_code == 143
            with pytest.raises(StoppedBySignal):
                check()
        stop_if_signalled()  # the signal belonged to the context that ended
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    finally:
        signal.signal(signal.SIGTERM, before)


def test_the_launch_a_stopped_sweep_killed_is_kept_as_a_cancelled_attempt_and_run_again_on_resume(tmp_path: Path,
                                                                                                  monkeypatch):
    """A sweep stopped by SIGTERM (a batch job's time limit) recorded its finished runs and nothing of the launch it
    killed: now that launch is a cancelled attempt, with how long it had run, as Slurm's cancelled steps are, the
    report says the sweep is unfinished, and --resume runs its item again."""
    pid_file = tmp_path / "child.pid"
    shell_program(tmp_path, "solver", 'n=$(cat count 2>/dev/null || echo 0); echo $((n + 1)) > count\n'
                                      f'if [ "$n" -eq 1 ]; then sleep 1000 & echo $! > {pid_file}.part; '
                                      f'mv {pid_file}.part {pid_file}; wait; fi\necho done\n')
    sweep = ["sweep", "./solver", "--ranks", "1", "--repeat", "2", "--no-warmup", "--ignore-load", "--db", "r.db"]
    code, out, err = _stopped(sweep, tmp_path, pid_file, signal.SIGTERM)
    assert code == 143 and "1x1 core #2                cancelled" in out, out + err
    with Store.open(tmp_path / "r.db", create=False) as store:
        assert [(r.repeat, r.status) for r in store.runs()] == [(1, "ok")]
        (attempt,) = store.attempts()
        assert (attempt.repeat, attempt.status, attempt.returncode) == (2, "cancelled", None)
        assert attempt.wall_s > 0 and attempt.stderr_tail.startswith("hympi: stopped by signal 15 (SIGTERM) after ")
    monkeypatch.chdir(tmp_path)
    report = ["report", "--db", "r.db", "--out", "rep"]
    stopped = forkcli.run(report, dict(os.environ), LIMIT_S)  # what it says of the sweep is of 1 run in 2
    assert stopped.returncode == 0 and stopped.stdout.splitlines()[0] == (
        "sweep 1 (solver) was stopped with 1 of its 2 planned runs: what is said of it is said of those ('--resume' "
        "continues it)"), stopped.stdout + stopped.stderr
    exported = forkcli.run(["export", "--db", "r.db", "--attempts"], dict(os.environ), LIMIT_S)
    (row,) = csv.DictReader(io.StringIO(exported.stdout))
    assert (row["app"], row["repeat"], row["status"], row["stderr_tail"]) == (
        "solver", "2", "cancelled", attempt.stderr_tail), exported.stdout + exported.stderr
    resumed = forkcli.run([*sweep, "--resume"], dict(os.environ), LIMIT_S)
    assert resumed.returncode == 0 and "1 already recorded" in resumed.stdout, resumed.stdout + resumed.stderr
    with Store.open(tmp_path / "r.db", create=False) as store:
        assert [(r.repeat, r.status) for r in store.runs()] == [(1, "ok"), (2, "ok")]
        assert store.sweeps()[0].status == "finished"
    assert "planned runs" not in forkcli.run(report, dict(os.environ), LIMIT_S).stdout
