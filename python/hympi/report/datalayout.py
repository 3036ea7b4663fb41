"""The data-layout experiment (Jin et al., "High performance computing using MPI and OpenMP on multi-core parallel
systems", §5.3, Fig. 9): BT-MZ with its zone arrays placed four ways (first touch, one location, by access pattern,
at random), one rank, per thread count.

Runs whose app arguments hold `--data-layout` belong here, not to the per-app layout sections: they differ in where
the pages are, which the layout statistics do not show. For each thread count every layout is compared with first
touch by hympi.stats.compare (ratio of median rates, bootstrap interval; 'indistinguishable here' when the interval
holds 1), never by bare medians. On a machine with one NUMA domain every layout puts every page on that domain, so
the page shows why nothing is compared instead of plotting noise.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from hympi.contract import contract
from hympi.jsontypes import JsonObject
from hympi.params import DEFAULT_CONFIDENCE
from hympi.report.analysis import file_slug
from hympi.stats.compare import Comparison, Refusal, Sample, compare, is_finite_positive
from hympi.stats.median import median_or_none
from hympi.store import WARMUP_REPEAT, Run

OPTION = "--data-layout"
BASELINE = "first-touch"
# A study note about the experiment starts so (hympi.study writes it; the report finds it among the notes).
NOTE_PREFIX = "data-layout: "
MIN_NUMA = 2


def layouts() -> tuple[str, ...]:
    """The layouts in the contract's order: first-touch, one-location, access-pattern, random."""
    return contract().enums["DataLayout"]


def needs_numa(numa_nodes: int) -> str:
    """The sentence the study records and the report shows where the experiment cannot say anything."""
    return f"the data-layout experiment needs >= {MIN_NUMA} NUMA domains; this machine has {numa_nodes}"


def layout_of(args: tuple[str, ...]) -> str | None:
    """The value of --data-layout in app arguments ('--data-layout X' or '--data-layout=X'), None without one."""
    for i, arg in enumerate(args):
        if arg == OPTION and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(OPTION + "="):
            return arg.split("=", 1)[1]
    return None


def base_args(args: tuple[str, ...]) -> tuple[str, ...]:
    """The app arguments without --data-layout and its value (what the four layouts of one experiment share)."""
    out: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg == OPTION:
            skip = True
        elif not arg.startswith(OPTION + "="):
            out.append(arg)
    return tuple(out)


def is_data_layout_run(run: Run) -> bool:
    """Whether a run belongs to the data-layout experiment (its arguments choose a data layout)."""
    return layout_of(run.app_args) is not None


def _placement_text(record: JsonObject | None) -> tuple[str, float | None]:
    """('node 0 50 %, node 1 50 %', share of the pages on their intended nodes) of a record's
    metrics.data_layout_placement.u; ('-', None) without one."""
    metrics = (record or {}).get("metrics")
    placement = metrics.get("data_layout_placement") if isinstance(metrics, dict) else None
    u = placement.get("u") if isinstance(placement, dict) else None
    if not isinstance(u, dict) or not isinstance(u.get("pages"), int) or u["pages"] <= 0:
        return "-", None
    pages: int = u["pages"]
    per_node = u.get("per_node")
    per_node = per_node if isinstance(per_node, dict) else {}
    parts = [f"node {node} {100 * int(count) / pages:.0f} %"
             for node, count in sorted(per_node.items(), key=lambda item: int(item[0]))]
    absent = u.get("absent")
    if isinstance(absent, int) and absent > 0:
        parts.append(f"absent {100 * absent / pages:.0f} %")
    share = u.get("share_on_intended")
    return ", ".join(parts) or "-", float(share) if isinstance(share, (int, float)) else None


@dataclass(frozen=True)
class LayoutCell:
    """One data layout at one thread count: the ok measured rates, the placement of the last ok run and the verdict
    against first touch at the same thread count (None for first touch itself). `ratio`, `low` and `high` are this
    layout's median over first touch's and its interval (None when they cannot be compared)."""

    layout: str
    ranks: int
    threads: int
    runs: int
    rates: tuple[float, ...]
    placement: str
    on_intended: float | None
    verdict: Comparison | Refusal | None = None
    ratio: float | None = None
    low: float | None = None
    high: float | None = None

    @property
    def median(self) -> float | None:
        """Median rate, None without an ok run."""
        return median_or_none(self.rates)

    def sentence(self) -> str:
        """The verdict against first touch in words ('' for first touch itself)."""
        if self.verdict is None:
            return ""
        if isinstance(self.verdict, Refusal):
            return self.verdict.sentence()
        return self.verdict.sentence(choose=False)


