"""Apps launched the way most users launch them, with plain mpirun and no OMP_NUM_THREADS: each rank
defaults to cores / ranks threads and no two ranks share a PU; a layout that does share PUs is warned
about, recorded, and fails the affinity check unless oversubscription was asked for."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

import skips

REPO = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("HYMPI_BIN_DIR") or REPO / "build" / "bin")
MPIRUN = shutil.which("mpirun")
RANKS = 2
# What the user's shell might carry that would fix the layout: plain mpirun must work without it.
LAYOUT_VARIABLES = ("OMP_NUM_THREADS", "HYMPI_BIND", "HYMPI_DIST", "HYMPI_VIRTUAL_NODES", "HYMPI_OVERSUBSCRIBE")

pytestmark = skips.needs_apps("hympi-affinity", "hympi-info")


def machine() -> dict:
    """This machine's counts as hwloc sees them (hympi-info --json)."""
    proc = subprocess.run([str(BIN / "hympi-info"), "--json"], capture_output=True, text=True, timeout=60, check=True)
    return json.loads(proc.stdout)


def pus() -> int:
    """PUs of this machine (what the OpenMP runtime would start one thread per)."""
    return int(machine()["pus"])


def plain_mpirun(binary: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`mpirun -np 2 ... BINARY ARGS` with no layout variable exported unless `env` sets it."""
    assert MPIRUN is not None
    base = {key: value for key, value in os.environ.items() if key not in LAYOUT_VARIABLES}
    base.update({"HYMPI_MIN_TIME": "0", **(env or {})})
    cmd = [MPIRUN, "-np", str(RANKS), "--allow-run-as-root", "--oversubscribe", "--bind-to", "none",
           str(BIN / binary), *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=base, timeout=300, check=False)


def record(proc: subprocess.CompletedProcess) -> dict:
    """The one HYMPI_RESULT record the run printed."""
    lines = [line for line in proc.stdout.splitlines() if line.startswith("HYMPI_RESULT ")]
    assert len(lines) == 1, proc.stdout + proc.stderr
    return json.loads(lines[0][len("HYMPI_RESULT "):])


def pu_list(text: str) -> set[int]:
    """The PUs of an hwloc list such as '0-3,8'."""
    out: set[int] = set()
    for part in text.split(","):
        low, _, high = part.partition("-")
        out.update(range(int(low), int(high or low) + 1))
    return out


def warnings(proc: subprocess.CompletedProcess) -> list[str]:
    """The oversubscription warnings on stderr."""
    return [line for line in proc.stderr.splitlines() if "warning: oversubscribed" in line]


@pytest.mark.parametrize("binary, args", [("hympi-affinity", ["--check"]),
                                          ("hympi-pingpong", ["--max-bytes", "1024", "--iterations", "20"])])
def test_unset_thread_count_gives_each_rank_its_own_pus(binary: str, args: list[str]) -> None:
    skips.require_apps(binary)
    proc = plain_mpirun(binary, *args)
    assert proc.returncode == 0, proc.stderr
    rec = record(proc)
    assert rec["threads_default"] is True
    assert rec["ranks"] == RANKS and rec["threads"] == max(1, int(machine()["cores"]) // RANKS)
    assert rec["oversubscribed"] is False and rec["shared_pus"] == 0
    assert warnings(proc) == []
    rows = rec["binding"]
    assert len(rows) == RANKS * rec["threads"]
    sets = {rank: set().union(*(pu_list(r["bound"]) for r in rows if r["rank"] == rank)) for rank in range(RANKS)}
    assert sets[0] and sets[1] and not sets[0] & sets[1], sets
    observed = [r["pu"] for r in rows]
    assert len(set(observed)) == len(observed), rows


def test_unbound_default_threads_fit_the_pus() -> None:
    proc = plain_mpirun("hympi-affinity", "--check", env={"HYMPI_BIND": "none"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rec = record(proc)
    assert rec["threads_default"] is True and rec["threads"] == max(1, int(machine()["cores"]) // RANKS)
    assert rec["oversubscribed"] is False and rec["shared_pus"] == 0


def test_one_thread_per_pu_in_every_rank_is_warned_recorded_and_fails_the_check() -> None:
    # What the OpenMP runtime does by itself: as many threads per rank as the machine has PUs.
    threads = {"OMP_NUM_THREADS": str(pus())}
    proc = plain_mpirun("hympi-affinity", "--check", env=threads)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert len(warnings(proc)) == 1, proc.stderr
    assert "PU 0 (rank 0 thread 0, rank 1 thread 0" in warnings(proc)[0]
    assert "binding check: FAILED" in proc.stdout and "HYMPI_OVERSUBSCRIBE=1" in proc.stdout
    rec = record(proc)
    assert rec["threads_default"] is False and rec["threads"] == pus()
    assert rec["oversubscribed"] is True and rec["shared_pus"] > 0 and rec["verified"] is False

    for consent in ({"HYMPI_OVERSUBSCRIBE": "1"}, {}):
        flag = [] if consent else ["--oversubscribe"]
        asked = plain_mpirun("hympi-affinity", "--check", *flag, env={**threads, **consent})
        assert asked.returncode == 0, asked.stdout + asked.stderr
        assert len(warnings(asked)) == 1, asked.stderr  # asked for, still said
        rec = record(asked)
        assert rec["oversubscribed"] is True and rec["shared_pus"] > 0 and rec["verified"] is True


def test_every_app_records_the_sharing() -> None:
    skips.require_apps("hympi-pingpong")
    proc = plain_mpirun("hympi-pingpong", "--max-bytes", "16", "--iterations", "5", "--no-multi",
                        env={"OMP_NUM_THREADS": str(pus())})
    assert proc.returncode == 0, proc.stderr
    assert len(warnings(proc)) == 1, proc.stderr
    rec = record(proc)
    assert rec["oversubscribed"] is True and rec["shared_pus"] > 0 and rec["threads_default"] is False


def test_bad_oversubscribe_value_is_refused_before_mpi() -> None:
    env = {key: value for key, value in os.environ.items() if key not in LAYOUT_VARIABLES}
    proc = subprocess.run([str(BIN / "hympi-affinity"), "--check"], capture_output=True, text=True,
                          env={**env, "HYMPI_OVERSUBSCRIBE": "yes"}, timeout=60, check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == ["hympi-affinity: error: HYMPI_OVERSUBSCRIBE must be 0 or 1, got 'yes'"]
    assert "HYMPI_RESULT" not in proc.stdout
