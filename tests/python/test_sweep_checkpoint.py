"""hympi sweep --checkpoint-dir: runs stopped by the timeout or a kill restart from their checkpoint on the next
invocation, a run that ends removes its checkpoint, bad input is refused in one line (fake app, fake launcher)."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

import skips
from conftest import hympi, sweep_params
from fakeapps import fake_bin_dir, launches
from hympi.apps import APPS
from hympi.iorecord import io_record
from hympi.paths import bin_dir
from hympi.store import Store
from hympi.sweep import SweepItem, SweepParams, checkpoint_path, io_args, sbatch_command
from test_sweep import _sweep_process


def _text(out: str) -> str:
    """Console output with rich's line wrapping undone."""
    return " ".join(out.split())


def _checkpoints(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir()) if directory.is_dir() else []


def _sweep(db: Path, ckpt: Path, *extra: str) -> list[str]:
    return ["sweep", "rb3d", "--ranks", "1,2", "--no-warmup", "--seed", "3", "--db", str(db),
            "--checkpoint-dir", str(ckpt), "--checkpoint-every", "50", *extra,
            "--", "--hang-at", "2x1", "--hang-once"]


@pytest.mark.parametrize("name", sorted(APPS))
def test_the_contracts_checkpoint_apps_are_the_ones_that_take_the_options(name: str):
    """contract.toml's checkpoints = true is what `hympi sweep --checkpoint-dir` relies on: such an app takes
    --checkpoint/--checkpoint-every/--restart (AppDefinition::checkpoints()), and no other app does."""
    path = skips.require_binary(bin_dir() / APPS[name].binary)
    proc = subprocess.run([str(path), "--help"], capture_output=True, text=True, timeout=60, check=False,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr
    offers = all(f"{option} " in proc.stdout for option in ("--checkpoint", "--checkpoint-every", "--restart"))
    assert offers == APPS[name].checkpoints, f"{name}: contract says checkpoints = {APPS[name].checkpoints}"


def test_params_keep_the_checkpoint_settings_and_name_one_file_per_run(tmp_path: Path):
    plain = sweep_params("rb3d", ((1, 1), (2, 1)))
    assert "checkpoint_dir" not in plain.as_dict()  # older sweeps keep their identity
    params = sweep_params("rb3d", ((1, 1), (2, 1)), checkpoint_dir=str(tmp_path), checkpoint_every=7)
    assert SweepParams.from_dict(params.as_dict()) == params
    a, b = SweepItem(1, 1, "core", 1), SweepItem(2, 1, "core", 1)
    path = checkpoint_path(params, a)
    assert path is not None and path.parent == tmp_path and path.name.startswith("rb3d-1x1-core-1-")
    assert checkpoint_path(params, b) != path
    other = sweep_params("rb3d", ((1, 1), (2, 1)), app_args=("--size", "32"), checkpoint_dir=str(tmp_path),
                         checkpoint_every=7)
    assert checkpoint_path(other, a) != path  # another problem never takes this sweep's files
    assert io_args(params, a, False) == ("--checkpoint", str(path), "--checkpoint-every", "7")
    assert io_args(params, a, True)[-2:] == ("--restart", str(path))
    assert checkpoint_path(plain, a) is None and io_args(plain, a, True) == ()
    script = sbatch_command(params, tmp_path / "r.db")  # the allocation's sweep keeps them, and so resumes
    assert script[script.index("--checkpoint-dir") + 1] == str(tmp_path) and "--checkpoint-every" in script


@pytest.mark.parametrize("how", ["timeout", "SIGKILL"])
def test_a_stopped_run_restarts_from_its_checkpoint_on_the_next_invocation(tmp_path: Path, how: str):
    """2x1 writes its checkpoint at step 50 and hangs: the timeout (recorded, the sweep goes on and stays
    unfinished) or a SIGKILL of hympi itself (nothing recorded) stops it. The same command again launches only 2x1,
    with --restart from that file; it ends, records the step it restarted from and removes its checkpoint."""
    env = fake_bin_dir(tmp_path)
    db, ckpt = tmp_path / "r.db", tmp_path / "ckpt"
    timeout = "3" if how == "timeout" else "600"
    if how == "timeout":
        first = hympi(*_sweep(db, ckpt, "--timeout", timeout), env=env, timeout=120)
        assert first.returncode == 1, first.stdout + first.stderr
        assert "1 run(s) left a checkpoint" in _text(first.stdout)
        assert "run the same command again" in _text(first.stdout)
        with Store.open(db, create=False) as store:
            assert {(r.ranks, r.status) for r in store.runs()} == {(1, "ok"), (2, "timeout")}
            assert store.sweeps()[0].status == "interrupted"  # so that the same command line continues it
    else:
        proc = _sweep_process(_sweep(db, ckpt, "--timeout", timeout), env)
        deadline = time.monotonic() + 60
        while not (any(n.startswith("rb3d-2x1") for n in _checkpoints(ckpt)) and len(launches(env)) == 2):
            assert time.monotonic() < deadline and proc.poll() is None, "2x1 never wrote its checkpoint"
            time.sleep(0.05)
        time.sleep(0.3)  # hung now
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    (left,) = _checkpoints(ckpt)  # 1x1 ended and removed its own; the hung 2x1 left one
    assert left.startswith("rb3d-2x1-core-1-") and (ckpt / left).read_text().split() == ["fake-checkpoint", "50"]
    launched = len(launches(env))

    again = hympi(*_sweep(db, ckpt, "--timeout", timeout), env=env, timeout=120)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "resuming sweep 1" in again.stdout and "1 restarted from a checkpoint" in _text(again.stdout)
    assert launches(env)[launched:] == ["2x1"]  # only the stopped run, once
    assert _checkpoints(ckpt) == []  # a run that ended leaves nothing behind
    with Store.open(db, create=False) as store:
        runs = {r.ranks: r for r in store.runs()}
        assert len(store.runs()) == 2 and [s.status for s in store.sweeps()] == ["finished"]
        restarted = runs[2]
        assert restarted.status == "ok" and restarted.restarted_from_step == 50
        assert restarted.command[-2:] == ("--restart", str(ckpt / left))
        assert "--checkpoint" in restarted.command and restarted.app_args == ("--hang-at", "2x1", "--hang-once")
        io = io_record(restarted.record)
        assert io is not None and io.restart_step == 50 and io.read_gbs == pytest.approx(1e8 / 0.02 / 1e9)
        assert runs[1].restarted_from_step is None
        attempts = store.attempts()
        if how == "timeout":  # the stopped launch is kept as the item's earlier attempt
            assert [(a.ranks, a.status, a.restarted_from_step) for a in attempts] == [(2, "timeout", None)]
            assert "--restart" not in attempts[0].command
        else:
            assert attempts == []  # nothing had been recorded for it
    report = hympi("report", "--db", str(db), "--out", str(tmp_path / "rep"), env=env)
    assert report.returncode == 0, report.stderr
    page = (tmp_path / "rep" / "index.html").read_text()
    assert "<h2 id='checkpoint-io'>Checkpoint I/O</h2>" in page and "(restarted at step 50)" in page


def test_a_timeout_that_left_a_checkpoint_is_progress_not_a_failure_to_give_up_on(tmp_path: Path):
    """A run longer than --timeout goes on from its checkpoint at the next invocation: every layout's first launch
    timing out with a checkpoint left does not stop the sweep as failures would (every_layout_failed)."""
    env = fake_bin_dir(tmp_path)
    db, ckpt = tmp_path / "r.db", tmp_path / "ckpt"
    args = ["sweep", "rb3d", "--ranks", "2", "--repeat", "2", "--no-warmup", "--seed", "3", "--db", str(db),
            "--checkpoint-dir", str(ckpt), "--checkpoint-every", "50", "--timeout", "3",
            "--", "--hang-at", "2x1", "--hang-once"]
    first = hympi(*args, env=env, timeout=120)
    assert first.returncode == 1 and "2 run(s) left a checkpoint" in _text(first.stdout), first.stdout
    assert "fail alike" not in first.stdout and launches(env) == ["2x1", "2x1"]
    again = hympi(*args, env=env, timeout=120)
    assert again.returncode == 0 and "2 restarted from a checkpoint" in _text(again.stdout), again.stdout
    with Store.open(db, create=False) as store:
        assert sorted(r.status for r in store.runs()) == ["ok", "ok"]


def test_a_refused_checkpoint_is_moved_aside_and_the_run_stays_failed(tmp_path: Path):
    env = fake_bin_dir(tmp_path)
    db, ckpt = tmp_path / "r.db", tmp_path / "ckpt"
    first = hympi(*_sweep(db, ckpt, "--timeout", "3"), env=env, timeout=120)
    assert first.returncode == 1, first.stderr
    (left,) = _checkpoints(ckpt)
    (ckpt / left).write_text("garbage\n")  # a flipped byte, as the app would find it
    again = hympi(*_sweep(db, ckpt, "--timeout", "3"), env=env, timeout=120)
    assert again.returncode == 1 and "refused the checkpoint" in _text(again.stdout), again.stdout
    assert _checkpoints(ckpt) == [left + ".rejected"]
    with Store.open(db, create=False) as store:
        run = next(r for r in store.runs() if r.ranks == 2)
        assert run.status == "failed" and run.returncode == 2 and "is not a hympi checkpoint" in run.stderr_tail
        assert store.sweeps()[0].status == "finished"  # nothing left to restart: the next command starts anew


def _last_step_sweep(db: Path, ckpt: Path, *app_args: str) -> list[str]:
    """A sweep whose 2x1 run writes the checkpoint of its last step (--steps 50 = --checkpoint-every), then hangs
    where the real apps verify: a verification longer than --timeout."""
    return ["sweep", "rb3d", "--ranks", "1,2", "--no-warmup", "--seed", "3", "--db", str(db), "--checkpoint-dir",
            str(ckpt), "--checkpoint-every", "50", "--timeout", "3", "--", "--steps", "50", "--hang-at", "2x1",
            *app_args]


def test_a_restart_that_cannot_get_past_its_checkpoint_is_not_restarted_again(tmp_path: Path):
    """Issue 30 B.15: the restart from the last step's checkpoint hangs in the verification again and writes no
    newer checkpoint. Restarting it once more would do the same, on every invocation forever: the checkpoint is
    set aside (.stalled), the run stays timeout, and the sweep is finished, not left to be continued."""
    env = fake_bin_dir(tmp_path)
    db, ckpt = tmp_path / "r.db", tmp_path / "ckpt"
    first = hympi(*_last_step_sweep(db, ckpt), env=env, timeout=120)
    assert first.returncode == 1 and "1 run(s) left a checkpoint" in _text(first.stdout), first.stdout
    (left,) = _checkpoints(ckpt)
    again = hympi(*_last_step_sweep(db, ckpt), env=env, timeout=120)
    assert again.returncode == 1, again.stdout + again.stderr
    text = _text(again.stdout)
    assert "1 restarted from a checkpoint" in text and "not restarted again" in text and "--timeout above 3 s" in text
    assert "left a checkpoint" not in text and "sweep 1 finished" in text
    assert sorted(launches(env)) == ["1x1", "2x1", "2x1"]  # the stopped run restarted once
    assert _checkpoints(ckpt) == [left + ".stalled"]
    with Store.open(db, create=False) as store:
        assert [s.status for s in store.sweeps()] == ["finished"]
        run = next(r for r in store.runs() if r.ranks == 2)
        assert run.status == "timeout" and "--restart" in run.command


def test_a_run_restarted_from_its_last_step_is_not_recorded_ok_with_rate_0(tmp_path: Path):
    """Issue 30 B.15: restarted from the checkpoint of its last step, the run only verifies and times nothing (the
    apps report rate 0). Recorded 'ok', it claimed a measurement while the summary found no verified rate: it is
    'failed', and says why."""
    env = fake_bin_dir(tmp_path)
    db, ckpt = tmp_path / "r.db", tmp_path / "ckpt"
    first = hympi(*_last_step_sweep(db, ckpt, "--hang-once"), env=env, timeout=120)
    assert first.returncode == 1, first.stdout + first.stderr
    again = hympi(*_last_step_sweep(db, ckpt, "--hang-once"), env=env, timeout=120)
    assert again.returncode == 1, again.stdout + again.stderr
    assert "no step was left to time" in _text(again.stdout)
    assert _checkpoints(ckpt) == []  # it reached its end
    with Store.open(db, create=False) as store:
        run = next(r for r in store.runs() if r.ranks == 2)
        assert run.status == "failed" and run.restarted_from_step == 50 and run.value("rate") == 0.0
        assert "a longer --timeout lets it end" in run.stderr_tail
        assert [s.status for s in store.sweeps()] == ["finished"]


def test_dry_run_shows_the_checkpoint_options_and_creates_nothing(tmp_path: Path):
    env = fake_bin_dir(tmp_path)
    ckpt = tmp_path / "no" / "such"
    proc = hympi("sweep", "rb3d", "--ranks", "1,2", "--checkpoint-dir", str(ckpt), "--dry-run", "--db",
                 str(tmp_path / "r.db"), env=env)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 4 and all(f"--checkpoint {ckpt}/rb3d-" in line for line in lines)
    assert all("--checkpoint-every 50" in line and "--restart" not in line for line in lines)
    assert not (tmp_path / "no").exists() and not (tmp_path / "r.db").exists()


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else "absent"


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["rb3d", "--checkpoint-dir", "FILE"], "FILE is not a directory"),
        (["rb3d", "--checkpoint-dir", "FILE/sub"], "cannot be created"),
        (["rb3d", "--checkpoint-dir", "/proc"], "/proc is not writable (a proc file system, which takes no new files)"),
        (["rb3d", "--checkpoint-dir", ""], "--checkpoint-dir"),
        (["rb3d", "--checkpoint-dir", "DIR", "--checkpoint-every", "0"], "--checkpoint-every must be >= 1"),
        (["rb3d", "--checkpoint-dir", "DIR", "--checkpoint-every", "often"], "'often'"),
        (["rb3d", "--checkpoint-every", "5"], "--checkpoint-every needs --checkpoint-dir"),
        (["stream", "--checkpoint-dir", "DIR"], "stream writes no checkpoints"),
    ],
)
def test_bad_checkpoint_input_exits_2_with_one_line_and_nothing_written(tmp_path: Path, args, needle):
    env = fake_bin_dir(tmp_path)
    db = tmp_path / "r.db"
    with Store.open(db) as store:
        store.ensure_machine("h", "t", "m", "c", {})
    (tmp_path / "FILE").write_text("a file where a directory should be")
    before = _digest(db)
    args = [a.replace("FILE", str(tmp_path / "FILE")).replace("DIR", str(tmp_path / "DIR")) for a in args]
    proc = hympi("sweep", *args, "--db", str(db), env=env)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and needle.replace("FILE", str(tmp_path / "FILE")) in lines[0], proc.stderr
    assert _digest(db) == before and not launches(env)
    assert not (tmp_path / "DIR").exists() and (tmp_path / "FILE").read_text().startswith("a file")