@dataclass(frozen=True)
class DataLayoutView:
    """The experiment on one machine for one problem (app + its arguments other than --data-layout)."""

    app: str
    problem: str
    args: tuple[str, ...]
    machine_id: int
    numa_nodes: int | None
    rate_unit: str
    cells: tuple[LayoutCell, ...]
    confidence: float

    @property
    def slug(self) -> str:
        """A file-name-safe identifier for the figure."""
        return "data-layout-" + file_slug(self.app, self.problem, self.machine_id, self.args)

    @property
    def comparable(self) -> bool:
        """Whether the machine has the NUMA domains that make the layouts differ (unknown counts as yes)."""
        return self.numa_nodes is None or self.numa_nodes >= MIN_NUMA

    def threads(self) -> tuple[tuple[int, int], ...]:
        """The (ranks, threads) measured, fewest threads first."""
        return tuple(sorted({(c.ranks, c.threads) for c in self.cells}, key=lambda rt: (rt[1], rt[0])))

    def cell(self, layout: str, ranks: int, threads: int) -> LayoutCell | None:
        """The cell of one layout at one thread count, None when it was not run."""
        return next((c for c in self.cells if (c.layout, c.ranks, c.threads) == (layout, ranks, threads)), None)


def _cell(layout: str, ranks: int, threads: int, runs: list[Run]) -> LayoutCell:
    """A layout's cell from its runs (warm-ups left out)."""
    measured = [r for r in runs if r.repeat != WARMUP_REPEAT]
    ok = [r for r in measured if r.status == "ok"]
    rates = tuple(v for v in (r.value("rate") for r in ok) if v is not None and is_finite_positive(v))
    placement, share = _placement_text(ok[-1].record if ok else None)
    return LayoutCell(layout, ranks, threads, len(measured), rates, placement, share)


def _against_baseline(cell: LayoutCell, baseline: LayoutCell | None, confidence: float) -> LayoutCell:
    """The cell with its verdict and ratio against first touch at the same thread count."""
    if cell.layout == BASELINE or baseline is None:
        return cell
    mine = Sample(cell.layout, cell.rates, cell.threads, cell.ranks * cell.threads)
    theirs = Sample(baseline.layout, baseline.rates, baseline.threads, baseline.ranks * baseline.threads)
    verdict = compare(mine, theirs, confidence)
    if isinstance(verdict, Refusal):
        return replace(cell, verdict=verdict)
    seen = verdict.seen_from(cell.layout)
    return replace(cell, verdict=verdict, ratio=seen.ratio, low=seen.low, high=seen.high)


def data_layout_views(runs: list[Run], machine_of_sweep: dict[int, int], numa_of_machine: dict[int, int | None],
                      confidence: float = DEFAULT_CONFIDENCE) -> list[DataLayoutView]:
    """The experiment's runs grouped by (machine, app, arguments without --data-layout), in first-seen order, each
    cell compared with first touch at the same ranks x threads."""
    groups: dict[tuple[int, str, tuple[str, ...]], list[Run]] = {}
    for run in runs:
        if is_data_layout_run(run):
            key = (machine_of_sweep.get(run.sweep_id, 0), run.app, base_args(run.app_args))
            groups.setdefault(key, []).append(run)
    order = {name: i for i, name in enumerate(layouts())}
    views = []
    for (machine_id, app, args), members in groups.items():
        by_cell: dict[tuple[str, int, int], list[Run]] = {}
        for run in members:
            by_cell.setdefault((layout_of(run.app_args) or "", run.ranks, run.threads), []).append(run)
        cells = [_cell(layout, ranks, threads, rs) for (layout, ranks, threads), rs in by_cell.items()]
        base = {(c.ranks, c.threads): c for c in cells if c.layout == BASELINE}
        cells = [_against_baseline(c, base.get((c.ranks, c.threads)), confidence) for c in cells]
        cells.sort(key=lambda c: (c.threads, c.ranks, order.get(c.layout, len(order)), c.layout))
        recorded = [r for r in members if r.record]
        unit = str(recorded[0].record.get("rate_unit", "")) if recorded and recorded[0].record else ""
        problem = recorded[0].problem if recorded else ""
        views.append(DataLayoutView(app, problem, args, machine_id, numa_of_machine.get(machine_id), unit,
                                    tuple(cells), confidence))
    return views


def experiment_notes(notes: tuple[str, ...]) -> tuple[str, ...]:
    """The study notes about the data-layout experiment, without their prefix."""
    return tuple(n.removeprefix(NOTE_PREFIX) for n in notes if n.startswith(NOTE_PREFIX))
