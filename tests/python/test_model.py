"""The fitted layout model: NNLS, recovery of known coefficients, predictions, and honesty with too few layouts."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from hympi.report.analysis import group_runs
from hympi.report.model import describe, fit_model
from hympi.stats.model import f_ranks, g_threads, nnls
from hympi.store import Run

A, B, C = 8.0, 0.3, 0.2  # seconds per unit of work: computation on one core, per comm step, per sync step


def _true_time(ranks: int, threads: int) -> float:
    return A / (ranks * threads) + B * f_ranks(ranks) + C * g_threads(threads)


def _run(ranks: int, threads: int, repeat: int, rate: float, bind: str = "core") -> Run:
    record = {"rate": rate, "rate_unit": "GFLOP/s", "problem": "64^3", "verified": True, "time_s": 1.0}
    return Run(1, "rb3d", ranks, threads, bind, "compact", repeat, ("--size", "64"), (), ("mpirun",), "ok", 0, 1.0,
               record)


def _group(layouts: list[tuple[int, int]], noise: float = 0.0, warmup: bool = True):
    runs = []
    for r, t in layouts:
        rate = 1.0 / _true_time(r, t)
        if warmup:
            runs.append(_run(r, t, 0, rate * 5))  # warm-up: far off, must be ignored
        runs += [_run(r, t, rep, rate * (1 + noise * (rep - 2))) for rep in (1, 2, 3)]
    return group_runs(runs, {1: 1})[0]


def test_shapes():
    assert [f_ranks(r) for r in (1, 2, 4, 8)] == [0.0, 2.0, 3.0, 4.0]
    assert [g_threads(t) for t in (1, 2, 4)] == [0.0, 2.0, 3.0]


def test_nnls_matches_brute_force_over_active_sets():
    rng = np.random.default_rng(7)
    for _ in range(100):
        a = rng.random((7, 3))
        y = rng.normal(size=7)
        best = None
        for mask in itertools.product([False, True], repeat=3):
            x = np.zeros(3)
            if any(mask):
                x[list(mask)] = np.linalg.lstsq(a[:, list(mask)], y, rcond=None)[0]
            if (x >= 0).all():
                res = np.linalg.norm(a @ x - y)
                best = res if best is None else min(best, res)
        x = nnls(a, y)
        assert (x >= 0).all()
        assert np.linalg.norm(a @ x - y) == pytest.approx(best, rel=1e-9, abs=1e-12)


def test_exact_data_recovers_the_coefficients_and_predicts_unrun_layouts():
    fit = fit_model(_group([(1, 1), (2, 1), (1, 2), (4, 1), (2, 2)]), machine_cores=8)
    assert fit.coefficients == pytest.approx((A, B, C), rel=1e-6)
    assert fit.error_kind == "leave-one-out" and fit.error is not None and fit.error < 1e-6
    rows = {r.label: r for r in fit.rows}
    assert {"1x4", "8x1", "4x2", "2x4", "1x8"} <= set(rows)  # the other splits of 4 cores and the machine's 8
    for label in ("1x4", "8x1", "2x4", "1x8"):
        r, t = map(int, label.split("x"))
        assert rows[label].measured is None
        assert rows[label].predicted == pytest.approx(1.0 / _true_time(r, t), rel=0.01)
    assert rows["2x2"].measured == pytest.approx(1.0 / _true_time(2, 2))  # the warm-up (5x) is ignored
    assert "Leave-one-out error of the time: 0.0 %" in describe(fit)


def test_noisy_data_reports_a_leave_one_out_error_larger_than_the_fit():
    fit = fit_model(_group([(1, 1), (2, 1), (1, 2), (4, 1), (2, 2), (1, 4)], noise=0.0), machine_cores=4)
    assert fit.error is not None and fit.error < 1e-6
    runs = []
    wobble = {(1, 1): 1.0, (2, 1): 1.15, (1, 2): 0.9, (4, 1): 1.1, (2, 2): 0.85, (1, 4): 1.05}
    for (r, t), k in wobble.items():
        runs += [_run(r, t, rep, k / _true_time(r, t)) for rep in (1, 2)]
    fit = fit_model(group_runs(runs, {1: 1})[0], machine_cores=4)
    assert fit.error_kind == "leave-one-out"
    in_sample = np.mean([abs(r.error) for r in fit.rows if r.error is not None])
    assert fit.error is not None and fit.error > in_sample > 0.01


def test_too_few_layouts_are_not_fitted():
    fit = fit_model(_group([(1, 1), (2, 1)]), machine_cores=2)
    assert fit.coefficients is None and fit.rows == () and fit.error is None
    assert "only 2 layout(s) measured (1x1, 2x1): too few to fit" in describe(fit)
    fit = fit_model(group_runs([_run(1, 1, 0, 5.0), _run(2, 1, 0, 5.0), _run(1, 2, 0, 5.0)], {1: 1})[0])
    assert fit.coefficients is None  # warm-ups only: nothing measured


def test_three_layouts_give_an_in_sample_error_and_say_so():
    fit = fit_model(_group([(1, 1), (2, 1), (1, 2)]), machine_cores=4)
    assert fit.error_kind == "in-sample"
    assert fit.coefficients == pytest.approx((A, B, C), rel=1e-6)
    assert "In-sample error" in describe(fit) and "3 layouts for 3 terms" in describe(fit)


def test_terms_no_layout_identifies_are_not_used_to_predict():
    fit = fit_model(_group([(1, 1), (1, 2), (1, 4)]), machine_cores=4)
    assert {r.label for r in fit.rows} == {"1x1", "1x2", "1x4"}  # no multi-rank layout can be predicted
    assert "t_comm is unknown" in fit.note
