"""Checkpoint/restart through parallel HDF5, end to end with mpirun (issue 17), on rb3d:

- a run restarted from a checkpoint ends bit for bit like the uninterrupted run, at the layout that wrote the
  checkpoint and at others, and so does one killed by SIGKILL after a checkpoint;
- a snapshot read with h5py (not our reader) holds the checkpointed field rounded to single precision, and
  its XDMF sidecar names files and datasets that exist;
- a missing, truncated or corrupted checkpoint, another app's or another size's, an unwritable path and a
  full file system each give one line naming the file, exit 2 (bad input) or 1 (I/O failure), and leave no
  partial file under the final name and the previous checkpoint untouched.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

import skips
from damage import BAD_CHECKPOINTS, damaged, restart_args
from mpiapps import record

h5py = skips.import_or_skip("h5py", skips.Reason.H5PY)

REPO = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("HYMPI_BIN_DIR", REPO / "build" / "bin"))
MPIRUN = shutil.which("mpirun")
PKILL = shutil.which("pkill") or "pkill"

pytestmark = skips.needs_apps("hympi-rb3d")

# 20^3, residual every 5: small enough for seconds, long enough that a restart changes many values.
RB3D = ["--size", "20", "--residual-every", "5"]


def command(ranks: int, threads: int, *args: str) -> list[str]:
    """mpirun ... hympi-rb3d ARGS on ranks x threads, unbound (the test machine is oversubscribed)."""
    assert MPIRUN is not None
    cmd = [MPIRUN, "--oversubscribe", "--bind-to", "none", "-np", str(ranks)]
    if os.geteuid() == 0:
        cmd.insert(1, "--allow-run-as-root")
    return [*cmd, "-x", f"OMP_NUM_THREADS={threads}", str(BIN / "hympi-rb3d"), "--bind", "none", *args]


def run(ranks: int, threads: int, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command(ranks, threads, *args), capture_output=True, text=True, timeout=120, check=False)


def final_state(rec: dict) -> tuple:
    """What must match bit for bit: verification, residual history, final error (floats as hex)."""
    m = rec["metrics"]
    assert rec["verified"] is True
    return (m["iterations"], [float(r).hex() for r in m["residuals"]], float(m["max_error"]).hex())


def error_lines(proc: subprocess.CompletedProcess[str]) -> list[str]:
    """The app's own error lines (mpirun adds its banner about the exit code after them)."""
    assert "Traceback" not in proc.stderr and "MPI_ABORT" not in proc.stderr, proc.stderr
    return [line for line in proc.stderr.splitlines() if line.startswith("hympi-rb3d: error")]


@pytest.fixture(scope="module")
def uninterrupted() -> tuple:
    return final_state(record(run(2, 1, *RB3D, "--iterations", "40")))


