"""The report's "Hybrid vs MPI (blade row)" section (Jin et al., "High performance computing using MPI and OpenMP on
multi-core parallel systems", §4.4, Figs. 7 and 8), for hympi-blades runs: time per
iteration per N1 x N2 in each level-2 mode (median, min-max), the ratio MPI time / hybrid time per N1 x N2 with the
bootstrap interval of hympi.stats.compare ('indistinguishable' where it holds 1), memory per process and per core,
and the phase model of hympi.stats.blades_model against the measurements.

A run's layout is what its record says it ran (metrics n1, n2, inner); a run without a record (failed) is placed by
its launch shape and app arguments (hympi.twolevel.of_run). Problems (blades, grid) and machines are never pooled.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from html import escape

from hympi.params import DEFAULT_CONFIDENCE, MIN_SEPARATE
from hympi.report.explain import timed_ok
from hympi.report.transposes import metric
from hympi.stats.blades_model import BladesModel, Observation, fit
from hympi.stats.compare import MIN_SAMPLES, cannot_separate, ratio_ci, too_few_runs
from hympi.stats.median import median_or_none
from hympi.store import Run
from hympi.twolevel import INNER_MODES, TwoLevelLayout, of_run

BLADES_APP = "blades"
MODE_NAMES = {"openmp": "hybrid (OpenMP level 2, P1h)", "mpi": "MPI (N2 ranks per blade group, P2D)"}


def is_blades_run(run: Run) -> bool:
    """Whether a run belongs to the blade-row section."""
    return run.app == BLADES_APP


def _problem(run: Run) -> tuple[int, tuple[int, int, int]] | None:
    """(blades, (I, J, K)) from a run's metrics, None without them."""
    metrics = (run.record or {}).get("metrics")
    if not isinstance(metrics, dict):
        return None
    grid = metrics.get("grid")
    blades = metrics.get("blades")
    if not (isinstance(blades, int) and isinstance(grid, list) and len(grid) == 3
            and all(isinstance(g, int) for g in grid)):
        return None
    return blades, (int(grid[0]), int(grid[1]), int(grid[2]))


def layout_of(run: Run) -> TwoLevelLayout | None:
    """The N1 x N2 x inner a run ran: its metrics, else its launch shape and app arguments."""
    metrics = (run.record or {}).get("metrics")
    if isinstance(metrics, dict) and metrics.get("inner") in INNER_MODES \
            and isinstance(metrics.get("n1"), int) and isinstance(metrics.get("n2"), int):
        return TwoLevelLayout(int(metrics["n1"]), int(metrics["n2"]), str(metrics["inner"]))
    return of_run(run.ranks, run.threads, run.app_args)



@dataclass(frozen=True)
class BladeCell:
    """One N1 x N2 x inner layout: its runs, time per iteration (s) and phase medians, memory medians (MiB)."""

    layout: TwoLevelLayout
    runs: int
    ok: int
    times: tuple[float, ...]
    comp_s: float | None
    halo_s: float | None
    blade_s: float | None
    halo_bytes: float | None
    blade_bytes: float | None
    rss_process_mib: float | None
    rss_node_mib: float | None

    @property
    def median(self) -> float | None:
        """Median time per iteration."""
        return median_or_none(self.times)

    @property
    def rss_core_mib(self) -> float | None:
        """Memory per core: the node's resident memory over the N1 x N2 cores the layout uses."""
        return None if self.rss_node_mib is None else self.rss_node_mib / (self.layout.n1 * self.layout.n2)


