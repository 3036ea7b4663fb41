"""spmv3d and rb3d end to end with mpirun: the CG (and rb3d) residual histories in the HYMPI_RESULT
lines are identical for every layout and overlap strategy, and bad input exits 2 with one line."""

from __future__ import annotations

import pytest

import skips
from mpiapps import one_error_line, record, run, run_single

pytestmark = skips.needs_apps("hympi-spmv3d")


# (ranks, threads, strategy, extra args): odd rank counts give uneven blocks of the 13x10x9 grid.
SPMV_RUNS = [
    (1, 1, "bulk", []),
    (2, 1, "split", ["--tile", "5", "4", "3"]),
    (3, 1, "bulk", []),
    (3, 1, "split", []),
    (4, 1, "bulk", ["--tile", "16", "2", "2"]),
    (1, 2, "commthread", []),
    (2, 2, "commthread", ["--tile", "4", "4", "4"]),
    (1, 2, "split", ["--dims", "1", "1", "1"]),
]


def test_cg_residual_history_is_identical_for_every_layout_and_strategy():
    histories = {}
    for ranks, threads, strategy, extra in SPMV_RUNS:
        rec = record(
            run(
                "hympi-spmv3d",
                ranks,
                threads,
                "--global",
                "13",
                "10",
                "9",
                "--reps",
                "2",
                "--strategy",
                strategy,
                "--verify",
                "exact",
                *extra,
            )
        )
        m = rec["metrics"]
        assert rec["verified"] is True
        assert m["spmv_wrong_points"] == 0
        assert m["cg_converged"] is True and m["cg_max_error"] <= 1e-6
        assert m["strategy"] == strategy
        assert m["process_grid"][0] * m["process_grid"][1] * m["process_grid"][2] == ranks
        histories[(ranks, threads, strategy, tuple(extra))] = m["cg_residuals"]
    first = next(iter(histories.values()))
    assert len(first) > 10
    for key, history in histories.items():
        assert history == first, key  # JSON round-trips doubles exactly


def test_csr_history_is_layout_independent_and_reference_verification_passes():
    a = record(run("hympi-spmv3d", 1, 1, "--global", "9", "8", "7", "--operator", "csr", "--reps", "1"))
    b = record(
        run("hympi-spmv3d", 3, 1, "--global", "9", "8", "7", "--operator", "csr", "--reps", "1", "--strategy", "split")
    )
    assert a["metrics"]["verify"] == "reference" and a["verified"] and b["verified"]
    assert a["metrics"]["cg_residuals"] == b["metrics"]["cg_residuals"]


def test_a_failed_verification_says_what_failed():
    # Five CG iterations cannot reach the manufactured solution: exit 1, and the line says why.
    proc = run("hympi-spmv3d", 2, 1, "--global", "12", "12", "12", "--cg-iterations", "5", "--reps", "1")
    assert proc.returncode == 1, proc.stderr
    assert "verification (reference): FAILED: CG stopped after 5 iterations, not converged, error " in proc.stdout, \
        proc.stdout


def test_per_rank_problem_grows_with_the_ranks():
    rec = record(run("hympi-spmv3d", 2, 1, "--per-rank", "40", "40", "3", "--reps", "2", "--cg-iterations", "0"))
    assert rec["problem"] in ("80x40x3", "40x80x3")
    assert rec["metrics"]["t_comm_s"] >= 0 and rec["metrics"]["t_comp_s"] > 0


def test_the_bound_fraction_is_the_kernels_bandwidth_over_the_given_triad_as_moved():
    # The bytes themselves: test_min_time.py and the C++ suite.
    proc = run("hympi-spmv3d", 1, 1, "--global", "13", "10", "9", "--operator", "csr", "--reps", "3",
               "--cg-iterations", "0", "--verify", "exact", "--triad-GBps", "6")
    rec = record(proc)
    assert rec["kernel_gbs"] == pytest.approx(rec["bytes_moved"] / rec["time_s"] / 1e9)
    # The given triad (STREAM's 24 B per element) in bytes as moved (32 B: a's write-allocate) is the bound.
    assert (rec["triad_gbs"], rec["triad_source"], rec["bound_gbs"]) == (6.0, "given", 8.0)
    assert rec["bound_fraction"] == pytest.approx(rec["kernel_gbs"] / 8.0)
    assert "of the bound 8 GB/s (STREAM triad 6 GB/s, given)" in proc.stdout


def test_the_bound_is_measured_on_the_runs_ranks_without_a_given_triad():
    rec = record(run("hympi-spmv3d", 2, 1, "--global", "12", "12", "12", "--operator", "csr", "--reps", "2",
                     "--cg-iterations", "0", "--verify", "exact"))
    assert rec["triad_source"] == "measured" and rec["triad_gbs"] > 0
    assert rec["bound_gbs"] == pytest.approx(rec["triad_gbs"] * 32 / 24)
    assert rec["bound_fraction"] == pytest.approx(rec["kernel_gbs"] / rec["bound_gbs"])


def test_rb3d_residuals_are_identical_for_every_strategy_and_layout():
    histories = []
    for ranks, threads, strategy, extra in [
        (1, 1, "bulk", []),
        (3, 1, "split", ["--tile", "4", "3", "5"]),
        (2, 2, "commthread", []),
        (1, 2, "commthread", ["--tile", "8", "8", "8"]),
    ]:
        rec = record(
            run(
                "hympi-rb3d",
                ranks,
                threads,
                "--size",
                "11",
                "--iterations",
                "6",
                "--residual-every",
                "2",
                "--omega",
                "1.4",
                "--strategy",
                strategy,
                *extra,
            )
        )
        assert rec["verified"] is True and rec["metrics"]["strategy"] == strategy
        histories.append(rec["metrics"]["residuals"])
    assert all(h == histories[0] for h in histories)


def test_bulk_reports_the_comm_thread_model():
    rec = record(run("hympi-spmv3d", 1, 2, "--global", "16", "16", "16", "--reps", "3", "--cg-iterations", "0"))
    model = rec["metrics"]["commthread_model"]
    assert model["P"] == 2
    c = model["C"]
    assert 0 <= c <= 1
    assert model["relative_time"] == pytest.approx(max(2 * (1 - c), c))


@pytest.mark.parametrize(
    ("binary", "args", "needle"),
    [
        ("hympi-spmv3d", ["--validate-ranks", "2", "--global", "8", "8", "8", "--ghost", "5"], "ghost width 5"),
        ("hympi-spmv3d", ["--global", "8", "8", "8", "--ghost", "9"], "ghost width 9"),
        ("hympi-spmv3d", ["--strategy", "overlapped"], "'overlapped'"),
        ("hympi-spmv3d", ["--tile", "4", "0", "4"], "tile size"),
        ("hympi-spmv3d", ["--strategy", "commthread"], "commthread"),
        ("hympi-spmv3d", ["--operator", "ell"], "'ell'"),
        ("hympi-spmv3d", ["--triad-GBps", "0"], "--triad-GBps"),
        ("hympi-spmv3d", ["--triad-GBps", "-3"], "--triad-GBps"),
        ("hympi-rb3d", ["--strategy", "commthread"], "commthread"),
        ("hympi-rb3d", ["--tile", "0", "4", "4"], "tile size"),
        ("hympi-rb3d", ["--strategy", "funnel"], "'funnel'"),
    ],
)
def test_bad_input_exits_2_with_one_line(binary, args, needle):
    assert needle in one_error_line(run_single(binary, *args), 2)
