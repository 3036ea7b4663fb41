"""The apps' timed regions: --min-time scales iterations/repeats (never the problem) unless the
count is given, the phases cover the same region as time_s, bytes_moved/kernel_gbs follow the
traffic models, and the apps' own bad input exits 2 before MPI with one line naming the value."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import skips
from mpiapps import verified_record

REPO = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("HYMPI_BIN_DIR", REPO / "build" / "bin"))
MPIRUN = shutil.which("mpirun")

pytestmark = skips.needs_apps("hympi-rb3d")

# Slack for comparing phase sums (omp_get_wtime) with time_s (MPI_Wtime): two clocks.
CLOCK_SLACK_S = 1e-4


def run(binary: str, ranks: int, *args: str, threads: int = 1, env: dict[str, str] | None = None,
        timeout: float = 240) -> subprocess.CompletedProcess:
    """Runs `binary ARGS` on `ranks` x `threads`, unbound (the test machine is shared)."""
    assert MPIRUN is not None
    cmd = [MPIRUN, "--oversubscribe", "--bind-to", "none", "-np", str(ranks)]
    if os.geteuid() == 0:
        cmd.insert(1, "--allow-run-as-root")
    cmd += ["-x", f"OMP_NUM_THREADS={threads}"]
    for key in env or {}:
        cmd += ["-x", key]
    cmd += [str(BIN / binary), "--bind", "none", *args]
    full_env = {k: v for k, v in os.environ.items() if k != "HYMPI_MIN_TIME"}
    full_env.update(env or {})
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=full_env, check=False)


def assert_phases_within_time(rec: dict) -> None:
    """comp_s + comm_s (averages over ranks) fit into time_s (the slowest rank's timed region)."""
    assert rec["comp_s"] > 0
    assert rec["comp_s"] + rec["comm_s"] <= rec["time_s"] + CLOCK_SLACK_S, rec
    for name, phase in rec["phases"].items():
        assert phase["max_s"] <= rec["time_s"] + CLOCK_SLACK_S, name


def test_rb3d_iterates_until_min_time_and_the_reference_uses_the_same_count():
    # One rank: 50 iterations of 16^3 take milliseconds, so 0.3 s needs many more.
    rec = verified_record(run("hympi-rb3d", 1, "--size", "16", "--min-time", "0.3"))
    assert rec["time_s"] >= 0.3
    assert rec["min_time_s"] == 0.3 and rec["repetitions_fixed"] is False
    assert rec["timed_repetitions"] > 50  # the default count is only the first chunk
    assert rec["timed_repetitions"] == rec["metrics"]["iterations"]
    assert rec["problem"] == "16^3"  # the problem was not scaled
    iterations = rec["timed_repetitions"]
    assert len(rec["metrics"]["residuals"]) == 1 + iterations // 10 + (1 if iterations % 10 else 0)
    assert rec["bytes_moved"] == 48 * 16**3 * iterations
    assert rec["kernel_gbs"] == pytest.approx(rec["bytes_moved"] / rec["time_s"] / 1e9)

    # Two ranks agree on the count, and verify=reference passed: one rank re-solved with exactly
    # this count and got the same residual history bit for bit. (On a loaded machine the first
    # 50 iterations alone may already last the minimum.)
    rec = verified_record(run("hympi-rb3d", 2, "--size", "16", "--residual-every", "7", "--min-time", "0.5"))
    assert rec["time_s"] >= 0.5 and rec["timed_repetitions"] >= 50
    assert rec["metrics"]["verify"] == "reference"
    iterations = rec["timed_repetitions"]
    assert len(rec["metrics"]["residuals"]) == 1 + iterations // 7 + (1 if iterations % 7 else 0)


def test_rb3d_with_iterations_runs_exactly_that_many():
    rec = verified_record(run("hympi-rb3d", 1, "--size", "16", "--iterations", "7", "--min-time", "0.3"))
    assert rec["timed_repetitions"] == 7 and rec["repetitions_fixed"] is True
    assert rec["min_time_s"] == 0.3
    assert rec["time_s"] < 0.3


def test_min_time_defaults_to_the_environment():
    rec = verified_record(run("hympi-rb3d", 1, "--size", "12", env={"HYMPI_MIN_TIME": "0.15"}))
    assert rec["min_time_s"] == 0.15 and rec["time_s"] >= 0.15
    rec = verified_record(run("hympi-rb3d", 1, "--size", "12", env={"HYMPI_MIN_TIME": "0"}))
    assert rec["min_time_s"] == 0 and rec["timed_repetitions"] == 50


@pytest.mark.parametrize("ranks", [1, 2])
def test_rb3d_phases_cover_only_the_timed_loop(ranks: int):
    rec = verified_record(run("hympi-rb3d", ranks, "--size", "24", "--iterations", "40", "--min-time", "0"))
    assert_phases_within_time(rec)
    assert set(rec["phases"]) <= {"sweep", "halo", "residual", "residual_halo"}


def test_spmv3d_scales_reps_and_reports_the_products_phases():
    # One rank: 20 products of 16^3 take milliseconds, so 0.2 s needs many more.
    rec = verified_record(run("hympi-spmv3d", 1, "--global", "16", "16", "16", "--min-time", "0.2",
                              "--cg-iterations", "0"))
    assert rec["time_s"] >= 0.2 and rec["repetitions_fixed"] is False
    assert rec["timed_repetitions"] > 20 and rec["metrics"]["spmv_reps"] == rec["timed_repetitions"]
    # Two ranks (which on a loaded machine may need no more than the first 20 products).
    rec = verified_record(run("hympi-spmv3d", 2, "--global", "16", "16", "16", "--min-time", "0.2"))
    assert rec["time_s"] >= 0.2 and rec["repetitions_fixed"] is False
    reps = rec["timed_repetitions"]
    assert reps >= 20 and rec["metrics"]["spmv_reps"] == reps
    assert_phases_within_time(rec)
    # The run's phases are the products'; CG's are kept under their own key.
    assert set(rec["phases"]) == {"spmv_halo", "spmv_compute"}
    assert {"cg_spmv", "cg_dot", "cg_update"} <= set(rec["metrics"]["cg_phases"])
    # Stencil, as moved: x read once (8 B per point, and per point of the 16 x 16 face each rank reads of the
    # other's), y written and read for ownership (16 B per point: 32 KiB per rank are not streamed).
    assert rec["bytes_moved"] == (24 * 16**3 + 8 * 2 * 16**2) * reps
    assert rec["kernel_gbs"] == pytest.approx(rec["bytes_moved"] / rec["time_s"] / 1e9)

    fixed = verified_record(run("hympi-spmv3d", 1, "--global", "16", "16", "16", "--reps", "5", "--min-time", "0.2"))
    assert fixed["timed_repetitions"] == 5 and fixed["repetitions_fixed"] is True


def test_spmv3d_csr_traffic_counts_the_matrix():
    rec = verified_record(run("hympi-spmv3d", 1, "--global", "8", "8", "8", "--operator", "csr", "--reps", "4",
                              "--cg-iterations", "0"))
    # The matrix (values and column indexes, row starts), x read once, y written and read for ownership.
    points, nonzeros = 8**3, (3 * 8 - 2) ** 3
    per_product = nonzeros * (8 + 4) + (points + 1) * 4 + 8 * points + 16 * points
    assert rec["bytes_moved"] == per_product * 4


def test_stream_repeats_until_min_time_and_still_verifies():
    # Small arrays: thousands of passes, past the point where the values would overflow unrefilled.
    elements = 1 << 15
    rec = verified_record(run("hympi-stream", 1, "--elements", str(elements), "--min-time", "0.1"))
    assert rec["time_s"] >= 0.1 and rec["repetitions_fixed"] is False
    passes = rec["timed_repetitions"]
    assert passes > 300 and rec["metrics"]["timed_repeats"] == passes
    assert rec["bytes_moved"] == 24 * elements * passes
    assert rec["rate"] == pytest.approx(rec["kernel_gbs"])
    assert rec["metrics"]["triad_GBps"] >= rec["rate"] * 0.999  # the best pass beats the mean
    assert_phases_within_time(rec)

    # A given count is exact (the first pass untimed); every rank's triads count.
    fixed = verified_record(run("hympi-stream", 2, "--elements", str(elements), "--repeats", "4", "--min-time", "0.1"))
    assert fixed["timed_repetitions"] == 3 and fixed["repetitions_fixed"] is True
    assert fixed["bytes_moved"] == 24 * elements * 2 * 3
    assert_phases_within_time(fixed)


def test_npb_mz_repeats_the_whole_benchmark_and_every_repetition_verifies():
    skips.require_apps("hympi-sp-mz")
    once = verified_record(run("hympi-sp-mz", 2, "--class", "S", "--min-time", "0"))
    assert once["timed_repetitions"] == 1
    # Relative to one run here: the test machine may be loaded.
    min_time = round(2.5 * once["time_s"] + 0.05, 3)
    proc = run("hympi-sp-mz", 2, "--class", "S", "--min-time", str(min_time))
    rec = verified_record(proc)
    times = rec["metrics"]["repetition_s"]
    assert len(times) == rec["timed_repetitions"] == rec["metrics"]["repetitions"]
    assert rec["time_s"] == pytest.approx(sum(times)) and rec["time_s"] >= min_time
    assert sum(times[:-1]) < min_time  # it stopped as soon as the minimum was reached
    if times[0] < min_time:
        assert len(times) > 1
    assert rec["metrics"]["iterations"] == once["metrics"]["iterations"]  # the class's count, unscaled
    assert len(re.findall(r"Verification +SUCCESSFUL|Verification += +SUCCESSFUL", proc.stdout)) == 1
    if len(times) > 1:
        assert f"Repeated {len(times)} times" in proc.stdout
    assert_phases_within_time(rec)
    # Mop/s over the summed time: every repetition does one run's operations.
    operations = once["rate"] * once["time_s"]
    assert rec["rate"] * rec["time_s"] == pytest.approx(rec["timed_repetitions"] * operations, rel=1e-9)


def validate(binary: str, ranks: int, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`binary --validate-ranks RANKS ARGS`: the check launchers run before mpirun."""
    full_env = {k: v for k, v in os.environ.items() if k != "HYMPI_MIN_TIME"}
    full_env.update(env or {})
    return subprocess.run([str(BIN / binary), "--validate-ranks", str(ranks), *args], capture_output=True, text=True,
                          timeout=60, env=full_env, check=False)


def assert_one_line_naming(proc: subprocess.CompletedProcess, *fragments: str) -> None:
    """Exit 2 and one stderr line that contains every fragment."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


@pytest.mark.parametrize("value", ["-1", "nan", "inf", "abc"])
@pytest.mark.parametrize("binary", ["hympi-rb3d", "hympi-stream", "hympi-spmv3d", "hympi-bt-mz"])
def test_bad_min_time_is_rejected_naming_it(binary: str, value: str):
    assert_one_line_naming(validate(binary, 1, f"--min-time={value}"), "--min-time", value)


def test_bad_min_time_from_the_environment_is_rejected_naming_it():
    proc = validate("hympi-rb3d", 1, env={"HYMPI_MIN_TIME": "-0.5"})
    assert_one_line_naming(proc, "HYMPI_MIN_TIME", "-0.5")


def test_stream_elements_zero_is_rejected():
    assert_one_line_naming(validate("hympi-stream", 1, "--elements", "0"), "--elements", "0")
    # And when launched directly: rejected before any array exists.
    proc = run("hympi-stream", 1, "--elements", "0")
    assert proc.returncode == 2 and "--elements must be >= 1, got 0" in proc.stderr


def test_stream_size_beyond_memory_is_rejected_before_launch():
    too_big = str(10**13)  # 240 TB of arrays per rank
    assert_one_line_naming(validate("hympi-stream", 2, "--elements", too_big), too_big, "GiB")
    proc = run("hympi-stream", 2, "--elements", too_big)
    assert proc.returncode == 2 and too_big in proc.stderr and "bad_alloc" not in proc.stderr


@pytest.mark.parametrize("binary", ["hympi-rb3d", "hympi-spmv3d"])
def test_dims_whose_product_is_not_the_rank_count_say_so(binary: str):
    proc = validate(binary, 2, "--dims", "3", "1", "1")
    assert_one_line_naming(proc, "3 x 1 x 1 = 3 ranks, but the run has 2")
    proc = run(binary, 2, "--dims", "3", "1", "1")
    assert proc.returncode == 2 and "= 3 ranks, but the run has 2" in proc.stderr


def test_rb3d_size_is_no_longer_dash_n():
    assert_one_line_naming(validate("hympi-rb3d", 1, "-n", "16"), "-n")
    assert validate("hympi-rb3d", 1, "--size", "16").returncode == 0