@dataclass(frozen=True)
class RatioCell:
    """MPI time / hybrid time at one N1 x N2: ratio of medians and its bootstrap interval (None: too few runs), from
    `fewest` runs in the mode that has fewer."""

    n1: int
    n2: int
    ratio: float | None
    low: float | None
    high: float | None
    fewest: int = 0

    @property
    def indistinguishable(self) -> bool:
        """The interval holds 1."""
        return self.low is not None and self.high is not None and self.low <= 1.0 <= self.high

    @property
    def too_few(self) -> bool:
        """Fewer runs a side than a verdict needs (MIN_SEPARATE, as for every comparison hympi prints): an interval
        from 2 or 3 runs may exclude 1 by chance."""
        return self.fewest < MIN_SEPARATE

    @property
    def separated(self) -> bool:
        """Hybrid or MPI is faster: an interval without 1, from enough runs."""
        return self.ratio is not None and not self.indistinguishable and not self.too_few

    def interval_text(self) -> str:
        """'MPI / hybrid 1.10, CI 1.05-1.20' (the ratio and interval must exist)."""
        return f"MPI / hybrid {self.ratio:.2f}, CI {self.low:.2f}-{self.high:.2f}"


@dataclass(frozen=True)
class BladesView:
    """One problem on one machine: its cells, the ratios, the model (None: too few layouts), a sentence per layout."""

    machine_id: int
    blades: int
    grid: tuple[int, int, int]
    cores: int
    cells: tuple[BladeCell, ...]
    ratios: tuple[RatioCell, ...]
    model: BladesModel | None
    why: tuple[str, ...]
    confidence: float

    @property
    def problem(self) -> str:
        """'8 blades of 32x32x16'."""
        return f"{self.blades} blades of {'x'.join(map(str, self.grid))}"

    @property
    def slug(self) -> str:
        """A file-name-safe identifier for the figures."""
        digest = hashlib.sha1(f"{self.blades}:{self.grid}".encode()).hexdigest()[:8]
        return f"blades-m{self.machine_id}-{digest}"

    def cell(self, inner: str, n1: int, n2: int) -> BladeCell | None:
        """The cell of a layout, None when it did not run."""
        return next((c for c in self.cells if c.layout == TwoLevelLayout(n1, n2, inner)), None)

    def n1s(self) -> tuple[int, ...]:
        """The N1 values that ran."""
        return tuple(sorted({c.layout.n1 for c in self.cells}))

    def n2s(self) -> tuple[int, ...]:
        """The N2 values that ran."""
        return tuple(sorted({c.layout.n2 for c in self.cells}))


def _cell(layout: TwoLevelLayout, runs: list[Run]) -> BladeCell:
    """A layout's statistics over its measured (non-warm-up) runs."""
    timed = timed_ok(runs)
    times = [v for v in (metric(r, "iteration_s") for r in timed) if v is not None and v > 0]

    def med(name: str) -> float | None:
        return median_or_none(metric(r, name) for r in timed)
    measured = [r for r in runs if r.repeat != 0]
    return BladeCell(layout, len(measured), len(timed), tuple(times), med("comp_iteration_s"),
                     med("group_halo_iteration_s"), med("blade_exchange_iteration_s"),
                     med("group_halo_bytes_per_iteration"), med("blade_exchange_bytes_per_iteration"),
                     median_or_none(r.value("max_rss_mib") for r in timed),
                     median_or_none(r.value("node_rss_mib") for r in timed))


def _ratio(hybrid: BladeCell | None, mpi: BladeCell | None, confidence: float) -> RatioCell | None:
    """MPI / hybrid time at one N1 x N2 (rates 1 / t, so ratio_ci(hybrid, mpi) is t_mpi / t_hybrid)."""
    if hybrid is None or mpi is None:
        return None
    layout = hybrid.layout
    fewest = min(len(hybrid.times), len(mpi.times))
    if fewest < MIN_SAMPLES:
        return RatioCell(layout.n1, layout.n2, None, None, None, fewest)
    ratio, low, high = ratio_ci([1.0 / t for t in hybrid.times], [1.0 / t for t in mpi.times], confidence)
    return RatioCell(layout.n1, layout.n2, ratio, low, high, fewest)


