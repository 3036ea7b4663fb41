"""Two-level sweeps (hympi sweep blades --n1 --n2 --inner), their records, resume, the Hybrid vs MPI (blade row)
report section and its phase model, with a stand-in hympi-blades (tests/python/fakeblades.py) and no MPI."""

from __future__ import annotations

import importlib.util
import math
import os
from pathlib import Path

import pytest

import skips
from conftest import assert_refused, hympi, sweep_params
from fakeapps import launches
from fakeblades import BLADE_MSG, COMP, HALO_MSG, OMP, WAIT, fake_blades_bin
from hympi.cli.common import ensure_out_dir
from hympi.report.blades import BladesView, RatioCell, why_sentence
from hympi.report.writer import write_report
from hympi.stats.blades_model import Observation, fit, relative_error
from hympi.store import Run, Store, schema
from hympi.sweep import SweepParams, plan
from hympi.twolevel import TwoLevelLayout, expand, of_run, sweep_axes
from olddb import store_at

REPO = Path(__file__).resolve().parents[2]
PROBLEM = ["--", "--blades", "4", "--grid", "8", "8", "4"]


def test_each_mode_launches_its_own_shape_and_level_2_arguments():
    layouts = expand((1, 2), (1, 2), ("openmp", "mpi"))
    assert [(x.ranks, x.threads, x.args) for x in layouts] == [
        (1, 1, ("--inner", "openmp")), (1, 2, ("--inner", "openmp")), (2, 1, ("--inner", "openmp")),
        (2, 2, ("--inner", "openmp")),
        (1, 1, ("--inner", "mpi", "--n2", "1")), (2, 1, ("--inner", "mpi", "--n2", "2")),
        (2, 1, ("--inner", "mpi", "--n2", "1")), (4, 1, ("--inner", "mpi", "--n2", "2"))]
    shapes, args = sweep_axes(layouts)
    params = sweep_params("blades", shapes, repeat=2, layout_args=args, seed=7)
    the_plan = plan(params, None)
    # 8 layouts x (warm-up + 2 rounds); three of them launch 2 ranks x 1 thread, yet all are other items.
    assert len(the_plan.items) == 24 and len({i.key() for i in the_plan.items}) == 24
    assert sum(1 for x in the_plan.layouts if x[:2] == (2, 1)) == 3
    assert SweepParams.from_dict(params.as_dict()) == params
    assert "layout_args" not in sweep_params("blades", shapes).as_dict()  # ordinary sweeps keep their identity
    # A run's arguments tell its layout back, as the report reads a failed run's.
    assert of_run(4, 1, ("--blades", "4", "--inner", "mpi", "--n2", "2")) == TwoLevelLayout(2, 2, "mpi")
    assert of_run(2, 2, ("--inner=openmp",)) == TwoLevelLayout(2, 2, "openmp")
    assert of_run(3, 1, ("--inner", "mpi", "--n2", "2")) is None


def test_dry_run_prints_each_items_command(tmp_path: Path):
    env = fake_blades_bin(tmp_path)
    proc = hympi("sweep", "blades", "--n1", "1,2", "--n2", "2", "--inner", "openmp,mpi", "--no-warmup",
                 "--oversubscribe", "--dry-run", "--db", str(tmp_path / "r.db"), *PROBLEM, env=env)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 4
    tails = sorted(line.split("hympi-blades", 1)[1].strip() for line in lines)
    assert tails == ["--blades 4 --grid 8 8 4 --inner mpi --n2 2"] * 2 + ["--blades 4 --grid 8 8 4 --inner openmp"] * 2
    assert sum("-np 4 " in line and "OMP_NUM_THREADS=1" in line for line in lines) == 1  # 2x2 mpi
    assert sum("-np 2 " in line and "OMP_NUM_THREADS=2" in line for line in lines) == 1  # 2x2 openmp
    assert not (tmp_path / "r.db").exists() and launches(env) == []


