"""hympi-pencil's checkpoint/restart and snapshots (issue 17) in every mode (standalone, --verify order, two
coupled groups with a given or chosen split, single wire): a run stopped after a checkpoint (or killed with
SIGKILL) and restarted from it, at the same or another ranks x threads layout or split, ends bit for bit as the
uninterrupted run (the final state's fingerprint, t, every verification value); snapshots read back with h5py
hold the solution on the mesh the XDMF sidecar describes."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

import skips
from mpiapps import BIN, one_error_line, record, run, run_single

pytestmark = skips.needs_apps("hympi-pencil")

STANDALONE = ["--grid", "16", "16", "16"]
COUPLED = ["--grid", "24", "20", "16"]


def pencil(ranks: int, threads: int, *args: str) -> dict:
    return record(run("hympi-pencil", ranks, threads, *args))


def outcome(rec: dict) -> tuple:
    """What must be equal bit for bit (JSON round-trips doubles exactly)."""
    m = rec["metrics"]
    return m["state_hash"], m["steps"], m["t_end"], m["verification"]


def interrupted(path: Path, ranks: int, threads: int, *args: str, stop: int, every: int) -> Path:
    """A run that checkpoints every `every` steps and stops at `stop` (the steps after its last checkpoint are
    lost, as in a kill); returns its checkpoint."""
    rec = pencil(
        ranks, threads, *args, "--steps", str(stop), "--checkpoint", str(path), "--checkpoint-every", str(every)
    )
    assert rec["metrics"]["steps"] == stop and rec["io"]["checkpoints"] == stop // every
    assert path.exists() and not Path(f"{path}.tmp").exists()
    return path


@pytest.fixture(scope="module")
def standalone_checkpoint(tmp_path_factory) -> Path:
    """Standalone 16^3, checkpointed at step 6 on 1 rank x 2 threads (stopped at 7)."""
    return interrupted(tmp_path_factory.mktemp("pencil") / "standalone.h5", 1, 2, *STANDALONE, stop=7, every=3)


@pytest.mark.parametrize("layout", [(1, 2), (2, 1), (3, 1)])
def test_standalone_restart_is_bitwise_at_any_layout(standalone_checkpoint, layout):
    full = pencil(1, 2, *STANDALONE, "--steps", "9")
    rec = pencil(*layout, *STANDALONE, "--steps", "9", "--restart", str(standalone_checkpoint))
    assert rec["verified"] and outcome(rec) == outcome(full)
    assert rec["metrics"]["timed_steps"] == 3 and rec["io"]["restart_step"] == 6


def test_order_mode_restarts_its_stepped_grid(standalone_checkpoint):
    # The --verify order grid (2 nx x 2 ny) runs whole after the steps: it needs no checkpoint to match.
    full = pencil(2, 1, *STANDALONE, "--steps", "8", "--verify", "order")
    rec = pencil(1, 2, *STANDALONE, "--steps", "8", "--verify", "order", "--restart", str(standalone_checkpoint))
    assert rec["verified"] and "order" in rec["metrics"]["verification"]
    assert outcome(rec) == outcome(full)


def test_single_wire_restart_is_bitwise(tmp_path):
    wire = ["--wire", "single"]
    ck = interrupted(tmp_path / "single.h5", 2, 1, *STANDALONE, *wire, stop=5, every=2)
    full = pencil(2, 1, *STANDALONE, *wire, "--steps", "7")
    for layout in [(2, 1), (2, 2)]:
        assert outcome(pencil(*layout, *STANDALONE, *wire, "--steps", "7", "--restart", str(ck))) == outcome(full)


@pytest.fixture(scope="module")
def coupled_checkpoint(tmp_path_factory) -> Path:
    """Two groups (1:1, 1 thread), checkpointed at step 4 (stopped at 5)."""
    path = tmp_path_factory.mktemp("pencil") / "coupled.h5"
    return interrupted(path, 2, 1, *COUPLED, "--groups", "1:1", stop=5, every=2)


@pytest.fixture(scope="module")
def coupled_full() -> dict:
    return pencil(2, 1, *COUPLED, "--groups", "1:1", "--steps", "7")


@pytest.mark.parametrize(("ranks", "threads", "groups"), [(2, 1, "1:1"), (3, 1, "1:2"), (2, 2, "1:1"), (3, 1, "auto")])
def test_coupled_restart_is_bitwise_at_any_split_and_layout(coupled_checkpoint, coupled_full, ranks, threads, groups):
    rec = pencil(ranks, threads, *COUPLED, "--groups", groups, "--steps", "7", "--restart", str(coupled_checkpoint))
    assert rec["verified"] and outcome(rec) == outcome(coupled_full)
    assert rec["metrics"]["groups"]["fine"]["ranks"] + rec["metrics"]["groups"]["coarse"]["ranks"] == ranks


def test_sigkill_after_a_checkpoint_then_restart_with_other_threads(tmp_path):
    # A singleton run (no mpirun between us and it) killed as soon as its first checkpoint is there.
    steps = ["--steps", "400"]
    ck = tmp_path / "killed.h5"
    cmd = [
        str(BIN / "hympi-pencil"),
        "--bind",
        "none",
        "--min-time",
        "0",
        *STANDALONE,
        *steps,
        "--checkpoint",
        str(ck),
        "--checkpoint-every",
        "20",
    ]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "OMP_NUM_THREADS": "1"}
    )
    deadline = time.monotonic() + 60
    while not ck.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.002)
    proc.send_signal(signal.SIGKILL)
    out, _ = proc.communicate(timeout=60)
    # The kill follows the first checkpoint (step 20 of 400) by milliseconds: a finished run is a failure, not a
    # reason to skip (issue 30, A.2).
    assert "HYMPI_RESULT" not in out.decode(), "the run finished before the kill landed"
    assert proc.returncode == -signal.SIGKILL and ck.exists()
    # Threads, not ranks, differ here: two ranks on the two-core test machine take ten times longer per step
    # (the other tests restart on other rank counts).
    rec = pencil(1, 2, *STANDALONE, *steps, "--restart", str(ck))
    assert 0 < rec["io"]["restart_step"] < 400 and rec["verified"]
    assert outcome(rec) == outcome(pencil(1, 1, *STANDALONE, *steps))


def exact(x, y, z, t):
    """The manufactured solution (c = 1, kappa = 2 pi, ly = 1)."""
    return np.sin(np.pi * y) * np.cos(2 * np.pi * (x - t)) * (1 + np.sin(z) / 2 + np.cos(2 * z) / 4)


def xdmf_meshes(path: Path) -> dict:
    """{(file, dataset): (origin xyz, spacing xyz, dims zyx)} of every field the XDMF sidecar names."""
    out = {}
    for grid in ET.parse(path).getroot().iter("Grid"):
        if grid.get("GridType") != "Uniform":
            continue
        geometry = [list(map(float, d.text.split())) for d in grid.find("Geometry").iter("DataItem")]
        dims = tuple(map(int, grid.find("Topology").get("Dimensions").split()))
        for attribute in grid.iter("Attribute"):
            file, dataset = attribute.find("DataItem").text.strip().split(":")
            out[(file, dataset)] = (geometry[0][::-1], geometry[1][::-1], dims)
    return out


def field_error(h5py, np, path: Path, dataset: str, mesh: tuple, t: float) -> float:
    """max |snapshot - exact| with the coordinates of the XDMF mesh."""
    origin, spacing, dims = mesh
    with h5py.File(path, "r") as f:
        u = f[dataset][...]
    assert u.dtype == np.float32 and u.shape == dims
    k, j, i = np.meshgrid(*(np.arange(n) for n in dims), indexing="ij")  # dataset index [z, y, x]
    x, y, z = (origin[a] + spacing[a] * idx for a, idx in enumerate((i, j, k)))
    return float(np.max(np.abs(u.astype(np.float64) - exact(x, y, z, t))))


@pytest.mark.parametrize(
    ("ranks", "args", "grids"),
    [
        (2, ["--grid", "20", "18", "16"], {"/u": "error"}),
        (3, [*COUPLED, "--groups", "1:2"], {"/coarse/u": "coarse_error", "/fine/u": "error"}),
    ],
)
def test_snapshots_hold_the_solution_on_the_xdmf_mesh(tmp_path, ranks, args, grids):
    h5py = skips.import_or_skip("h5py", skips.Reason.H5PY)
    prefix = tmp_path / "snap"
    rec = pencil(ranks, 1, *args, "--steps", "6", "--snapshot", str(prefix), "--snapshot-every", "3")
    entries = json.loads(Path(f"{prefix}.snapshots.json").read_text())
    assert [e["step"] for e in entries] == [0, 3, 6]  # the start too
    assert entries[-1]["time"] == rec["metrics"]["t_end"]
    meshes = xdmf_meshes(Path(f"{prefix}.xmf"))
    assert {d for (f, d) in meshes if f == entries[-1]["file"]} == set(grids)
    for dataset in grids:  # the start is the exact solution (band-limited in z), to float rounding
        start = entries[0]["file"]
        assert field_error(h5py, np, tmp_path / start, dataset.lstrip("/"), meshes[(start, dataset)], 0.0) < 2e-7
    for dataset, error_key in grids.items():
        error = field_error(
            h5py,
            np,
            tmp_path / entries[-1]["file"],
            dataset.lstrip("/"),
            meshes[(entries[-1]["file"], dataset)],
            entries[-1]["time"],
        )
        # The solver's own max error (in double), give or take the float rounding of values up to 7/4.
        assert math.isclose(error, rec["metrics"]["verification"][error_key], abs_tol=2e-7), dataset


def test_a_checkpoint_of_another_mode_or_past_the_steps_is_bad_input(standalone_checkpoint):
    line = one_error_line(
        run_single(
            "hympi-pencil", *STANDALONE, "--steps", "9", "--wire", "single", "--restart", str(standalone_checkpoint)
        ),
        2,
    )
    assert str(standalone_checkpoint) in line
    line = one_error_line(
        run_single("hympi-pencil", *STANDALONE, "--steps", "5", "--restart", str(standalone_checkpoint)), 2
    )
    assert str(standalone_checkpoint) in line and "past the 5 steps" in line
