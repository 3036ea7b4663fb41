"""The report page: static HTML with relative image links, readable without network access."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from html import escape

from hympi.params import MIN_SEPARATE
from hympi.report.analysis import (
    MEMORY_LEVEL,
    AppGroup,
    LayoutStats,
    best_stream_bandwidth,
    group_titles,
    recommend,
)
from hympi.report.blades import BladesView, blades_section
from hympi.report.checkpoint_io import CheckpointIoView, checkpoint_io_section, checkpoint_io_view
from hympi.report.datalayout import BASELINE, DataLayoutView, needs_numa
from hympi.report.explain import Breakdown, explain, pick_stream, verdict_reasons
from hympi.report.hierarchy import HierarchyProbe, level_rank
from hympi.report.model import describe, fit_model, policy
from hympi.report.quiet import quiet_sentence
from hympi.report.transposes import MIB, TransposeView, sentence, transpose_view
from hympi.report.tuning import Prediction, ProgramTuning
from hympi.result import figure_unit, run_placement_share, shown_figure
from hympi.stats.compare import MEMORY_MARGIN, VERDICT_NEEDS
from hympi.stats.model import ModelFit
from hympi.store import MachineRecord, Run
from hympi.store.db import DEFAULT_MEMBIND
from hympi.tune.predict import BEAT_MARGIN, beats_constant, mean_ratio, narrowed_notes
from hympi.tune.results import Speedup

_CSS = """
body { font-family: system-ui, -apple-system, 'Segoe UI', sans-serif; margin: 2em auto; max-width: 1100px;
       color: #222; line-height: 1.45; padding: 0 1em; }
h1 { margin-bottom: 0.2em; } h2 { border-bottom: 1px solid #ccc; padding-bottom: 0.2em; margin-top: 2em; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.9em; }
th, td { border: 1px solid #ddd; padding: 0.25em 0.6em; text-align: right; vertical-align: top; }
th { background: #f3f3f3; } td.l, th.l { text-align: left; }
.ok { color: #1a7f37; } .failed, .timeout { color: #b42318; font-weight: bold; } .unverified { color: #9a6700; }
.rec { background: #eef6ff; border-left: 4px solid #2f6fde; padding: 0.6em 1em; margin: 1em 0; }
.note { background: #fff8e6; border-left: 4px solid #d29922; padding: 0.4em 1em; margin: 0.4em 0; }
figure { display: inline-block; margin: 0.5em 1em 0.5em 0; } img { max-width: 100%; border: 1px solid #eee; }
details pre { white-space: pre-wrap; font-size: 0.85em; max-width: 40em; text-align: left; }
.muted { color: #666; font-size: 0.9em; } .why { margin: 0.5em 0 0 0; } .why ul { margin: 0.2em 0; }
table.breakdown td { white-space: nowrap; } tr.predicted td { color: #555; }
caption { text-align: left; font-size: 0.9em; color: #444; max-width: 60em; }
table.tune-predicted td.l, table.tune-speedup td.l, table.tune-strategies td.l { max-width: 16em; }
.disturbed { color: #9a6700; font-weight: bold; }
"""


Explained = dict[str, tuple[tuple[Breakdown, ...], ModelFit]]
"""Per group slug: the breakdown of each layout and the fitted model."""


@dataclass(frozen=True)
class GroupFigures:
    """File names (relative to index.html) of one group's plots; comm_comp is None for an app without phases,
    transposes for an app that records no transposes."""

    rate: str
    memory: str
    comm_comp: str | None = None
    transposes: str | None = None


def _num(value: float | None, fmt: str = ".4g") -> str:
    """A number for a table cell; '-' when absent."""
    return "-" if value is None else format(value, fmt)


def _head(*columns: str, left: tuple[str, ...] = ()) -> str:
    """A table's header row, a cell per column; the columns named in `left` are aligned left (class 'l') like their
    cells (text rather than numbers)."""
    cells = "".join(f"<th class='l'>{c}</th>" if c in left else f"<th>{c}</th>" for c in columns)
    return f"<tr>{cells}</tr>"


def _table(css_class: str, caption: str, head: str, rows: Iterable[str]) -> str:
    """A captioned table: the header row, then the rows."""
    return f"<table class='{css_class}'><caption>{caption}</caption>{head}{''.join(rows)}</table>"


def _machine_section(machines: list[MachineRecord], groups: list[AppGroup]) -> str:
    """Topology, MPI library, compiler and STREAM bandwidth of every machine in the report."""
    parts = ["<h2 id='machine'>Machine</h2>"]
    for m in machines:
        s = m.summary
        caches = ", ".join(f"L{c['level']} {c['count']} x {c['size_bytes'] // 1024} KiB" for c in s.get("caches", []))
        rows = [("host", m.hostname), ("packages", s.get("packages")), ("NUMA domains", s.get("numa_nodes")),
                ("cores", s.get("cores")), ("PUs (hardware threads)", s.get("pus")), ("caches", caches),
                ("memory", f"{s.get('memory_bytes', 0) / 2**30:.1f} GiB" if s.get("memory_bytes") else "-"),
                ("topology hash", m.topology_hash), ("MPI library", m.mpi_library), ("compiler", m.compiler)]
        stream = best_stream_bandwidth([g for g in groups if g.machine_id == m.id])
        if stream:
            rows.append(("STREAM triad (best median)", f"{stream[0]:.4g} {stream[1]} with {stream[2]}"))
        parts.append("<table class='machine'>" + "".join(
            f"<tr><th class='l'>{escape(str(k))}</th><td class='l'>{escape(str(v))}</td></tr>" for k, v in rows)
            + "</table>")
    return "\n".join(parts)


def _pages(share: float | None) -> str:
    """The share of pages on their intended NUMA nodes as a table cell ('100 %'; '-' when not reported)."""
    return "-" if share is None else f"{100 * share:.0f} %"


def _layout_table(group: AppGroup) -> str:
    """Min/median/max rate (of a lower-is-better figure of merit, recorded as its inverse: min/median/max of the figure
    itself) and medians of the other measures, one row per layout."""
    figure = figure_unit(group.rate_unit)
    measure = "rate" if figure is None else "figure"
    head = _head("layout", "bind", "membind", "cores", "runs", "ok", f"{measure} min", f"{measure} median",
                 f"{measure} max", "time s", "comm s", "comp s", "imbalance", "MiB/process", "MiB/core", "MiB/node",
                 "pages where intended", "disturbed")
    rows = []
    for s in group.layouts:
        spread = s.spread(group.rate_unit)
        rows.append(f"<tr><td>{s.label}</td><td>{escape(s.bind)}</td><td>{escape(s.membind)}</td><td>{_cores_cell(s)}</td>"
                    f"<td>{s.runs}</td>"
                    f"<td>{s.ok}</td><td>{_num(spread[0])}</td><td><b>{_num(spread[1])}</b></td>"
                    f"<td>{_num(spread[2])}</td><td>{_num(s.time_median)}</td><td>{_num(s.comm_median)}</td>"
                    f"<td>{_num(s.comp_median)}</td><td>{_num(s.imbalance_median, '.3f')}</td>"
                    f"<td>{_num(s.rss_per_process_mib, '.1f')}</td><td>{_num(s.rss_per_core_mib, '.1f')}</td>"
                    f"<td>{_num(s.rss_per_node_mib, '.1f')}</td><td>{_pages(s.placement_median)}</td>"
                    f"<td>{_disturbed_cell(s)}</td></tr>")
    unit = f" (rate in {escape(group.rate_unit)})" if group.rate_unit else ""
    if figure is not None:
        unit = f" (figure of merit in {escape(figure)}, lower is better)"
    caption = (f"per layout, over repeats{unit}; membind = memory policy (none: first touch); pages where intended "
               "= median share of the reported arrays' pages on the NUMA nodes the policy meant; disturbed = runs "
               "that overlapped other work (median cores it used), counted in runs and ok, in no statistic")
    return _table("layouts", caption, head, rows)


def _cores_cell(s: LayoutStats) -> str:
    """The cores a layout computed on, and the ranks x threads it asked for where those were more (oversubscribed:
    '2 (3 asked)')."""
    return str(s.cores) if s.cores_used == s.cores else f"{s.cores_used} ({s.cores} asked)"


def _disturbed_cell(s: LayoutStats) -> str:
    """'2 (0.9 cores)': the layout's disturbed runs and the median other work beside them; '-' for none."""
    if not s.disturbed:
        return "-"
    return f"<span class='disturbed'>{s.disturbed} ({_num(s.disturbed_load, '.2f')} cores)</span>"


def _share(part: float | None, whole: float | None) -> str:
    """'0.512 (62 %)': seconds and their share of the region; '-' when absent."""
    if part is None:
        return "-"
    return f"{part:.4g} ({100 * part / whole:.0f} %)" if whole else f"{part:.4g}"


def _level(b: Breakdown) -> str:
    """' (L2)' after a STREAM rate measured at a cache level, '' from memory."""
    return f" ({b.bound_level.upper()})" if b.bound_level and b.bound_level != MEMORY_LEVEL else ""


def _breakdown_table(breakdowns: tuple[Breakdown, ...]) -> str:
    """Per layout: the timed region split into its terms, bandwidth share of STREAM and efficiencies."""
    head = _head("layout", "bind", "timed runs", "time s", "comp s", "comm s", "overlap s", "other s",
                 "imbalance loss s", "kernel GB/s", "STREAM GB/s", "bandwidth share", "thread eff.", "parallel eff.")
    rows = []
    for b in breakdowns:
        share = b.bandwidth_share
        bind = b.bind if b.membind == DEFAULT_MEMBIND else f"{b.bind}, membind {b.membind}"
        rows.append(f"<tr><td>{b.label}</td><td>{escape(bind)}</td><td>{b.runs}</td><td>{_num(b.time_s)}</td>"
                    f"<td>{_share(b.comp_s, b.time_s)}</td><td>{_share(b.comm_s, b.time_s)}</td>"
                    f"<td>{_share(b.overlap_s, b.time_s)}</td><td>{_share(b.other_s, b.time_s)}</td>"
                    f"<td>{_share(b.imbalance_loss_s, b.time_s)}</td><td>{_num(b.kernel_gbs)}</td>"
                    f"<td>{_num(b.stream_gbs)}{_level(b)}</td>"
                    f"<td>{'n/a' if share is None else format(share, '.2f')}</td>"
                    f"<td>{_num(b.thread_efficiency, '.2f')}</td><td>{_num(b.parallel_efficiency, '.2f')}</td></tr>")
    caption = ("where the timed region goes (medians over the timed repeats; warm-ups excluded): overlap = "
               "communication hidden behind computation, other = time outside the recorded phases, imbalance loss "
               "= time the average rank waits for the slowest one's computation (part of comm or other); bandwidth "
               "share = kernel GB/s over STREAM triad of the same layout at the level the kernel's working set per "
               "thread fits (memory unless named); thread eff. = rate / (threads x rate of "
               "R x 1); parallel eff. = rate / (cores x rate of 1x1)")
    mixed = [b.label for b in breakdowns if not b.consistent]
    note = (f"<div class='note'>{escape(', '.join(mixed))}: computation or communication exceeds the timed region, "
            "so these phases cover more than the rate and time do (records of an older app version); they are not "
            "split into overlap and other, and no reason is drawn from them.</div>" if mixed else "")
    return _table("breakdown", caption, head, rows) + note


def _pct_cell(share: float | None) -> str:
    """A relative error as a signed percentage ('+1.2'; never '-0.0'); '-' when absent."""
    if share is None:
        return "-"
    text = f"{100 * share:+.1f}"
    return "+0.0" if text == "-0.0" else text


def _model_table(fit: ModelFit) -> str:
    """Measured vs predicted rate per layout, and the model's error ('' without a fit)."""
    if fit.coefficients is None:
        return ""
    loo = fit.error_kind == "leave-one-out"
    head = _head("layout", "measured", "predicted", "error", *(("error left out",) if loo else ()))
    rows = []
    for r in fit.rows:
        cells = (f"<td>{r.label}</td><td>{_num(r.measured) if r.measured is not None else 'not run'}</td>"
                 f"<td>{_num(r.predicted)}</td><td>{_pct_cell(r.error)}</td>")
        if loo:
            cells += f"<td>{_pct_cell(r.loo_error)}</td>"
        kind = "measured" if r.measured is not None else "predicted"
        rows.append(f"<tr class='{kind}'>{cells}</tr>")
    unit = f" in {escape(fit.unit)}" if fit.unit else ""
    caption = (f"model vs measured (rate{unit}; error = relative error of the predicted time, %; "
               f"bind {escape(policy(fit))})")
    return _table("model", caption, head, rows)


def _transpose_part(view: TransposeView | None, figure: str | None, node_memory: float | None) -> str:
    """Transpose time per layout with its verdicts, and the plane / pencil memory per rank ('' without them)."""
    if view is None:
        return ""
    unit = "ms/step" if view.per_step else "ms/run"
    head = _head("layout", "runs", "transpose s", f"transpose {unit}", "share of run", "plane MiB/rank",
                 "pencil MiB/rank", "planes + pencils MiB/node", *(("of node memory",) if node_memory else ()))
    rows = []
    for r in view.rows:
        node = r.node_bytes
        mib = [None if b is None else b / MIB for b in (r.plane_bytes, r.pencil_bytes, node)]
        rows.append(f"<tr><td>{escape(r.label)}</td><td>{r.runs}</td><td>{_num(r.transpose_s)}</td>"
                    f"<td><b>{_num(None if r.per_step_s is None else 1e3 * r.per_step_s)}</b></td>"
                    f"<td>{'-' if r.share is None else format(100 * r.share, '.0f') + ' %'}</td>"
                    f"<td>{_num(mib[0], '.3g')}</td><td>{_num(mib[1], '.3g')}</td><td>{_num(mib[2], '.3g')}</td>"
                    + (f"<td>{'-' if node is None else format(100 * node / node_memory, '.3g') + ' %'}</td>"
                       if node_memory else "") + "</tr>")
    caption = ("transposes (medians over the timed repeats; share = transpose time / timed region) and the memory "
               "of the distributed field per rank as planes and as pencils (the largest rank; both are held at once, "
               "so a node holds ranks per node x their sum)")
    items = "".join(f"<li>{escape(sentence(v, view.per_step))}</li>" for v in view.verdicts)
    verdicts = (f"<div class='why'><b>Transpose time, fastest against each layout</b> (ratio of the median "
                f"{'time steps per transpose second' if view.per_step else 'inverse transpose times'}, bootstrap "
                f"interval as in the recommendation):<ul class='transpose-verdicts'>{items}</ul></div>"
                if items else "<p class='muted'>no layout has the runs a comparison of transpose times needs</p>")
    img = (f"<figure><img src='{escape(figure)}' alt='transpose time and plane / pencil memory per layout'></figure>"
           if figure else "")
    return f"<h3>Transposes and field memory</h3>{verdicts}{img}" + _table("transposes", caption, head, rows)


def _why(group: AppGroup, breakdowns: tuple[Breakdown, ...]) -> str:
    """The 'Why' list: one reason per 'A vs B' verdict of the recommendation ('' when nothing was compared)."""
    items = "".join(f"<li>{escape(line)}</li>" for line in verdict_reasons(group, breakdowns))
    return f"<div class='why'><b>Why.</b><ul>{items}</ul></div>" if items else ""


def _group_section(group: AppGroup, figures: GroupFigures, anchor: str, host: str | None,
                   breakdowns: tuple[Breakdown, ...], fit: ModelFit, transposes: TransposeView | None = None,
                   node_memory: float | None = None) -> str:
    """One app configuration: recommendation and why, plots, the per-layout tables, the model and, for an app that
    records them, the transposes and field memory."""
    args = " ".join(group.app_args) or "(defaults)"
    where = f" on {escape(host)}" if host else ""
    title = f"{escape(group.app)} {escape(group.problem)}{where}"
    plots = [(figures.rate, f"{group.app}: rate vs threads per rank"),
             (figures.memory, f"{group.app}: memory per process and per core")]
    if figures.comm_comp:
        plots.append((figures.comm_comp, f"{group.app}: where the timed region goes"))
    imgs = "".join(f"<figure><img src='{escape(src)}' alt='{escape(alt)}'></figure>" for src, alt in plots)
    program = f"<p class='muted'>program: <code>{escape(group.subject)}</code></p>" if group.subject else ""
    return (f"<h2 id='{anchor}'>{title}</h2>"
            f"<p class='muted'>app arguments: <code>{escape(args)}</code>; {len(group.runs)} runs</p>{program}"
            f"<div class='rec'><b>Recommendation.</b> {escape(recommend(group))}{_why(group, breakdowns)}</div>"
            f"{imgs}{_layout_table(group)}{_breakdown_table(breakdowns)}"
            f"<p class='model-note'>{escape(describe(fit))}</p>{_model_table(fit)}"
            f"{_transpose_part(transposes, figures.transposes, node_memory)}")


def explain_groups(groups: list[AppGroup], machines: list[MachineRecord]) -> Explained:
    """Per group slug: its breakdowns (against the STREAM of its machine) and its fitted model."""
    cores = {m.id: int(m.summary.get("cores") or 0) for m in machines}
    return {g.slug: (explain(g, pick_stream(g, groups)), fit_model(g, cores.get(g.machine_id) or None))
            for g in groups}


def _level_table(probe: HierarchyProbe) -> str:
    """One row per level: the pair measured, its 0 B latency, the fitted alpha and beta, the best bandwidth."""
    head = _head("level", "pair", "pairs at level", "0 B latency us", "alpha us", "beta MB/s", "peak MB/s",
                 left=("level",))
    rows = (f"<tr data-level='{escape(c.level)}'><td class='l'>{escape(c.level)}</td>"
            f"<td>{c.pair[0]},{c.pair[1]}</td><td>{c.pairs_at_level}</td>"
            f"<td>{_num(c.zero_byte_latency_us, '.3g')}</td><td>{_num(c.alpha_us, '.3g')}</td>"
            f"<td>{_num(c.beta_mbs if c.beta_mbs > 0 else None, '.4g')}</td><td>{_num(c.peak_mbs, '.4g')}</td>"
            "</tr>" for c in probe.levels)
    return _table("levels", "per level (one-way times; alpha + size / beta fitted to every size)", head, rows)


def _multi_table(probe: HierarchyProbe) -> str:
    """k pairs of a level at once: overhead, slowest and fastest pair and the aggregate bandwidth ('' if none)."""
    if not probe.multi:
        return ""
    head = _head("level", "pairs", "overhead us", "per pair min MB/s", "per pair max MB/s", "aggregate MB/s",
                 left=("level",))
    rows = (f"<tr data-level='{escape(m.level)}'><td class='l'>{escape(m.level)}</td><td>{m.pairs}</td>"
            f"<td>{_num(m.overhead_us, '.3g')}</td><td>{_num(m.per_pair_min_mbs)}</td>"
            f"<td>{_num(m.per_pair_max_mbs)}</td><td><b>{_num(m.aggregate_mbs)}</b></td></tr>"
            for m in probe.multi)
    bytes_ = ((probe.run.record or {}).get("metrics") or {}).get("options", {}).get("multi_bytes")
    size = f" at {bytes_} B" if bytes_ else ""
    return _table("multi-pair", f"multi-pair bandwidth{size}, pairs at once", head, rows)


def _hierarchy_section(probes: list[HierarchyProbe], figures: dict[str, str], failed: int,
                       machines: list[MachineRecord]) -> str:
    """Ping-pong latency and bandwidth per level of the communication hierarchy ('' without ping-pong runs)."""
    if not probes and not failed:
        return ""
    parts = ["<h2 id='hierarchy'>Communication hierarchy</h2>",
             ("<p class='muted'>hympi-pingpong: one pair of ranks per level they share (l2/l3: a cache, numa, "
              "package, node; network: different nodes, virtual nodes included, which still share memory); "
              "bandwidth = bytes / one-way time.</p>")]
    if failed:
        parts.append(f"<div class='note'>{failed} ping-pong run(s) did not succeed; see Runs.</div>")
    hosts = {m.id: m.hostname for m in machines}
    pus = {m.id: int(m.summary.get("pus") or 0) for m in machines}
    for probe in probes:
        host = f" on {escape(hosts[probe.machine_id])}" if len(hosts) > 1 and probe.machine_id in hosts else ""
        args = " ".join(probe.run.app_args) or "(defaults)"
        shared = pus.get(probe.machine_id, 0)
        over = (f"; oversubscribed ({probe.run.ranks} ranks on {shared} PUs), so ranks also time-share cores"
                if 0 < shared < probe.run.ranks else "")
        parts.append(f"<h3 id='{escape(probe.slug)}'>{escape(probe.describe())}{host} (run {probe.run.id})</h3>"
                     f"<p class='muted'>app arguments: <code>{escape(args)}</code>{escape(over)}</p>"
                     f"<figure><img src='{escape(figures[probe.slug])}' alt='ping-pong bandwidth vs message size, "
                     f"{escape(probe.describe())}'></figure>{_level_table(probe)}{_multi_table(probe)}")
    return "".join(parts)


@dataclass(frozen=True)
class TuningView:
    """What the Tuning section shows: the tuned programs, the predictor's verdicts and the figure files
    (memory: per program slug, only for programs whose tunes varied MPI parameters; ratios: '' without verdicts)."""

    programs: tuple[ProgramTuning, ...]
    prediction: Prediction
    memory: dict[str, str]
    ratios: str = ""


def _speedup_cell(s: Speedup) -> str:
    """A speedup with its interval, as results.speedup wrote it ('-' when there is none)."""
    return escape(s.text or "-")


def _verdict(s: Speedup, what: str, against: str) -> str:
    """One honest sentence on `what` vs `against` from a speedup and its interval ('' when it is separated)."""
    if s.ratio is None or s.separated:
        return ""
    more = f"tune with --repeat {MIN_SEPARATE} or more"
    if s.low is None or s.high is None:
        return (f"{what} measured {s.ratio:.2f}x {against} with too few ok runs for an interval: no evidence either "
                f"way ({more})")
    if s.low > 1.0 or s.high < 1.0:  # only too few runs keep such an interval from a verdict
        return (f"{what} measured {s.ratio:.2f}x {against} (CI {s.low:.2f}-{s.high:.2f}) on too few runs per "
                f"configuration to say so ({VERDICT_NEEDS}; {more})")
    return f"no measurable difference between {what} and {against} on this machine ({s.text})"


def _honest(program: ProgramTuning) -> list[str]:
    """Sentences for what the tune could not show: best vs default, and its MPI parameters vs the same layout."""
    ref = program.reference()
    if ref.tune.status != "finished":
        size = f" of {ref.space_size}" if ref.space_size else ""
        return [f"{program.program}: tune {ref.tune.id} is {ref.tune.status} after {len(ref.results)}{size} "
                "configurations: no recommendation until it finishes (hympi tune run ... --resume)."]
    if ref.best is None:
        return []
    lines = []
    if ref.best.config == ref.default:
        lines.append("no configuration measured faster than the default; keep the defaults")
    elif line := _verdict(ref.speedup, "the best configuration", "the default"):
        lines.append(line)
    if not ref.best.config.mpi_params:
        lines.append("the best configuration sets no MPI parameter: the library's defaults are best here")
    elif ref.params_gain is not None:
        line = _verdict(ref.params_gain, "its MPI parameters", "the same layout with the library's defaults")
        lines.append(line or f"its MPI parameters add {ref.params_gain.text} over the same layout with the "
                              "library's defaults")
    return [f"{program.program}: {line}." for line in lines]


def _tuning_overview(programs: tuple[ProgramTuning, ...]) -> str:
    """Per program: the reference tune's best configuration and its speedup over the default."""
    head = _head("program", "tunes", "configurations measured", "runs", "default", "best configuration",
                 "speedup of best vs default", "its MPI parameters vs the same layout with defaults",
                 left=("program", "default", "best configuration"))
    rows = []
    for p in programs:
        ref = p.reference()
        size = f" of {ref.space_size}" if ref.space_size else ""
        rows.append(f"<tr><td class='l'>{escape(p.program)}</td><td>{len(p.tunes)}</td>"
                    f"<td>{len(ref.results)}{size}</td><td>{ref.runs}</td>"
                    f"<td class='l'>{escape(ref.default.label() if ref.default else '-')}</td>"
                    f"<td class='l'>{escape(ref.best.config.label() if ref.best else 'none ran ok')}</td>"
                    f"<td>{_speedup_cell(ref.speedup)}</td>"
                    f"<td>{_speedup_cell(ref.params_gain) if ref.params_gain else '-'}</td></tr>")
    caption = ("per program, from the tune that measured most of its space: speedup = median rate of the best "
               "configuration / median rate of the default (the space's default layout, MPI parameters at the "
               "library's defaults), with the bootstrap interval of stats.compare; the last column separates what "
               "the MPI parameters add from what the layout adds")
    return _table("tune-speedup", caption, head, rows)


def _strategy_table(programs: tuple[ProgramTuning, ...]) -> str:
    """Every tune: strategy, configurations and runs spent, best score reached against the program's reference."""
    head = _head("program", "tune", "strategy", "status", "configurations", "runs", "best score",
                 "of the reference best", "runs of the reference", "note",
                 left=("program", "strategy", "status", "note"))
    rows = []
    for p in programs:
        ref = p.reference()
        top = ref.best.score if ref.best else None
        for t in p.tunes:
            score = t.best.score if t.best else None
            shown = t.best.score_text() if t.best else "-"
            share = f"{100 * score / top:.1f} %" if score is not None and top else "-"
            spent = f"{100 * t.runs / ref.runs:.0f} %" if ref.runs else "-"
            rows.append(f"<tr><td class='l'>{escape(p.program)}</td><td>{t.tune.id}</td>"
                        f"<td class='l'>{escape(t.tune.strategy)}</td><td class='l'>{escape(t.tune.status)}</td>"
                        f"<td>{len(t.results)}</td><td>{t.runs}</td><td>{shown}</td><td>{share}</td>"
                        f"<td>{spent}</td><td class='l'>{escape(t.tune.note or '')}</td></tr>")
    caption = ("runs used by each search strategy and the best score it reached, against the tune that measured "
               "most of the program's space (the reference: exhaustive when there is one)")
    return _table("tune-strategies", caption, head, rows)


def _prediction_part(prediction: Prediction, ratios: str) -> str:
    """The leave-one-program-out table, its mean against the baseline, and the figure (or why there is none)."""
    parts = ["<h3 id='tuning-predicted'>Predicted vs measured (leave one program out)</h3>"]
    if not prediction.verdicts:
        parts.append(f"<div class='note'>No prediction: {escape(prediction.missing)}</div>")
        return "".join(parts)
    head = _head("program", "predicted configuration", "expected speedup", "measured speedup of it", "best measured",
                 "best speedup", "ratio", "baseline pick", "baseline ratio",
                 left=("program", "predicted configuration", "best measured", "baseline pick"))
    rows = []
    for v in prediction.verdicts:
        measured = "not measured" if v.measured is None else ("failed" if v.measured == 0.0 else _num(v.measured,
                                                                                                      ".3f"))
        rows.append(f"<tr><td class='l'>{escape(v.program)}</td><td class='l'>{escape(v.predicted)}</td>"
                    f"<td>{v.predicted_speedup:.3f}</td><td>{measured}</td><td class='l'>{escape(v.best)}</td>"
                    f"<td>{v.best_speedup:.3f}</td><td><b>{_num(v.ratio, '.3f')}</b></td>"
                    f"<td class='l'>{escape(v.baseline or '-')}</td><td>{_num(v.baseline_ratio, '.3f')}</td></tr>")
    mean, base = mean_ratio(prediction.verdicts), mean_ratio(prediction.verdicts, baseline=True)
    caption = ("the network is trained on every other program, predicts this one's best configuration from its "
               "profile, and the ratio is the speedup this program's own tune measured for that configuration over "
               "its best measured speedup; the baseline always picks the configuration best on average over the "
               "training programs")
    wins = beats_constant(mean, base)
    if wins is None:
        verdict = "no ratio to compare"
    elif not wins:
        verdict = (f"within {BEAT_MARGIN:g} of the constant pick or below it: the profile features add nothing "
                   "measurable here")
    else:
        verdict = "the network picks better than the constant"
    summary = (f"<p class='tune-mean'>mean ratio predicted/best: <b>{_num(mean, '.3f')}</b>; baseline: "
               f"{_num(base, '.3f')} ({escape(verdict)})</p>")
    notes = "".join(f"<div class='note'>left out: {escape(n)}</div>" for n in prediction.notes)
    notes += "".join(f"<div class='note'>{escape(note)}</div>"
                     for note in [*narrowed_notes(prediction.verdicts), *prediction.busy])
    figure = (f"<figure><img src='{escape(ratios)}' alt='predicted vs best measured speedup per program'></figure>"
              if ratios else "")
    parts.append(summary + figure + _table("tune-predicted", caption, head, rows) + notes)
    return "".join(parts)


def _memory_part(programs: tuple[ProgramTuning, ...], figures: dict[str, str]) -> str:
    """Per program: the memory figure and one sentence per parameter on whether its value changes memory."""
    parts = ["<h3 id='tuning-memory'>MPI memory per process vs parameters</h3>",
             "<p class='muted'>peak resident memory per process (median of each configuration's runs) against each "
             f"MPI parameter's value; a spread below {100 * MEMORY_MARGIN:.0f} % at equal ranks counts as no "
             "difference</p>"]
    for p in programs:
        if p.slug not in figures:
            continue
        lines = []
        for name in p.parameters():
            spread = p.memory_spread(name)
            if spread is None:
                lines.append(f"{name}: one value measured, nothing to compare")
            elif spread < MEMORY_MARGIN:
                lines.append(f"{name}: no measurable difference in memory per process (spread {100 * spread:.1f} %)")
            else:
                lines.append(f"{name}: memory per process differs by up to {100 * spread:.0f} % between its values")
        items = "".join(f"<li>{escape(line)}</li>" for line in lines)
        parts.append(f"<h4>{escape(p.program)}</h4><figure><img src='{escape(figures[p.slug])}' alt='memory per "
                     f"process vs MPI parameters, {escape(p.program)}'></figure><ul class='tune-memory'>{items}</ul>")
    if len(parts) == 2:
        parts.append("<p class='note'>No tune varied an MPI parameter with memory recorded.</p>")
    return "".join(parts)


def tuning_section(view: TuningView) -> str:
    """The Tuning section: speedups, strategies, prediction, memory ('' without tunes)."""
    if not view.programs:
        return ""
    honest = "".join(f"<div class='note'>{escape(line)}</div>" for p in view.programs for line in _honest(p))
    return ("<h2 id='tuning'>Tuning</h2><p class='muted'>hympi tune: configurations = ranks x threads x binding x MPI "
            "parameters, each measured as one sweep; score = median rate of its ok runs</p>"
            f"{_tuning_overview(view.programs)}{honest}<h3 id='tuning-strategies'>Runs used by each strategy</h3>"
            f"{_strategy_table(view.programs)}{_prediction_part(view.prediction, view.ratios)}"
            f"{_memory_part(view.programs, view.memory)}")


def _ratio_cell(cell_ratio: float | None, low: float | None, high: float | None) -> str:
    """'1.25 (1.10-1.40)': a ratio to first touch and its interval; '-' when there is none."""
    if cell_ratio is None or low is None or high is None:
        return "-"
    return f"{cell_ratio:.2f} ({low:.2f}-{high:.2f})"


def _threads_label(ranks: int, threads: int) -> str:
    """'4 threads' (one rank) or '2x4'."""
    return f"{threads} thread{'s' if threads != 1 else ''}" if ranks == 1 else f"{ranks}x{threads}"


def _data_layout_view(view: DataLayoutView, figure: str | None, host: str | None) -> str:
    """One experiment: the figure and the verdicts against first touch, or why there are none, and the table."""
    args = " ".join(view.args) or "(defaults)"
    where = f" on {escape(host)}" if host else ""
    parts = [f"<h3>{escape(view.app)} {escape(view.problem)}{where}</h3>",
             f"<p class='muted'>app arguments: <code>{escape(args)}</code> plus <code>--data-layout</code>; "
             f"{sum(c.runs for c in view.cells)} measured runs</p>"]
    if not view.comparable:
        parts.append(f"<div class='note data-layout-needs-numa'>{escape(needs_numa(view.numa_nodes or 1))}: every "
                     "layout puts every page on the one domain, so the runs below are not compared.</div>")
    else:
        items = "".join(f"<li>{escape(_threads_label(r, t))}: {escape(c.sentence())}</li>"
                        for r, t in view.threads() for c in view.cells
                        if (c.ranks, c.threads) == (r, t) and c.layout != BASELINE and c.verdict is not None)
        parts.append("<div class='why'><b>Against first touch</b> (ratio of the median rates, bootstrap "
                     f"interval as in the recommendation):<ul class='data-layout-verdicts'>{items}</ul></div>"
                     if items else "<p class='muted'>no thread count has first touch and another layout with the "
                                   "runs a comparison needs</p>")
        if figure:
            parts.append(f"<figure><img src='{escape(figure)}' alt='rate per data layout per thread count'>"
                         "</figure>")
    head = _head("threads", "data layout", "runs", "ok", "rate min", "rate median", "rate max",
                 "ratio to first touch (CI)", "pages of u per NUMA node", "where intended",
                 left=("data layout", "pages of u per NUMA node"))
    rows = []
    # NPB counts floating-point operations: Mop/s / 1000 is Jin et al.'s Gflop/s (Figs. 4, 5, 9).
    scale, unit = (1e-3, "Gflop/s") if view.rate_unit == "Mop/s" else (1.0, view.rate_unit or "-")
    for c in view.cells:
        share = "-" if c.on_intended is None else f"{100 * c.on_intended:.0f} %"
        threads = f"{c.threads}" if c.ranks == 1 else f"{c.ranks}x{c.threads}"
        low, median, high = ((min(c.rates) * scale, (c.median or 0.0) * scale, max(c.rates) * scale) if c.rates
                             else (None, None, None))
        rows.append(f"<tr><td>{threads}</td><td class='l'>{escape(c.layout)}</td><td>{c.runs}</td>"
                    f"<td>{len(c.rates)}</td><td>{_num(low)}</td><td><b>{_num(median)}</b></td><td>{_num(high)}</td>"
                    f"<td>{_ratio_cell(c.ratio, c.low, c.high) if view.comparable else '-'}</td>"
                    f"<td class='l'>{escape(c.placement)}</td><td>{share}</td></tr>")
    caption = (f"per data layout and thread count, over the measured runs (rate in {escape(unit)}; "
               "warm-ups excluded); pages of u = where the kernel put the solution field's pages (every zone), "
               "from the last ok run; where intended = share on the nodes the layout meant (first touch intends "
               "nothing)")
    parts.append(_table("data-layout", caption, head, rows))
    return "".join(parts)


def data_layout_section(views: list[DataLayoutView], figures: dict[str, str], notes: tuple[str, ...],
                        hosts: dict[int, str] | None = None) -> str:
    """The data-layout experiment (Jin et al., "High performance computing using MPI and OpenMP on multi-core parallel
    systems", Fig. 9): each measured problem, and the study's notes about it (e.g. that this machine has one NUMA
    domain); '' when there is neither."""
    if not views and not notes:
        return ""
    intro = ("<p class='muted'>BT-MZ on one rank with its zone arrays placed four ways (<code>--data-layout</code>): "
             "first touch (by the threads that sweep them), one location (every page on location 0), access pattern "
             "(distributed over the locations as the threads are, sweeps run on those locations) and random (pages "
             "scattered over the locations); the layouts differ only where the machine has several NUMA domains "
             "(docs/locality.md, \"The Fig. 9 experiment\")</p>")
    noted = "".join(f"<div class='note data-layout-note'>{escape(n)}</div>" for n in notes)
    body = "".join(_data_layout_view(v, figures.get(v.slug), (hosts or {}).get(v.machine_id)) for v in views)
    return f"<h2 id='data-layout'>Data layout (Fig. 9)</h2>{intro}{noted}{body}"


# The page lists at most this many runs (100,000 rows made a page of 34 MB); `hympi export` gives every one.
RUNS_LISTED = 2000


def _runs_section(runs: list[Run]) -> str:
    """Every run, or, beyond RUNS_LISTED of them, the newest RUNS_LISTED of those that did not end ok or were
    disturbed, with how many there are and where the rest is."""
    if len(runs) <= RUNS_LISTED:
        return f"<h2 id='runs'>Runs</h2>{_runs_table(runs)}"
    notable = [r for r in runs if r.status != "ok" or r.disturbed]
    listed = notable[-RUNS_LISTED:]
    newest = f"the newest {len(listed)} of " if len(listed) < len(notable) else ""
    return (f"<h2 id='runs'>Runs</h2><p class='note'>{len(runs):,} runs recorded, more than the {RUNS_LISTED:,} this "
            f"page lists: it lists {newest}the {len(notable):,} that did not end ok or were disturbed; "
            "<code>hympi export</code> (CSV or JSON) gives every run.</p>"
            f"{_runs_table(listed) if listed else ''}")


def _runs_table(runs: list[Run]) -> str:
    """The runs as rows: configuration (memory policy included), status, measures, the share of its reported
    arrays' pages where the policy meant them, and the stderr tail of failures."""
    head = _head("id", "sweep", "app", "problem", "layout", "bind", "membind", "repeat", "status", "rc",
                 "figure of merit", "unit", "time s", "comm s", "comp s", "MiB/proc", "MiB/node",
                 "pages where intended", "wall s", "started (UTC)", "stderr tail",
                 left=("app", "problem", "status", "started (UTC)", "stderr tail"))
    rows = []
    for r in runs:
        tail = (f"<details><summary>show</summary><pre>{escape(r.stderr_tail)}</pre></details>"
                if r.stderr_tail.strip() else "")
        rate, unit = r.value("rate"), str(r.record.get("rate_unit", "")) if r.record else ""
        if rate is not None:
            rate, unit = shown_figure(rate, unit)
        restart = "" if r.restarted_from_step is None else f" (restarted at step {r.restarted_from_step})"
        if r.disturbed and r.interference is not None:
            restart += f" <span class='disturbed'>disturbed ({r.interference.outside_cores:.2f} cores)</span>"
        rows.append(f"<tr><td>{r.id}</td><td>{r.sweep_id}</td><td class='l'>{escape(r.app)}</td>"
                    f"<td class='l'>{escape(r.problem)}</td><td>{r.ranks}x{r.threads}</td><td>{escape(r.bind)}</td>"
                    f"<td>{escape(r.membind)}</td>"
                    f"<td>{r.repeat}</td><td class='l {escape(r.status)}'>{escape(r.status)}{restart}</td>"
                    f"<td>{'' if r.returncode is None else r.returncode}</td><td>{_num(rate)}</td>"
                    f"<td>{escape(unit)}</td><td>{_num(r.value('time_s'))}</td><td>{_num(r.value('comm_s'))}</td>"
                    f"<td>{_num(r.value('comp_s'))}</td><td>{_num(r.value('max_rss_mib'), '.1f')}</td>"
                    f"<td>{_num(r.value('node_rss_mib'), '.1f')}</td><td>{_pages(run_placement_share(r))}</td>"
                    f"<td>{r.wall_s:.2f}</td>"
                    f"<td class='l'>{escape(r.started_at)}</td><td class='l'>{tail}</td></tr>")
    return f"<table class='runs'>{head}{''.join(rows)}</table>"


def render(title: str, generated: str, machines: list[MachineRecord], groups: list[AppGroup],
           figures: dict[str, GroupFigures], runs: list[Run], notes: tuple[str, ...],
           probes: list[HierarchyProbe] | None = None, probe_figures: dict[str, str] | None = None,
           failed_probes: int = 0, explained: Explained | None = None, tuning: TuningView | None = None,
           transposes: dict[str, TransposeView | None] | None = None,
           checkpoint_io: CheckpointIoView | None = None,
           data_layouts: list[DataLayoutView] | None = None, data_layout_figures: dict[str, str] | None = None,
           data_layout_notes: tuple[str, ...] = (), blades: list[BladesView] | None = None,
           blades_figures: dict[str, dict[str, str]] | None = None) -> str:
    """The whole page as a string; `explained` (from explain_groups), `transposes` (per group slug, from
    transpose_view) and `checkpoint_io` (from checkpoint_io_view over `runs`) are computed here when not given;
    `data_layouts` (from data_layout_views) with their figures and `data_layout_notes` (the study's notes on that
    experiment) make the Data layout section; `blades` (from blades_views) with their figures the Hybrid vs MPI
    (blade row) section."""
    probes = probes or []
    hosts = {m.id: m.hostname for m in machines}
    multi = len(machines) > 1
    # Groups of one program and problem that differ in what was run or measured (its subject) say which they are.
    toc = "".join(f"<li><a href='#g{i}'>{escape(title)}</a>: {escape(recommend(g))}</li>"
                  for i, (g, title) in enumerate(zip(groups, group_titles(groups), strict=True)))
    hierarchy = _hierarchy_section(probes, probe_figures or {}, failed_probes, machines)
    if hierarchy:
        levels = sorted({c.level for p in probes for c in p.levels}, key=level_rank)
        toc += (f"<li><a href='#hierarchy'>Communication hierarchy</a>: ping-pong latency and bandwidth per level "
                f"({escape(', '.join(levels) or 'no successful run')})</li>")
    io_view = checkpoint_io_view(runs) if checkpoint_io is None else checkpoint_io
    io_part = checkpoint_io_section(io_view)
    if io_part:
        apps = sorted({r.app for r in io_view.rows})
        toc += (f"<li><a href='#checkpoint-io'>Checkpoint I/O</a>: write and read bandwidth per layout and HDF5 "
                f"options, checkpoint share of run time ({escape(', '.join(apps))})</li>")
    layout_part = data_layout_section(data_layouts or [], data_layout_figures or {}, data_layout_notes,
                                      hosts if multi else None)
    if layout_part:
        what = (f"{len(data_layouts or [])} measured problem(s)" if data_layouts else
                "; ".join(data_layout_notes))
        toc += f"<li><a href='#data-layout'>Data layout (Fig. 9)</a>: {escape(what)}</li>"
    blade_part = blades_section(blades or [], blades_figures or {}, hosts if multi else None)
    if blade_part:
        toc += ("<li><a href='#blades'>Hybrid vs MPI (blade row)</a>: time per iteration and MPI / hybrid ratio per "
                f"N1 x N2 (Figs. 7, 8), memory, phase model ({len(blades or [])} problem(s))</li>")
    tuned = tuning_section(tuning) if tuning is not None else ""
    if tuning is not None and tuned:
        toc += (f"<li><a href='#tuning'>Tuning</a>: {len(tuning.programs)} tuned program(s), best vs default, "
                "strategies, predicted vs measured, memory vs MPI parameters</li>")
    notes_html = "".join(f"<div class='note'>{escape(n)}</div>" for n in notes)
    explained = explain_groups(groups, machines) if explained is None else explained
    transposes = {g.slug: transpose_view(g) for g in groups} if transposes is None else transposes
    memory = {m.id: float(m.summary.get("memory_bytes") or 0) or None for m in machines}
    sections = "".join(_group_section(g, figures[g.slug], f"g{i}", hosts.get(g.machine_id) if multi else None,
                                      *explained[g.slug], transposes.get(g.slug), memory.get(g.machine_id))
                       for i, g in enumerate(groups))
    anything = groups or hierarchy or tuned or io_part or layout_part or blade_part
    empty = "" if anything else "<p class='note'>No runs recorded yet.</p>"
    quiet = f"<p class='quiet'>{escape(text)}</p>" if (text := quiet_sentence(runs)) else ""
    meta = json.dumps({"runs": len(runs), "groups": len(groups)})
    return ("<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            f"<meta name='viewport' content='width=device-width, initial-scale=1'><title>{escape(title)}</title>"
            f"<link rel='icon' href='data:,'><style>{_CSS}</style></head><body data-report='{escape(meta)}'>"
            f"<h1>{escape(title)}</h1><p class='muted'>generated {escape(generated)}; {len(runs)} runs; "
            "higher rate is better; layouts are MPI ranks x OpenMP threads per rank</p>"
            f"{notes_html}<h2 id='summary'>Summary</h2><ul>{toc}</ul>{quiet}{empty}"
            f"{_machine_section(machines, groups)}{sections}{layout_part}{blade_part}{hierarchy}{io_part}{tuned}"
            f"{_runs_section(runs)}"
            "</body></html>\n")