@pytest.fixture(scope="module")
def checkpoint_at_20(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A checkpoint of iteration 20 written by 2 ranks x 1 thread."""
    path = tmp_path_factory.mktemp("ck") / "rb3d.h5"
    rec = record(run(2, 1, *RB3D, "--iterations", "20", "--checkpoint", str(path), "--checkpoint-every", "10"))
    io = rec["io"]
    assert io["checkpoints"] == 2 and io["checkpoint_bytes"] > 20**3 * 8
    # Steps 11-20 follow the first checkpoint (at 10): each is counted once, the one it started in beside its writer.
    assert io["steps_writing"] + io["steps_quiet"] == 10 and io["steps_writing"] >= 1, io
    assert io["steps_writing_s"] > 0 and io["steps_quiet_s"] >= 0
    return path


@pytest.mark.parametrize(("ranks", "threads"), [(2, 1), (1, 2), (3, 1)])
def test_restart_is_bitwise_at_any_layout(
    uninterrupted: tuple, checkpoint_at_20: Path, ranks: int, threads: int
) -> None:
    rec = record(run(ranks, threads, *RB3D, "--iterations", "40", "--restart", str(checkpoint_at_20)))
    assert rec["metrics"]["restarted_at"] == 20 and rec["io"]["restart_step"] == 20
    assert rec["timed_repetitions"] == 20
    assert final_state(rec) == uninterrupted


def test_sigkill_after_a_checkpoint_then_restart(tmp_path: Path) -> None:
    # The killed run asks for 200000 iterations (about 40 s here), so that the kill lands while it runs however
    # late a loaded machine delivers it (1500 iterations took 0.3 s: the run could end first); the state at a step
    # does not depend on the iterations asked for, so the comparison runs stop 300 iterations past the checkpoint.
    args = ["--size", "40", "--residual-every", "25"]
    path = tmp_path / "killed.h5"
    proc = subprocess.Popen(
        command(2, 1, *args, "--iterations", "200000", "--checkpoint", str(path), "--checkpoint-every", "50"),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not path.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert path.exists(), "no checkpoint appeared"
        # As a crashed node would: every process of the job at once. mpirun gives each rank its own process
        # group but keeps them in the session start_new_session made.
        subprocess.run([PKILL, "-KILL", "-s", str(proc.pid)], timeout=30, check=False)
    finally:
        proc.wait(timeout=30)
        subprocess.run([PKILL, "-KILL", "-s", str(proc.pid)], timeout=30, check=False)
    assert proc.returncode == -signal.SIGKILL, "the run ended before it could be killed"
    with h5py.File(path, "r") as f:
        step = int(f.attrs["step"])
    assert 0 < step < 200000 and step % 50 == 0
    end = ("--iterations", str(step + 300))
    expected = final_state(record(run(2, 1, *args, *end)))
    rec = record(run(1, 2, *args, *end, "--restart", str(path)))
    assert rec["metrics"]["restarted_at"] == step
    assert final_state(rec) == expected


@pytest.mark.parametrize("where", ["tmp_path", "tmpfs"])
def test_checkpoint_written_direct_or_buffered_restarts_bitwise(tmp_path: Path, where: str) -> None:
    """The background writer writes with O_DIRECT where the file system reports its alignment (ext4 or xfs under
    tmp_path) and through the page cache where it reports none (tmpfs, /dev/shm): either way the restarted run ends
    bit for bit like the uninterrupted one, so a byte written wrong by either path fails here."""
    if where == "tmpfs":
        if not Path("/dev/shm").is_dir():
            skips.skip(skips.Reason.NO_DIRECT_IO, "no /dev/shm")
        directory = Path(tempfile.mkdtemp(prefix="hympi-ck-", dir="/dev/shm"))
    else:
        directory = tmp_path
    try:
        args = ["--size", "40", "--residual-every", "5"]
        expected = final_state(record(run(2, 1, *args, "--iterations", "20")))
        path = directory / "rb3d.h5"
        io = record(run(2, 1, *args, "--iterations", "10", "--checkpoint", str(path), "--checkpoint-every", "10"))["io"]
        rec = record(run(1, 2, *args, "--iterations", "20", "--restart", str(path)))
        assert rec["metrics"]["restarted_at"] == 10
        assert final_state(rec) == expected
    finally:
        if where == "tmpfs":
            shutil.rmtree(directory, ignore_errors=True)
    reason = io["checkpoint_buffered_reason"]
    if where == "tmpfs":
        assert io["checkpoint_direct_bytes"] == 0
        assert reason == "the file system reports no direct I/O alignment"
    elif reason:
        skips.skip(skips.Reason.NO_DIRECT_IO, f"{tmp_path} gives no direct I/O: {reason}")
    else:
        # A rank's part, 20 of 40 planes in one run of the file: all but a head and a tail block go direct.
        assert io["checkpoint_direct_bytes"] > 10 * io["checkpoint_buffered_bytes"], io


def test_snapshot_read_with_h5py_matches_the_field(tmp_path: Path) -> None:
    ck, prefix = tmp_path / "c.h5", tmp_path / "snap"
    record(run(2, 1, *RB3D, "--iterations", "10", "--checkpoint", str(ck), "--checkpoint-every", "10",
               "--snapshot", str(prefix), "--snapshot-every", "5"))
    with h5py.File(ck, "r") as c, h5py.File(tmp_path / "snap-000010.h5", "r") as s:
        field = c["u"][...]
        snap = s["u"][...]
        assert c["u"].dtype == np.float64 and s["u"].dtype == np.float32
        assert field.shape == snap.shape == (20, 20, 20)
        assert np.array_equal(snap, field.astype(np.float32))
        assert not np.array_equal(snap.astype(np.float64), field), "single precision must round"
        assert int(s.attrs["step"]) == 10 and float(np.abs(field).max()) > 0
        # The solution is symmetric under x <-> z: a transposed write would still pass, a shifted one not.
        assert np.array_equal(snap, np.transpose(snap, (2, 1, 0)))
    index = json.loads((tmp_path / "snap.snapshots.json").read_text())
    assert [e["step"] for e in index] == [0, 5, 10]
    xdmf = ET.parse(tmp_path / "snap.xmf").getroot()
    items = [e.text.strip() for e in xdmf.iter("DataItem") if e.get("Format") == "HDF"]
    assert len(items) == 3
    for item in items:
        file, dataset = item.split(":")
        with h5py.File(tmp_path / file, "r") as f:
            assert f[dataset].shape == (20, 20, 20)


@pytest.mark.parametrize(("damage", "args", "words"), BAD_CHECKPOINTS)
def test_bad_checkpoint_is_one_line_exit_2(
    checkpoint_at_20: Path, tmp_path: Path, damage: str, args: list[str], words: str
) -> None:
    bad = damaged(checkpoint_at_20, tmp_path / "bad.h5", damage)
    proc = run(2, 1, *restart_args(bad, args))
    assert proc.returncode == 2, proc.stderr
    lines = error_lines(proc)
    assert len(lines) == 1 and str(bad) in lines[0] and words in lines[0], proc.stderr
    assert "HDF5:" not in proc.stderr and "HYMPI_RESULT" not in proc.stdout


@pytest.mark.parametrize(("option", "value", "written"), [("--omega", "1.5", "1.0"), ("--residual-every", "4", "5")])
def test_a_restart_with_another_scheme_is_refused_before_it_runs(checkpoint_at_20: Path, option: str, value: str,
                                                                 written: str) -> None:
    """The checkpoint records --omega and --residual-every: restarted with another, the run went on as another run
    and failed its verification only at its end (exit 1), or passed with a history no run had."""
    args = [*RB3D, "--iterations", "40", "--restart", str(checkpoint_at_20)]
    args = [*args[:args.index(option)], *args[args.index(option) + 2:]] if option in args else args
    proc = run(2, 1, *args, option, value)
    assert proc.returncode == 2, proc.stderr
    assert error_lines(proc) == [f"hympi-rb3d: error: --restart {checkpoint_at_20} was written with {option} "
                                 f"{written}, this run has {value}"]
    assert "HYMPI_RESULT" not in proc.stdout


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--restart", "{dir}/absent.h5"], "absent.h5: no such file"),
        (["--checkpoint", "{dir}/file/c.h5", "--checkpoint-every", "5"], "does not exist"),
        (["--checkpoint-every", "5"], "needs --checkpoint"),
        (["--checkpoint", "{dir}", "--checkpoint-every", "5"], "is a directory"),
        # Names the system refuses to look up: a filesystem_error before, exit 1 as a bug.
        (["--checkpoint", "{dir}/" + "c" * 300, "--checkpoint-every", "5"], "cannot be examined (File name too long)"),
        (["--restart", "{dir}/" + "r" * 300], "cannot be examined (File name too long)"),
        (["--checkpoint", "{dir}/c.h5", "--h5-hint", "cb_nodes"], "'cb_nodes' is not KEY=VALUE"),
        (["--checkpoint", "{dir}/c.h5", "--h5-sieve-bytes", "-4"], "'-4' is not a byte count"),
    ],
)
def test_bad_io_options_are_one_line_exit_2(tmp_path: Path, args: list[str], words: str) -> None:
    (tmp_path / "file").write_text("a regular file\n")
    # Checked before MPI starts (as `hympi run` does with --validate-ranks before launching): one process says it.
    cmd = [str(BIN / "hympi-rb3d"), *RB3D, "--iterations", "5", *[a.format(dir=tmp_path) for a in args]]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 2, proc.stderr
    lines = error_lines(proc)
    assert len(lines) == 1 and words in lines[0], proc.stderr
    assert not (tmp_path / "c.h5").exists()


def test_full_disk_is_exit_1_and_keeps_the_previous_checkpoint(checkpoint_at_20: Path, small_tmpfs: Path) -> None:
    previous = small_tmpfs / "rb3d.h5"
    shutil.copy(checkpoint_at_20, previous)  # 64 KiB: the 1 MiB tmpfs holds it, not a 64^3 field (2 MiB)
    before = previous.read_bytes()
    proc = run(2, 1, "--size", "64", "--iterations", "4", "--checkpoint", str(previous), "--checkpoint-every", "2")
    assert proc.returncode == 1, proc.stderr
    lines = error_lines(proc)
    assert len(lines) == 1 and str(previous) in lines[0] and "no space" in lines[0], proc.stderr
    assert previous.read_bytes() == before
    assert sorted(p.name for p in small_tmpfs.iterdir()) == ["rb3d.h5"], "a partial file was left"


def test_a_snapshot_that_does_not_fit_leaves_no_partial_file(small_tmpfs: Path) -> None:
    """A snapshot the disk cannot hold fails the run (exit 1) and, as a checkpoint's, removes its temporary file, which
    had been left to take the room the next run needs."""
    proc = run(1, 1, "--size", "16", "--iterations", "4", "--snapshot", str(small_tmpfs / "s"), "--snapshot-every", "2")
    assert proc.returncode == 1, proc.stderr
    assert len(error_lines(proc)) == 1, proc.stderr
    assert not [p.name for p in small_tmpfs.iterdir() if p.name.endswith(".tmp")]


def test_a_disk_with_no_room_for_the_files_metadata_is_exit_1_not_a_crash(small_tmpfs: Path) -> None:
    """Full before the checkpoint file is even made: HDF5 could write neither its superblock nor, at the close, its
    metadata, kept the handle it failed to close and crashed on it in MPI_Finalize (exit 139 after the error line).
    The room for the file's own metadata is now checked before it is made."""
    with (small_tmpfs / "filler").open("wb", buffering=0) as out:
        try:
            while out.write(b"\0" * 4096):
                pass
        except OSError:
            pass  # the file system is full: what the test wants
    checkpoint = small_tmpfs / "rb3d.h5"
    proc = run(2, 1, "--size", "16", "--iterations", "4", "--checkpoint", str(checkpoint), "--checkpoint-every", "2")
    assert proc.returncode == 1, proc.stderr
    lines = error_lines(proc)
    assert len(lines) == 1 and f"no space for {checkpoint}.tmp" in lines[0], proc.stderr
    assert sorted(p.name for p in small_tmpfs.iterdir()) == ["filler"], "a partial file was left"
