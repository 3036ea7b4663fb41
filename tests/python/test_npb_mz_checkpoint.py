"""NPB-MZ checkpoint/restart end to end with mpirun (class S): a run restarted from its middle-step
checkpoint, at the same and at another ranks x threads layout, and a run SIGKILLed after a checkpoint
and restarted, end with the uninterrupted run's final fields and verification values bit for bit;
snapshots hold the fields in single precision; a checkpoint of another benchmark, class or step count
is refused with exit 2 and one line naming the file."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import psutil
import pytest

import skips
from mpiapps import verified_record

h5py = skips.import_or_skip("h5py", skips.Reason.H5PY)

REPO = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("HYMPI_BIN_DIR") or REPO / "build" / "bin")
MPIRUN = shutil.which("mpirun")
BENCHES = ["bt-mz", "sp-mz", "lu-mz"]

pytestmark = skips.needs_apps(*(f"hympi-{b}" for b in BENCHES))


def class_data(bench: str, cls: str = "S") -> dict:
    """The class's entry of the verification file the apps read."""
    return json.loads((REPO / "data" / "npb-mz" / "verification.json").read_text())[bench][cls]


def class_niter(bench: str, cls: str = "S") -> int:
    """The class's time steps."""
    data = class_data(bench, cls)
    return int(data.get("niter", data.get("itmax")))


def mpirun_cmd(bench: str, ranks: int, threads: int, *args: str) -> list[str]:
    """`mpirun ... hympi-BENCH --class S ARGS` on ranks x threads, unbound (the test machine is oversubscribed)."""
    assert MPIRUN is not None
    cmd = [MPIRUN, "--oversubscribe", "--bind-to", "none", "-np", str(ranks)]
    if os.geteuid() == 0:
        cmd.insert(1, "--allow-run-as-root")
    return [*cmd, "-x", f"OMP_NUM_THREADS={threads}", str(BIN / f"hympi-{bench}"), "--bind", "none",
            "--min-time", "0", "--class", "S", *args]


def run(bench: str, ranks: int, threads: int, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(mpirun_cmd(bench, ranks, threads, *args), capture_output=True, text=True, timeout=300,
                          check=False)


def single(bench: str, *args: str) -> subprocess.CompletedProcess:
    """A singleton run (no mpirun, whose exit banner would add lines to stderr) with one thread."""
    return subprocess.run([str(BIN / f"hympi-{bench}"), "--bind", "none", "--min-time", "0", *args],
                          capture_output=True, text=True, timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1"},
                          check=False)


def verification_bits(rec: dict) -> dict:
    """The verification values as exact hex floats: equal means equal bits."""
    ver = rec["metrics"]["verification"]
    return {key: [float(v).hex() for v in (ver[key] if isinstance(ver[key], list) else [ver[key]])]
            for key in ("xcr", "xce", "xci")}


def printed_verification(proc: subprocess.CompletedProcess) -> list[str]:
    """The NPB verification block rank 0 printed (values, references, differences)."""
    lines = proc.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if "Verification being performed" in line)
    end = next(i for i, line in enumerate(lines) if "Benchmark Completed" in line)
    return lines[start:end]


def zone_fields(path: Path) -> dict[str, np.ndarray]:
    """Every zone's u of a checkpoint, as raw 64-bit patterns."""
    with h5py.File(path, "r") as f:
        return {name: f[name]["u"][...].view(np.uint64) for name in sorted(f) if name.startswith("zone_")}


def assert_same_fields(a: Path, b: Path) -> None:
    fa, fb = zone_fields(a), zone_fields(b)
    assert fa.keys() == fb.keys() and fa
    for name in fa:
        assert fa[name].shape == fb[name].shape, name
        assert np.array_equal(fa[name], fb[name]), f"{name}: {a.name} and {b.name} differ"


