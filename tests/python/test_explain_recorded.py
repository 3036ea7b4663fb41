"""The explainer on runs recorded on a real machine (tests/data/cache-levels/): a kernel that moved more than the
memory STREAM of its layout is never called memory-bound, and with STREAM measured at the cache levels it is
measured against the level its working set fits."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from hympi.report.analysis import AppGroup, group_runs
from hympi.report.explain import Breakdown, StreamBounds, explain, pick_stream, reason
from hympi.store import Run

DATA = Path(__file__).resolve().parents[1] / "data" / "cache-levels" / "two-core-vm.json"


def _runs() -> list[Run]:
    """The fixture's runs as the store gives them."""
    out = []
    for r in json.loads(DATA.read_text())["runs"]:
        out.append(Run(r["sweep"], r["app"], r["ranks"], r["threads"], r["bind"], "compact", r["repeat"],
                       tuple(r["app_args"]), (), ("mpirun",), r["status"], 0, 1.0, r["record"]))
    return out


@pytest.fixture(scope="module")
def groups() -> list[AppGroup]:
    runs = _runs()
    return group_runs(runs, {r.sweep_id: 1 for r in runs})


def _app(groups: list[AppGroup], app: str) -> AppGroup:
    (group,) = (g for g in groups if g.app == app)
    return group


def _layout(bds: tuple[Breakdown, ...], label: str) -> Breakdown:
    (found,) = [b for b in bds if b.label == label]
    return found


def test_a_kernel_above_the_memory_stream_is_said_to_run_from_cache_when_the_levels_were_not_measured(groups):
    rb3d = _app(groups, "rb3d")
    stream = pick_stream(rb3d, groups)
    assert stream is not None and [c.level for c in stream.caches] == ["l1", "l2", "l3"]
    bds = explain(rb3d, StreamBounds(stream.memory))  # memory's STREAM only, as a sweep without the levels has
    one = _layout(bds, "1x1")
    assert one.bound_level == "memory" and one.bandwidth_share == pytest.approx(1.06, abs=0.005)
    text = reason(one, _layout(bds, "2x1"))
    assert text.endswith("Bandwidth share above 1 (1x1 1.06 of STREAM from memory on the same layout): its data "
                         "come at least partly from cache or its bytes-moved count is too high, so memory bandwidth "
                         "does not bound it (the cache levels were not measured: hympi study measures them)."), text


def test_with_the_cache_levels_measured_the_kernel_is_measured_against_the_level_its_working_set_fits(groups):
    rb3d = _app(groups, "rb3d")
    stream = pick_stream(rb3d, groups)
    assert stream is not None
    l2, l3 = (c.bytes_per_pu for c in stream.caches[1:])
    bds = explain(rb3d, stream)
    for b in bds:
        # 4.8 MiB on one thread, about half of it per rank or thread on two: beyond L2's share, within L3's.
        assert b.working_set_per_thread is not None and l2 < b.working_set_per_thread <= l3, b.label
        assert b.bound_level == "l3" and b.levels_measured, b.label
    one, two = _layout(bds, "1x1"), _layout(bds, "2x1")
    assert one.bandwidth_share == pytest.approx(0.32, abs=0.005)
    assert reason(one, two).endswith("Bandwidth share of STREAM on their own layout: 1x1 0.32 in L3, 2x1 0.14 in "
                                     "L3."), reason(one, two)


@pytest.mark.parametrize("app", ["rb3d", "spmv3d"])
@pytest.mark.parametrize("levels", [False, True])
def test_no_sentence_calls_a_kernel_memory_bound_above_a_share_of_1(groups, app: str, levels: bool):
    group = _app(groups, app)
    stream = pick_stream(group, groups)
    assert stream is not None
    bds = explain(group, stream if levels else StreamBounds(stream.memory))
    for x, y in itertools.combinations(bds, 2):
        text = reason(x, y)
        above = [b for b in (x, y) if (b.bandwidth_share or 0.0) > 1.0]
        if above:
            assert "-bound" not in text and "Bandwidth share above 1" in text, text
        assert "memory-bound" not in text or all(b.bound_level == "memory" for b in (x, y)), text
