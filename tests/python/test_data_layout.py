"""The data-layout experiment (Jin et al., "High performance computing using MPI and OpenMP on multi-core parallel
systems", Fig. 9): every --data-layout of BT-MZ and SP-MZ ends in the same verification bits and records where its
pages are; bad layouts are refused before launching; the study runs the experiment only where the machine has
several NUMA domains, and otherwise says why. (The report's figure from stored runs of a 2-NUMA machine is in
test_report.py.)"""

from __future__ import annotations

import io
import json
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console

from conftest import assert_refused, hympi_json
from hympi import study
from hympi.cli.common import ensure_out_dir
from hympi.report.datalayout import NOTE_PREFIX, base_args, layout_of, layouts, needs_numa
from hympi.store import Store
from hympi.topology import MachineSummary, machine_summary

LAYOUTS = ("first-touch", "one-location", "access-pattern", "random")


def test_the_contract_declares_the_four_layouts_in_order():
    assert layouts() == LAYOUTS
    assert layout_of(("--class", "S", "--data-layout", "random")) == "random"
    assert layout_of(("--class", "S", "--data-layout=one-location")) == "one-location"
    assert layout_of(("--class", "S")) is None
    assert base_args(("--class", "W", "--data-layout", "random", "--packing", "lpt")) == \
        ("--class", "W", "--packing", "lpt")


@pytest.mark.parametrize("bench", ["bt-mz", "sp-mz"])
def test_every_layout_gives_the_same_verification_bits_and_records_its_pages(bench):
    """Class S on 1 rank x 2 threads (HYMPI_MIN_TIME=0: one repetition each): the layouts move pages, never
    numbers; each records its layout and the kernel's page summary of the solution field."""
    numa_nodes = machine_summary().numa_nodes
    values = {}
    for layout in LAYOUTS:
        code, rec = hympi_json("run", bench, "--ranks", "1", "--threads", "2", "--oversubscribe", "--json",
                               "--", "--class", "S", "--data-layout", layout)
        assert code == 0, rec
        assert rec["verified"] is True
        metrics = rec["metrics"]
        assert metrics["data_layout"] == layout
        details = metrics["data_layout_details"]
        assert details["layout"] == layout
        assert details["team"] == ("locality" if layout == "access-pattern" else "openmp")
        ver = metrics["verification"]
        values[layout] = (ver["xcr"], ver["xce"])
        u = metrics["data_layout_placement"]["u"]
        assert u["pages"] > 0 and u["absent"] == 0, u
        assert sum(u["per_node"].values()) == u["pages"]
        if layout == "first-touch":
            assert "share_on_intended" not in u  # the kernel decides: nothing was intended
        else:
            assert u["share_on_intended"] == 1.0, u  # bound (or touched by the owners): all where meant
        if numa_nodes == 1:
            assert u["per_node"] == {"0": u["pages"]}  # one NUMA node: 100 % on node 0, whatever the layout
    # JSON keeps every double exactly (shortest round-trip form): equal lists are equal bits.
    assert all(v == values["first-touch"] for v in values.values()), values


def test_the_random_layout_is_reproducible_and_its_seed_recorded():
    code, rec = hympi_json("run", "bt-mz", "--ranks", "1", "--threads", "1", "--json", "--", "--class", "S",
                           "--data-layout", "random", "--layout-seed", "42")
    assert code == 0, rec
    assert rec["metrics"]["data_layout_details"]["seed"] == 42


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["run", "bt-mz", "--", "--class", "S", "--data-layout", "interleave"],
         "unknown data layout 'interleave' (expected first-touch, one-location, access-pattern or random)"),
        (["run", "sp-mz", "--", "--class", "S", "--data-layout", ""], "--data-layout: an empty value"),
        (["run", "lu-mz", "--", "--class", "S", "--data-layout", "random"], "lu-mz has first-touch only"),
        (["run", "bt-mz", "--", "--class", "S", "--layout-seed", "-1"], "--layout-seed"),
        (["run", "bt-mz", "--", "--class", "S", "--thread-work", "threads"],
         "unknown thread work 'threads' (expected loops or zones)"),
        (["run", "sp-mz", "--", "--class", "S", "--thread-work", "zones", "--data-layout", "one-location"],
         "--thread-work zones: needs --data-layout first-touch (one-location places"),
    ],
)
def test_a_bad_data_layout_is_one_line_exit_2_and_nothing_launched(args, needle, fake_launcher):
    assert_refused(args, needle, fake_launcher)


