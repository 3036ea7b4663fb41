"""The report page: static HTML with relative image links, readable without network access."""

from __future__ import annotations

import json
from dataclasses import dataclass
from html import escape

from hympi.report.analysis import AppGroup, best_stream_bandwidth, recommend
from hympi.report.explain import Breakdown, explain, pick_stream, verdict_reasons
from hympi.report.hierarchy import HierarchyProbe, level_rank
from hympi.report.model import ModelFit, describe, fit_model
from hympi.store import MachineRecord, Run

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
"""


Explained = dict[str, tuple[tuple[Breakdown, ...], ModelFit]]
"""Per group slug: the breakdown of each layout and the fitted model."""


@dataclass(frozen=True)
class GroupFigures:
    """File names (relative to index.html) of one group's plots; comm_comp is None for an app without phases."""

    rate: str
    memory: str
    comm_comp: str | None = None


def _num(value: float | None, fmt: str = ".4g") -> str:
    """A number for a table cell; '-' when absent."""
    return "-" if value is None else format(value, fmt)


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


def _layout_table(group: AppGroup) -> str:
    """Min/median/max rate and medians of the other measures, one row per layout."""
    head = ("<tr><th>layout</th><th>bind</th><th>cores</th><th>runs</th><th>ok</th><th>rate min</th>"
            "<th>rate median</th><th>rate max</th><th>time s</th><th>comm s</th><th>comp s</th><th>imbalance</th>"
            "<th>MiB/process</th><th>MiB/core</th><th>MiB/node</th></tr>")
    rows = []
    for s in group.layouts:
        rows.append(f"<tr><td>{s.label}</td><td>{escape(s.bind)}</td><td>{s.cores}</td><td>{s.runs}</td>"
                    f"<td>{s.ok}</td><td>{_num(s.rate_min)}</td><td><b>{_num(s.rate_median)}</b></td>"
                    f"<td>{_num(s.rate_max)}</td><td>{_num(s.time_median)}</td><td>{_num(s.comm_median)}</td>"
                    f"<td>{_num(s.comp_median)}</td><td>{_num(s.imbalance_median, '.3f')}</td>"
                    f"<td>{_num(s.rss_per_process_mib, '.1f')}</td><td>{_num(s.rss_per_core_mib, '.1f')}</td>"
                    f"<td>{_num(s.rss_per_node_mib, '.1f')}</td></tr>")
    unit = f" (rate in {escape(group.rate_unit)})" if group.rate_unit else ""
    return f"<table><caption>per layout, over repeats{unit}</caption>{head}{''.join(rows)}</table>"


def _share(part: float | None, whole: float | None) -> str:
    """'0.512 (62 %)': seconds and their share of the region; '-' when absent."""
    if part is None:
        return "-"
    return f"{part:.4g} ({100 * part / whole:.0f} %)" if whole else f"{part:.4g}"


def _breakdown_table(breakdowns: tuple[Breakdown, ...]) -> str:
    """Per layout: the timed region split into its terms, bandwidth share of STREAM and efficiencies."""
    head = ("<tr><th>layout</th><th>bind</th><th>timed runs</th><th>time s</th><th>comp s</th><th>comm s</th>"
            "<th>overlap s</th><th>other s</th><th>imbalance loss s</th><th>kernel GB/s</th><th>STREAM GB/s</th>"
            "<th>bandwidth share</th><th>thread eff.</th><th>parallel eff.</th></tr>")
    rows = []
    for b in breakdowns:
        share = b.bandwidth_share
        rows.append(f"<tr><td>{b.label}</td><td>{escape(b.bind)}</td><td>{b.runs}</td><td>{_num(b.time_s)}</td>"
                    f"<td>{_share(b.comp_s, b.time_s)}</td><td>{_share(b.comm_s, b.time_s)}</td>"
                    f"<td>{_share(b.overlap_s, b.time_s)}</td><td>{_share(b.other_s, b.time_s)}</td>"
                    f"<td>{_share(b.imbalance_loss_s, b.time_s)}</td><td>{_num(b.kernel_gbs)}</td>"
                    f"<td>{_num(b.stream_gbs)}</td><td>{'n/a' if share is None else format(share, '.2f')}</td>"
                    f"<td>{_num(b.thread_efficiency, '.2f')}</td><td>{_num(b.parallel_efficiency, '.2f')}</td></tr>")
    caption = ("where the timed region goes (medians over the timed repeats; warm-ups excluded): overlap = "
               "communication hidden behind computation, other = time outside the recorded phases, imbalance loss "
               "= time the average rank waits for the slowest one's computation (part of comm or other); bandwidth "
               "share = kernel GB/s over STREAM triad of the same layout; thread eff. = rate / (threads x rate of "
               "R x 1); parallel eff. = rate / (cores x rate of 1x1)")
    mixed = [b.label for b in breakdowns if not b.consistent]
    note = (f"<div class='note'>{escape(', '.join(mixed))}: computation or communication exceeds the timed region, "
            "so these phases cover more than the rate and time do (records of an older app version); they are not "
            "split into overlap and other, and no reason is drawn from them.</div>" if mixed else "")
    return f"<table class='breakdown'><caption>{caption}</caption>{head}{''.join(rows)}</table>{note}"


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
    head = ("<tr><th>layout</th><th>measured</th><th>predicted</th><th>error</th>"
            + ("<th>error left out</th>" if loo else "") + "</tr>")
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
               f"bind {escape(fit.bind)})")
    return f"<table class='model'><caption>{caption}</caption>{head}{''.join(rows)}</table>"


