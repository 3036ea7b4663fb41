"""STREAM at the cache levels (stream --level) and the working sets rb3d and spmv3d record, end to end."""

from __future__ import annotations

import math
import tomllib

import pytest

import skips
from hympi.study import cache_levels
from hympi.topology import MachineSummary, machine_summary
from mpiapps import REPO, one_error_line, run, run_single, verified_record

# Read here from the file itself: the C++ side compiles the same number in through the generated header.
CACHE_FRACTION = tomllib.loads((REPO / "contract.toml").read_text())["stream"]["cache_fraction"]
INNER_BYTES = 64 * 2**20  # kStreamInnerBytes


@skips.needs_apps("hympi-stream")
@pytest.mark.parametrize("threads", [1, 2])
def test_each_cache_level_holds_half_a_threads_share_of_it_in_three_arrays(threads: int):
    summary = machine_summary()
    levels = [(level, size * count // summary.pus) for level, size, count in summary.caches if level <= 3]
    if not levels:
        skips.skip(skips.Reason.NO_CACHE, "hwloc reports none on this machine")
    for level, share in levels:
        rec = verified_record(run("hympi-stream", 1, threads, "--level", f"l{level}", "--repeats", "3"))
        elements = rec["metrics"]["elements"]
        assert rec["stream_level"] == f"l{level}" and rec["cache_bytes_per_pu"] == share, rec
        assert elements == max(int(CACHE_FRACTION * share / 24), 1) * threads, (level, share)
        assert rec["working_set_bytes"] == 24 * elements
        assert rec["problem"] == f"{elements} doubles/array/rank in L{level}"  # a report section of its own
        assert rec["metrics"]["inner_repetitions"] == max(1, math.ceil(INNER_BYTES / (24 * elements)))
        assert rec["bytes_moved"] == pytest.approx(24 * elements * rec["metrics"]["inner_repetitions"]
                                                   * rec["timed_repetitions"])


@skips.needs_apps("hympi-stream")
def test_the_memory_level_is_recorded_and_a_given_array_size_is_no_level():
    rec = verified_record(run_single("hympi-stream", "--elements", "10000", "--repeats", "2"))
    assert "stream_level" not in rec and "cache_bytes_per_pu" not in rec and rec["working_set_bytes"] == 240000
    rec = verified_record(run_single("hympi-stream", "--level", "memory", "--elements", "10000", "--repeats", "2"))
    assert rec["stream_level"] == "memory" and rec["metrics"]["inner_repetitions"] == 1


@skips.needs_apps("hympi-stream")
def test_a_bad_level_or_a_level_with_an_array_size_exits_2_naming_them():
    assert "l4" in one_error_line(run_single("hympi-stream", "--level", "l4"), 2)
    line = one_error_line(run_single("hympi-stream", "--level", "l1", "--elements", "5"), 2)
    assert "--elements 5" in line and "--level l1" in line, line


@skips.needs_apps("hympi-rb3d", "hympi-spmv3d")
@pytest.mark.parametrize("ranks", [1, 2])
def test_rb3d_and_spmv3d_record_the_arrays_their_kernel_sweeps(ranks: int):
    # 8^3 points, one ghost layer, stored as Grid3D pads them: rows of 10 points padded to whole 64-byte lines (16
    # doubles) and 7 doubles ahead of the grid, so the first owned point starts a line; two ranks split y (10 x 6 x
    # 10 points). rb3d sweeps u and f, spmv3d's stencil product x and y; CSR adds its matrix (27 values and column
    # indexes per row and the row starts), which the working set must grow by.
    padded = 7 + 16 * (10 * 10 if ranks == 1 else 6 * 10)
    rec = verified_record(run("hympi-rb3d", ranks, 1, "--size", "8", "--iterations", "2"))
    assert rec["working_set_bytes"] == 2 * 8 * padded
    stencil = verified_record(run("hympi-spmv3d", ranks, 1, "--global", "8", "8", "8", "--cg-iterations", "0"))
    assert stencil["working_set_bytes"] == 2 * 8 * padded
    csr = verified_record(run("hympi-spmv3d", ranks, 1, "--global", "8", "8", "8", "--cg-iterations", "0",
                              "--operator", "csr"))
    assert csr["working_set_bytes"] > stencil["working_set_bytes"] + 27 * 8 * 8 * 8 * 8 // ranks


@pytest.mark.parametrize(("caches", "levels"), [
    (((1, 32 << 10, 2), (2, 512 << 10, 2), (3, 32 << 20, 1)), ("l1", "l2", "l3")),
    (((1, 32 << 10, 4), (2, 1 << 20, 4)), ("l1", "l2")),  # a VM whose hwloc shows no L3
    (((2, 1 << 20, 4), (3, 8 << 20, 1), (4, 128 << 20, 1)), ("l2", "l3")),  # no L1 data cache shown; L4 is no level
    ((), ())])
def test_the_study_sizes_stream_for_the_cache_levels_hwloc_reports(caches, levels):
    summary = MachineSummary(packages=1, numa_nodes=1, cores=4, pus=4, caches=caches, hash="h", raw="{}")
    assert cache_levels(summary) == levels
