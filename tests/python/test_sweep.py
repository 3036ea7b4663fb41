"""hympi sweep: planning, failures and timeouts recorded while the sweep goes on, resume after kill, bad input."""

from __future__ import annotations

import io
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console

import forkcli
from conftest import hympi, sweep_params
from fakeapps import InProcessLauncher, fake_bin_dir, launch_env, launch_ranks, launches, pid_alive
from hympi.errors import UsageError
from hympi.launch.mpirun import RunOutcome
from hympi.params import parse_choice_list, parse_int_list
from hympi.stats.compare import MIN_PAIRS
from hympi.store import Store
from hympi.store.schema import SCHEMA_VERSION
from hympi.sweep import SweepParams, SweepResult, open_sweep, plan, run_sweep
from hympi.sweep_options import cross_layouts
from hympi.topology import machine_summary
from refusals import assert_refused, digest


def _statuses(db: Path) -> dict[tuple[int, int, int], str]:
    with Store.open(db, create=False) as store:
        return {(r.ranks, r.threads, r.repeat): r.status for r in store.runs()}


@pytest.mark.parametrize("text", ["", " ", "1,,2", "1,", "a", "1.5", "0", "-1", "2,0"])
def test_bad_int_lists_are_usage_errors(text):
    with pytest.raises(UsageError, match="--ranks"):
        parse_int_list("--ranks", text)


def test_lists_parse_and_deduplicate():
    assert parse_int_list("--ranks", " 4, 1,2,1") == (4, 1, 2)
    assert parse_choice_list("--bind", "core,none,core", ("none", "core")) == ("core", "none")
    with pytest.raises(UsageError, match="socket"):
        parse_choice_list("--bind", "core,socket", ("none", "core"))


def test_plan_warms_up_then_shuffles_every_round_with_the_recorded_seed():
    params = sweep_params("rb3d", cross_layouts((1, 2, 4), (1, 2)), ("core", "none"), repeat=3, seed=7)
    p = plan(params, cpu_limit=2)
    assert set(p.skipped) == {(2, 2), (4, 1), (4, 2)}
    layouts = {(r, t, b) for r, t in ((1, 1), (1, 2), (2, 1)) for b in ("core", "none")}
    assert len(p.items) == 4 * 6
    rounds = [p.items[i * 6:(i + 1) * 6] for i in range(4)]
    for number, items in enumerate(rounds):  # round 0 is the warm-up, then rounds 1..3: every layout once each
        assert {i.repeat for i in items} == {number}
        assert {(i.ranks, i.threads, i.bind) for i in items} == layouts
    orders = {tuple((i.ranks, i.threads, i.bind) for i in items) for items in rounds}
    assert len(orders) > 1  # each round shuffled anew
    assert plan(params, cpu_limit=2) == p  # the recorded seed gives the same order again (resume)
    other = plan(replace(params, seed=8), cpu_limit=2)
    assert other.items != p.items and sorted(i.key() for i in other.items) == sorted(i.key() for i in p.items)
    cold = plan(replace(params, warmup=False), cpu_limit=2)
    assert len(cold.items) == 18 and min(i.repeat for i in cold.items) == 1
    everything = plan(sweep_params("rb3d", params.layouts, oversubscribe=True, warmup=False), cpu_limit=2)
    assert not everything.skipped and len(everything.items) == 6


def test_params_round_trip_and_old_rows_get_the_behaviour_they_ran_with():
    params = sweep_params("rb3d", ((1, 1), (2, 1)), repeat=3, min_time=0.5, seed=42, auto=True, max_repeat=7,
                          confidence=0.9)
    assert SweepParams.from_dict(params.as_dict()) == params
    assert "seed" not in params.identity() and params.identity()["min_time"] == 0.5
    old = {"app": "rb3d", "layouts": [[1, 1]], "binds": ["core"], "dist": "compact", "repeat": 2, "app_args": [],
           "timeout": 60.0, "oversubscribe": False, "virtual_nodes": 1, "launcher": "mpirun"}
    legacy = SweepParams.from_dict(old)
    assert (legacy.min_time, legacy.warmup, legacy.auto, legacy.seed, legacy.max_repeat) == (0.0, False, False, 0, 2)
    assert dict(params.spec(2, 1, "core").env)["HYMPI_MIN_TIME"] == "0.5"