def _observation(cell: BladeCell, blades: int, grid: tuple[int, int, int], cores: int) -> Observation | None:
    """The model's input for a cell with every phase measured."""
    if cell.median is None or None in (cell.comp_s, cell.halo_s, cell.blade_s):
        return None
    return Observation(cell.layout.n1, cell.layout.n2, cell.layout.inner, blades, grid, cores, cell.median,
                       cell.comp_s or 0.0, cell.halo_s or 0.0, cell.blade_s or 0.0, cell.halo_bytes or 0.0,
                       cell.blade_bytes or 0.0)


def blades_views(runs: list[Run], machine_of: dict[int, int], cores_of: dict[int, int],
                 confidence: float = DEFAULT_CONFIDENCE) -> list[BladesView]:
    """One view per (machine, problem) over the blades runs, in first-seen order; [] without any. `cores_of` maps
    a machine to its core count (the model's oversubscription)."""
    groups: dict[tuple[int, int, tuple[int, int, int]], list[Run]] = {}
    unplaced: list[Run] = []
    for run in runs:
        if not is_blades_run(run):
            continue
        problem = _problem(run)
        if problem is None:
            unplaced.append(run)
            continue
        groups.setdefault((machine_of.get(run.sweep_id, 0), *problem), []).append(run)
    for run in unplaced:  # a failed run joins the problem of its sweep's other runs
        for members in groups.values():
            if any(m.sweep_id == run.sweep_id for m in members):
                members.append(run)
                break
    views = []
    for (machine_id, blades, grid), members in groups.items():
        by_layout: dict[TwoLevelLayout, list[Run]] = {}
        for run in members:
            layout = layout_of(run)
            if layout is not None:
                by_layout.setdefault(layout, []).append(run)
        cells = tuple(_cell(x, rs) for x, rs in sorted(by_layout.items(), key=lambda kv: (
            INNER_MODES.index(kv[0].inner), kv[0].n2, kv[0].n1)))
        cores = cores_of.get(machine_id, 1)
        ratios = []
        for cell in cells:
            if cell.layout.inner == "openmp":
                mpi = next((c for c in cells if c.layout == TwoLevelLayout(cell.layout.n1, cell.layout.n2, "mpi")),
                           None)
                found = _ratio(cell, mpi, confidence)
                if found is not None:
                    ratios.append(found)
        observations = [o for o in (_observation(c, blades, grid, cores) for c in cells) if o is not None]
        model = fit(observations)
        why: list[str] = []
        if model is not None:
            for r in sorted(ratios, key=lambda r: (r.n2, r.n1)):
                why.append(why_sentence(model, r))
        views.append(BladesView(machine_id, blades, grid, cores, cells, tuple(ratios), model, tuple(why),
                                confidence))
    return views


def _ms(seconds: float) -> str:
    """'0.123 ms' ('0 ms' below a nanosecond: rounding noise of the fit)."""
    return f"{seconds * 1e3:.3g} ms" if abs(seconds) >= 1e-9 else "0 ms"


