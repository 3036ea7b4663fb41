"""The report's figures (matplotlib, Agg backend): rate vs threads, memory per layout, where the timed region goes
(computation, communication, other, imbalance), ping-pong bandwidth vs message size per level of the
communication hierarchy, transpose time and plane / pencil memory per layout (hympi-pencil), the data-layout
experiment's rate per data layout per thread count (Jin et al., "High performance computing using MPI and OpenMP on
multi-core parallel systems", Fig. 9), the blade row's time per iteration and MPI / hybrid ratio per N1 x N2 (Jin et
al., Figs. 7, 8) with memory per process and per core, and for tunes the memory per
process vs MPI parameter values and the predictor's leave-one-program-out ratios."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from hympi.outputs import output_stream
from hympi.report.analysis import AppGroup, Layout, LayoutStats
from hympi.report.blades import MODE_NAMES, BladesView
from hympi.report.datalayout import BASELINE, DataLayoutView, layouts
from hympi.report.explain import Breakdown
from hympi.report.hierarchy import HierarchyProbe
from hympi.report.transposes import MIB, TransposeView
from hympi.report.tuning import ProgramTuning
from hympi.result import figure_unit
from hympi.stats.compare import Comparison
from hympi.store.db import DEFAULT_MEMBIND
from hympi.tune.predict import ProgramVerdict
from hympi.tune.space import UNSET_LABEL
from hympi.twolevel import INNER_MODES

_STYLES = ("-", "--", ":", "-.")


def _save(fig: Figure, path: Path) -> Path:
    """Writes a figure as PNG and closes it."""
    fig.tight_layout()
    with output_stream(path, binary=True) as stream:
        fig.savefig(stream, format="png", dpi=110)
    plt.close(fig)
    return path


def _policy(layout: Layout) -> str:
    """'core', or 'core/interleave' under another memory policy than the default (an axis label)."""
    return layout.bind if layout.membind == DEFAULT_MEMBIND else f"{layout.bind}/{layout.membind}"


def _ok(group: AppGroup) -> list[LayoutStats]:
    """Layouts with at least one ok run."""
    return [s for s in group.layouts if s.rate_median is not None]


def line_label(cores: int, members: Sequence[LayoutStats]) -> str:
    """'2 cores'; the layouts on a line are those asking for as many cores, and one oversubscribed names the cores it
    was bound to ('3 cores asked (3x1 on 2)'): a line per cores used would put it and 2x1 at one x."""
    fewer = ", ".join(f"{s.label} on {s.cores_used}" for s in members if s.cores_used < s.cores)
    return f"{cores} core{'s' if cores != 1 else ''}" + (f" asked ({fewer})" if fewer else "")


def rate_vs_threads(group: AppGroup, path: Path) -> Path:
    """Median rate vs OpenMP threads per rank, one line per core count (and binding and memory policy), min-max as
    error bars; each disturbed run's rate a red cross (in no line)."""
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    layouts = _ok(group)
    binds = sorted({(s.bind, s.membind) for s in layouts})
    lines: dict[tuple[int, tuple[str, str]], list[LayoutStats]] = {}
    for s in layouts:
        lines.setdefault((s.cores, (s.bind, s.membind)), []).append(s)
    several_binds = len({b for b, _ in binds}) > 1
    several_policies = len({m for _, m in binds}) > 1
    for (cores, bind), members in sorted(lines.items()):
        members.sort(key=lambda s: s.threads)
        x = [s.threads for s in members]
        y = [s.rate_median or 0.0 for s in members]
        low = [y_i - (s.rate_min or y_i) for s, y_i in zip(members, y, strict=True)]
        high = [(s.rate_max or y_i) - y_i for s, y_i in zip(members, y, strict=True)]
        label = (line_label(cores, members) + (f", bind {bind[0]}" if several_binds else "")
                 + (f", membind {bind[1]}" if several_policies else ""))
        ax.errorbar(x, y, yerr=[low, high], marker="o", capsize=4, linestyle=_STYLES[binds.index(bind) % 4],
                    label=label)
        for s, xi, yi in zip(members, x, y, strict=True):
            ax.annotate(s.label, (xi, yi), textcoords="offset points", xytext=(5, 5), fontsize=8)
    hit = [(s.threads, rate) for s in group.layouts for rate in s.disturbed_rates]
    if hit:
        ax.scatter([t for t, _ in hit], [r for _, r in hit], marker="x", color="#b42318", zorder=3,
                   label="disturbed run (left out)")
    threads = sorted({s.threads for s in layouts} | {t for t, _ in hit})
    ax.set_xscale("log", base=2)
    ax.set_xticks(threads or [1])
    ax.set_xticklabels([str(t) for t in threads] or ["1"])
    ax.set_xlabel("OpenMP threads per MPI rank (ranks = cores / threads)")
    figure = figure_unit(group.rate_unit)
    # Up is better on every rate chart: a lower-is-better figure of merit is drawn as its inverse, and said so.
    if figure is not None:
        ax.set_ylabel(f"1 / figure of merit (1/{figure}, up is better)")
    else:
        ax.set_ylabel(f"rate ({group.rate_unit})" if group.rate_unit else "rate")
    ax.set_title(f"{group.app} {group.problem}: rate per layout (median, min-max)")
    top = max([*((s.rate_max or s.rate_median or 0.0) for s in layouts), *(r for _, r in hit)], default=0.0)
    ax.set_ylim(0, top * 1.15 if top > 0 else 1.0)
    ax.grid(True, alpha=0.3)
    if layouts or hit:
        ax.legend(fontsize=8)
    if not layouts:
        ax.text(0.5, 0.5, "no clean runs: every one disturbed" if hit else "no successful runs", ha="center",
                va="center", transform=ax.transAxes)
    return _save(fig, path)


