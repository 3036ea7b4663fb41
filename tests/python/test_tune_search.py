"""hympi tune's strategies on a synthetic objective (no MPI), and the store's tunes and MPI parameters per run."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest

from conftest import REPO, sweep_params
from hympi.errors import UsageError
from hympi.launch.cvars import parse_cvars
from hympi.report.analysis import group_runs
from hympi.store import Run, Store
from hympi.sweep import SweepParams
from hympi.tune.results import measure, speedup
from hympi.tune.search import Search, Stop, check_strategy, default_budget
from hympi.tune.space import Configuration, SearchSpace, parse_space

CVARS = parse_cvars((REPO / "tests" / "data" / "mpit-openmpi-4.1.4.json").read_text())


def synthetic_space() -> SearchSpace:
    """3 ranks x 2 bindings x 4 eager limits x 2 single-copy mechanisms = 48 configurations, plus the default."""
    return parse_space({"layout": {"ranks": [1, 2, 4], "bind": ["core", "none"], "default": {"ranks": 2}},
                        "mpi": {"btl_vader_eager_limit": {"values": [4096, 16384, 65536, 262144]},
                                "btl_vader_single_copy_mechanism": {"values": ["cma", "none"]}}}, CVARS)


def objective(config: Configuration) -> float | None:
    """A known landscape: more ranks and core binding help, an eager limit of 16 KiB is best, cma beats none; one
    corner fails (None), as a run that exhausts memory would."""
    params = config.params()
    if not params:
        return 100.0
    eager = math.log2(int(params["btl_vader_eager_limit"]))
    if config.ranks == 4 and config.bind == "none" and eager == 18:
        return None
    score = 100.0 * config.ranks ** 0.8 * (1.2 if config.bind == "core" else 1.0)
    score *= math.exp(-0.3 * ((eager - 14) / 2) ** 2)
    return score * (1.1 if params["btl_vader_single_copy_mechanism"] == "cma" else 1.0)


def drive(search: Search) -> tuple[list[Configuration], Stop]:
    """Measures whatever the search proposes until it stops; returns the order and the stop."""
    measured: dict[Configuration, float | None] = {}
    order = []
    while not isinstance(decision := search.propose(measured), Stop):
        assert decision.config not in measured
        measured[decision.config] = objective(decision.config)
        order.append(decision.config)
    return order, decision


def test_exhaustive_visits_every_configuration_in_space_order():
    s = synthetic_space()
    order, stop = drive(Search(s, "exhaustive", 0, 49))
    assert order == list(s.configurations()) and "all 49" in stop.reason


def test_random_is_a_seeded_permutation_with_the_default_first():
    s = synthetic_space()
    first, _ = drive(Search(s, "random", 7, 49))
    again, _ = drive(Search(s, "random", 7, 49))
    other, _ = drive(Search(s, "random", 8, 49))
    assert first == again and first != other
    assert first[0] == s.default and sorted(first) == sorted(s.configurations())
    budget, stop = drive(Search(s, "random", 7, 49))
    assert len(budget) == 49 and "all" in stop.reason


def test_a_space_larger_than_the_budget_needs_guided():
    with pytest.raises(UsageError, match="49 configurations, more than --max-runs 12: use --strategy guided"):
        Search(synthetic_space(), "exhaustive", 0, 12)
    with pytest.raises(UsageError, match="unknown strategy 'annealing'"):
        check_strategy("annealing", 10, 10, 0.0)
    assert default_budget("guided", 49) == 12 and default_budget("random", 49) == 49
    # guided's default never exceeds a quarter of the space once the space is larger than 4 x GUIDED_MIN_RUNS
    assert all(default_budget("guided", n) <= n / 4 for n in range(24, 200))
    assert default_budget("guided", 10) == 6 and default_budget("guided", 4) == 4


def test_guided_finds_the_optimum_within_a_quarter_of_the_space():
    s = synthetic_space()
    optimum = max(s.configurations(), key=lambda c: objective(c) or 0.0)
    budget = 48 // 4
    order, _ = drive(Search(s, "guided", 3, budget))
    assert optimum in order, [c.label() for c in order]
    assert len(order) <= budget
    assert order[0] == s.default
    again, _ = drive(Search(s, "guided", 3, 6))
    assert again == order[:6]  # deterministic given the seed and the results


def test_guided_stops_when_no_improvement_is_expected():
    flat = parse_space({"layout": {"ranks": [1, 2]},
                        "mpi": {"btl_vader_eager_limit": {"values": [4096, 8192, 16384, 32768, 65536]}}}, CVARS)
    measured: dict[Configuration, float | None] = {}
    search = Search(flat, "guided", 1, 11, ei_stop=0.05)
    while not isinstance(decision := search.propose(measured), Stop):
        measured[decision.config] = 50.0  # nothing matters: every configuration scores the same
    assert "expected improvement" in decision.reason and len(measured) < 11


def _run(sweep_id: int, repeat: int, rate: float | None, status: str = "ok",
         params: tuple[tuple[str, str], ...] = (), back: dict | None = None, disturbed: bool = False) -> Run:
    record = None if rate is None else {"rate": rate, "rate_unit": "x", "max_rss_mib": 20.0,
                                        **({"mpi_cvars": back} if back is not None else {})}
    return Run(sweep_id, "rb3d", 2, 1, "core", "compact", repeat, ("--size", "8"), (), ("mpirun",), status, 0, 1.0,
               record, mpi_params=params, disturbed=disturbed)


def test_store_round_trips_mpi_parameters_and_tunes(tmp_path: Path):
    params = (("btl_vader_eager_limit", "8192"), ("coll_tuned_use_dynamic_rules", "true"))
    with Store.open(tmp_path / "r.db") as store:
        machine = store.ensure_machine("h", "t", "m", "c", {})
        tune = store.create_tune(machine.id, "rb3d", "rb3d --size 8", "guided", {"source": {}}, {"seed": 1},
                                 identity={"x": 1})
        assert (tune.program, tune.strategy, tune.status, tune.params) == ("rb3d --size 8", "guided", "running",
                                                                          {"seed": 1})
        unfinished = sweep_params("rb3d", ((2, 1),), mpi_params=params)
        sweep = store.create_sweep(machine.id, "rb3d", unfinished.as_dict(), 1, identity=unfinished.identity(),
                                   tune_id=tune.id)
        assert store.tune_sweeps(tune.id) == [sweep] and sweep.tune_id == tune.id
        run_id = store.add_run(_run(sweep.id, 1, 2.0, params=params,
                                    back={"btl_vader_eager_limit": "4096", "coll_tuned_use_dynamic_rules": "true"}))
        store.add_run(_run(sweep.id, 2, 3.0))
        runs = store.runs([sweep.id])
        assert runs[0].mpi_params == params and runs[1].mpi_params == ()
        assert store.run_mpi_params(run_id) == [("btl_vader_eager_limit", "8192", "4096"),
                                                ("coll_tuned_use_dynamic_rules", "true", "true")]
        assert store.latest_unfinished_tune({"x": 1}) == tune and store.latest_unfinished_tune({"x": 2}) is None
        # A tune's sweep is not one `hympi sweep --resume` continues.
        assert store.latest_unfinished(unfinished.identity()) is None
        store.set_tune_note(tune.id, "budget spent")
        store.set_tune_status(tune.id, "finished")
        done = store.tune(tune.id)
        assert (done.status, done.note, done.finished_at is not None) == ("finished", "budget spent", True)
        assert store.latest_unfinished_tune({"x": 1}) is None and store.tunes() == [done]
        with pytest.raises(ValueError, match="tune status"):
            store.set_tune_status(tune.id, "paused")
        with pytest.raises(UsageError, match="no tune 99"):
            store.tune(99)


def test_sweep_params_without_mpi_parameters_keep_their_old_identity():
    old = sweep_params("rb3d", ((2, 1),))
    assert "mpi_params" not in old.as_dict()  # sweeps recorded before MPI parameters resume as before
    new = sweep_params("rb3d", ((2, 1),), mpi_params=(("btl_vader_eager_limit", "8192"),))
    assert SweepParams.from_dict(new.as_dict()) == new and SweepParams.from_dict(old.as_dict()) == old
    assert new.identity() != old.identity()


def test_a_configuration_scores_its_median_ok_rate_and_reports_ignored_parameters():
    config = Configuration(2, 1, "core", (("btl_vader_eager_limit", "8192"),))
    back = {"btl_vader_eager_limit": "4096"}
    runs = [_run(1, 0, 99.0, params=config.mpi_params, back=back),  # warm-up: never counted
            _run(1, 1, 2.0, params=config.mpi_params, back=back), _run(1, 2, 4.0, params=config.mpi_params, back=back),
            _run(1, 3, 3.0, params=config.mpi_params, back=back), _run(1, 4, None, "timeout", config.mpi_params)]
    m = measure(config, runs)
    assert (m.score, m.runs, m.status, m.ignored, m.max_rss_mib) == (3.0, 4, "ok", ("btl_vader_eager_limit",), 20.0)
    failed = measure(config, [_run(1, 1, None, "timeout"), _run(1, 2, None, "failed")])
    assert (failed.score, failed.status) == (None, "timeout")
    default = measure(Configuration(2, 1, "core"), [_run(1, i, 1.0 + 0.01 * i) for i in range(1, 5)])
    better = measure(config, [_run(1, i, 2.0 + 0.01 * i) for i in range(1, 5)])
    assert speedup(better, default).separated and speedup(better, default).ratio == pytest.approx(2.025 / 1.025)
    same = measure(config, [_run(1, i, 1.0 + 0.01 * (5 - i)) for i in range(1, 5)])
    assert speedup(same, default).text.startswith("indistinguishable")
    one = measure(config, [_run(1, 1, 2.0)])
    assert "no interval" in speedup(one, default).text
    # Far apart on 2 runs: an interval that excludes 1, and hympi's one wording for too few runs, not a verdict.
    two = speedup(measure(config, [_run(1, i, 2.0 + 0.01 * i) for i in range(1, 3)]), default)
    assert not two.separated and two.low is not None and two.low > 1.0
    assert two.text.endswith("): 2 runs a side are too few to separate them (a verdict needs 4 runs a side)"), two.text


def test_a_configuration_s_score_leaves_out_the_runs_other_work_disturbed():
    """Two runs slowed by other work on their cores (hympi.busy marked them) would drag the median from 3.0 to 1.0
    and give an interval against the default; they are counted apart and score nothing."""
    config = Configuration(2, 1, "core")
    runs = [_run(1, 1, 3.0), _run(1, 2, 1.0, disturbed=True), _run(1, 3, 3.1), _run(1, 4, 0.9, disturbed=True),
            _run(1, 5, 2.9)]
    m = measure(config, runs)
    assert (m.score, m.rates, m.runs, m.disturbed, m.status) == (3.0, (3.0, 3.1, 2.9), 5, 2, "ok")
    all_hit = measure(config, [_run(1, 1, 1.0, disturbed=True), _run(1, 2, 1.1, disturbed=True)])
    assert (all_hit.score, all_hit.rates, all_hit.disturbed) == (None, (), 2)


def test_a_time_score_of_an_even_run_count_is_the_median_time_as_the_report_says_it():
    """Four loop times of 1, 1, 3 and 3 s: their median is 2 s; 1 / the median rate, the harmonic mean of the middle
    two times, is 1.5 s, which tune's score said while the report's table said 2 s for the same runs."""
    runs = [dataclasses.replace(_run(1, repeat, 1.0 / seconds), record={"rate": 1.0 / seconds, "rate_unit": "1/(s)"})
            for repeat, seconds in enumerate((1.0, 3.0, 1.0, 3.0), 1)]
    measured = measure(Configuration(2, 1, "core"), runs)
    assert measured.score_text() == "2 s"
    (group,) = group_runs(runs, {1: 1})
    (layout,) = group.layouts
    assert layout.median_text(group.rate_unit) == "2 s" and layout.spread(group.rate_unit) == (1.0, 2.0, 3.0)
    rates = measure(Configuration(2, 1, "core"), [_run(1, repeat, rate) for repeat, rate in enumerate((1, 3), 1)])
    assert rates.score_text() == "2 x"  # a rate is its own figure


def test_reports_never_pool_runs_under_other_mpi_parameters():
    params = (("btl_vader_eager_limit", "8192"),)
    runs = [_run(1, 1, 2.0), _run(1, 2, 2.1), _run(2, 1, 4.0, params=params), _run(2, 2, 4.1, params=params)]
    groups = group_runs(runs, {1: 1, 2: 1})
    assert len(groups) == 2
    assert sorted(len(g.runs) for g in groups) == [2, 2]


def test_guided_measures_every_layout_before_the_model_decides():
    s = synthetic_space()
    layouts = {(c.ranks, c.threads, c.bind) for c in s.configurations()}
    for seed in (1, 2):
        order, _ = drive(Search(s, "guided", seed, 12))
        assert {(c.ranks, c.threads, c.bind) for c in order[:len(layouts)]} == layouts