def why_sentence(model: BladesModel, cell: RatioCell) -> str:
    """One sentence for the cell's layout N1 x N2: whether hybrid wins (MPI / hybrid time ratio > 1 with its
    interval, from enough runs) and why, from the fitted terms of that layout in both modes (group halo and the
    other costs of N1 x N2 ranks vs the OpenMP overhead); 'not measured in both modes' when either is missing."""
    n1, n2 = cell.n1, cell.n2
    pairs = [(h, m) for h in model.predictions for m in model.predictions
             if h.obs.inner == "openmp" and m.obs.inner == "mpi" and h.obs.n2 == m.obs.n2 == n2
             and h.obs.n1 == m.obs.n1 == n1]
    name = f"{n1}x{n2}"
    if not pairs:
        return f"{name}: not measured in both modes."
    hybrid, mpi = pairs[0]
    halo = mpi.terms[1]
    # Everything else the MPI mode pays beyond the hybrid mode's costs other than OpenMP (the blade exchange of
    # N1 x N2 ranks instead of N1, waiting): model(mpi) - model(hybrid) = halo + other - omp.
    other = (mpi.model - mpi.terms[1]) - (hybrid.model - hybrid.openmp_overhead)
    omp = hybrid.openmp_overhead
    mpi_cost = halo + other
    if cell.ratio is None:
        verdict = "no ratio (too few runs)"
    elif cell.indistinguishable:
        verdict = f"hybrid and MPI are indistinguishable ({cell.interval_text()})"
    elif cell.too_few:
        verdict = cannot_separate("hybrid", "MPI", cell.fewest, cell.interval_text())
    elif cell.ratio > 1.0:
        verdict = f"hybrid wins ({cell.interval_text()})"
    else:
        verdict = f"hybrid loses ({cell.interval_text()})"
    if n2 == 1:
        return (f"{name}: {verdict}; both modes run the same decomposition (no level 2: no group halo, one thread), "
                "so only noise can separate them.")
    shared = hybrid.obs.oversubscription > 1.0
    crowded = (f" ({hybrid.obs.workers} workers on {hybrid.obs.cores} cores: waiting threads share cores, which "
               "costs a fork/join or barrier far more than waiting ranks)") if shared else ""
    side = "more" if mpi_cost > omp else "less"
    return (f"{name}: {verdict}; in the model the MPI mode pays {_ms(halo)} of group halo and {_ms(other)} of "
            f"other differences (blade exchange of N1 x N2 ranks, waiting) per iteration, {side} than the "
            f"{_ms(omp)} of OpenMP fork/join and barrier overhead the hybrid mode pays{crowded}, so the model has "
            f"{'hybrid' if mpi_cost > omp else 'MPI'} ahead by {_ms(abs(mpi_cost - omp))}.")


def _num(value: float | None, scale: float = 1.0, fmt: str = ".4g") -> str:
    """A formatted number, '-' for None."""
    return "-" if value is None else format(value * scale, fmt)


def _ratio_text(r: RatioCell) -> str:
    """'1.08 (CI 1.02-1.15)', '1.01 (CI 0.95-1.07): indistinguishable', '1.30 (CI 1.20-1.41): 2 runs a side are
    too few to separate them (...)', or 'too few runs'."""
    if r.ratio is None or r.low is None or r.high is None:
        return f"too few runs (need {MIN_SAMPLES} per mode)"
    text = f"{r.ratio:.2f} (CI {r.low:.2f}-{r.high:.2f})"
    if r.indistinguishable:
        return text + ": indistinguishable"
    if r.too_few:
        return f"{text}: {too_few_runs(r.fewest)}"
    return text


