"""The MPI benchmark binaries under bench/ (spmv, transpose, io): a count past the type it is stored in, a size
whose points overflow or that no memory holds, refused in one line for the whole job (exit 2), and --help."""

from __future__ import annotations

from pathlib import Path

import pytest

import skips
from mpiapps import BIN, have, run_bench

BENCHES = ("hympi-bench-spmv", "hympi-bench-transpose", "hympi-bench-io")

pytestmark = skips.needs(skips.Reason.NOT_BUILT, all(have(b) for b in BENCHES), str(BIN))


@pytest.mark.parametrize(("name", "args", "line"), [
    # 2^32 rounds became 0 rounds in an int, then SIGSEGV; 99999999999 wrapped to a run that never ended
    ("hympi-bench-spmv", ["--per-rank", "2", "--rounds", "4294967296"],
     "hympi-bench-spmv: error: --rounds: '4294967296' is out of range (1 to 2147483647)"),
    # its cube wrapped: "local block of 4290028155657611279 points"
    ("hympi-bench-spmv", ["--per-rank", "99999999999"],
     "hympi-bench-spmv: error: --per-rank: '99999999999' is out of range (1 to 1048576)"),
    ("hympi-bench-spmv", ["--per-rank", "1048576"],
     "hympi-bench-spmv: error: local block of 1152934698784129063 points is too large for 32-bit CSR column indexes"),
    ("hympi-bench-transpose", ["--grid", "8", "8", "8", "--reps", "4294967296"],
     "hympi-bench-transpose: error: --reps: '4294967296' is out of range (1 to 2147483647)"),
    ("hympi-bench-transpose", ["--grid", "8", "0", "8"],
     "hympi-bench-transpose: error: --grid: '0' is not a positive integer"),
    # the last of a repeated option silently won
    ("hympi-bench-transpose", ["--grid", "8", "8", "8", "--grid", "4", "4", "4"],
     "hympi-bench-transpose: error: --grid is given more than once"),
    ("hympi-bench-spmv", ["--per-rank", "2", "--per-rank", "3"],
     "hympi-bench-spmv: error: --per-rank is given more than once"),
    ("hympi-bench-io", ["--reps", "1", "--reps", "2"], "hympi-bench-io: error: --reps is given more than once"),
])
def test_bad_counts_and_sizes_are_one_line_for_the_job(tmp_path: Path, name: str, args: list[str], line: str):
    proc = run_bench(name, 2, *args, cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    said = [x for x in proc.stderr.splitlines() if x.startswith(name)]
    assert said == [line], proc.stderr
    assert not proc.stdout.strip()


def test_a_grid_no_memory_holds_is_refused_before_allocating(tmp_path: Path):
    proc = run_bench("hympi-bench-transpose", 2, "--grid", "1048576", "1048576", "1024", cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    said = [x for x in proc.stderr.splitlines() if x.startswith("hympi-bench-transpose")]
    assert len(said) == 1 and said[0].startswith(
        "hympi-bench-transpose: error: --grid 1048576 1048576 1024 (six arrays of a rank's share, 8 B a point; the "
        "transposes' buffers come on top) needs an estimated "), proc.stderr


@pytest.mark.parametrize("name", BENCHES)
@pytest.mark.parametrize("flag", ["-h", "--help"])
def test_help_prints_the_usage_once_and_runs_nothing(tmp_path: Path, name: str, flag: str):
    proc = run_bench(name, 2, flag, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[0].startswith(f"usage: {name} --") or \
        proc.stdout.splitlines()[0].startswith(f"usage: {name} [--")
    assert len(proc.stdout.splitlines()) == 1 and list(tmp_path.iterdir()) == []
