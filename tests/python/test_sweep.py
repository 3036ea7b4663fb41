"""hympi sweep: planning, failures and timeouts recorded while the sweep goes on, resume after kill, bad input."""

from __future__ import annotations

import hashlib
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import hympi
from fakeapps import fake_bin_dir, launches, pid_alive
from hympi.errors import UsageError
from hympi.store import Store
from hympi.sweep import SweepParams, cross_layouts, parse_choice_list, parse_int_list, plan


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


def test_plan_skips_oversubscription_and_interleaves_repeats():
    params = SweepParams("rb3d", cross_layouts((1, 2, 4), (1, 2)), ("core", "none"), repeat=2)
    p = plan(params, cpu_limit=2)
    assert set(p.skipped) == {(2, 2), (4, 1), (4, 2)}
    assert [i.key() for i in p.items[:6]] == [(1, 1, "core", 1), (1, 2, "core", 1), (2, 1, "core", 1),
                                              (1, 1, "none", 1), (1, 2, "none", 1), (2, 1, "none", 1)]
    assert len(p.items) == 12 and p.items[-1].key() == (2, 1, "none", 2)
    everything = plan(SweepParams("rb3d", params.layouts, oversubscribe=True), cpu_limit=2)
    assert not everything.skipped and len(everything.items) == 6


def test_failed_hung_and_unverified_runs_are_recorded_and_the_sweep_goes_on(tmp_path: Path):
    """Real mpirun, a deliberately failing app: 1x2 exits 3, 2x1 hangs (killed after 6 s), 1x1 fails verification."""
    env = fake_bin_dir(tmp_path, with_launchers=False)
    db = tmp_path / "r.db"
    start = time.monotonic()
    proc = hympi("sweep", "rb3d", "--ranks", "1,2", "--threads", "1,2", "--timeout", "6", "--db", str(db),
                 "--", "--fail-at", "1x2", "--hang-at", "2x1", "--unverified-at", "1x1", env=env, timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert time.monotonic() - start < 60
    assert _statuses(db) == {(1, 1, 1): "unverified", (1, 2, 1): "failed", (2, 1, 1): "timeout"}
    with Store.open(db, create=False) as store:
        runs = {(r.ranks, r.threads): r for r in store.runs()}
        assert "deliberate failure at 1x2" in runs[(1, 2)].stderr_tail
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


def _sweep_process(args: list[str], env: dict[str, str]) -> subprocess.Popen:
    cmd = [sys.executable, "-c", "import sys; from hympi.cli import main; sys.exit(main())", *args]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **env}, start_new_session=True)


@pytest.mark.parametrize("how", ["SIGKILL", "SIGTERM"])
def test_killed_sweep_resumes_without_duplicates_or_losses(tmp_path: Path, how: str):
    env = fake_bin_dir(tmp_path)
    db = tmp_path / "r.db"
    args = ["sweep", "rb3d", "--ranks", "1,2", "--threads", "1,2", "--repeat", "4", "--db", str(db), "--",
            "--sleep", "0.15"]
    proc = _sweep_process(args, env)
    _wait_for_runs(db, 4, proc)
    if how == "SIGKILL":
        os.kill(proc.pid, signal.SIGKILL)  # no clean-up at all; the launch in flight must still die with it
        proc.wait(timeout=10)
        time.sleep(1.0)  # longer than one run: an orphaned launch would log itself by now
    else:
        proc.send_signal(signal.SIGTERM)  # hympi alone, as a batch system would
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 130, err
        assert "--resume" in err
    with Store.open(db, create=False) as store:
        before = {r.key(): (r.id, r.started_at, r.wall_s) for r in store.runs()}
        sweep = store.sweeps()[0]
        assert sweep.status == ("running" if how == "SIGKILL" else "interrupted")
    assert 4 <= len(before) < 12
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
    assert len(keys) == len(set(keys)) == 12  # all 3 layouts x 4 repeats, none twice
    assert set(keys) == {(r, t, "core", rep) for r, t in ((1, 1), (1, 2), (2, 1)) for rep in range(1, 5)}
    for run in runs:
        if run.key() in before:  # nothing finished was repeated or rewritten
            assert (run.id, run.started_at, run.wall_s) == before[run.key()]
    assert len(launches(env)) - launched_before == 12 - len(before)

    again = hympi(*args[:-3], "--resume", "--", "--sleep", "0.15", env=env, timeout=60)
    assert again.returncode == 0
    assert "starting sweep" in again.stdout  # a finished sweep is not resumed; a new one starts