def _summary(numa: int, cores: int) -> MachineSummary:
    return MachineSummary(1, numa, cores, cores, ((3, 32 << 20, 1),), "h", json.dumps({"numa_nodes": numa}))


def test_the_thread_counts_fit_in_one_domain_or_fill_whole_ones():
    assert study.data_layout_threads(_summary(2, 16), quick=True) == (1, 16)
    assert study.data_layout_threads(_summary(2, 16), quick=False) == (1, 2, 4, 8, 16)
    # 12 cores per domain: 16 threads would sit 12 + 4, where the locality region puts 8 + 8.
    assert study.data_layout_threads(_summary(2, 24), quick=False) == (1, 2, 4, 8, 24)
    assert study.data_layout_threads(_summary(4, 16), quick=False) == (1, 2, 4, 8, 16)
    assert study.data_layout_threads(_summary(1, 2), quick=True) == (1, 2)


def _options(tmp_path: Path, apps: tuple[str, ...], repeat: int = 1) -> study.StudyOptions:
    return study.StudyOptions(True, ensure_out_dir(tmp_path / "report"), tmp_path / "s.db", apps, repeat, 120.0, False,
                              min_time=0.0, seed=7, warmup=False)


def _pretend(numa: int) -> MachineSummary:
    """This machine's summary with `numa` NUMA domains (the study and the report both read the count)."""
    real = machine_summary()
    return replace(real, numa_nodes=numa, hash=f"{real.hash}-numa{numa}",
                   raw=json.dumps({**json.loads(real.raw), "numa_nodes": numa}))


def test_the_study_on_one_numa_domain_says_so_and_runs_nothing(tmp_path: Path):
    said: list[str] = []
    one = _pretend(1)
    index = study.run_study(_options(tmp_path, ("data-layout",)), one, Console(file=io.StringIO()),
                            said.append).report
    message = "the data-layout experiment needs >= 2 NUMA domains; this machine has 1"
    assert needs_numa(1) == message
    assert any(message in line for line in said), said
    with Store.open(tmp_path / "s.db", create=False) as store:
        assert store.study(1).notes == (NOTE_PREFIX + message,)
        assert store.runs() == [] and store.study_sweeps(1) == []
    page = index.read_text()
    assert "id='data-layout'" in page and message.replace(">", "&gt;") in page
    assert list((tmp_path / "report").glob("data-layout-*.png")) == []  # no figure of noise


def test_the_study_on_two_numa_domains_runs_every_layout_interleaved(tmp_path: Path, monkeypatch):
    """A pretend 2-domain machine (this one's cores): the four layout sweeps run round by round, every run verified,
    and the report draws the figure. Class S keeps it to seconds."""
    monkeypatch.setattr(study, "DATA_LAYOUT_QUICK_ARGS", ("--class", "S"))
    two = _pretend(2)
    threads = study.data_layout_threads(two, quick=True)
    said: list[str] = []
    index = study.run_study(_options(tmp_path, ("data-layout",), repeat=2), two, Console(file=io.StringIO()),
                            said.append).report
    with Store.open(tmp_path / "s.db", create=False) as store:
        runs = store.runs()
        sweeps = store.study_sweeps(1)
        assert store.study(1).notes == ()
    assert [s.params["app_args"][-1] for s in sweeps] == list(LAYOUTS)
    assert all(s.status == "finished" for s in sweeps)
    assert len(runs) == len(LAYOUTS) * len(threads) * 2 and all(r.status == "ok" for r in runs)
    # Round 1 of every layout before any round 2: load drift hits all four alike.
    first_round_two = min(i for i, r in enumerate(sorted(runs, key=lambda r: r.id)) if r.repeat == 2)
    assert {layout_of(r.app_args) for r in sorted(runs, key=lambda r: r.id)[:first_round_two]} == set(LAYOUTS)
    assert {(r.ranks, r.threads) for r in runs} == {(1, t) for t in threads}
    figures = list((tmp_path / "report").glob("data-layout-*.png"))
    assert len(figures) == 1
    page = index.read_text()
    assert "Data layout (Fig. 9)" in page and "table class='data-layout'" in page
    assert page.count("<tr><td>") >= len(LAYOUTS) * len(threads)
