"""spmv3d's CG checkpoint/restart and snapshots (issue 17): a solve stopped after a checkpoint and restarted
from it, at the same or another ranks x threads layout, ends bit for bit as the uninterrupted solve (residual
history, solution fingerprint, error); snapshots read back with h5py (not our reader) hold the solution."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

import skips
from mpiapps import one_error_line, record, run, run_single

pytestmark = skips.needs_apps("hympi-spmv3d")

GRID = ["--global", "13", "10", "9", "--reps", "1"]  # uneven blocks at 2 and 3 ranks
EVERY = 4  # checkpoint cadence
STOP = 10  # the "killed" solve stops here: its last checkpoint is iteration 8, iterations 9-10 are lost


def spmv(ranks: int, threads: int, *args: str) -> dict:
    return record(run("hympi-spmv3d", ranks, threads, *GRID, *args))


def outcome(rec: dict) -> tuple:
    """What must be equal bit for bit (JSON round-trips doubles exactly)."""
    m = rec["metrics"]
    return m["cg_residuals"], m["cg_x_hash"], m["cg_max_error"], m["cg_iterations"], m["cg_converged"]


@pytest.fixture(scope="module")
def full() -> dict:
    """The uninterrupted solve."""
    rec = spmv(1, 2)
    assert rec["verified"] and rec["metrics"]["cg_iterations"] > STOP + EVERY
    return rec


def interrupted(tmp: Path, ranks: int, threads: int) -> Path:
    """A solve that checkpoints every EVERY iterations and stops at STOP; returns its checkpoint."""
    ck = tmp / f"cg-{ranks}x{threads}.h5"
    rec = spmv(
        ranks,
        threads,
        "--cg-iterations",
        str(STOP),
        "--checkpoint",
        str(ck),
        "--checkpoint-every",
        str(EVERY),
        "--allow-unverified",
    )
    assert rec["metrics"]["cg_iterations"] == STOP and not rec["metrics"]["cg_converged"]
    assert ck.exists() and not Path(str(ck) + ".tmp").exists()
    return ck


@pytest.mark.parametrize(("writer", "reader"), [((1, 2), (1, 2)), ((1, 2), (2, 1)), ((2, 1), (3, 1))])
def test_restart_ends_bit_for_bit_as_the_uninterrupted_solve(full, tmp_path, writer, reader):
    ck = interrupted(tmp_path, *writer)
    rec = spmv(*reader, "--restart", str(ck))
    assert rec["verified"] is True  # "reference": the history equals a one-rank solve's bit for bit
    assert outcome(rec) == outcome(full)
    m = rec["metrics"]
    last = STOP - STOP % EVERY
    assert m["cg_timed_iterations"] == m["cg_iterations"] - last
    assert rec["io"]["restart_step"] == last


def test_a_restarted_solve_checkpoints_again_and_that_restarts_too(full, tmp_path):
    first = interrupted(tmp_path, 2, 1)
    second = tmp_path / "second.h5"
    rec = spmv(
        1,
        1,
        "--restart",
        str(first),
        "--cg-iterations",
        str(STOP + EVERY + 1),
        "--checkpoint",
        str(second),
        "--checkpoint-every",
        str(EVERY),
        "--allow-unverified",
    )
    assert rec["metrics"]["cg_iterations"] == STOP + EVERY + 1
    assert outcome(spmv(1, 2, "--restart", str(second))) == outcome(full)


def h5py_or_skip():
    return skips.import_or_skip("h5py", skips.Reason.H5PY)


def test_snapshot_is_the_checkpointed_solution_in_single_precision(tmp_path):
    h5py = h5py_or_skip()
    ck, prefix = tmp_path / "cg.h5", tmp_path / "snap"
    spmv(
        2,
        1,
        "--cg-iterations",
        "8",
        "--checkpoint",
        str(ck),
        "--checkpoint-every",
        "8",
        "--snapshot",
        str(prefix),
        "--snapshot-every",
        "4",
        "--allow-unverified",
    )
    by_step = {e["step"]: e for e in json.loads(Path(f"{prefix}.snapshots.json").read_text())}
    assert sorted(by_step) == [0, 4, 8]  # the start too
    with h5py.File(ck, "r") as f:
        x = f["x"][...]
    assert x.dtype == np.float64 and x.shape == (9, 10, 13)  # (z, y, x) of the global grid
    snaps = {}
    for step, entry in by_step.items():
        with h5py.File(tmp_path / entry["file"], "r") as f:  # named relative to the sidecar
            snaps[step] = f["x"][...]
        assert snaps[step].dtype == np.float32 and snaps[step].shape == x.shape
    assert np.array_equal(snaps[8], x.astype(np.float32))  # the same iteration, rounded to float
    assert not np.array_equal(snaps[4], snaps[8])
    assert not np.any(snaps[0])  # CG starts from x = 0


def test_snapshots_of_a_solve_reach_the_manufactured_solution_and_the_xdmf_names_them(tmp_path):
    h5py = h5py_or_skip()
    prefix = tmp_path / "snap"
    rec = spmv(3, 1, "--snapshot", str(prefix), "--snapshot-every", "1")
    n = rec["metrics"]["cg_iterations"]
    entries = json.loads(Path(f"{prefix}.snapshots.json").read_text())
    assert [e["step"] for e in entries] == list(range(n + 1))
    last = tmp_path / entries[-1]["file"]
    with h5py.File(last, "r") as f:
        u = f["x"][...].astype(np.float64)
    # x*(i, j, k) = 1 + sin(0.3 i + 0.7 j + 1.1 k) / 2 at dataset index [k, j, i]: checks the axes too.
    k, j, i = np.meshgrid(np.arange(9), np.arange(10), np.arange(13), indexing="ij")
    exact = 1 + 0.5 * np.sin(0.3 * i + 0.7 * j + 1.1 * k)
    assert np.max(np.abs(u - exact)) <= 1e-6 * 1.5 + 2.0**-23 * 1.5

    root = ET.parse(f"{prefix}.xmf").getroot()
    assert root.tag == "Xdmf"
    items = [e.text.strip() for e in root.iter("DataItem") if e.text and ".h5" in e.text]
    assert any(last.name in t and t.endswith("/x") for t in items), items
    assert {t.split(":")[0] for t in items} == {e["file"] for e in entries}
    assert all((tmp_path / e["file"]).exists() for e in entries)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--cg-iterations", "0", "--checkpoint", "CK", "--checkpoint-every", "2"], "--cg-iterations"),
        (["--cg-iterations", "0", "--snapshot", "SNAP", "--snapshot-every", "2"], "--cg-iterations"),
    ],
)
def test_checkpoints_without_cg_are_bad_input(tmp_path, args, needle):
    args = [a.replace("CK", str(tmp_path / "ck.h5")).replace("SNAP", str(tmp_path / "snap")) for a in args]
    line = one_error_line(run_single("hympi-spmv3d", *GRID, *args), 2)
    assert needle in line and line.startswith("hympi-spmv3d: error:")
    assert not (tmp_path / "ck.h5").exists()


def test_a_checkpoint_of_another_grid_or_past_the_limit_is_bad_input(tmp_path):
    ck = interrupted(tmp_path, 1, 1)
    line = one_error_line(
        run_single("hympi-spmv3d", "--global", "13", "10", "8", "--reps", "1", "--restart", str(ck)), 2
    )
    assert str(ck) in line
    line = one_error_line(run_single("hympi-spmv3d", *GRID, "--cg-iterations", "5", "--restart", str(ck)), 2)
    assert str(ck) in line and "--cg-iterations 5" in line