@pytest.mark.parametrize(("args", "needle"), [
    (["sweep", "rb3d", "--n1", "2"], "not rb3d"),
    (["sweep", "blades", "--n1", "2", "--ranks", "2"], "drop --ranks/--threads"),
    (["sweep", "blades", "--inner", "cuda"], "'cuda'"),
    (["sweep", "blades", "--n2", "0"], "--n2"),
    (["sweep", "blades", "--n1", "8", "--oversubscribe", *PROBLEM], "N1 = 8"),
    (["sweep", "blades", "--n2", "16", "--inner", "mpi", "--oversubscribe", *PROBLEM], "N2 = 16 > J = 8"),
    (["sweep", "blades", "--n1", "2", *PROBLEM, "--inner", "mpi"], "--inner"),
])
def test_bad_two_level_input_is_refused_before_anything_launches(tmp_path: Path, fake_launcher, args, needle):
    env, marker = fake_launcher
    bins = fake_blades_bin(tmp_path)
    merged = {**bins, **env}
    split = args.index("--") if "--" in args else len(args)
    full = [*args[:split], "--db", str(tmp_path / "r.db"), *args[split:]]
    assert_refused(full, needle, (merged, marker))
    assert not (tmp_path / "r.db").exists()


def _sweep(tmp_path: Path, env: dict[str, str], *extra: str) -> None:
    proc = hympi("sweep", "blades", "--n1", "1,2", "--n2", "1,2", "--repeat", "2", "--oversubscribe", "--seed", "3",
                 "--db", str(tmp_path / "r.db"), *extra, *PROBLEM, env=env, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_sweep_records_both_modes_resumes_and_reports(tmp_path: Path):
    env = {**fake_blades_bin(tmp_path), "FAKE_CORES": str(os.cpu_count() or 2)}
    _sweep(tmp_path, env)
    with Store.open(tmp_path / "r.db", create=False) as store:
        runs = store.runs()
        assert len(runs) == 8 * 3 and len({r.key() for r in runs}) == 24
        mpi_2x2 = [r for r in runs if r.item_args == ("--inner", "mpi", "--n2", "2") and r.ranks == 4]
        assert len(mpi_2x2) == 3 and all(r.threads == 1 for r in mpi_2x2)
        assert mpi_2x2[0].app_args == ("--blades", "4", "--grid", "8", "8", "4", "--inner", "mpi", "--n2", "2")
        assert all(r.record and r.record["metrics"]["n1"] * r.record["metrics"]["n2"] == r.ranks * r.threads
                   for r in runs)
        # Pretend the sweep was stopped after 19 runs: the newest five are lost.
        sweep = store.sweeps()[0]
        lost = [r.id for r in runs[-5:]]
        store.conn.execute(f"DELETE FROM runs WHERE id IN ({','.join('?' * len(lost))})", lost)
        store.set_sweep_status(sweep.id, "interrupted")
    before = len(launches(env))
    _sweep(tmp_path, env, "--resume")
    assert len(launches(env)) - before == 5
    with Store.open(tmp_path / "r.db", create=False) as store:
        runs = store.runs()
        assert len(runs) == 24 and len({r.key() for r in runs}) == 24 and len(store.sweeps()) == 1
        index = write_report(store, ensure_out_dir(tmp_path / "report"))
    page = index.read_text()
    assert "Hybrid vs MPI (blade row)" in page and "MPI / hybrid" in page
    assert "4 blades of 8x8x4" in page and "2x2: " in page
    figures = sorted(p.name for p in (tmp_path / "report").glob("blades-m*.png"))
    assert [f.rsplit("-", 1)[1] for f in figures] == ["memory.png", "ratio.png", "time.png"]


def test_the_section_is_absent_without_blades_runs(tmp_path: Path):
    with Store.open(tmp_path / "r.db") as store:
        machine = store.ensure_machine("h", "t", "m", "c", {"cores": 2})
        sweep = store.create_sweep(machine.id, "rb3d", {}, 1)
        store.add_run(Run(sweep.id, "rb3d", 1, 1, "core", "compact", 1, (), (), ("mpirun",), "ok", 0, 1.0,
                          {"rate": 1.0, "rate_unit": "GFLOP/s", "problem": "8^3"}))
        page = write_report(store, ensure_out_dir(tmp_path / "report")).read_text()
    assert "rb3d" in page and "Hybrid vs MPI" not in page and "id='blades'" not in page


def _obs(n1: int, n2: int, inner: str, cores: int = 2, scale: float = 1.0) -> Observation:
    """A layout whose phases follow the fake's coefficients (times scale)."""
    s = max(1.0, n1 * n2 / cores)
    t = n2 if inner == "openmp" else 1
    g = 0.0 if t == 1 else 1.0 + math.log2(t)
    share = math.ceil(8 / n1) * 16 * math.ceil(32 / n2) * 8
    comp = (COMP * share + OMP * g) * scale
    m_halo = 0.0 if inner != "mpi" or n2 == 1 else (1.0 if n2 == 2 else 2.0)
    wait = WAIT * share * (s - 1.0)
    halo = (HALO_MSG * m_halo + (wait if m_halo else 0.0)) * scale
    blade = (BLADE_MSG * (2.0 if n1 > 1 else 0.0) + (wait if n1 > 1 else 0.0)) * scale
    return Observation(n1, n2, inner, 8, (16, 32, 8), cores, comp + halo + blade, comp, halo, blade, 0.0, 0.0)


def test_the_model_recovers_known_coefficients_and_explains_the_ratio():
    observations = [_obs(n1, n2, inner) for inner in ("openmp", "mpi") for n1 in (1, 2, 4) for n2 in (1, 2, 4)]
    model = fit(observations)
    assert model is not None
    comp, halo, blade = (f.coefficients for f in model.fits)
    assert comp == pytest.approx((COMP, OMP, 0.0), rel=1e-6, abs=1e-12)
    assert halo == pytest.approx((HALO_MSG, WAIT, 0.0), rel=1e-6, abs=1e-12)
    assert blade == pytest.approx((BLADE_MSG, WAIT, 0.0, 0.0, 0.0), rel=1e-6, abs=1e-12)
    assert model.worst < 1e-6
    # An unseen layout is predicted from the terms, not looked up.
    assert model.predict(_obs(8, 2, "mpi")).model == pytest.approx(_obs(8, 2, "mpi").iteration_s, rel=1e-6)
    # N2 = 2: the group halo (5e-4 s) outweighs the OpenMP overhead (2e-4 x g(2) = 4e-4 s): hybrid ahead.
    said = why_sentence(model, RatioCell(1, 2, 1.1, 1.05, 1.2, fewest=4))
    assert said.startswith("1x2: hybrid wins (MPI / hybrid 1.10, CI 1.05-1.20)") and "hybrid ahead" in said
    assert "cores" not in said  # 2 workers on 2 cores: not oversubscribed
    assert "4 workers on 2 cores" in why_sentence(model, RatioCell(2, 2, 1.1, 1.05, 1.2, fewest=4))
    assert "indistinguishable" in why_sentence(model, RatioCell(1, 2, 1.01, 0.97, 1.05, fewest=4))
    # The same interval from 3 runs a side is no verdict: hympi says so rather than "hybrid wins".
    assert why_sentence(model, RatioCell(1, 2, 1.1, 1.05, 1.2, fewest=3)).startswith(
        "1x2: hybrid and MPI cannot be separated with 3 runs a side (MPI / hybrid 1.10, CI 1.05-1.20; a verdict "
        "needs 4 runs a side)")
    assert why_sentence(model, RatioCell(1, 1, 1.0, 0.9, 1.1, fewest=4)).startswith(
        "1x1: hybrid and MPI are indistinguishable")
    assert why_sentence(model, RatioCell(3, 2, 1.0, 0.9, 1.1, fewest=4)) == "3x2: not measured in both modes."


def test_the_bench_table_gives_no_verdict_from_too_few_runs(capsys):
    # bench/blades/blades.py's ratio table once said "MPI faster" beside a sentence saying 3 runs a side cannot tell.
    spec = importlib.util.spec_from_file_location("bench_blades", REPO / "bench" / "blades" / "blades.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    cells = (RatioCell(1, 2, 0.91, 0.68, 0.99, fewest=3), RatioCell(1, 4, 1.09, 1.02, 1.19, fewest=4),
             RatioCell(2, 2, 0.91, 0.68, 0.99, fewest=4), RatioCell(4, 2, 1.01, 0.95, 1.07, fewest=3))
    bench.ratio_table(BladesView(machine_id=1, blades=8, grid=(32, 32, 16), cores=16, cells=(), ratios=cells,
                                 model=None, why=(), confidence=0.95))
    verdicts = [line.split("  ")[-1].strip() for line in capsys.readouterr().out.splitlines()[1:]]
    assert verdicts == ["too few runs (3 a side)", "hybrid faster", "MPI faster", "indistinguishable"]


def test_relative_error_and_a_model_that_misses():
    assert relative_error(1.15, 1.0) == pytest.approx(0.15)
    assert relative_error(0.9, 1.0) == pytest.approx(-0.1)
    assert relative_error(1.0, 0.0) == math.inf
    # 1x1 mpi 30 % slower than 1x1 openmp, the same decomposition with the same columns: no fit follows both, and
    # the error shows it.
    observations = [_obs(n1, n2, inner) for inner in ("openmp", "mpi") for n1 in (1, 2) for n2 in (1, 2)]
    bad = observations[4]
    assert (bad.inner, bad.n1, bad.n2) == ("mpi", 1, 1)
    observations[4] = Observation(bad.n1, bad.n2, bad.inner, bad.blades, bad.grid, bad.cores, bad.iteration_s * 1.3,
                                  bad.comp_s * 1.3, bad.halo_s, bad.blade_s, 0.0, 0.0)
    model = fit(observations)
    assert model is not None and 0.1 < model.worst < 0.2
    assert fit(observations[:2]) is None


def test_schema_8_keeps_older_runs_and_keys_runs_by_item_arguments(tmp_path: Path):
    path = tmp_path / "old.db"
    with store_at(path, 7) as old:
        machine = old.ensure_machine("h", "t", "m", "c", {})
        sweep = old.create_sweep(machine.id, "blades", {"app": "blades"}, 2)
        old.add_run(Run(sweep.id, "blades", 2, 1, "core", "compact", 1, ("--inner", "openmp"), (), ("mpirun",), "ok",
                        0, 1.0, {"rate": 1.0}))
    with Store.open(path) as new:
        assert new.schema_version() == schema.SCHEMA_VERSION >= 8
        (kept,) = new.runs()
        assert kept.item_args == () and kept.key() == (2, 1, "core", 1, "none", ())
        for args in (("--inner", "mpi", "--n2", "1"), ("--inner", "mpi", "--n2", "2")):  # same shape: other items
            new.add_run(Run(sweep.id, "blades", 2, 1, "core", "compact", 1, args, (), ("mpirun",), "ok", 0, 1.0,
                            {"rate": 1.0}, item_args=args))
        assert len(new.done_keys(sweep.id)) == 3
        args = ("--inner", "mpi", "--n2", "2")
        new.replace_run(Run(sweep.id, "blades", 2, 1, "core", "compact", 1, args, (), ("mpirun",), "ok", 0, 2.0,
                            {"rate": 1.0}, item_args=args))
        (attempt,) = new.attempts()
        assert attempt.item_args == args and len(new.runs()) == 3


@skips.needs(skips.Reason.NOT_BUILT, not skips.missing_binaries("hympi-blades"), "hympi-blades")
def test_the_real_app_agrees_bitwise_across_modes(tmp_path: Path):
    db = tmp_path / "r.db"
    proc = hympi("sweep", "blades", "--n1", "1,2", "--n2", "1,2", "--oversubscribe", "--no-warmup", "--min-time", "0",
                 "--db", str(db), "--", "--blades", "4", "--grid", "8", "8", "4", "--iterations", "3", timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with Store.open(db, create=False) as store:
        runs = store.runs()
    assert len(runs) == 8 and all(r.status == "ok" for r in runs)
    assert len({r.record["metrics"]["state_checksum"] for r in runs if r.record}) == 1
