"""`hympi profile`: the traffic matrix of C and Fortran MPI programs, compared exactly with the known pattern."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import REPO, hympi

PATTERN = REPO / "tests" / "data" / "profile"
MPIRUN = ["mpirun", "--oversubscribe", "--bind-to", "none"]


def expected_matrices(n: int) -> tuple[list[list[int]], list[list[int]]]:
    """What tests/data/profile/pattern.{c,f90} send, by the rules written in their comments."""
    b = [[0] * n for _ in range(n)]
    m = [[0] * n for _ in range(n)]

    def add(i: int, j: int, nbytes: int) -> None:
        b[i][j] += nbytes
        m[i][j] += 1

    for i in range(n):
        nxt, prv, nxt2 = (i + 1) % n, (i - 1) % n, (i + 2) % n
        add(i, nxt, 4 * 10 * (i + 1))  # 1. blocking, (rank+1)*10 ints
        add(i, nxt2, 7 * 8)  # 2. Isend on the reversed sub-communicator
        add(i, nxt, 24)  # 3. derived type / 6 ints
        for _ in range(4):  # 4. persistent: 3 x MPI_Start + 1 x MPI_Startall
            add(i, prv, 100)
        add(i, nxt, 16)  # 5. Sendrecv, 2 x int64 (6. MPI_PROC_NULL: nothing)
    if n > 1:
        add(0, n - 1, 4)  # 7. Ssend
    return b, m


@pytest.fixture(scope="module")
def programs(tmp_path_factory) -> dict[str, Path]:
    """pattern.c (and pattern.f90 where mpif90 exists) compiled without any profiling support."""
    out = tmp_path_factory.mktemp("profile")
    built = {}
    subprocess.run(["mpicc", "-O1", "-o", str(out / "pattern_c"), str(PATTERN / "pattern.c")], check=True,
                   timeout=120)
    built["c"] = out / "pattern_c"
    if shutil.which("mpif90"):
        # gfortran >= 10 rejects mpif.h's untyped buffers without this (NPB needs it too).
        subprocess.run(["mpif90", "-O1", "-fallow-argument-mismatch", "-w", "-o", str(out / "pattern_f"),
                        str(PATTERN / "pattern.f90")], check=True, timeout=120)
        built["fortran"] = out / "pattern_f"
    return built


@pytest.mark.parametrize("language", ["c", "fortran"])
@pytest.mark.parametrize("ranks", [3, 4])
def test_profile_matrix_is_exact(programs, language, ranks, tmp_path):
    if language not in programs:
        pytest.skip("mpif90 not installed")
    out = tmp_path / "traffic.json"
    proc = hympi("profile", "--out", str(out), "--", *MPIRUN, "-np", str(ranks), str(programs[language]),
                 timeout=120)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    want_bytes, want_msgs = expected_matrices(ranks)
    assert data["ranks"] == ranks
    assert data["bytes"] == want_bytes
    assert data["messages"] == want_msgs
    coll = data["collectives"]
    assert set(coll) == {"MPI_Bcast", "MPI_Allreduce", "MPI_Barrier"}
    assert coll["MPI_Bcast"] == {"calls": [1] * ranks, "send_bytes": [40] + [0] * (ranks - 1)}
    assert coll["MPI_Allreduce"] == {"calls": [1] * ranks, "send_bytes": [8] * ranks}
    assert coll["MPI_Barrier"]["calls"] == [1] * ranks


def test_profile_feeds_place(programs, tmp_path):
    out = tmp_path / "traffic.json"
    assert hympi("profile", "--quiet", "--out", str(out), "--", *MPIRUN, "-np", "4", str(programs["c"])).returncode == 0
    proc = hympi("place", "--matrix", str(out), "--topology", "synthetic:pack:2 core:2 pu:1", "--json")
    assert proc.returncode == 0, proc.stderr
    rec = json.loads(proc.stdout)
    assert set(rec["mappings"]) == {"round-robin", "block", "tree-map"}
    assert rec["mappings"]["tree-map"]["cost"] <= rec["mappings"]["block"]["cost"]


def test_program_without_mpi_writes_no_profile(tmp_path):
    proc = hympi("profile", "--out", str(tmp_path / "p.json"), "--", "true")
    assert proc.returncode == 1
    assert "no profile written" in proc.stderr


def test_failing_program_is_an_error(tmp_path):
    proc = hympi("profile", "--out", str(tmp_path / "p.json"), "--", "false")
    assert proc.returncode == 1
    assert "exit code 1" in proc.stderr


def test_no_command_is_usage_error():
    proc = hympi("profile", "--out", "x.json")
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1