@pytest.mark.parametrize("bench", BENCHES)
def test_restart_from_the_middle_step_is_bitwise_at_the_same_and_another_layout(bench, tmp_path):
    niter = class_niter(bench)
    mid = niter // 2 + 1  # the only multiple of the cadence within the run: the checkpoint stays at mid
    end = str(niter)
    # The uninterrupted run, its final state checkpointed and snapshotted.
    full = run(bench, 1, 2, "--checkpoint", str(tmp_path / "full.h5"), "--checkpoint-every", end,
               "--snapshot", str(tmp_path / "snap"), "--snapshot-every", end)
    full_rec = verified_record(full)
    # The same run checkpointing at the middle step (checkpoints must not change a bit of it).
    first = run(bench, 1, 2, "--checkpoint", str(tmp_path / "mid.h5"), "--checkpoint-every", str(mid))
    assert verification_bits(verified_record(first)) == verification_bits(full_rec)
    assert not (tmp_path / "mid.h5.tmp").exists()
    zones = [f"zone_{z:03d}" for z in range(class_data(bench)["num_zones"])]
    assert list(zone_fields(tmp_path / "mid.h5")) == zones
    for ranks, threads in ((1, 2), (2, 1)):
        out = tmp_path / f"restart-{ranks}x{threads}.h5"
        proc = run(bench, ranks, threads, "--restart", str(tmp_path / "mid.h5"), "--checkpoint", str(out),
                   "--checkpoint-every", end)
        rec = verified_record(proc)
        assert rec["io"]["restart_step"] == mid, rec["io"]
        assert rec["metrics"]["first_step"] == mid + 1
        assert rec["metrics"]["iterations"] == niter
        assert verification_bits(rec) == verification_bits(full_rec), f"{ranks}x{threads}"
        assert printed_verification(proc) == printed_verification(full), f"{ranks}x{threads}"
        assert_same_fields(tmp_path / "full.h5", out)

    # The snapshot of the final step, read independently of our writer: single-precision density and
    # energy of every zone, equal to the checkpointed field rounded to float.
    snaps = sorted(tmp_path.glob("snap-*.h5"))
    assert len(snaps) == 1, snaps
    assert (tmp_path / "snap.xmf").exists()
    u = {name: v.view(np.float64) for name, v in zone_fields(tmp_path / "full.h5").items()}
    with h5py.File(snaps[0], "r") as f:
        for name, field in u.items():
            for quantity, component in (("density", 0), ("energy", 4)):
                data = f[name][quantity]
                assert data.dtype == np.float32
                assert np.array_equal(data[...], field[..., component].astype(np.float32)), f"{name}/{quantity}"


def session_processes(sid: int) -> list[int]:
    """The processes of session `sid` (mpirun and its ranks: Open MPI puts each rank in its own group)."""
    pids = []
    for pid in psutil.pids():
        with contextlib.suppress(ProcessLookupError):  # ended meanwhile
            if os.getsid(pid) == sid:
                pids.append(pid)
    return pids


def test_sigkill_after_a_checkpoint_then_restart_is_bitwise(tmp_path):
    bench = "sp-mz"
    niter = class_niter(bench)
    full_rec = verified_record(run(bench, 1, 2))
    ckpt = tmp_path / "kill.h5"
    # A checkpoint after every step: the first appears early and the job is still running when it does.
    proc = subprocess.Popen(mpirun_cmd(bench, 2, 1, "--checkpoint", str(ckpt), "--checkpoint-every", "1"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not ckpt.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.002)
        assert ckpt.exists() and proc.poll() is None, "the run ended before its first checkpoint could be killed"
    finally:
        # The whole job dies at once, as on a node failure: mpirun and every rank (each in its own group).
        for pid in session_processes(proc.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        proc.wait(timeout=60)
        deadline = time.monotonic() + 30
        while session_processes(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
    assert proc.returncode == -signal.SIGKILL
    assert not session_processes(proc.pid)
    out = tmp_path / "after.h5"
    rec = verified_record(run(bench, 1, 2, "--restart", str(ckpt), "--checkpoint", str(out), "--checkpoint-every",
                              str(niter)))
    assert 1 <= rec["io"]["restart_step"] < niter, rec["io"]
    assert verification_bits(rec) == verification_bits(full_rec)


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory) -> dict[str, Path]:
    """Singleton checkpoints: sp-mz class S at step 1, bt-mz class W at step 1, bt-mz class S at its end."""
    d = tmp_path_factory.mktemp("npb-ckpt")
    made = {"sp-S": d / "sp-S.h5", "bt-W": d / "bt-W.h5", "bt-S-end": d / "bt-S-end.h5"}
    # --iterations 1 fails verification (exit 1) but checkpoints the one step it does.
    single("sp-mz", "--class", "S", "--iterations", "1", "--checkpoint", str(made["sp-S"]), "--checkpoint-every", "1")
    single("bt-mz", "--class", "W", "--iterations", "1", "--checkpoint", str(made["bt-W"]), "--checkpoint-every", "1")
    n = str(class_niter("bt-mz"))
    done = single("bt-mz", "--class", "S", "--checkpoint", str(made["bt-S-end"]), "--checkpoint-every", n)
    assert done.returncode == 0, done.stderr
    for path in made.values():
        assert path.exists(), path
    made["text"] = d / "text.h5"
    made["text"].write_text("not a checkpoint\n")
    return made


@pytest.mark.parametrize(
    ("which", "args", "needle"),
    [
        ("sp-S", [], "sp-mz"),              # another benchmark's checkpoint
        ("bt-W", [], "size"),               # another class: another problem size
        ("bt-S-end", ["--iterations", "30"], "beyond"),  # more steps done than this run has
        ("text", [], "not HDF5"),
    ],
)
def test_restart_from_a_foreign_checkpoint_exits_2_naming_the_file(checkpoints, which, args, needle):
    """Refused before the benchmark prints anything: its banner (14 lines) came before the refusal."""
    path = checkpoints[which]
    proc = single("bt-mz", "--class", "S", "--restart", str(path), *args)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert str(path) in lines[0] and needle in lines[0]
    assert proc.stdout == ""
