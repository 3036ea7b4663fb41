"""The report's explanations on synthetic runs: time split, imbalance, bandwidth share, efficiencies and reasons."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from hympi.probe import Waiting
from hympi.report.analysis import group_runs
from hympi.report.explain import Breakdown, explain, pick_stream, ranked, reason, reasons, verdict_reasons
from hympi.report.writer import write_report
from hympi.store import Run, Store


def _run(ranks: int, threads: int, repeat: int, rate: float, time_s: float | None = None, comp: float = 0.0,
         comm: float = 0.0, imbalance: float = 1.0, app: str = "rb3d", bind: str = "core",
         kernel_gbs: float | None = None, sweep: int = 1, args: tuple[str, ...] = ("--size", "64"),
         **fields: object) -> Run:
    """An ok run whose record carries the given measures (and `fields`); phases only when comp or comm is set."""
    record: dict = {"rate": rate, "rate_unit": "GB/s" if app == "stream" else "GFLOP/s", "problem": "64^3",
                    "verified": True, "comp_s": comp, "comm_s": comm, "imbalance": imbalance,
                    "max_rss_mib": 20.0, "node_rss_mib": 40.0,
                    "phases": ({"sweep": {"kind": "computation", "avg_s": comp, "min_s": comp, "max_s": comp},
                                "halo": {"kind": "communication", "avg_s": comm * 0.8, "min_s": 0, "max_s": comm},
                                "norm": {"kind": "communication", "avg_s": comm * 0.2, "min_s": 0, "max_s": comm}}
                               if comp or comm else {})}
    if time_s is not None:
        record["time_s"] = time_s
    if kernel_gbs is not None:
        record["kernel_gbs"] = kernel_gbs
    record.update(fields)
    return Run(sweep, app, ranks, threads, bind, "compact", repeat, args, (), ("mpirun",), "ok", 0, 1.0, record)


def _layout(breakdowns: tuple[Breakdown, ...], label: str) -> Breakdown:
    (found,) = [b for b in breakdowns if b.label == label]
    return found


@pytest.mark.parametrize(("fast", "slow"), [((1, 2), (2, 1)), ((2, 1), (1, 2))])
def test_imbalance_that_costs_the_slower_layout_is_named_and_warmups_are_ignored(fast, slow):
    # Same work in both: the fast layout takes 0.70 s, the slow one 1.00 s; the slow one's slowest computes 1.5x the
    # average (ranks, or an uneven zone loop over threads), and the others wait 0.31 s for it inside the halo
    # exchange (comm 0.33 s).
    runs = []
    for rep in (1, 2, 3):
        runs.append(_run(*fast, rep, 10.0, time_s=0.70, comp=0.62, comm=0.05))
        runs.append(_run(*slow, rep, 7.0, time_s=1.00, comp=0.62, comm=0.33, imbalance=1.5))
    runs.append(_run(*slow, 0, 100.0, time_s=0.07, comp=0.06, comm=0.001))  # a warm-up that would win everything
    (group,) = group_runs(runs, {1: 1})
    bds = explain(group)
    f, s = (f"{r}x{t}" for r, t in (fast, slow))
    loser, winner = _layout(bds, s), _layout(bds, f)
    assert loser.runs == 3 and loser.rate == 7.0 and loser.time_s == 1.0  # the warm-up is not a repeat
    assert loser.imbalance_loss_s == pytest.approx(0.31)
    assert loser.other_s == pytest.approx(0.05) and loser.overlap_s == 0.0
    terms = loser.terms()
    assert terms is not None and sum(terms.values()) == pytest.approx(1.0)
    assert terms["imbalance"] == pytest.approx(0.31) and terms["communication"] == pytest.approx(0.02)
    assert [b.label for b in ranked(bds)] == [f, s]
    sentences = reasons(winner, loser)
    assert sentences[:2] == (f"{f} is faster: {s} needs 1.43x {f}'s time for the same work.",
                             f"{s}'s slowest rank computes 1.50x the average and the others wait for it: 31 % of its "
                             "time."), sentences
    assert not any("computes on" in x or "computes slower" in x for x in sentences)  # equal: not a reason
    text = reason(winner, loser)
    assert text == " ".join(sentences)
    assert reason(loser, winner) == text  # the faster layout is explained whichever comes first


def test_communication_that_dominates_is_named_with_its_largest_phase():
    runs = []
    for rep in (1, 2):
        runs.append(_run(2, 2, rep, 16.0, time_s=1.0, comp=0.9, comm=0.05))
        runs.append(_run(4, 1, rep, 10.0, time_s=1.6, comp=0.9, comm=0.67))
    bds = explain(group_runs(runs, {1: 1})[0])
    sentences = reasons(_layout(bds, "2x2"), _layout(bds, "4x1"))
    # (0.67 - 0.05) s of 4x1's 1.6 s is communication; halo is 80 % of it.
    assert sentences == ("2x2 is faster: 4x1 needs 1.60x 2x2's time for the same work.",
                         "4x1 communicates more, mostly in halo, than 2x2: 39 % of its time.",
                         "Communication, mostly halo, is 5.0 % of 2x2's run."), sentences


def test_overlap_and_noise_are_said():
    runs = [_run(2, 1, 1, 12.0, time_s=1.0, comp=0.8, comm=0.4), _run(2, 1, 2, 10.0, time_s=1.0, comp=0.8, comm=0.4),
            _run(1, 2, 1, 11.0, time_s=1.2, comp=1.1, comm=0.02), _run(1, 2, 2, 9.0, time_s=1.2, comp=1.1, comm=0.02)]
    bds = explain(group_runs(runs, {1: 1})[0])
    fast, slow = _layout(bds, "2x1"), _layout(bds, "1x2")
    assert fast.overlap_s == pytest.approx(0.2) and fast.other_s == 0.0
    sentences = reasons(fast, slow)
    assert sentences[0] == ("2x1 and 1x2 are within run-to-run noise of each other: their repeats overlap. What "
                            "follows only describes the difference of their medians: 1x2 needs 1.10x 2x1's time for "
                            "the same work."), sentences
    # Largest first: computation (19 %), then the unaccounted time (6.7 %), then what 1x2 saves on communication.
    assert [x.split(":")[-1] for x in sentences[1:3]] == [" 19 % of its time.", " 6.7 % of its time."], sentences
    assert sentences[1].startswith("1x2 computes slower with 2 threads per rank") and "unaccounted" in sentences[2]
    assert sentences[3] == "1x2 spends 17 % less of its time on communication than 2x1, not enough to make up for it."
    assert sentences[4] == "Communication, mostly halo, is 40 % of 2x1's run, 50 % of it hidden behind computation."
    assert reason(fast, slow, separated=True).startswith("2x1 is faster: 1x2 needs 1.10x")


def test_thread_and_parallel_efficiency_and_a_computation_reason():
    runs = [_run(1, 1, 1, 10.0, time_s=2.0, comp=1.95, comm=0.0),
            _run(2, 1, 1, 18.0, time_s=1.0, comp=0.9, comm=0.05),
            _run(1, 2, 1, 15.0, time_s=1.2, comp=1.15, comm=0.01)]
    bds = explain(group_runs(runs, {1: 1})[0])
    assert _layout(bds, "1x2").thread_efficiency == pytest.approx(0.75)  # 15 / (2 x 10)
    assert _layout(bds, "2x1").thread_efficiency is None  # one thread: nothing to compare
    assert _layout(bds, "2x1").parallel_efficiency == pytest.approx(0.9)  # 18 / (2 x 10)
    assert _layout(bds, "1x1").parallel_efficiency is None
    text = reason(_layout(bds, "2x1"), _layout(bds, "1x2"))
    assert "1x2 computes slower with 2 threads per rank at a thread efficiency of 0.75: 21 % of its time." in text
    text = reason(_layout(bds, "2x1"), _layout(bds, "1x1"))
    assert "1x1 computes on 1 of the 2 cores 2x1 uses: 48 % of its time." in text, text


def test_threads_the_probe_saw_idle_are_not_counted_as_cores():
    # A program without OpenMP (the probe saw 1 of 2 threads per rank work): 1x2 computes on one core, not two, and
    # no thread efficiency is quoted for threads that did nothing.
    probe = {"working_threads": 1, "findings": ["threads 1 of every rank used under 5 %"]}
    runs = [_run(2, 1, 1, 18.0, time_s=1.0, comp=0.95, probe={"working_threads": 1}),
            _run(1, 2, 1, 10.0, time_s=1.8, comp=1.75, probe=probe),
            _run(1, 1, 1, 10.0, time_s=1.8, comp=1.75)]
    bds = explain(group_runs(runs, {1: 1})[0])
    one_of_two = _layout(bds, "1x2")
    assert one_of_two.working_threads == 1 and one_of_two.computing_cores == 1 and one_of_two.cores == 2
    assert _layout(bds, "2x1").computing_cores == 2 and _layout(bds, "1x1").working_threads is None
    text = reason(_layout(bds, "2x1"), one_of_two)
    assert ("1x2 computes on 1 of its 2 cores (the probe saw 1 of the 2 threads per rank work), 2x1 on 2: "
            in text), text
    assert "thread efficiency" not in text
    # Without the probe's finding the same runs credit 1x2 with both cores.
    plain = explain(group_runs([_run(2, 1, 1, 18.0, time_s=1.0, comp=0.95),
                                _run(1, 2, 1, 10.0, time_s=1.8, comp=1.75)], {1: 1})[0])
    assert "1x2 computes slower with 2 threads per rank" in reason(_layout(plain, "2x1"), _layout(plain, "1x2"))


def test_an_oversubscribed_layout_computes_on_the_cores_it_was_bound_to():
    # 3x1 on 2 cores (--oversubscribe), ranks 0 and 2 bound to PU 0: against 2x1 on the same 2 cores it computes
    # longer, not "on 3 cores", and its parallel efficiency is over the 2 cores it had.
    binding = {2: ["0", "1"], 3: ["0", "1", "0"], 1: ["0"]}
    runs = [_run(ranks, 1, 1, rate, time_s=t, comp=0.95 * t,
                 binding=[{"host": "vm", "rank": i, "thread": 0, "bound": b, "pu": 0}
                          for i, b in enumerate(binding[ranks])])
            for ranks, rate, t in ((2, 18.0, 1.0), (3, 12.0, 1.5), (1, 10.0, 1.8))]
    bds = explain(group_runs(runs, {1: 1})[0])
    three = _layout(bds, "3x1")
    assert (three.cores, three.cores_used, three.computing_cores) == (3, 2, 2)
    assert three.parallel_efficiency == pytest.approx(0.6)  # 12 / (2 x 10), not 12 / (3 x 10)
    text = reason(_layout(bds, "2x1"), three)
    assert "3x1 computes longer: " in text and "3 cores" not in text, text
    text = reason(three, _layout(bds, "1x1"))
    assert "1x1 computes on 1 of the 2 cores 3x1 uses: " in text, text


@pytest.mark.parametrize(("others", "said"), [(0.1, True), (0.63, True), (0.7, False)])
def test_a_rank_that_computed_little_beside_the_others_is_said_to_have_waited(others: float, said: bool):
    # A manager-worker program (ESyS-Particle): rank 0 waits in MPI for 95 % of its run, so the run's communication
    # (its slowest rank's time in MPI) is 95 % of it; the others compute for 1 - `others` of theirs (37 % for the
    # worker that shares the manager's PU at 3x1). Beside one rank's waiting, "hidden behind computation" is the
    # others computing meanwhile: not said.
    def wait(share: float) -> dict:
        found = {"rank": 0, "waiting": share, "in_mpi": share - 0.02, "others": others}
        return {"processes": 3, "findings": [], "waiting_rank": found}

    runs = [_run(3, 1, rep, 12.0, time_s=1.0, comp=0.9, comm=0.95, probe=wait(share))
            for rep, share in ((1, 0.96), (2, 0.97), (3, 0.98))]
    runs += [_run(2, 1, rep, 8.0, time_s=1.5, comp=1.4, comm=1.45, probe=wait(0.99)) for rep in (1, 2, 3)]
    bds = explain(group_runs(runs, {1: 1})[0])
    assert _layout(bds, "3x1").waiting == Waiting(0, 0.97, 0.95, others)
    text = reason(_layout(bds, "3x1"), _layout(bds, "2x1"))
    computed = f"{100 * (1 - others):.0f} %"
    note = (f"is 95 % of 3x1's run. 2x1's rank 0 computed for 1.0 % of its run, the other ranks for {computed} or "
            f"more: it waited, 97 % of its run in MPI and 2.0 % of its run off the CPU. 3x1's rank 0 computed for "
            f"3.0 % of its run, the other ranks for {computed} or more: it waited, 95 % of its run in MPI and 2.0 % of "
            "its run off the CPU.")
    alone = "is 95 % of 3x1's run, 89 % of it hidden behind computation."
    assert text.endswith(note) if said else ("waited" not in text and alone in text), text
    # Runs that name different ranks say nothing of one rank.
    other = [replace(r, record={**r.record, "probe": {**wait(0.95), "waiting_rank": {**wait(0.95)["waiting_rank"],
                                                                                    "rank": 1}}})
             if r.repeat == 2 else r for r in runs]
    assert _layout(explain(group_runs(other, {1: 1})[0]), "3x1").waiting is None


def test_more_cores_that_compute_slower_are_named_with_their_thread_efficiency():
    # A busy machine: 1x2 computes slower on two cores than 1x1 on one, with 1x1 the only one-thread reference.
    runs = [_run(1, 1, 1, 10.0, time_s=1.0, comp=0.99), _run(1, 2, 1, 4.0, time_s=2.5, comp=2.45)]
    bds = explain(group_runs(runs, {1: 1})[0])
    text = reason(_layout(bds, "1x1"), _layout(bds, "1x2"))
    assert text == ("1x1 is faster: 1x2 needs 2.50x 1x1's time for the same work. 1x2 computes slower on 2 cores "
                    "than 1x1 on 1 at a thread efficiency of 0.20: 58 % of its time."), text
    assert "communication" not in text  # neither communicates: no remark about it


def test_an_app_that_computes_only_gets_no_phase_chart(tmp_path: Path):
    from hympi.report import plots

    runs = [_run(r, t, rep, rate, time_s=0.4, comp=0.4, app="stream")
            for rep in (1, 2) for r, t, rate in ((1, 1, 9.0), (2, 1, 9.3), (1, 2, 7.5))]
    group = group_runs(runs, {1: 1})[0]
    bds = explain(group, pick_stream(group, [group]))
    assert all(b.stream_gbs is None for b in bds)  # STREAM is not measured against itself
    assert all(b.has_phases and b.terms() is not None for b in bds)
    assert plots.comm_comp(group, bds, tmp_path / "x.png") is None and not (tmp_path / "x.png").exists()
    runs = [r if (r.ranks, r.threads) != (2, 1) else _run(2, 1, r.repeat, 9.3, time_s=0.4, comp=0.35, comm=0.04,
                                                          app="stream") for r in runs]
    group = group_runs(runs, {1: 1})[0]
    assert plots.comm_comp(group, explain(group), tmp_path / "x.png") == tmp_path / "x.png"  # some communication


def _stream_runs(sweep: int = 2) -> list[Run]:
    """STREAM triad per layout: 1x1 10, 2x1 20, 1x2 16 GB/s (and a warm-up far off)."""
    out = [_run(1, 1, 0, 1000.0, time_s=0.1, app="stream", sweep=sweep)]
    for rep in (1, 2):
        out += [_run(1, 1, rep, 10.0, time_s=0.1, app="stream", sweep=sweep),
                _run(2, 1, rep, 20.0, time_s=0.1, app="stream", sweep=sweep),
                _run(1, 2, rep, 16.0, time_s=0.1, app="stream", sweep=sweep)]
    return out


def test_bandwidth_share_is_against_the_stream_of_the_same_layout():
    app = [_run(1, 1, 1, 3.0, time_s=1.0, comp=0.98, comm=0.0, kernel_gbs=9.0),
           _run(2, 1, 1, 6.0, time_s=0.5, comp=0.45, comm=0.03, kernel_gbs=18.0),
           _run(1, 2, 1, 4.8, time_s=0.625, comp=0.6, comm=0.0, kernel_gbs=14.4)]
    groups = group_runs(app + _stream_runs(), {1: 1, 2: 1})
    rb3d, stream = (g for g in groups if g.app == "rb3d"), pick_stream(groups[0], groups)
    (rb3d,) = rb3d
    assert stream is not None and stream.memory is not None and stream.memory.app == "stream" and not stream.caches
    bds = explain(rb3d, stream)
    for label, triad in (("1x1", 10.0), ("2x1", 20.0), ("1x2", 16.0)):
        b = _layout(bds, label)
        assert b.stream_gbs == triad and b.bandwidth_share == pytest.approx(0.9), label
    text = reason(_layout(bds, "2x1"), _layout(bds, "1x2"))
    assert ("Both are memory-bound (bandwidth share 0.90 and 0.90 of STREAM from memory on their own layout; cache "
            "levels not measured), so their speed follows the bandwidth each layout gets: STREAM from memory reaches "
            "20 GB/s with 2x1 and 16 GB/s with 1x2.") in text, text
    assert all(b.bound_level == "memory" and not b.levels_measured for b in bds)
    assert all(b.bandwidth_share is None for b in explain(rb3d))  # no STREAM: n/a, not a guess
    other_machine = group_runs(app + _stream_runs(), {1: 1, 2: 2})
    assert pick_stream(other_machine[0], other_machine) is None  # STREAM of another machine does not count


def test_a_kernel_faster_than_stream_is_never_called_memory_bound():
    """Shares above 1 (recorded: rb3d moved 1.68x and 1.49x STREAM's triad on a quiet 2-core VM, issue 33): the
    reason says the data came from cache instead."""
    app = [_run(1, 1, 1, 3.0, time_s=1.0, comp=0.98, comm=0.0, kernel_gbs=16.8),
           _run(2, 1, 1, 6.0, time_s=0.5, comp=0.45, comm=0.03, kernel_gbs=29.8),
           _run(1, 2, 1, 4.8, time_s=0.625, comp=0.6, comm=0.0, kernel_gbs=14.4)]
    groups = group_runs(app + _stream_runs(), {1: 1, 2: 1})
    (rb3d,) = (g for g in groups if g.app == "rb3d")
    bds = explain(rb3d, pick_stream(rb3d, groups))
    text = reason(_layout(bds, "2x1"), _layout(bds, "1x1"))
    assert "memory-bound" not in text
    assert ("Bandwidth share above 1 (2x1 1.49 of STREAM from memory and 1x1 1.68 of STREAM from memory on the same "
            "layout): its data come at least partly from cache or its bytes-moved count is too high, so memory "
            "bandwidth does not bound it (the cache levels were not measured: hympi study measures them).") in text
    assert "memory-bound" not in reason(_layout(bds, "1x2"), _layout(bds, "1x1"))


def _level_runs(level: str, bytes_per_pu: int, rates: tuple[float, float, float], sweep: int) -> list[Run]:
    """STREAM sized for a cache level (stream --level): triad rates of 1x1, 2x1 and 1x2, two repeats."""
    return [_run(r, t, rep, rate, time_s=0.1, app="stream", sweep=sweep, args=("--level", level), stream_level=level,
                 cache_bytes_per_pu=bytes_per_pu)
            for rep in (1, 2) for (r, t), rate in zip(((1, 1), (2, 1), (1, 2)), rates, strict=True)]


def test_a_kernel_is_measured_against_the_stream_of_the_nearest_level_its_working_set_fits():
    # 1.5 MiB per rank on one rank and one thread (beyond L2's 1 MiB per PU), half of it per rank or per thread on
    # two: 1x1 streams from memory, 2x1 and 1x2 from L2. Each kernel moves 0.90 of its level's STREAM; L1 fits none.
    mib = 2**20
    app = [_run(1, 1, 1, 3.0, time_s=1.0, comp=0.98, kernel_gbs=9.0, working_set_bytes=1.5 * mib),
           _run(2, 1, 1, 6.0, time_s=0.5, comp=0.45, comm=0.03, kernel_gbs=72.0, working_set_bytes=0.75 * mib),
           _run(1, 2, 1, 4.8, time_s=0.625, comp=0.6, kernel_gbs=63.0, working_set_bytes=1.5 * mib)]
    runs = (app + _stream_runs() + _level_runs("l1", 32 * 1024, (100.0, 200.0, 190.0), 3)
            + _level_runs("l2", mib, (40.0, 80.0, 70.0), 4))
    groups = group_runs(runs, {1: 1, 2: 1, 3: 1, 4: 1})
    (rb3d,) = (g for g in groups if g.app == "rb3d")
    stream = pick_stream(rb3d, groups)
    assert stream is not None and [c.level for c in stream.caches] == ["l1", "l2"]
    bds = explain(rb3d, stream)
    for label, level, bound in (("1x1", "memory", 10.0), ("2x1", "l2", 80.0), ("1x2", "l2", 70.0)):
        b = _layout(bds, label)
        assert (b.bound_level, b.stream_gbs, b.levels_measured) == (level, bound, True), label
        assert b.bandwidth_share == pytest.approx(0.9), label
    text = reason(_layout(bds, "2x1"), _layout(bds, "1x2"))
    assert ("Both are L2-bound (bandwidth share 0.90 and 0.90 of STREAM in L2 on their own layout), so their speed "
            "follows the bandwidth each layout gets: STREAM in L2 reaches 80 GB/s with 2x1 and 70 GB/s with 1x2.") \
        in text, text
    text = reason(_layout(bds, "2x1"), _layout(bds, "1x1"))
    assert ("2x1 is L2-bound and 1x1 memory-bound (bandwidth share 0.90 and 0.90 on their own layout): STREAM in L2 "
            "reaches 80 GB/s with 2x1 and from memory 10 GB/s with 1x1.") in text, text
    # The same kernel moving 1.5x memory's STREAM with a working set no measured cache holds: the count or the
    # level is off, and it is not memory-bound.
    fast = [r if (r.app, r.ranks, r.threads) != ("rb3d", 1, 1) else
            _run(1, 1, 1, 3.0, time_s=1.0, comp=0.98, kernel_gbs=15.0, working_set_bytes=1.5 * mib) for r in runs]
    groups = group_runs(fast, {1: 1, 2: 1, 3: 1, 4: 1})
    (rb3d,) = (g for g in groups if g.app == "rb3d")
    text = reason(*(_layout(explain(rb3d, pick_stream(rb3d, groups)), x) for x in ("2x1", "1x1")))
    assert "memory-bound" not in text
    assert ("Bandwidth share above 1 (1x1 1.50 of STREAM from memory on the same layout): more than that level "
            "delivers to a working set of 1.5 MiB per thread, so its bytes-moved count is too high or its data sit "
            "in a nearer level than that working set fits.") in text, text


def test_no_phases_and_phases_beyond_the_timed_region_are_said_not_explained():
    runs = [_run(2, 1, 1, 20.0, time_s=0.1), _run(1, 1, 1, 10.0, time_s=0.2)]
    bds = explain(group_runs(runs, {1: 1})[0])
    assert all(not b.has_phases and b.terms() is None and b.other_s is None for b in bds)
    text = reason(_layout(bds, "2x1"), _layout(bds, "1x1"))
    assert text == ("2x1 is faster: 1x1 needs 2.00x 2x1's time for the same work. Neither layout recorded "
                    "computation and communication phases, so the runs cannot say where the time goes.")
    runs = [_run(2, 1, 1, 20.0, time_s=0.1, comp=0.3, comm=0.01), _run(1, 1, 1, 10.0, time_s=0.2, comp=0.19)]
    bds = explain(group_runs(runs, {1: 1})[0])
    assert not _layout(bds, "2x1").consistent and _layout(bds, "1x1").consistent
    text = reason(_layout(bds, "2x1"), _layout(bds, "1x1"))
    assert ". The phases of 2x1 (computation 0.3 s, communication 0.01 s) exceed its timed region (0.1 s)" in text


def _store(tmp_path: Path, runs: list[Run]) -> Store:
    store = Store.open(tmp_path / "r.db")
    machine = store.ensure_machine("host", "abc", "Open MPI 4", "g++ 12", {"cores": 4, "pus": 4})
    for sweep_id in sorted({r.sweep_id for r in runs}):
        app = next(r.app for r in runs if r.sweep_id == sweep_id)
        assert store.create_sweep(machine.id, app, {}, 0).id == sweep_id
    for run in runs:
        store.add_run(run)
    return store


def test_report_page_has_why_breakdown_and_model_and_no_chart_for_stream(tmp_path: Path):
    app = []
    for rep in (1, 2, 3, 4):  # four repeats: the least the comparison separates layouts with
        app += [_run(1, 1, rep, 3.0, time_s=1.0, comp=0.98, comm=0.0, kernel_gbs=9.0),
                _run(2, 1, rep, 6.0, time_s=0.5, comp=0.45, comm=0.03, imbalance=1.06, kernel_gbs=18.0),
                _run(1, 2, rep, 4.8, time_s=0.625, comp=0.6, comm=0.0, kernel_gbs=14.4)]
    out = tmp_path / "out"
    out.mkdir()
    with _store(tmp_path, app + _stream_runs()) as store:
        index = write_report(store, out)
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert [p for p in pngs if p.startswith("stream")] == sorted(
        p for p in pngs if p.startswith("stream") and not p.endswith("comm-comp.png"))
    assert len([p for p in pngs if p.endswith("comm-comp.png")]) == 1  # rb3d's only
    assert len(pngs) == 5
    page = index.read_text()
    assert not re.search(r"stream[^']*comm-comp\.png", page)  # no <img> for a chart that was not drawn
    assert page.count("<b>Why.</b>") == 2  # one per app
    assert page.count("<table class='breakdown'>") == 2 and page.count("<table class='model'>") == 2
    assert "<li>2x1 against the runner-up (1x2): 2x1 is faster: 1x2 needs 1.25x 2x1&#x27;s time" in page
    assert "<li>2x1 against the worst (1x1): 2x1 is faster: 1x1 needs 2.00x 2x1&#x27;s time" in page
    assert "In-sample error of the time" in page
    model = page.split("<table class='model'>")[1].split("</table>")[0]
    # rb3d on a 4-core machine: 1x1, 2x1, 1x2 measured, the other splits of 2 and 4 cores predicted
    assert re.findall(r"<tr class='(\w+)'><td>(\w+)</td>", model) == [
        ("measured", "1x1"), ("measured", "2x1"), ("measured", "1x2"), ("predicted", "4x1"), ("predicted", "2x2"),
        ("predicted", "1x4")]
    assert "<td>1x1</td><td>3</td><td>3</td><td>+0.0</td>" in model
    summary = page.split("<h2 id='summary'>Summary</h2><ul>")[1].split("</ul>")[0]
    assert summary.count("<li>") == 2  # still one line per app
    row = re.search(r"<table class='breakdown'>.*?<tr><td>2x1</td>(.*?)</tr>", page).group(1)
    cells = re.findall(r"<td>(.*?)</td>", row)
    # bind, runs, time, comp, comm, overlap, other, imbalance loss, kernel, STREAM, share, thread eff, parallel eff
    assert cells[:9] == ["core", "4", "0.5", "0.45 (90 %)", "0.03 (6 %)", "0 (0 %)", "0.02 (4 %)",
                         "0.027 (5 %)", "18"]
    assert cells[9:] == ["20", "0.90", "-", "1.00"]


@pytest.mark.parametrize(("rates", "noise"), [
    # Two runs a side, far apart: the interval excludes 1, yet two runs are too few for a verdict; not 'within
    # run-to-run noise', which they are not.
    (((10.0, 10.1), (20.0, 20.2)), "cannot be told apart yet: 2 runs a side are too few to separate them (a verdict "
                                   "needs 4 runs a side)"),
    # Four runs a side that overlap: the interval contains 1.
    (((10.0, 12.0, 9.0, 11.5), (10.5, 11.2, 9.5, 12.5)),
     "are within run-to-run noise of each other: the confidence interval of their ratio contains 1"),
])
def test_the_why_line_of_an_unseparated_pair_gives_the_reason_it_is_unseparated(rates, noise):
    runs = [_run(ranks, 1, rep, rate, time_s=10.0 / rate, comp=8.0 / rate, comm=1.0 / rate)
            for ranks, series in zip((1, 2), rates, strict=True) for rep, rate in enumerate(series, 1)]
    (group,) = group_runs(runs, {1: 1})
    (line,) = verdict_reasons(group, explain(group))
    assert f" {noise}. What follows" in line, line