def test_resume_by_id_uses_the_recorded_parameters(tmp_path: Path):
    env = fake_bin_dir(tmp_path)
    db = tmp_path / "r.db"
    args = ["sweep", "rb3d", "--ranks", "1,2", "--threads", "1", "--repeat", "3", "--db", str(db), "--",
            "--sleep", "0.2"]
    proc = _sweep_process(args, env)
    _wait_for_runs(db, 2, proc)
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=30)
    assert proc.returncode == 130
    resumed = hympi("sweep", "rb3d", "--db", str(db), "--resume", "1", env=env)
    assert resumed.returncode == 0, resumed.stderr
    with Store.open(db, create=False) as store:
        assert len(store.runs()) == 6 and len(store.sweeps()) == 1
    wrong = hympi("sweep", "stream", "--db", str(db), "--resume", "1", env=env)
    assert wrong.returncode == 2 and "sweep 1 is a sweep of rb3d" in wrong.stderr
    missing = hympi("sweep", "rb3d", "--db", str(db), "--resume", "9", env=env)
    assert missing.returncode == 2 and "no sweep 9" in missing.stderr


def test_dry_run_prints_the_exact_commands_and_records_nothing(tmp_path: Path):
    env = fake_bin_dir(tmp_path)
    db = tmp_path / "r.db"
    proc = hympi("sweep", "rb3d", "--ranks", "1,2", "--threads", "1,2", "--bind", "core,none", "--db", str(db),
                 "--dry-run", "--", "--size", "16", env=env)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 6  # 3 layouts that fit 2 PUs x 2 bindings
    assert lines[0].split()[0] == env["HYMPI_MPIRUN"]
    assert ("--allow-run-as-root" in lines[0].split()) == (os.geteuid() == 0)
    assert "-np 2" in lines[2] and "HYMPI_BIND=none" in lines[5] and lines[0].endswith("hympi-rb3d --size 16")
    assert not db.exists() and not launches(env)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else "absent"


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
        (["sweep", "rb3d", "--timeout", "-5"], "-5"),
        (["sweep", "rb3d", "--launcher", "pbs"], "pbs"),
        (["sweep", "nosuchapp"], "nosuchapp"),
        (["sweep", "rb3d", "--ranks", "8", "--threads", "8"], "--oversubscribe"),
        (["sweep", "rb3d", "--", "--reject"], "--reject"),
        (["sweep", "rb3d", "--resume", "x"], "'x'"),
        (["report", "--out", "FILE"], "not a directory"),
        (["export", "--format", "xml"], "xml"),
        (["study", "--apps", "rb3d,doom"], "doom"),
        (["study", "--repeat", "0"], "0"),
    ],
)
def test_bad_input_exits_2_with_one_line_and_the_database_untouched(tmp_path: Path, args, needle):
    env = fake_bin_dir(tmp_path)
    db = tmp_path / "r.db"
    with Store.open(db) as store:  # an existing database, with a finished run in it
        machine = store.ensure_machine("h", "t", "m", "c", {})
        store.create_sweep(machine.id, "rb3d", {}, 1)
    (tmp_path / "FILE").write_text("a file where a directory should be")
    before = _digest(db)
    args = [a.replace("FILE", str(tmp_path / "FILE")) for a in args]
    split = args.index("--") if "--" in args else len(args)
    proc = hympi(*args[:split], "--db", str(db), *args[split:], env=env)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], proc.stderr
    assert _digest(db) == before
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
    before = _digest(db)
    for cmd in (["sweep", "rb3d"], ["report", "--out", str(tmp_path / "rep")], ["export"]):
        proc = hympi(*cmd, "--db", str(db), env=env)
        assert proc.returncode == 2, proc.stderr
        assert ("newer than this hympi" if kind == "newer" else "not a hympi results database") in proc.stderr
        assert _digest(db) == before
    assert not launches(env)