def _view_html(view: BladesView, figures: dict[str, str], host: str | None) -> str:
    """One problem's part: figures, the time / memory table, the ratio table, the model table and sentences."""
    on = f" on {escape(host)}" if host else ""
    imgs = "".join(f"<figure><img src='{escape(figures[k])}' alt='{escape(alt)}'></figure>"
                   for k, alt in (("time", "time per iteration per N1 x N2, one panel per mode (Fig. 7)"),
                                  ("ratio", "MPI time / hybrid time per N1 x N2 (Fig. 8)"),
                                  ("memory", "memory per process and per core per layout")) if k in figures)
    head = ("<tr><th>mode</th><th>N1 x N2</th><th>ranks x threads</th><th>runs (ok)</th><th>ms / iteration "
            "(median)</th><th>min-max</th><th>comp ms</th><th>group halo ms</th><th>blade exchange ms</th>"
            "<th>MiB / process</th><th>MiB / core</th></tr>")
    rows = []
    for c in view.cells:
        span = f"{min(c.times) * 1e3:.4g}-{max(c.times) * 1e3:.4g}" if c.times else "-"
        rows.append(f"<tr><td>{escape(c.layout.inner)}</td><td>{c.layout.n1}x{c.layout.n2}</td>"
                    f"<td>{c.layout.ranks}x{c.layout.threads}</td><td>{c.runs} ({c.ok})</td>"
                    f"<td>{_num(c.median, 1e3)}</td><td>{span}</td><td>{_num(c.comp_s, 1e3)}</td>"
                    f"<td>{_num(c.halo_s, 1e3)}</td><td>{_num(c.blade_s, 1e3)}</td>"
                    f"<td>{_num(c.rss_process_mib, fmt='.1f')}</td><td>{_num(c.rss_core_mib, fmt='.1f')}</td></tr>")
    cells = f"<table class='blades'>{head}{''.join(rows)}</table>"
    ratio_rows = "".join(f"<tr><td>{r.n1}x{r.n2}</td><td>{escape(_ratio_text(r))}</td></tr>" for r in view.ratios)
    pct = round(view.confidence * 100)
    ratios = (f"<table class='blades-ratio'><caption>MPI time / hybrid time (> 1: hybrid faster; ratio of medians, "
              f"{pct} % bootstrap interval as in the recommendations)</caption><tr><th>N1 x N2</th><th>MPI / hybrid"
              f"</th></tr>{ratio_rows}</table>" if view.ratios else
              "<p class='muted'>no N1 x N2 ran in both modes: no ratio</p>")
    return f"<h3>{escape(view.problem)}{on}</h3>{imgs}{cells}{ratios}{_model_html(view)}"


def _model_html(view: BladesView) -> str:
    """The model's coefficients, model vs measurement per layout with the relative error, and the sentences."""
    model = view.model
    if model is None:
        return "<p class='muted'>model: fewer than 3 layouts with every phase measured</p>"
    terms = "; ".join(f"{f.term.name} = " + " + ".join(f"{c:.3g} x [{name}]" for (name, _), c in
                                                      zip(f.term.columns, f.coefficients, strict=True))
                      for f in model.fits)
    rows = "".join(f"<tr><td>{escape(p.obs.inner)}</td><td>{p.obs.n1}x{p.obs.n2}</td>"
                   f"<td>{p.obs.iteration_s * 1e3:.4g}</td><td>{p.model * 1e3:.4g}</td>"
                   + "".join(f"<td>{t * 1e3:.3g}</td>" for t in p.terms)
                   + f"<td>{100 * p.error:+.1f} %</td></tr>" for p in model.predictions)
    why = "".join(f"<li>{escape(s)}</li>" for s in view.why)
    return (f"<h4>Model: t_iter = t_comp + t_group_halo + t_blade_exchange</h4><p class='muted'>fitted on the "
            f"per-phase medians (non-negative least squares, {view.cores} cores: layouts with more workers are "
            f"oversubscribed): {escape(terms)}; worst |error| {100 * model.worst:.1f} % (in sample)</p>"
            "<table class='blades-model'><tr><th>mode</th><th>N1 x N2</th><th>measured ms</th><th>model ms</th>"
            "<th>t_comp</th><th>t_group_halo</th><th>t_blade_exchange</th><th>error</th></tr>"
            f"{rows}</table><ul class='blades-why'>{why}</ul>")


def blades_section(views: list[BladesView], figures: dict[str, dict[str, str]], hosts: dict[int, str] | None,
                   ) -> str:
    """The "Hybrid vs MPI (blade row)" section ('' without blades runs)."""
    if not views:
        return ""
    parts = "".join(_view_html(v, figures.get(v.slug, {}), hosts.get(v.machine_id) if hosts else None)
                    for v in views)
    modes = "; ".join(f"{k}: {v}" for k, v in MODE_NAMES.items())
    return (f"<h2 id='blades'>Hybrid vs MPI (blade row)</h2><p class='muted'>the same solver with level 2 as "
            f"{escape(modes)}; N1 ranks over the blades, N2 workers inside each blade (Jin et al., Figs. 7 and 8)</p>"
            f"{parts}")