def memory(group: AppGroup, path: Path) -> Path:
    """Peak memory per process and per core for every layout (two panels)."""
    layouts = [s for s in group.layouts if s.rss_per_process_mib is not None]
    fig, (left, right) = plt.subplots(1, 2, figsize=(8.0, 3.8))
    labels = [f"{s.label}\n{_policy(s)}" for s in layouts]
    left.bar(labels, [s.rss_per_process_mib or 0.0 for s in layouts], color="#4c72b0")
    left.set_title("peak memory per process")
    left.set_ylabel("MiB")
    right.bar(labels, [s.rss_per_core_mib or 0.0 for s in layouts], color="#dd8452")
    right.set_title("memory per core (node total / cores bound)")
    right.set_ylabel("MiB")
    for ax in (left, right):
        ax.set_xlabel("ranks x threads")
        ax.grid(True, axis="y", alpha=0.3)
        if not layouts:
            ax.text(0.5, 0.5, "no successful runs", ha="center", va="center", transform=ax.transAxes)
    fig.suptitle(f"{group.app} {group.problem}: memory per layout")
    return _save(fig, path)


def comm_comp(group: AppGroup, breakdowns: tuple[Breakdown, ...], path: Path) -> Path | None:
    """Each layout's timed region for the same work (fastest layout = 1), stacked as computation, exposed
    communication and unaccounted time, with the imbalance loss as a hatched bar beside it; writes nothing and
    returns None when no layout recorded communication (STREAM: no phases, or its kernel as the only one)."""
    layouts = [b for b in breakdowns if b.rate and b.terms() is not None]
    if not any(b.comm_s for b in layouts):  # nothing recorded, or computation only: nothing to split
        return None
    fastest = max(b.rate or 0.0 for b in breakdowns)  # of every layout, drawn or not
    scale = [fastest / (b.rate or fastest) for b in layouts]  # time for the fastest layout's work, relative

    def share(b: Breakdown, what: str) -> float:
        time = b.time_s or 1.0
        return {"comp": (b.comp_s or 0.0), "comm": max(0.0, (b.comm_s or 0.0) - (b.overlap_s or 0.0)),
                "other": b.other_s or 0.0, "loss": b.imbalance_loss_s or 0.0}[what] / time
    fig, ax = plt.subplots(figsize=(6.8, 3.9))
    x = list(range(len(layouts)))
    comp = [share(b, "comp") * k for b, k in zip(layouts, scale, strict=True)]
    comm = [share(b, "comm") * k for b, k in zip(layouts, scale, strict=True)]
    other = [share(b, "other") * k for b, k in zip(layouts, scale, strict=True)]
    loss = [share(b, "loss") * k for b, k in zip(layouts, scale, strict=True)]
    width = 0.6
    ax.bar(x, comp, width, label="computation", color="#55a868")
    ax.bar(x, comm, width, bottom=comp, label="communication (not overlapped)", color="#c44e52")
    ax.bar(x, other, width, bottom=[c + m for c, m in zip(comp, comm, strict=True)], label="other (unaccounted)",
           color="#8c8c8c")
    if any(v > 0 for v in loss):
        ax.bar([i + width / 2 + 0.08 for i in x], loss, 0.14, label="imbalance loss (part of the above)",
               color="none", edgecolor="#4c72b0", hatch="///")
    ax.set_xticks(x)
    ax.set_xticklabels([f"{b.label}\n{_policy(b)}" for b in layouts])
    ax.set_xlim(-0.7, max(len(layouts), 3) - 0.3)
    skipped = [b.label for b in breakdowns if b.rate and b not in layouts]
    note = f"\nnot drawn (phases missing or beyond the timed region): {', '.join(skipped)}" if skipped else ""
    ax.set_ylabel("time for the same work\n(fastest layout = 1)")
    ax.set_xlabel(f"ranks x threads{note}")
    ax.set_title(f"{group.app} {group.problem}: where the timed region goes (medians)")
    ax.set_ylim(0, max(c + m + o for c, m, o in zip(comp, comm, other, strict=True)) * 1.5)  # room for the legend
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", ncol=2)
    return _save(fig, path)