def test_an_unwritable_checkpoint_dir_is_refused(tmp_path: Path):
    env = fake_bin_dir(tmp_path)
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    if os.geteuid() == 0:
        # Root writes into a mode 0555 directory (make test runs as root); nobody creates files in /proc/1.
        locked = Path("/proc/1")
    proc = hympi("sweep", "rb3d", "--checkpoint-dir", str(locked), "--db", str(tmp_path / "r.db"), env=env)
    assert proc.returncode == 2 and "is not writable" in proc.stderr and not launches(env)


def test_a_real_rb3d_run_killed_after_its_checkpoint_restarts_from_it(tmp_path: Path):
    """hympi-rb3d itself: the sweep is SIGKILLed once the run's first checkpoint is on disk, and the same command
    again restarts the run from the step that checkpoint holds (the app's io.restart_step); rb3d's own verification
    (its residual history equals a one-rank solve's from the start) passes on the restarted run."""
    skips.require_binary(bin_dir() / "hympi-rb3d")
    db, ckpt = tmp_path / "r.db", tmp_path / "ckpt"
    args = ["sweep", "rb3d", "--ranks", "1", "--no-warmup", "--db", str(db), "--checkpoint-dir", str(ckpt),
            "--checkpoint-every", "10", "--", "--size", "48", "--iterations", "3000"]
    proc = _sweep_process(args, {})
    deadline = time.monotonic() + 120
    while not any(name.endswith(".h5") for name in _checkpoints(ckpt)):
        assert time.monotonic() < deadline and proc.poll() is None, "no checkpoint appeared"
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    again = hympi(*args, timeout=600)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "1 restarted from a checkpoint" in _text(again.stdout)
    with Store.open(db, create=False) as store:
        (run,) = store.runs()
        assert run.status == "ok" and run.record is not None and run.record["verified"] is True
        assert run.restarted_from_step is not None and 10 <= run.restarted_from_step < 3000
        assert run.restarted_from_step % 10 == 0 and run.record["metrics"]["iterations"] == 3000
        assert "--restart" in run.command
    assert [n for n in _checkpoints(ckpt) if not n.startswith(".")] == []
