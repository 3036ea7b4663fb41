"""The fitted models against real measurements, not data their own formula generated: runs of a 16-core node kept
in tests/data/measured/ (README there says how they were taken). A model that stops describing these runs fails."""

from __future__ import annotations

import shutil
import statistics
import tempfile
from pathlib import Path

import pytest

from hympi.report.analysis import AppGroup, group_runs
from hympi.report.blades import BladesView, blades_views
from hympi.report.model import fit_model
from hympi.store import Store

DATA = Path(__file__).resolve().parents[1] / "data" / "measured"
NODE_CORES = 16


def _read(name: str) -> Store:
    """One of the kept databases, read from a copy: Store.read migrates a database of an older schema, which would
    rewrite the tracked file."""
    with tempfile.TemporaryDirectory(prefix="hympi-measured-") as directory:
        copy = Path(directory) / name
        shutil.copyfile(DATA / name, copy)
        return Store.read(copy)  # SQLite keeps the open file after the directory is gone


def study_groups() -> dict[str, AppGroup]:
    """The node's study: rb3d 64^3 and spmv3d 48^3 on 1x1 and every split of 16 cores."""
    with _read("node16-study.db") as store:
        runs = store.runs()
        machine_of = {s.id: s.machine_id for s in store.sweeps()}
    return {g.app: g for g in group_runs(runs, machine_of)}


def blades_view() -> BladesView:
    """The node's blade-row sweep: 13 N1 x N2 layouts up to N2 = 8, both level-2 modes, 2 rounds each."""
    with _read("node16-blades.db") as store:
        runs = [r for r in store.runs() if r.app == "blades" and r.repeat > 0]
        machine_of = {s.id: s.machine_id for s in store.sweeps()}
    views = blades_views(runs, machine_of, dict.fromkeys(set(machine_of.values()), NODE_CORES))
    assert len(views) == 1
    return views[0]


def test_layout_model_describes_the_measured_rb3d_layouts():
    fit = fit_model(study_groups()["rb3d"], NODE_CORES)
    assert fit is not None and fit.error_kind == "leave-one-out"
    # Computation, communication and synchronisation all cost something on a real node.
    assert all(c > 0 for c in fit.coefficients), fit.coefficients
    on_all_cores = [row for row in fit.rows if row.ranks * row.threads == NODE_CORES]
    assert len(on_all_cores) == 5
    # Fitted to all six layouts it reproduces each within 10 %; left out, each 16-core layout is still predicted
    # from the others within 15 % (one core alone is not: nothing at 16 cores says what the serial code costs).
    assert max(abs(row.error) for row in fit.rows) < 0.10, fit.rows
    assert max(abs(row.loo_error) for row in on_all_cores) < 0.15, on_all_cores


def test_layout_model_ranks_the_extreme_layouts_as_measured():
    # spmv3d 48^3 is cache-resident at 16 cores: 1x16 is far ahead of 16x1 and 1x1 far behind; the model must say so.
    fit = fit_model(study_groups()["spmv3d"], NODE_CORES)
    assert fit is not None
    by_layout = {(row.ranks, row.threads): row for row in fit.rows}
    measured = sorted(by_layout, key=lambda k: by_layout[k].measured)
    predicted = sorted(by_layout, key=lambda k: by_layout[k].predicted)
    assert measured[0] == predicted[0] == (1, 1)
    assert measured[-1] == predicted[-1] == (1, NODE_CORES)


def test_blades_model_follows_the_measured_runs():
    view = blades_view()
    assert view.model is not None
    errors = [abs(p.error) for p in view.model.predictions]
    assert len(errors) == 26
    # Median within 12 %; the 15 % the benchmark asks of every layout is not met on this node (docs/performance.md).
    assert statistics.median(errors) < 0.12, errors


def test_blades_model_and_measurements_agree_on_which_mode_wins():
    view = blades_view()
    assert view.model is not None
    model_ms = {(p.obs.inner, p.obs.n1, p.obs.n2): p.model for p in view.model.predictions}
    for ratio in view.ratios:
        mpi, hybrid = model_ms[("mpi", ratio.n1, ratio.n2)], model_ms[("openmp", ratio.n1, ratio.n2)]
        assert ratio.high is not None and ratio.low is not None
        if ratio.n2 == 1:  # no level 2: both modes run the same decomposition, the model cannot tell them apart
            assert mpi == pytest.approx(hybrid)
        else:  # with level 2 the measurements separate the modes (MPI faster), and the model agrees
            assert ratio.high < 1.0, ratio
            assert mpi < hybrid, (ratio, mpi, hybrid)