def transposes(view: TransposeView, title: str, path: Path) -> Path:
    """Transpose time per layout (median, min-max; its share of the run above each bar) and the plane and pencil
    memory per rank (two panels)."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(8.4, 3.9))
    timed = [r for r in view.rows if r.per_step_s is not None]
    x = list(range(len(timed)))
    scale = 1e3  # milliseconds
    y = [(r.per_step_s or 0.0) * scale for r in timed]
    low = [v - (r.per_step_min_s or 0.0) * scale for r, v in zip(timed, y, strict=True)]
    high = [(r.per_step_max_s or 0.0) * scale - v for r, v in zip(timed, y, strict=True)]
    left.bar(x, y, 0.6, yerr=[low, high], capsize=4, color="#c44e52")
    for xi, yi, hi, r in zip(x, y, high, timed, strict=True):
        if r.share is not None:
            left.annotate(f"{100 * r.share:.0f} %", (xi, yi + hi), textcoords="offset points", xytext=(0, 3),
                          ha="center", fontsize=8)
    left.set_xticks(x)
    left.set_xticklabels([r.label for r in timed])
    left.set_ylabel("ms per time step" if view.per_step else "ms per run")
    left.set_title("transpose time (share of the run)", fontsize=10)
    left.set_ylim(0, max((v + h for v, h in zip(y, high, strict=True)), default=1.0) * 1.25 or 1.0)
    sized = [r for r in view.rows if r.plane_bytes is not None or r.pencil_bytes is not None]
    xs = list(range(len(sized)))
    right.bar([i - 0.2 for i in xs], [(r.plane_bytes or 0.0) / MIB for r in sized], 0.4, label="planes",
              color="#4c72b0")
    right.bar([i + 0.2 for i in xs], [(r.pencil_bytes or 0.0) / MIB for r in sized], 0.4, label="pencils",
              color="#dd8452")
    right.set_xticks(xs)
    right.set_xticklabels([r.label for r in sized])
    right.set_ylabel("MiB per rank")
    right.set_title("field memory per rank (largest rank)", fontsize=10)
    top = max((max(r.plane_bytes or 0.0, r.pencil_bytes or 0.0) / MIB for r in sized), default=0.0)
    right.set_ylim(0, top * 1.3 if top > 0 else 1.0)  # room for the legend above the bars
    if sized:
        right.legend(fontsize=8, loc="upper right", ncol=2)
    for ax, drawn in ((left, timed), (right, sized)):
        ax.set_xlabel("ranks x threads")
        ax.grid(True, axis="y", alpha=0.3)
        if not drawn:
            ax.text(0.5, 0.5, "not recorded", ha="center", va="center", transform=ax.transAxes)
    fig.suptitle(title, fontsize=10)
    return _save(fig, path)


_LAYOUT_COLOURS = {"first-touch": "#4c72b0", "one-location": "#dd8452", "access-pattern": "#55a868",
                   "random": "#c44e52"}


def data_layouts(view: DataLayoutView, path: Path) -> Path:
    """Fig. 9: median rate per data layout, grouped by thread count (min-max as error bars), each bar other than
    first touch labelled with its ratio to first touch (≈ when the comparison cannot separate them)."""
    # NPB counts floating-point operations: its Mop/s / 1000 is Jin et al.'s Gflop/s.
    scale, unit = (1e-3, "Gflop/s (NPB Mop/s / 1000)") if view.rate_unit == "Mop/s" else (1.0, view.rate_unit)
    groups = view.threads()
    names = [n for n in layouts() if any(c.layout == n for c in view.cells)]
    names += sorted({c.layout for c in view.cells} - set(names))
    fig, ax = plt.subplots(figsize=(7.2, 4.2))
    width = 0.8 / max(1, len(names))
    top = 0.0
    for k, name in enumerate(names):
        xs, ys, low, high, cells = [], [], [], [], []
        for g, (ranks, threads) in enumerate(groups):
            cell = view.cell(name, ranks, threads)
            if cell is None or cell.median is None:
                continue
            y = cell.median * scale
            xs.append(g + (k - (len(names) - 1) / 2) * width)
            ys.append(y)
            low.append(y - min(cell.rates) * scale)
            high.append(max(cell.rates) * scale - y)
            cells.append(cell)
            top = max(top, max(cell.rates) * scale)
        ax.bar(xs, ys, width, yerr=[low, high], capsize=3, label=name, color=_LAYOUT_COLOURS.get(name, f"C{k}"))
        for x, y, h, cell in zip(xs, ys, high, cells, strict=True):
            if name == BASELINE or cell.ratio is None:
                continue
            separated = isinstance(cell.verdict, Comparison) and cell.verdict.separated
            ax.annotate(f"{cell.ratio:.2f}x" if separated else "≈", (x, y + h), textcoords="offset points",
                        xytext=(0, 2), ha="center", fontsize=7)
    ax.set_xticks(list(range(len(groups))))
    ax.set_xticklabels([f"{t}" if r == 1 else f"{r}x{t}" for r, t in groups])
    ax.set_xlabel("OpenMP threads (1 rank)" if all(r == 1 for r, _ in groups) else "ranks x threads")
    ax.set_ylabel(unit or "rate")
    ax.set_title(f"{view.app} {view.problem}: rate per data layout (median, min-max; ratio to first touch)",
                 fontsize=9)
    ax.set_ylim(0, top * 1.3 if top > 0 else 1.0)  # room for the ratios and the legend
    ax.grid(True, axis="y", alpha=0.3)
    if names:
        ax.legend(fontsize=8, loc="upper left", ncol=len(names))
    else:
        ax.text(0.5, 0.5, "no successful runs", ha="center", va="center", transform=ax.transAxes)
    return _save(fig, path)


def _bytes_label(value: float) -> str:
    """A message size for an axis tick: '512 B', '4 KiB', '1 MiB'."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if value >= scale:
            return f"{value / scale:g} {unit}"
    return f"{value:g} B"