def _why(group: AppGroup, breakdowns: tuple[Breakdown, ...]) -> str:
    """The 'Why' list: one reason per 'A vs B' verdict of the recommendation ('' when nothing was compared)."""
    items = "".join(f"<li>{escape(line)}</li>" for line in verdict_reasons(group, breakdowns))
    return f"<div class='why'><b>Why.</b><ul>{items}</ul></div>" if items else ""


def _group_section(group: AppGroup, figures: GroupFigures, anchor: str, host: str | None,
                   breakdowns: tuple[Breakdown, ...], fit: ModelFit) -> str:
    """One app configuration: recommendation and why, plots, the per-layout tables and the model."""
    args = " ".join(group.app_args) or "(defaults)"
    where = f" on {escape(host)}" if host else ""
    title = f"{escape(group.app)} {escape(group.problem)}{where}"
    plots = [(figures.rate, f"{group.app}: rate vs threads per rank"),
             (figures.memory, f"{group.app}: memory per process and per core")]
    if figures.comm_comp:
        plots.append((figures.comm_comp, f"{group.app}: where the timed region goes"))
    imgs = "".join(f"<figure><img src='{escape(src)}' alt='{escape(alt)}'></figure>" for src, alt in plots)
    return (f"<h2 id='{anchor}'>{title}</h2>"
            f"<p class='muted'>app arguments: <code>{escape(args)}</code>; {len(group.runs)} runs</p>"
            f"<div class='rec'><b>Recommendation.</b> {escape(recommend(group))}{_why(group, breakdowns)}</div>"
            f"{imgs}{_layout_table(group)}{_breakdown_table(breakdowns)}"
            f"<p class='model-note'>{escape(describe(fit))}</p>{_model_table(fit)}")


def explain_groups(groups: list[AppGroup], machines: list[MachineRecord]) -> Explained:
    """Per group slug: its breakdowns (against the STREAM of its machine) and its fitted model."""
    cores = {m.id: int(m.summary.get("cores") or 0) for m in machines}
    return {g.slug: (explain(g, pick_stream(g, groups)), fit_model(g, cores.get(g.machine_id) or None))
            for g in groups}


def _level_table(probe: HierarchyProbe) -> str:
    """One row per level: the pair measured, its 0 B latency, the fitted alpha and beta, the best bandwidth."""
    head = ("<tr><th class='l'>level</th><th>pair</th><th>pairs at level</th><th>0 B latency us</th>"
            "<th>alpha us</th><th>beta MB/s</th><th>peak MB/s</th></tr>")
    rows = "".join(f"<tr data-level='{escape(c.level)}'><td class='l'>{escape(c.level)}</td>"
                   f"<td>{c.pair[0]},{c.pair[1]}</td><td>{c.pairs_at_level}</td>"
                   f"<td>{_num(c.zero_byte_latency_us, '.3g')}</td><td>{_num(c.alpha_us, '.3g')}</td>"
                   f"<td>{_num(c.beta_mbs if c.beta_mbs > 0 else None, '.4g')}</td><td>{_num(c.peak_mbs, '.4g')}</td>"
                   "</tr>" for c in probe.levels)
    return (f"<table class='levels'><caption>per level (one-way times; alpha + size / beta fitted to every "
            f"size)</caption>{head}{rows}</table>")


def _multi_table(probe: HierarchyProbe) -> str:
    """k pairs of a level at once: overhead, slowest and fastest pair and the aggregate bandwidth ('' if none)."""
    if not probe.multi:
        return ""
    head = ("<tr><th class='l'>level</th><th>pairs</th><th>overhead us</th><th>per pair min MB/s</th>"
            "<th>per pair max MB/s</th><th>aggregate MB/s</th></tr>")
    rows = "".join(f"<tr data-level='{escape(m.level)}'><td class='l'>{escape(m.level)}</td><td>{m.pairs}</td>"
                   f"<td>{_num(m.overhead_us, '.3g')}</td><td>{_num(m.per_pair_min_mbs)}</td>"
                   f"<td>{_num(m.per_pair_max_mbs)}</td><td><b>{_num(m.aggregate_mbs)}</b></td></tr>"
                   for m in probe.multi)
    bytes_ = ((probe.run.record or {}).get("metrics") or {}).get("options", {}).get("multi_bytes")
    size = f" at {bytes_} B" if bytes_ else ""
    return f"<table class='multi-pair'><caption>multi-pair bandwidth{size}, pairs at once</caption>{head}{rows}</table>"


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
        parts.append(f"<div class='note'>{failed} ping-pong run(s) did not succeed; see All runs.</div>")
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