def test_failed_hung_and_unverified_runs_are_recorded_and_the_sweep_goes_on(tmp_path: Path):
    """Real mpirun, a deliberately failing app: 1x2 exits 3, 2x1 hangs (killed after 6 s), 1x1 fails verification."""
    env = fake_bin_dir(tmp_path, with_launchers=False)
    db = tmp_path / "r.db"
    start = time.monotonic()
    proc = hympi("sweep", "rb3d", "--ranks", "1,2", "--threads", "1,2", "--timeout", "6", "--no-warmup", "--db",
                 str(db), "--", "--fail-at", "1x2", "--hang-at", "2x1", "--unverified-at", "1x1", env=env, timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert time.monotonic() - start < 60
    assert _statuses(db) == {(1, 1, 1): "unverified", (1, 2, 1): "failed", (2, 1, 1): "timeout"}
    with Store.open(db, create=False) as store:
        runs = {(r.ranks, r.threads): r for r in store.runs()}
        assert "deliberate failure at 1x2" in runs[(1, 2)].stderr_tail
        # How it ended, as the record's last line, after the launcher's own lines.
        assert runs[(1, 2)].stderr_tail.rstrip().splitlines()[-1] == "hympi: rb3d ended with exit code 3"
        assert runs[(1, 2)].returncode == 3
        assert "hanging on purpose" in runs[(2, 1)].stderr_tail
        assert runs[(2, 1)].returncode is None
        assert runs[(1, 1)].record is not None and runs[(1, 1)].record["verified"] is False
        assert runs[(1, 1)].command[0].endswith("mpirun")
        assert ("OMP_NUM_THREADS", "2") in runs[(1, 2)].env
        assert store.sweeps()[0].status == "finished"
    pids = [int(x) for x in (tmp_path / "pids").read_text().split()]
    assert len(pids) == 2  # both ranks of the hung 2x1 run started ...
    deadline = time.monotonic() + 10
    while any(pid_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(pid_alive(p) for p in pids), "a hung rank survived the timeout"  # ... and none survived
    assert "skipping 2x2" in proc.stderr


class _FailingRunner(InProcessLauncher):
    """Every launch of the layouts in `failing` fails (exit 1, nothing printed); the others are ok."""

    def __init__(self, failing: set[str], first_only: bool = False) -> None:
        super().__init__()
        self.failing = failing
        self.first_only = first_only
        self.layouts: list[str] = []

    def __call__(self, cmd: list[str], timeout: float) -> RunOutcome:
        layout = f"{launch_ranks(cmd)}x{launch_env(cmd)['OMP_NUM_THREADS']}"
        self.layouts.append(layout)
        if layout in self.failing and not (self.first_only and self.layouts.count(layout) > 1):
            return RunOutcome("failed", 1, 0.0, cmd, "", "no such input: in.melt")
        return super().__call__(cmd, timeout)

    def record(self, cmd: list[str]) -> dict:
        return {"rate": float(launch_ranks(cmd)), "rate_unit": "x", "verified": True, "problem": "p",
                "node_rss_mib": 10.0}


def _failing_sweep(db: Path, runner: _FailingRunner, resume: bool = False,
                   layouts: tuple[tuple[int, int], ...] = ((1, 1), (2, 1), (1, 2))) -> tuple[SweepResult, str]:
    """A sweep of `layouts` with a warm-up each and 4 rounds (15 launches planned for 3 layouts), run by `runner`."""
    params = sweep_params("rb3d", layouts, repeat=4, seed=5, min_time=0.0)
    the_plan = plan(params, cpu_limit=2)
    out = io.StringIO()
    with Store.open(db) as store:
        machine = store.ensure_machine("h", "t", "m", "c", {})
        sweep, _ = open_sweep(store, machine, params, len(the_plan.items), resume)
        result = run_sweep(store, sweep, params, the_plan.items, Console(file=out, width=400), runner)
    return result, out.getvalue()


def test_a_sweep_whose_every_layout_fails_at_its_first_launch_launches_nothing_more(tmp_path: Path):
    """A wrong --verify, a missing input or library fails every layout alike: 3 launches tell, not 15. The sweep ends
    finished with those runs and says why; a layout that fails beside others that run ok is measured to the end."""
    runner = _FailingRunner({"1x1", "2x1", "1x2"})
    result, out = _failing_sweep(tmp_path / "r.db", runner)
    assert sorted(runner.layouts) == ["1x1", "1x2", "2x1"]  # each layout's warm-up, then nothing
    assert result.ran == 3 and result.statuses == {"failed": 3}
    assert result.gave_up.startswith("every launch failed (")
    assert all(f"{name} core: failed" in result.gave_up for name in ("1x1", "2x1", "1x2")), result.gave_up
    assert "the 12 launch(es) left would fail alike, so none was made" in result.gave_up
    assert result.gave_up in out
    with Store.open(tmp_path / "r.db", create=False) as store:
        (sweep,) = store.sweeps()
        assert (sweep.status, sweep.note, sweep.total) == ("finished", result.gave_up, 15)

    runner = _FailingRunner({"1x1"}, first_only=True)  # a one-off: its first launch failed, and 1x1 is tried again
    result, out = _failing_sweep(tmp_path / "t.db", runner, layouts=((1, 1),))
    assert len(runner.layouts) == 5 and result.statuses == {"failed": 1, "ok": 4} and not result.gave_up

    runner = _FailingRunner({"1x1"})  # 1x1 alone fails twice
    result, out = _failing_sweep(tmp_path / "u.db", runner, layouts=((1, 1),))
    assert len(runner.layouts) == 2 and result.gave_up.startswith("every launch failed (1x1 core: failed, failed) ")

    runner = _FailingRunner({"1x1"})  # 1x1 fails every time, the others never: a result, measured in full
    result, out = _failing_sweep(tmp_path / "s.db", runner)
    assert len(runner.layouts) == 15 and result.statuses == {"failed": 5, "ok": 10} and not result.gave_up
    assert "fail alike" not in out


def test_a_sweep_that_ran_ok_once_or_whose_failures_were_mended_goes_on(tmp_path: Path):
    """One ok run of the sweep, earlier too, keeps it going: the failures since are results. A resumed sweep tries
    each layout left again, so one whose first launches failed before it was mended runs to its end."""
    db = tmp_path / "r.db"
    runner = _FailingRunner(set())
    runner.stop_at = 5  # killed at its 5th launch: 4 ok runs recorded
    with pytest.raises(KeyboardInterrupt):
        _failing_sweep(db, runner)
    runner = _FailingRunner({"1x1", "2x1", "1x2"})  # since broken: every launch fails, but the sweep ran ok before
    result, _ = _failing_sweep(db, runner, resume=True)
    assert len(runner.layouts) == 11 and result.statuses == {"failed": 11} and not result.gave_up

    db = tmp_path / "s.db"
    _failing_sweep(db, _FailingRunner({"1x1", "2x1", "1x2"}))
    with Store.open(db, create=False) as store:  # as if stopped before it gave up: the same sweep resumes
        store.set_sweep_status(store.sweeps()[0].id, "interrupted")
    runner = _FailingRunner(set())
    result, _ = _failing_sweep(db, runner, resume=True)
    assert len(runner.layouts) == 12 and result.statuses == {"ok": 12} and not result.gave_up


def test_a_skipped_layout_is_not_said_before_bad_input(tmp_path: Path):
    """`hympi sweep rb3d --ranks 1,2 --threads 1,2 --db /proc/x.db` on 2 PUs said 'skipping 2x2' and then the
    database's error: bad input is one line. A sweep that starts still says what it skips."""
    env = fake_bin_dir(tmp_path)
    pus = machine_summary().pus
    layouts = ["--ranks", "1,2", "--threads", f"1,{pus}"]  # 2 x PUs: more than the machine has
    proc = hympi("sweep", "rb3d", *layouts, "--db", "/proc/x.db", env=env)
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith("hympi: error: cannot create database /proc/x.db") and not launches(env)
    proc = hympi("sweep", "rb3d", *layouts, "--dry-run", "--db", str(tmp_path / "r.db"), env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines() == [f"hympi: skipping 2x{pus}: {2 * pus} > {pus} PUs (use --oversubscribe)"]


def _wait_for_runs(db: Path, count: int, proc: subprocess.Popen, limit: float = 60.0) -> int:
    """Polls the database (as another reader would) until `count` runs are committed."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the sweep ended before it was interrupted"
        if db.exists():
            try:
                conn = sqlite3.connect(db, timeout=5)
                n = conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
                conn.close()
                if n >= count:
                    return n
            except sqlite3.OperationalError:
                pass
        time.sleep(0.05)
    raise AssertionError(f"fewer than {count} runs after {limit} s")


def _default_stop_signals() -> None:
    """In the child: SIGINT, SIGTERM and SIGHUP back to their defaults. A test run started in the background by a
    non-interactive shell (`make test &`, a CI step) ignores SIGINT, one under nohup SIGHUP, children inherit that,
    and hympi then leaves them ignored: the interrupt test would see a sweep that never stops."""
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)


def _sweep_process(args: list[str], env: dict[str, str]) -> subprocess.Popen:
    cmd = forkcli.command(args)
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **env}, start_new_session=True,
                            preexec_fn=_default_stop_signals)  # noqa: PLW1509 - signal calls only, no locks


@pytest.mark.parametrize("how", ["SIGKILL", "SIGKILL-then-resume", "SIGTERM", "SIGHUP"])
def test_killed_sweep_resumes_without_duplicates_or_losses(tmp_path: Path, how: str):
    """SIGKILL leaves the row running: `hympi report` (SIGKILL) says its owner is gone without writing (it opens the
    database read-only), the resume itself marks it interrupted (a sweep still marked running with a live owner
    would be refused). SIGTERM exits 143, SIGHUP (the terminal closed) 129."""
    env = fake_bin_dir(tmp_path)
    db = tmp_path / "r.db"
    args = ["sweep", "rb3d", "--ranks", "1,2", "--threads", "1,2", "--repeat", "4", "--db", str(db), "--",
            "--sleep", "0.15"]
    proc = _sweep_process(args, env)
    _wait_for_runs(db, 4, proc)
    if how.startswith("SIGKILL"):
        os.kill(proc.pid, signal.SIGKILL)  # no clean-up at all; the launch in flight must still die with it
        proc.wait(timeout=10)
        time.sleep(1.0)  # longer than one run: an orphaned launch would log itself by now
        with Store.open(db, create=False) as store:
            assert store.sweeps()[0].status == "running"  # nobody was left to say otherwise ...
    if how == "SIGKILL":
        report = hympi("report", "--db", str(db), "--out", str(tmp_path / "rep"), env=env)
        assert report.returncode == 0, report.stderr
        assert "sweep 1 was left running by a process that no longer exists (continue it" in report.stderr
    elif how in ("SIGTERM", "SIGHUP"):
        signum = signal.Signals[how]
        proc.send_signal(signum)  # hympi alone, as a batch system would
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 128 + signum, err  # as if the signal had killed it
        assert "--resume" in err
    with Store.open(db, create=False) as store:
        before = {r.key(): (r.id, r.started_at, r.wall_s) for r in store.runs()}
        sweep = store.sweeps()[0]
        # ... until the signal handler ran (SIGTERM); the report only looked (SIGKILL)
        assert sweep.status == ("running" if how.startswith("SIGKILL") else "interrupted")
    assert 4 <= len(before) < 15
    launched_before = len(launches(env))
    assert launched_before in (len(before), len(before) + 1)  # at most the run in flight was lost

    proc = hympi(*args[:-3], "--resume", "--", "--sleep", "0.15", env=env, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"resuming sweep {sweep.id}" in proc.stdout
    with Store.open(db, create=False) as store:
        runs = store.runs()
        assert [s.id for s in store.sweeps()] == [sweep.id]  # no second sweep
        assert store.sweeps()[0].status == "finished"
    keys = [r.key() for r in runs]
    assert len(keys) == len(set(keys)) == 15  # all 3 layouts x (1 warm-up + 4 repeats), none twice
    assert set(keys) == {(r, t, "core", rep, "none", ()) for r, t in ((1, 1), (1, 2), (2, 1)) for rep in range(5)}
    for run in runs:
        if run.key() in before:  # nothing finished was repeated or rewritten
            assert (run.id, run.started_at, run.wall_s) == before[run.key()]
    assert len(launches(env)) - launched_before == 15 - len(before)

    again = hympi(*args[:-3], "--resume", "--", "--sleep", "0.15", env=env, timeout=60)
    assert again.returncode == 0
    assert "starting sweep" in again.stdout  # a finished sweep is not resumed; a new one starts


# `hympi ARGS` whose third launch gets SIGTERM from inside subprocess's at-fork callback: Python runs the signal
# handler there, between two bytecodes, and drops any exception it raises (printed as unraisable). A SIGTERM that
# came at that moment used to be lost: the sweep ran on to its end and exited 0. The handler notes it instead, while
# the launch starts (hympi.launch.stop), and raises it once the launch is held, to kill it.
SIGTERM_AT_FORK = """
import os, signal, sys
fired = []
def hook():
    log = os.environ["FAKE_LOG"]
    if not fired and os.path.exists(log) and len(open(log).read().splitlines()) >= 2:
        fired.append(True)
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(10000):
            pass  # the handler runs here
os.register_at_fork(after_in_parent=hook)
from hympi.cli import main
sys.exit(main())
"""


def test_a_sigterm_that_comes_as_a_launch_forks_still_stops_the_sweep(tmp_path: Path) -> None:
    env = fake_bin_dir(tmp_path)
    db = tmp_path / "r.db"
    cmd = [sys.executable, "-c", SIGTERM_AT_FORK, "sweep", "rb3d", "--ranks", "1,2", "--threads", "1,2",
           "--repeat", "4", "--db", str(db), "--", "--sleep", "0.05"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env={**os.environ, **env}, check=False,
                          preexec_fn=_default_stop_signals)
    assert "Exception ignored" not in proc.stderr, proc.stderr  # noted, not raised where it would be dropped
    assert proc.returncode == 143, proc.stderr
    assert "--resume" in proc.stderr
    with Store.open(db, create=False) as store:
        assert store.sweeps()[0].status == "interrupted"
        assert len(store.runs()) == 2  # the launch in flight was killed as it started; none started after it
    assert len(launches(env)) <= 3


def _wait_for_held_launch(env: dict[str, str], proc: subprocess.Popen[str], limit: float = 60.0) -> int:
    """Polls until a launch of the sweep hangs (FAKE_HOLD_AFTER: the fake app wrote its pid) and returns that pid:
    from then on the sweep cannot finish on its own, however slow or fast the machine."""
    pids = Path(env["FAKE_PIDS"])
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"the sweep ended before a launch was held: {proc.communicate()}"
        if pids.exists() and pids.read_text().split():
            return int(pids.read_text().split()[0])
        time.sleep(0.05)
    raise AssertionError(f"no held launch after {limit} s")


def test_resume_by_id_uses_the_recorded_parameters(tmp_path: Path) -> None:
    env = fake_bin_dir(tmp_path)
    db = tmp_path / "r.db"
    args = ["sweep", "rb3d", "--ranks", "1,2", "--threads", "1", "--repeat", "3", "--db", str(db), "--",
            "--sleep", "0.2"]
    # The third launch hangs until the sweep is interrupted: the interrupt cannot come after the sweep's end (it did,
    # on a busy machine, when the sweep's remaining sleeps were all that kept it going: it exited 0).
    proc = _sweep_process(args, {**env, "FAKE_HOLD_AFTER": "2"})
    held = _wait_for_held_launch(env, proc)
    assert _wait_for_runs(db, 2, proc) == 2
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert not pid_alive(held)  # the interrupt ended the launch in flight
    resumed = hympi("sweep", "rb3d", "--db", str(db), "--resume", "1", env=env)
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming sweep 1" in resumed.stdout and "2 already recorded" in resumed.stdout, resumed.stdout
    with Store.open(db, create=False) as store:
        runs = store.runs()
        assert len(runs) == 8 and len(store.sweeps()) == 1  # 2 layouts x (warm-up + 3)
        assert store.sweep(1).status == "finished"
    assert all(r.command[-2:] == ("--sleep", "0.2") and r.status == "ok" for r in runs)  # the recorded arguments
    wrong = hympi("sweep", "stream", "--db", str(db), "--resume", "1", env=env)
    assert wrong.returncode == 2 and "sweep 1 is a sweep of rb3d" in wrong.stderr
    missing = hympi("sweep", "rb3d", "--db", str(db), "--resume", "9", env=env)
    assert missing.returncode == 2 and "no sweep 9" in missing.stderr


def test_dry_run_prints_the_exact_commands_and_records_nothing(tmp_path: Path):
    env = fake_bin_dir(tmp_path)
    db = tmp_path / "r.db"
    proc = hympi("sweep", "rb3d", "--ranks", "1,2", "--threads", "1,2", "--bind", "core,none", "--db", str(db),
                 "--min-time", "0.25", "--seed", "5", "--dry-run", "--", "--size", "16", env=env)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 12 and len(set(lines)) == 6  # (3 layouts that fit 2 PUs x 2 bindings) x (warm-up + 1)
    assert lines[:6] != lines[6:]  # the warm-up round and the measured round run in their own random orders
    assert lines[0].split()[0] == env["HYMPI_MPIRUN"]
    assert ("--allow-run-as-root" in lines[0].split()) == (os.geteuid() == 0)
    assert all("-x HYMPI_MIN_TIME=0.25" in line and line.endswith("hympi-rb3d --size 16") for line in lines)
    assert sum("-np 2" in line for line in lines) == 4 and sum("HYMPI_BIND=none" in line for line in lines) == 6
    again = hympi("sweep", "rb3d", "--ranks", "1,2", "--threads", "1,2", "--bind", "core,none", "--db", str(db),
                  "--min-time", "0.25", "--seed", "5", "--dry-run", "--", "--size", "16", env=env)
    assert again.stdout == proc.stdout  # the seed fixes the order
    assert not db.exists() and not launches(env)


def test_resume_by_id_refuses_other_app_arguments_naming_both(tmp_path: Path):
    env = fake_bin_dir(tmp_path)
    db = tmp_path / "r.db"
    first = hympi("sweep", "rb3d", "--ranks", "1,2", "--db", str(db), "--", "--sleep", "0", env=env)
    assert first.returncode == 0, first.stderr
    before, launched = digest(db), len(launches(env))
    proc = hympi("sweep", "rb3d", "--db", str(db), "--resume", "1", "--", "--sleep", "0.5", env=env)
    assert proc.returncode == 2
    (line,) = proc.stderr.strip().splitlines()
    assert "'--sleep 0'" in line and "'--sleep 0.5'" in line
    assert digest(db) == before and len(launches(env)) == launched


def test_resume_that_finds_nothing_says_which_parameters_differ_from_the_newest_unfinished(tmp_path: Path):
    env = fake_bin_dir(tmp_path)
    db = tmp_path / "r.db"
    nothing = hympi("sweep", "rb3d", "--ranks", "1", "--db", str(db), "--resume", "--", "--sleep", "0", env=env)
    assert nothing.returncode == 0, nothing.stderr
    assert "--resume: no unfinished sweep of rb3d to continue" in nothing.stdout, nothing.stdout
    first = hympi("sweep", "rb3d", "--ranks", "1,2", "--db", str(db), "--", "--sleep", "0", env=env)
    assert first.returncode == 0, first.stderr
    with Store.open(db) as store:
        store.set_sweep_status(2, "interrupted")  # as a sweep stopped part-way leaves it
    other = hympi("sweep", "rb3d", "--ranks", "1", "--timeout", "30", "--db", str(db), "--resume", "--", "--sleep",
                  "0", env=env)
    assert other.returncode == 0, other.stderr
    (line,) = [t for t in other.stdout.splitlines() if t.startswith("--resume")]
    assert line == ("--resume: no unfinished sweep of rb3d has these parameters; the closest, sweep 2 (interrupted), "
                    "differs in --ranks/--threads (1x1,2x1 there, 1x1 here); --timeout (600.0 there, 30.0 here): "
                    "'--resume 2' continues it with its own parameters"), line
    assert "starting sweep 3" in other.stdout
    same = hympi("sweep", "rb3d", "--ranks", "1,2", "--db", str(db), "--resume", "--", "--sleep", "0", env=env)
    assert "resuming sweep 2" in same.stdout and "--resume:" not in same.stdout, same.stdout


def test_a_live_sweep_is_not_resumed_twice(tmp_path: Path) -> None:
    env = fake_bin_dir(tmp_path)
    db = tmp_path / "r.db"
    args = ["sweep", "rb3d", "--ranks", "1,2", "--repeat", "4", "--db", str(db), "--", "--sleep", "0.3"]
    # The second launch hangs until the test stops the sweep, so the sweep is live while the second process asks, on
    # any machine (sleeps alone let a busy machine finish the sweep first: the second then resumed a finished one).
    proc = _sweep_process(args, {**env, "FAKE_HOLD_AFTER": "1"})
    try:
        held = _wait_for_held_launch(env, proc)
        second = hympi("sweep", "rb3d", "--db", str(db), "--resume", "1", env=env)
        assert second.returncode == 2 and f"pid {proc.pid}" in second.stderr, second.stderr
        assert proc.poll() is None and pid_alive(held)  # the refusal touched neither the sweep nor its launch
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
    assert proc.returncode == 143
    assert not pid_alive(held)
    with Store.open(db, create=False) as store:
        assert len(store.runs()) == 1 and store.sweep(1).status == "interrupted"


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["sweep", "rb3d", "--ranks", ""], "--ranks"),
        (["sweep", "rb3d", "--ranks", "1,,2"], "1,,2"),
        (["sweep", "rb3d", "--ranks", "0"], "0"),
        (["sweep", "rb3d", "--threads", "two"], "two"),
        (["sweep", "rb3d", "--bind", "core,socket"], "socket"),
        (["sweep", "rb3d", "--bind", ""], "--bind"),
        (["sweep", "rb3d", "--dist", "spread"], "spread"),
        (["sweep", "rb3d", "--repeat", "0"], "0"),
        (["sweep", "rb3d", "--repeat", "some"], "'some'"),
        (["sweep", "rb3d", "--repeat", "auto", "--max-repeat", "3"], "got 3"),
        (["sweep", "rb3d", "--max-repeat", "5"], "--max-repeat 5"),
        (["sweep", "rb3d", "--repeat", "auto", "--confidence", "1.5"], "1.5"),
        (["sweep", "rb3d", "--timeout", "-5"], "-5"),
        (["sweep", "rb3d", "--timeout", "-1"], "-1"),
        (["sweep", "rb3d", "--timeout", "0"], "got 0"),
        (["sweep", "rb3d", "--timeout", "nan"], "nan"),
        (["sweep", "rb3d", "--timeout", "inf"], "inf"),
        (["sweep", "rb3d", "--min-time", "-1"], "-1"),
        (["sweep", "rb3d", "--min-time", "nan"], "nan"),
        (["sweep", "rb3d", "--seed", "-1"], "-1"),
        (["sweep", "rb3d", "--seed", "x"], "'x'"),
        (["sweep", "rb3d", "--virtual-nodes", "5", "--ranks", "2"], "--virtual-nodes 5"),
        (["sweep", "rb3d", "--virtual-nodes", "2", "--ranks", "1,2"], "layout 1x1"),
        (["sweep", "rb3d", "--launcher", "pbs"], "pbs"),
        (["sweep", "rb3d", "--disturbed-above", "0"], "--disturbed-above must be a finite number of cores > 0"),
        (["sweep", "rb3d", "--disturbed-above", "nan"], "nan"),
        (["sweep", "rb3d", "--wait-quiet", "-1"], "-1"),
        (["sweep", "nosuchapp"], "nosuchapp"),
        (["sweep", "rb3d", "--ranks", "8", "--threads", "8"], "--oversubscribe"),
        (["sweep", "rb3d", "--", "--reject"], "--reject"),
        (["sweep", "rb3d", "--resume", "x"], "'x'"),
        (["report", "--out", "FILE"], "not a directory"),
        (["export", "--format", "xml"], "xml"),
        (["study", "--apps", "rb3d,doom"], "doom"),
        (["study", "--repeat", "0"], "0"),
        (["study", "--timeout", "nan"], "nan"),
        (["study", "--min-time", "inf"], "inf"),
        (["study", "--seed", "-1"], "-1"),
        (["study", "--disturbed-above", "x"], "'x'"),
        (["study", "--wait-quiet", "inf"], "inf"),
    ],
)
def test_bad_input_exits_2_with_one_line_and_the_database_untouched(tmp_path: Path, args, needle):
    env = fake_bin_dir(tmp_path)
    db = tmp_path / "r.db"
    with Store.open(db) as store:  # an existing database, with a finished run in it
        machine = store.ensure_machine("h", "t", "m", "c", {})
        store.create_sweep(machine.id, "rb3d", {}, 1)
    (tmp_path / "FILE").write_text("a file where a directory should be")
    before = digest(db)
    args = [a.replace("FILE", str(tmp_path / "FILE")) for a in args]
    split = args.index("--") if "--" in args else len(args)
    proc = hympi(*args[:split], "--db", str(db), *args[split:], env=env)
    assert_refused(proc, needle)
    assert digest(db) == before
    assert not launches(env), "something was launched for bad input"


@pytest.mark.parametrize("kind", ["foreign", "newer", "text"])
def test_a_database_that_is_not_ours_is_refused_untouched(tmp_path: Path, kind: str):
    env = fake_bin_dir(tmp_path)
    db = tmp_path / "x.db"
    if kind == "foreign":
        conn = sqlite3.connect(db)
        conn.execute("CREATE TABLE invoices (id INTEGER)")
        conn.commit()
        conn.close()
    elif kind == "newer":
        with Store.open(db) as store:
            store.conn.execute("INSERT INTO schema_version VALUES (99, 'future', 'later')")
    else:
        db.write_text("hello\n" * 1000)
    before = digest(db)
    for cmd in (["sweep", "rb3d"], ["report", "--out", str(tmp_path / "rep")], ["export"]):
        proc = hympi(*cmd, "--db", str(db), env=env)
        assert proc.returncode == 2, proc.stderr
        assert ("newer than this hympi" if kind == "newer" else "not a hympi results database") in proc.stderr
        assert digest(db) == before
    assert not launches(env)


def test_a_version_2_database_migrates_and_its_running_sweep_without_owner_counts_as_stale(tmp_path: Path):
    from hympi.store.schema import APPLICATION_ID, MIGRATIONS

    db = tmp_path / "old.db"
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute("CREATE TABLE schema_version (version INTEGER PRIMARY KEY, description TEXT NOT NULL, "
                 "applied_at TEXT NOT NULL)")
    for migration in MIGRATIONS[:2]:  # the schema hympi had before sweeps recorded their owner
        conn.executescript(migration.sql)
        conn.execute("INSERT INTO schema_version VALUES (?, ?, 'then')", (migration.version, migration.description))
    conn.execute("INSERT INTO machines VALUES (1, 'h', 't', 'm', 'c', '{}', 'then')")
    old = {"app": "rb3d", "layouts": [[1, 1]], "binds": ["core"], "dist": "compact", "repeat": 2, "app_args": [],
           "timeout": 60.0, "oversubscribe": False, "virtual_nodes": 1, "launcher": "mpirun"}
    conn.execute("INSERT INTO sweeps (machine_id, app, params_key, params_json, total, status, created_at) "
                 "VALUES (1, 'rb3d', 'k', ?, 2, 'running', 'then')", (json.dumps(old),))
    conn.close()
    with Store.open(db) as store:
        assert store.schema_version() == SCHEMA_VERSION
        (sweep,) = store.sweeps()
        assert sweep.owner_pid is None and SweepParams.from_dict(sweep.params).warmup is False
        assert store.mark_stale_interrupted() == [sweep.id]
        assert store.sweep(sweep.id).status == "interrupted"
        mine = store.create_sweep(1, "rb3d", old, 1)  # owned by this (live) process: not stale
        assert store.mark_stale_interrupted() == [] and store.sweep(mine.id).status == "running"


class _NoisyRunner(InProcessLauncher):
    """The rate of each launch from its layout and how often that layout ran before."""

    def __init__(self, stop_at: int | None = None) -> None:
        super().__init__(stop_at)
        self.counts: dict[str, int] = {}

    def record(self, cmd: list[str]) -> dict:
        ranks = launch_ranks(cmd)
        layout = f"{ranks}x{launch_env(cmd)['OMP_NUM_THREADS']}"
        seen = self.counts.get(layout, 0)
        self.counts[layout] = seen + 1
        rate = {"1x1": 1.0, "2x1": 1.15, "1x2": 1.1}[layout] * (1 + random.Random(f"{layout}:{seen}").uniform(-.3, .3))
        return {"rate": rate, "rate_unit": "x", "verified": True, "problem": "p", "node_rss_mib": 10.0 * ranks}


class _DriftingRunner(InProcessLauncher):
    """A machine whose pace moves +-30 % from round to round, on which 2x1 is 1.06x 1x1 with +-1 % noise: a layout's
    n-th launch is its n-th round (both run in every round until one is separated)."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: dict[str, int] = {}

    def record(self, cmd: list[str]) -> dict:
        ranks = launch_ranks(cmd)
        seen = self.counts.get(str(ranks), 0)
        self.counts[str(ranks)] = seen + 1
        pace = 1 + random.Random(f"pace:{seen}").uniform(-0.3, 0.3)
        rate = {1: 1.0, 2: 1.06}[ranks] * pace * (1 + random.Random(f"{ranks}:{seen}").uniform(-0.01, 0.01))
        return {"rate": rate, "rate_unit": "x", "verified": True, "problem": "p", "node_rss_mib": 10.0}


def test_auto_separates_a_lead_the_drift_hides_once_the_rounds_can_be_paired(tmp_path: Path, monkeypatch):
    """Two samples cannot separate a 6 % lead under a +-30 % drift between rounds; from MIN_PAIRS rounds on the
    sweep compares round by round and stops there."""
    for key, value in fake_bin_dir(tmp_path).items():
        monkeypatch.setenv(key, value)
    params = sweep_params("rb3d", ((1, 1), (2, 1)), repeat=4, auto=True, max_repeat=12, seed=3, min_time=0.0)
    the_plan = plan(params, cpu_limit=2)
    with Store.open(tmp_path / "r.db") as store:
        machine = store.ensure_machine("h", "t", "m", "c", {})
        sweep, _ = open_sweep(store, machine, params, len(the_plan.items), False)
        run_sweep(store, sweep, params, the_plan.items, Console(file=io.StringIO()), _DriftingRunner())
        note = store.sweep(sweep.id).note
    assert note is not None and note.startswith(f"--repeat auto: the best is separated from the runner-up after "
                                                f"{MIN_PAIRS} round(s): 2x1 core is 1.06x 1x1 core (95 % CI "), note
    assert note.endswith(", round by round)"), note


def _auto_sweep(db: Path, runner: _NoisyRunner, resume: bool) -> tuple[list[tuple], str | None]:
    # sweep_params' threshold: a run judged disturbed by the load beside the tests is left out of the rounds, which
    # would make the two sweeps' rounds differ with the machine's load, not with the interruption.
    params = sweep_params("rb3d", cross_layouts((1, 2), (1, 2)), repeat=3, auto=True, max_repeat=12, seed=9,
                          min_time=0.0)
    the_plan = plan(params, cpu_limit=2)
    quiet = Console(file=io.StringIO())
    with Store.open(db) as store:
        machine = store.ensure_machine("h", "t", "m", "c", {})
        sweep, _ = open_sweep(store, machine, params, len(the_plan.items), resume)
        run_sweep(store, sweep, params, the_plan.items, quiet, runner)
        runs = [(r.key(), r.value("rate")) for r in store.runs()]
        return sorted(runs), store.sweep(sweep.id).note


def test_an_interrupted_auto_sweep_resumes_to_the_same_rounds_and_decision(tmp_path: Path, monkeypatch):
    for key, value in fake_bin_dir(tmp_path).items():
        monkeypatch.setenv(key, value)
    whole, note = _auto_sweep(tmp_path / "a.db", _NoisyRunner(), resume=False)
    assert note is not None and note.startswith("--repeat auto:")
    assert max(key[3] for key, _ in whole) > 4  # it needed extra rounds, so the interruption falls inside them
    runner = _NoisyRunner(stop_at=len(whole) - 3)
    with pytest.raises(KeyboardInterrupt):
        _auto_sweep(tmp_path / "b.db", runner, resume=False)
    runner.stop_at = None
    resumed, resumed_note = _auto_sweep(tmp_path / "b.db", runner, resume=True)
    assert resumed == whole and resumed_note == note  # same rounds, same layouts per round, same verdict