def bandwidth_vs_size(probe: HierarchyProbe, path: Path) -> Path:
    """Ping-pong bandwidth vs message size, log-log, one line per level (fit in the label, model dashed)."""
    fig, ax = plt.subplots(figsize=(6.8, 4.4))
    drawn = 0
    for i, curve in enumerate(probe.levels):
        # not strict: a curve without bandwidths (malformed record) draws nothing rather than failing the report
        points = [(s, b) for s, b in zip(curve.sizes, curve.bandwidth_mbs, strict=False) if s > 0 and b > 0]
        if not points:
            continue
        colour = f"C{i % 10}"
        label = (f"{curve.level} (ranks {curve.pair[0]},{curve.pair[1]}): "
                 f"\u03b1 {curve.alpha_us:.3g} \u00b5s, \u03b2 {curve.beta_mbs:.4g} MB/s")
        ax.plot([s for s, _ in points], [b for _, b in points], marker="o", markersize=3, color=colour, label=label)
        if curve.beta_mbs > 0:  # the Hockney model t = alpha + s / beta, as bandwidth s / t
            sizes = [s for s, _ in points]
            model = [s / (curve.alpha_us + s / curve.beta_mbs) for s in sizes]  # bytes/us = MB/s
            ax.plot(sizes, model, linestyle="--", linewidth=0.8, color=colour, alpha=0.7)
        drawn += 1
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: _bytes_label(v)))
    ax.set_yscale("log")
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("bandwidth (MB/s, one way)")
    ax.set_title(f"ping-pong, {probe.describe()}: bandwidth per level (dashed: alpha-beta fit)", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    if drawn:
        ax.legend(fontsize=7, loc="upper left")
    else:
        ax.text(0.5, 0.5, "no bandwidth samples", ha="center", va="center", transform=ax.transAxes)
    return _save(fig, path)


def tune_memory(program: ProgramTuning, path: Path) -> Path | None:
    """Peak memory per process vs the value of each MPI parameter the program's tunes varied (one panel per
    parameter, one marker per rank count); writes nothing and returns None without parameters or memory."""
    names = program.parameters()
    if not names:
        return None
    fig, axes = plt.subplots(1, len(names), figsize=(3.6 * len(names) + 0.8, 3.6), squeeze=False)
    ranks = sorted({p.ranks for p in program.memory})
    for ax, name in zip(axes[0], names, strict=True):
        points = [p for p in program.memory if p.parameter == name]
        values = sorted({p.value for p in points}, key=_value_order)
        for i, r in enumerate(ranks):
            mine = [p for p in points if p.ranks == r]
            # Spread the rank counts sideways a little so equal values stay visible.
            ax.scatter([values.index(p.value) + 0.08 * (i - (len(ranks) - 1) / 2) for p in mine],
                       [p.max_rss_mib for p in mine], label=f"{r} ranks", marker="os^Dv"[i % 5], s=22)
        ax.set_xticks(range(len(values)))
        ax.set_xticklabels(values, rotation=30, ha="right", fontsize=7)
        ax.set_title(name, fontsize=8)
        ax.set_ylabel("peak MiB per process")
        top = max((p.max_rss_mib for p in points), default=1.0)
        ax.set_ylim(0, top * 1.2 if top > 0 else 1.0)
        ax.grid(True, axis="y", alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.suptitle(f"{program.program}: MPI memory per process vs parameter value", fontsize=10)
    return _save(fig, path)


def _value_order(value: str) -> tuple[int, float, str]:
    """Parameter values in plot order: the library default first, then numbers ascending, then names."""
    if value == UNSET_LABEL:
        return (0, 0.0, "")
    try:
        return (1, float(value), "")
    except ValueError:
        return (2, 0.0, value)


def prediction_ratios(verdicts: tuple[ProgramVerdict, ...], path: Path) -> Path:
    """Per held-out program: measured speedup of the predicted configuration over the best measured one, for the
    network and the constant baseline (1 = the best was picked)."""
    fig, ax = plt.subplots(figsize=(max(5.0, 1.2 * len(verdicts) + 2.0), 3.8))
    x = list(range(len(verdicts)))
    ax.bar([i - 0.2 for i in x], [v.ratio or 0.0 for v in verdicts], 0.4, label="network (MLP)", color="#4c72b0")
    ax.bar([i + 0.2 for i in x], [v.baseline_ratio or 0.0 for v in verdicts], 0.4,
           label="baseline (best on average)", color="#c0c0c0")
    for i, v in enumerate(verdicts):
        if v.measured is None:
            ax.text(i - 0.2, 0.02, "not\nmeasured", ha="center", va="bottom", fontsize=7, rotation=90)
    ax.axhline(1.0, color="#555", linewidth=0.8, linestyle="--")
    ax.set_xticks(x)
    ax.set_xticklabels([v.program for v in verdicts], rotation=20, ha="right", fontsize=8)
    ax.set_ylabel("speedup of pick / best speedup")
    ax.set_ylim(0, 1.25)
    ax.set_title("leave-one-program-out: the predicted configuration vs the best measured", fontsize=10)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    return _save(fig, path)


def blades_time(view: BladesView, path: Path) -> Path:
    """Fig. 7: time per iteration vs N1, one line per N2, one panel per level-2 mode (median, min-max bars)."""
    modes = [m for m in INNER_MODES if any(c.layout.inner == m for c in view.cells)]
    fig, axes = plt.subplots(1, max(1, len(modes)), figsize=(4.2 * max(1, len(modes)), 3.6), sharey=True,
                             squeeze=False)
    for ax, mode in zip(axes[0], modes, strict=False):
        for k, n2 in enumerate(view.n2s()):
            cells = [c for c in view.cells if c.layout.inner == mode and c.layout.n2 == n2 and c.times]
            if not cells:
                continue
            xs = [c.layout.n1 for c in cells]
            ys = [(c.median or 0.0) * 1e3 for c in cells]
            low = [y - min(c.times) * 1e3 for y, c in zip(ys, cells, strict=True)]
            high = [max(c.times) * 1e3 - y for y, c in zip(ys, cells, strict=True)]
            ax.errorbar(xs, ys, yerr=[low, high], marker="o", capsize=3, linestyle=_STYLES[k % len(_STYLES)],
                        label=f"N2 = {n2}")
        ax.set_xscale("log", base=2)
        ax.set_xticks(list(view.n1s()))
        ax.set_xticklabels([str(n) for n in view.n1s()])
        ax.set_xlabel("N1 (level-1 ranks)")
        ax.set_title(MODE_NAMES.get(mode, mode), fontsize=9)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    axes[0][0].set_ylabel("ms per iteration (median, min-max)")
    fig.suptitle(f"{view.problem}: time per iteration", fontsize=10)
    return _save(fig, path)


def blades_ratio(view: BladesView, path: Path) -> Path:
    """Fig. 8: MPI time / hybrid time per N1 x N2 with its confidence interval; 1 = equal, above 1 hybrid wins."""
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    shown = [r for r in view.ratios if r.ratio is not None and r.low is not None and r.high is not None]
    xs = list(range(len(shown)))
    ys = [r.ratio or 0.0 for r in shown]
    err = [[y - (r.low or y) for y, r in zip(ys, shown, strict=True)],
           [(r.high or y) - y for y, r in zip(ys, shown, strict=True)]]
    # Grey, and no number, where the runs separate neither mode (the interval holds 1, or too few runs a side).
    colours = ["0.6" if not r.separated else ("C2" if (r.ratio or 0) > 1 else "C3") for r in shown]
    ax.bar(xs, ys, 0.6, yerr=err, capsize=3, color=colours)
    for x, r in zip(xs, shown, strict=True):
        ax.annotate(f"{r.ratio:.2f}" if r.separated else "≈", (x, r.high or 0.0), textcoords="offset points",
                    xytext=(0, 2), ha="center", fontsize=8)
    ax.axhline(1.0, color="k", linewidth=0.8)
    ax.set_xticks(xs)
    ax.set_xticklabels([f"{r.n1}x{r.n2}" for r in shown])
    ax.set_xlabel("N1 x N2")
    ax.set_ylabel("MPI time / hybrid time")
    ax.set_title(f"{view.problem}: > 1 hybrid faster (grey: not separated)", fontsize=9)
    ax.grid(True, axis="y", alpha=0.3)
    if not shown:
        ax.text(0.5, 0.5, "no layout ran in both modes with enough runs", ha="center", va="center",
                transform=ax.transAxes)
    return _save(fig, path)


def blades_memory(view: BladesView, path: Path) -> Path:
    """Memory per process (max_rss_mib) and per core (node_rss_mib / N1 x N2) per layout, both modes side by side."""
    fig, axes = plt.subplots(1, 2, figsize=(8.4, 3.4))
    labels = [f"{n1}x{n2}" for n2 in view.n2s() for n1 in view.n1s()]
    width = 0.38
    for k, mode in enumerate(INNER_MODES):
        for ax, what in zip(axes, ("process", "core"), strict=True):
            xs, ys = [], []
            for i, (n1, n2) in enumerate((n1, n2) for n2 in view.n2s() for n1 in view.n1s()):
                cell = view.cell(mode, n1, n2)
                value = None if cell is None else (cell.rss_process_mib if what == "process" else cell.rss_core_mib)
                if value is not None:
                    xs.append(i + (k - 0.5) * width)
                    ys.append(value)
            ax.bar(xs, ys, width, label=mode, color=f"C{k}")
    for ax, what in zip(axes, ("process", "core"), strict=True):
        ax.set_xticks(list(range(len(labels))))
        ax.set_xticklabels(labels)
        ax.set_xlabel("N1 x N2")
        ax.set_ylabel(f"MiB per {what}")
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"{view.problem}: memory per process and per core", fontsize=10)
    return _save(fig, path)
