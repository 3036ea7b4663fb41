"""`hympi profile`: the traffic matrix, size histograms and MPI time of C and Fortran MPI programs, compared
exactly with the known pattern."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

import skips
from conftest import REPO, hympi
from hympi.contract import contract
from hympi.errors import HympiError
from hympi.profile import read_profile

PATTERN = REPO / "tests" / "data" / "profile"
MPIRUN = ["mpirun", "--oversubscribe", "--bind-to", "none"]


def expected_matrices(n: int) -> tuple[list[list[int]], list[list[int]], list[int]]:
    """What tests/data/profile/pattern.{c,f90} send, by the rules written in their comments, and the
    point-to-point size histogram (bins from 0, 64, 512, 4096, ... B)."""
    b = [[0] * n for _ in range(n)]
    m = [[0] * n for _ in range(n)]
    hist = [0] * 7

    def add(i: int, j: int, nbytes: int) -> None:
        b[i][j] += nbytes
        m[i][j] += 1
        hist[sum(nbytes >= edge for edge in (64, 512, 4096, 32768, 262144, 2097152))] += 1

    for i in range(n):
        nxt, prv, nxt2 = (i + 1) % n, (i - 1) % n, (i + 2) % n
        add(i, nxt, 4 * 10 * (i + 1))  # 1. blocking, (rank+1)*10 ints
        add(i, nxt2, 7 * 8)  # 2. Isend on the reversed sub-communicator
        add(i, nxt, 24)  # 3. derived type / 6 ints
        for _ in range(4):  # 4. persistent: 3 x MPI_Start + 1 x MPI_Startall
            add(i, prv, 100)
        add(i, nxt, 16)  # 5. Sendrecv, 2 x int64 (6. MPI_PROC_NULL: nothing)
        add(i, nxt, 4800)  # 8. Sendrecv_replace, 1200 ints
    if n > 1:
        add(0, n - 1, 4)  # 7. Ssend
    return b, m, hist


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
        skips.skip(skips.Reason.FORTRAN, "mpif90 is not installed")
    out = tmp_path / "traffic.json"
    proc = hympi("profile", "--out", str(out), "--", *MPIRUN, "-np", str(ranks), str(programs[language]),
                 timeout=120)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    want_bytes, want_msgs, want_hist = expected_matrices(ranks)
    assert data["ranks"] == ranks
    assert data["bytes"] == want_bytes
    assert data["messages"] == want_msgs
    coll = data["collectives"]
    assert set(coll) == {"MPI_Bcast", "MPI_Allreduce", "MPI_Barrier"}
    assert coll["MPI_Bcast"] == {"calls": [1] * ranks, "send_bytes": [80] + [0] * (ranks - 1)}
    assert coll["MPI_Allreduce"] == {"calls": [1] * ranks, "send_bytes": [8] * ranks}
    assert coll["MPI_Barrier"]["calls"] == [1] * ranks

    profile = read_profile(out)
    assert profile.size_bins == contract().profile_size_bins  # the C++ profiler counts in the declared bins
    assert profile.histograms == {
        "p2p": tuple(want_hist),
        "MPI_Bcast": (ranks - 1, 1, 0, 0, 0, 0, 0),  # the root sends 80 B, the others nothing
        "MPI_Allreduce": (ranks, 0, 0, 0, 0, 0, 0),
        "MPI_Barrier": (ranks, 0, 0, 0, 0, 0, 0),
    }
    # Rank 0 computes 0.25 s before step 7 while rank n-1 waits in MPI_Recv and the others in MPI_Bcast.
    wall, mpi = profile.wall_time_s, profile.mpi_time_s
    assert all(0.15 <= mpi[r] <= wall[r] for r in range(1, ranks)), (mpi, wall)
    assert wall[0] >= 0.25 and mpi[0] <= wall[0] - 0.2, (mpi, wall)
    assert 0 < profile.mpi_share < 1


def test_profile_feeds_place(programs, tmp_path):
    out = tmp_path / "traffic.json"
    out.write_text("an older file of the same name\n")  # replaced, whole, once the profile is read back
    assert hympi("profile", "--quiet", "--out", str(out), "--", *MPIRUN, "-np", "4", str(programs["c"])).returncode == 0
    assert read_profile(out).ranks == 4
    assert [p.name for p in tmp_path.iterdir()] == ["traffic.json"], "the profiler's directory was left"
    proc = hympi("place", "--matrix", str(out), "--topology", "synthetic:pack:2 core:2 pu:1", "--json")
    assert proc.returncode == 0, proc.stderr
    rec = json.loads(proc.stdout)
    assert set(rec["mappings"]) == {"round-robin", "block", "tree-map"}
    assert rec["mappings"]["tree-map"]["cost"] <= rec["mappings"]["block"]["cost"]


def test_profile_of_the_older_library_reads(tmp_path):
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"format": "hympi-profile", "version": 1, "ranks": 2, "mpi_library": "x",
                               "bytes": [[0, 8], [8, 0]], "messages": [[0, 1], [1, 0]], "collectives": {}}))
    profile = read_profile(old)
    assert profile.histograms == {}
    assert profile.mpi_time_s == profile.wall_time_s == (0.0, 0.0)
    assert profile.mpi_share == 0.0
    old.write_text(old.read_text()[:-1] + ', "mpi_time_s": [1.0], "wall_time_s": [2.0, 2.0]}')
    with pytest.raises(HympiError, match="MPI and wall times for its 2 ranks"):
        read_profile(old)


def test_program_without_mpi_writes_no_profile(tmp_path):
    """And leaves a file already at --out as it was: the profile of an earlier run, or anything else."""
    out = tmp_path / "p.json"
    out.write_text("precious\n")
    for command in ("true", "false"):
        proc = hympi("profile", "--out", str(out), "--", command)
        assert proc.returncode == 1
        assert "no profile written" in proc.stderr or "exit code 1" in proc.stderr
        assert out.read_text() == "precious\n"
    assert [p.name for p in tmp_path.iterdir()] == ["p.json"]


@pytest.mark.parametrize("which", ["program", "argument"])
def test_out_that_the_command_reads_is_refused(tmp_path, which):
    """`hympi profile --out prog -- ./prog` removed the program before it ran (and --out FILE -- cat FILE the file)."""
    program = tmp_path / "prog.sh"
    program.write_text("#!/bin/sh\ncat \"$@\"\n")
    program.chmod(0o755)
    data = tmp_path / "data.txt"
    data.write_text("input\n")
    out = program if which == "program" else data
    proc = hympi("profile", "--out", str(out), "--", str(program), str(data))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"hympi: error: --out {out} is the {which if which == 'program' else 'argument 1'} input "
        f"{out}: hympi never overwrites an input (write the output elsewhere)"]
    assert data.read_text() == "input\n" and program.read_text().startswith("#!/bin/sh")


def test_a_full_disk_leaves_no_partial_profile(programs, small_tmpfs):
    """The profiler's write fails at its close on a full disk: it says so and removes its temporary file (left
    behind, half written, before), and hympi's one line gives its reason, not "the command ran no MPI program"."""
    with (small_tmpfs / "filler").open("wb", buffering=0) as out:
        try:
            while out.write(b"\0" * 4096):
                pass
        except OSError:
            pass  # full
    out = small_tmpfs / "p.json"
    proc = hympi("profile", "--quiet", "--out", str(out), "--", *MPIRUN, "-np", "2", str(programs["c"]))
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"hympi: error: no profile written to {out}: cannot write {out}: No space left on device"]
    assert sorted(p.name for p in small_tmpfs.iterdir()) == ["filler"], "a partial profile was left"


def test_failing_program_is_an_error(tmp_path):
    proc = hympi("profile", "--out", str(tmp_path / "p.json"), "--", "false")
    assert proc.returncode == 1
    assert "exit code 1" in proc.stderr


def test_no_command_is_usage_error():
    proc = hympi("profile", "--out", "x.json")
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1
