"""Writes the static HTML report (index.html and its PNG plots) from the results database."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from hympi.errors import HympiFatal
from hympi.inputs import latest_inputs
from hympi.outputs import write_output
from hympi.params import DEFAULT_DISTURBED_ABOVE
from hympi.report import plots
from hympi.report.analysis import group_runs
from hympi.report.blades import blades_views
from hympi.report.datalayout import data_layout_views, experiment_notes, is_data_layout_run
from hympi.report.explain import recommendation_lines
from hympi.report.hierarchy import PINGPONG_APP, hierarchy_probes
from hympi.report.html import GroupFigures, TuningView, explain_groups, render
from hympi.report.transposes import transpose_view
from hympi.report.tuning import prediction, tuning_data
from hympi.store import Run, Store, Sweep, now_utc
from hympi.sweep import program_from_fields
from hympi.tune.space import CvarSource, listing_source


def program_subjects(sweeps: list[Sweep], runs: list[Run]) -> dict[int, str]:
    """Per sweep of a program of the user's own, what it ran and measured (report.analysis.AppGroup.subject): its
    file, figure of merit, check, output file, standard input (and its contents' digest), variables and the input
    files its arguments name (with their digests, as its runs read them: hympi.inputs; sweeps of one command line on
    an edited input are other groups), and where it ran when a programs file said so. Sweeps of hympi's apps have
    none."""
    runs_of: dict[int, list[Run]] = {}
    for run in runs:
        runs_of.setdefault(run.sweep_id, []).append(run)
    subjects = {}
    for sweep in sweeps:
        program = program_from_fields(sweep.params)
        if program is not None:
            digest = str(sweep.params.get("stdin_sha256") or "")
            inputs = "".join(f", reading {path} (sha256 {sha[:12]})"
                             for path, sha in latest_inputs(runs_of.get(sweep.id, [])).items())
            subjects[sweep.id] = (program.summary() + (f" (sha256 {digest[:12]})" if digest else "") + inputs
                                  + (f", run in {program.workdir}" if program.workdir else ""))
    return subjects


def _tuning_view(store: Store, out_dir: Path, tune_ids: set[int], cvars: CvarSource | None,
                 disturbed_above: float) -> TuningView | None:
    """The Tuning section's data and figures for these tunes (None without any): the predictor is evaluated with
    `cvars` (default: the installed library's, read only when a stored space has MPI parameters), and a profile
    taken beside more than `disturbed_above` cores of other work is named."""
    if not tune_ids:
        return None
    programs = tuple(tuning_data(store, tune_ids))
    predicted = prediction(store, cvars or listing_source(None), disturbed_above)
    memory = {}
    for program in programs:
        if plots.tune_memory(program, out_dir / f"{program.slug}-memory.png") is not None:
            memory[program.slug] = f"{program.slug}-memory.png"
    ratios = ""
    if predicted.verdicts:
        ratios = "tune-prediction.png"
        plots.prediction_ratios(predicted.verdicts, out_dir / ratios)
    return TuningView(programs, predicted, memory, ratios)


# The seconds of every repetition IS and NPB-MZ record (core/metrics.hpp, RepeatedRuns): over half of a record's
# memory once decoded (an IS class S record: 18.9 KB, 8.2 KB without), and no part of the report reads them; hympi
# export keeps them. The report holds every run it shows, so at 100,000 runs that half was gigabytes.
SERIES_NOT_REPORTED = ("$.metrics.repetition_s",)


def write_report(store: Store, out_dir: Path, sweep_ids: list[int] | None = None, notes: tuple[str, ...] = (),
                 title: str = "hympi study", cvars: CvarSource | None = None,
                 disturbed_above: float = DEFAULT_DISTURBED_ABOVE, say: Callable[[str], None] | None = None) -> Path:
    """Writes index.html and its PNG plots into `out_dir`; returns the path of index.html; `say` is handed the
    summary's lines, one recommendation per app configuration, as the page lists them. Runs of tunes go to the
    Tuning section (with `cvars` for rebuilding their spaces, and naming the programs profiled beside more than
    `disturbed_above` cores of other work), not to the per-app sections. HympiFatal naming the directory when a
    file cannot be written there (a full disk): the runs stay in the database, which says so."""
    try:
        return _write_report(store, out_dir, sweep_ids, notes, title, cvars, disturbed_above, say)
    except OSError as exc:
        raise HympiFatal(f"cannot write the report into {out_dir} ({exc.strerror or exc}); the runs are kept in "
                         f"{store.path} (hympi report --db {store.path} --out {out_dir} writes it again)") from None


def _write_report(store: Store, out_dir: Path, sweep_ids: list[int] | None, notes: tuple[str, ...], title: str,
                  cvars: CvarSource | None, disturbed_above: float, say: Callable[[str], None] | None) -> Path:
    """write_report's work."""
    runs = store.runs(sweep_ids, leave_out=SERIES_NOT_REPORTED)
    sweeps = store.sweeps()
    machine_of = {s.id: s.machine_id for s in sweeps}
    wanted = set(sweep_ids) if sweep_ids is not None else {s.id for s in sweeps}
    machine_ids = sorted({machine_of[i] for i in wanted if i in machine_of})
    machines = [store.machine(i) for i in machine_ids]
    tune_of = {s.id: s.tune_id for s in sweeps if s.tune_id is not None}
    tune_ids = {tune_of[i] for i in wanted if i in tune_of}
    unfinished = unfinished_notes([s for s in sweeps if s.id in wanted and s.id not in tune_of], runs)
    notes = (*unfinished, *notes)
    # Ping-pong runs measure the communication hierarchy, not a layout: their own section, not an app group. A
    # tune's runs differ in MPI parameters the layout groups do not show: they belong to the Tuning section.
    # The data-layout experiment's runs differ in where their pages are, which a layout group does not show: they get
    # their own section (report.datalayout).
    groups = group_runs([r for r in runs if r.app != PINGPONG_APP and r.sweep_id not in tune_of
                         and not is_data_layout_run(r)], machine_of, program_subjects(sweeps, runs))
    numa = {m.id: (int(m.summary["numa_nodes"]) if isinstance(m.summary.get("numa_nodes"), int) else None)
            for m in machines}
    layout_views = data_layout_views([r for r in runs if r.sweep_id not in tune_of], machine_of, numa)
    probes = hierarchy_probes(runs, machine_of)
    failed_probes = sum(1 for r in runs if r.app == PINGPONG_APP and r.status != "ok")
    explained = explain_groups(groups, machines)
    transposes = {g.slug: transpose_view(g) for g in groups}
    figures: dict[str, GroupFigures] = {}
    for group in groups:
        rate, mem, split, moved = (f"{group.slug}-{kind}.png" for kind in ("rate", "memory", "comm-comp",
                                                                             "transposes"))
        plots.rate_vs_threads(group, out_dir / rate)
        plots.memory(group, out_dir / mem)
        # An app that records no phases (STREAM) gets no chart at all, not an empty one; the same for transposes.
        drawn = plots.comm_comp(group, explained[group.slug][0], out_dir / split)
        view = transposes[group.slug]
        if view is not None:
            plots.transposes(view, f"{group.app} {group.problem}: transposes and field memory per layout",
                             out_dir / moved)
        figures[group.slug] = GroupFigures(rate, mem, split if drawn is not None else None,
                                           moved if view is not None else None)
    probe_figures: dict[str, str] = {}
    for probe in probes:
        probe_figures[probe.slug] = f"{probe.slug}-bandwidth.png"
        plots.bandwidth_vs_size(probe, out_dir / probe_figures[probe.slug])
    layout_figures: dict[str, str] = {}
    for layout_view in layout_views:
        if layout_view.comparable:  # one NUMA domain: nothing to compare, no figure of noise
            layout_figures[layout_view.slug] = f"{layout_view.slug}.png"
            plots.data_layouts(layout_view, out_dir / layout_figures[layout_view.slug])
    cores = {m.id: int(m.summary["cores"]) if isinstance(m.summary.get("cores"), int) else 1 for m in machines}
    blade_views = blades_views([r for r in runs if r.sweep_id not in tune_of], machine_of, cores)
    blade_figures: dict[str, dict[str, str]] = {}
    for blade_view in blade_views:
        names = {kind: f"{blade_view.slug}-{kind}.png" for kind in ("time", "ratio", "memory")}
        plots.blades_time(blade_view, out_dir / names["time"])
        plots.blades_ratio(blade_view, out_dir / names["ratio"])
        plots.blades_memory(blade_view, out_dir / names["memory"])
        blade_figures[blade_view.slug] = names
    tuning = _tuning_view(store, out_dir, tune_ids, cvars, disturbed_above)
    page = render(title, now_utc(), machines, groups, figures, runs, notes, probes, probe_figures, failed_probes,
                  explained, tuning, transposes, data_layouts=layout_views, data_layout_figures=layout_figures,
                  data_layout_notes=experiment_notes(notes), blades=blade_views, blades_figures=blade_figures)
    index = write_output(out_dir / "index.html", page)
    if say is not None:
        for line in (*unfinished, *recommendation_lines(groups, reasons=False)):
            say(line)
    return index


def unfinished_notes(sweeps: list[Sweep], runs: list[Run]) -> list[str]:
    """A line for each of `sweeps` that has not finished (stopped, or still running): its verdicts are of the runs it
    recorded, not of the rounds it planned (a layout may have fewer runs than another); and for each that finished
    short of its plan, why (its note: every launch failed, hympi.sweep.gave_up)."""
    recorded: dict[int, int] = {}
    for run in runs:
        recorded[run.sweep_id] = recorded.get(run.sweep_id, 0) + 1
    state = {"interrupted": "was stopped", "running": "is running (or its process was killed)"}
    lines = []
    for sweep in sweeps:
        counts = f"{recorded.get(sweep.id, 0)} of its {sweep.total} planned runs"
        if sweep.status != "finished":
            lines.append(f"sweep {sweep.id} ({sweep.app}) {state.get(sweep.status, sweep.status)} with {counts}: what "
                         "is said of it is said of those ('--resume' continues it)")
        elif recorded.get(sweep.id, 0) < sweep.total:
            lines.append(f"sweep {sweep.id} ({sweep.app}) ended with {counts}"
                         + (f": {sweep.note}" if sweep.note else ""))
    return lines