def _runs_table(runs: list[Run]) -> str:
    """Every run: configuration, status, measures and the stderr tail of failures."""
    head = ("<tr><th>id</th><th>sweep</th><th class='l'>app</th><th class='l'>problem</th><th>layout</th>"
            "<th>bind</th><th>repeat</th><th class='l'>status</th><th>rc</th><th>rate</th><th>unit</th>"
            "<th>time s</th><th>comm s</th><th>comp s</th><th>MiB/proc</th><th>MiB/node</th><th>wall s</th>"
            "<th class='l'>started (UTC)</th><th class='l'>stderr tail</th></tr>")
    rows = []
    for r in runs:
        tail = (f"<details><summary>show</summary><pre>{escape(r.stderr_tail)}</pre></details>"
                if r.stderr_tail.strip() else "")
        unit = escape(str(r.record.get("rate_unit", ""))) if r.record else ""
        rows.append(f"<tr><td>{r.id}</td><td>{r.sweep_id}</td><td class='l'>{escape(r.app)}</td>"
                    f"<td class='l'>{escape(r.problem)}</td><td>{r.ranks}x{r.threads}</td><td>{escape(r.bind)}</td>"
                    f"<td>{r.repeat}</td><td class='l {escape(r.status)}'>{escape(r.status)}</td>"
                    f"<td>{'' if r.returncode is None else r.returncode}</td><td>{_num(r.value('rate'))}</td>"
                    f"<td>{unit}</td><td>{_num(r.value('time_s'))}</td><td>{_num(r.value('comm_s'))}</td>"
                    f"<td>{_num(r.value('comp_s'))}</td><td>{_num(r.value('max_rss_mib'), '.1f')}</td>"
                    f"<td>{_num(r.value('node_rss_mib'), '.1f')}</td><td>{r.wall_s:.2f}</td>"
                    f"<td class='l'>{escape(r.started_at)}</td><td class='l'>{tail}</td></tr>")
    return f"<h2 id='runs'>All runs</h2><table>{head}{''.join(rows)}</table>"


def render(title: str, generated: str, machines: list[MachineRecord], groups: list[AppGroup],
           figures: dict[str, GroupFigures], runs: list[Run], notes: tuple[str, ...],
           probes: list[HierarchyProbe] | None = None, probe_figures: dict[str, str] | None = None,
           failed_probes: int = 0, explained: Explained | None = None) -> str:
    """The whole page as a string; `explained` (from explain_groups) is computed here when not given."""
    probes = probes or []
    hosts = {m.id: m.hostname for m in machines}
    multi = len(machines) > 1
    toc = "".join(f"<li><a href='#g{i}'>{escape(g.app)} {escape(g.problem)}</a>: {escape(recommend(g))}</li>"
                  for i, g in enumerate(groups))
    hierarchy = _hierarchy_section(probes, probe_figures or {}, failed_probes, machines)
    if hierarchy:
        levels = sorted({c.level for p in probes for c in p.levels}, key=level_rank)
        toc += (f"<li><a href='#hierarchy'>Communication hierarchy</a>: ping-pong latency and bandwidth per level "
                f"({escape(', '.join(levels) or 'no successful run')})</li>")
    notes_html = "".join(f"<div class='note'>{escape(n)}</div>" for n in notes)
    explained = explain_groups(groups, machines) if explained is None else explained
    sections = "".join(_group_section(g, figures[g.slug], f"g{i}", hosts.get(g.machine_id) if multi else None,
                                      *explained[g.slug]) for i, g in enumerate(groups))
    empty = "" if groups or hierarchy else "<p class='note'>No runs recorded yet.</p>"
    meta = json.dumps({"runs": len(runs), "groups": len(groups)})
    return ("<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            f"<meta name='viewport' content='width=device-width, initial-scale=1'><title>{escape(title)}</title>"
            f"<link rel='icon' href='data:,'><style>{_CSS}</style></head><body data-report='{escape(meta)}'>"
            f"<h1>{escape(title)}</h1><p class='muted'>generated {escape(generated)}; {len(runs)} runs; "
            "higher rate is better; layouts are MPI ranks x OpenMP threads per rank</p>"
            f"{notes_html}<h2 id='summary'>Summary</h2><ul>{toc}</ul>{empty}"
            f"{_machine_section(machines, groups)}{sections}{hierarchy}{_runs_table(runs)}</body></html>\n")
