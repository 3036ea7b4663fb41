"""hympi study: characterise this machine (topology, STREAM, layout sweeps of every built app, the data-layout
experiment where the machine has several NUMA domains, the ping-pong hierarchy probe) and report."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.markup import escape

from hympi.apps import AppSpec, get_app
from hympi.busy.quiet import quiet_start
from hympi.contract import contract
from hympi.errors import HympiFatal, UsageError
from hympi.filemark import resolve_in
from hympi.launch import slurm
from hympi.launch.mpirun import DEFAULT_MEMBIND, MEMORY_POLICIES
from hympi.params import DEFAULT_DISTURBED_ABOVE, MIN_SEPARATE, from_record
from hympi.paths import binary
from hympi.program import ProgramRun
from hympi.report.datalayout import MIN_NUMA, NOTE_PREFIX, OPTION, layouts, needs_numa
from hympi.report.explain import CACHE_LEVELS, STREAM_APP
from hympi.report.writer import write_report
from hympi.store import MachineRecord, Store, Sweep
from hympi.study_options import (
    DATA_LAYOUT,
    FULL_MAX_REPEAT,
    FULL_MIN_TIME_S,
    PINGPONG,
    STUDY_APPS,
    StudyApp,
)
from hympi.sweep import (
    Plan,
    SweepParams,
    SweepResult,
    open_sweep,
    plan,
    program_fields,
    record_machine,
    resume_missed,
    run_sweep,
    validate_layouts,
)
from hympi.topology import MachineSummary

# The ping-pong probe (study_options.PINGPONG).
# Quick keeps both probe runs around a second each on a small machine; full is the app's own default measurement.
PINGPONG_QUICK_ARGS: tuple[str, ...] = ("--iterations", "200", "--max-bytes", str(1 << 20),
                                        "--multi-bytes", str(1 << 18))
PINGPONG_FULL_ARGS: tuple[str, ...] = ("--iterations", "1000", "--max-bytes", str(4 << 20),
                                       "--multi-bytes", str(1 << 20))


# The data-layout experiment (study_options.DATA_LAYOUT; Jin et al., "High performance computing using MPI and
# OpenMP on multi-core parallel systems", Fig. 9): BT-MZ on one rank, its zone arrays placed four ways
# (--data-layout), per thread count. Quick: class W (16 zones, ~6 MB, seconds per run) at 1 thread
# and all cores; full: class A (~50 MB, beyond most last-level caches) at 1, 2, 4, ... and all cores. Fixed rounds,
# not --repeat auto: the question is each layout against first touch at each thread count, which needs MIN_SEPARATE
# runs on each side.
DATA_LAYOUT_APP = "bt-mz"
DATA_LAYOUT_QUICK_ARGS: tuple[str, ...] = ("--class", "W")
DATA_LAYOUT_FULL_ARGS: tuple[str, ...] = ("--class", "A")
DATA_LAYOUT_QUICK_REPEAT = MIN_SEPARATE
DATA_LAYOUT_FULL_REPEAT = 5


def data_layout_threads(summary: MachineSummary, quick: bool) -> tuple[int, ...]:
    """The thread counts of the data-layout experiment: 1 and all cores (quick), or also every power of two (full),
    keeping those that fit in one NUMA domain or fill whole ones: the study binds threads to cores compactly, and
    the access-pattern layout's locality region must find each thread on the location it maps it to."""
    per_domain = max(1, summary.cores // max(1, summary.numa_nodes))
    counts = {1, summary.cores}
    if not quick:
        c = 2
        while c < summary.cores:
            counts.add(c)
            c *= 2
    return tuple(sorted(t for t in counts if t <= per_domain or t % per_domain == 0))


@dataclass(frozen=True)
class ProbeRun:
    """One launch of the ping-pong probe: ranks (1 thread each) spread over `virtual_nodes` pretend nodes."""

    ranks: int
    virtual_nodes: int


def pingpong_runs(cores: int) -> tuple[ProbeRun, ...]:
    """Inside the node on min(cores, 4) ranks (at least 2), then 4 ranks on 2 virtual nodes for the network level."""
    return (ProbeRun(max(2, min(cores, 4)), 1), ProbeRun(4, 2))


def study_layouts(cores: int, quick: bool) -> tuple[tuple[int, int], ...]:
    """Every ranks x threads split of each core count studied: 1 and all cores (quick), or also powers of two."""
    counts = {1, cores}
    if not quick:
        c = 2
        while c < cores:
            counts.add(c)
            c *= 2
    return tuple((c // t, t) for c in sorted(counts) for t in range(1, c + 1) if c % t == 0)


def stream_elements(summary: MachineSummary, max_ranks: int) -> int:
    """contract.toml's STREAM rule for the fewest ranks of any layout (1), so it holds for every layout of the one
    count the study uses, capped so the arrays of `max_ranks` ranks use at most memory_fraction of memory."""
    rule = contract().stream
    llc = max((size * count for level, size, count in summary.caches if level == max(c[0] for c in summary.caches)),
              default=8 * 2**20)
    elements = rule.elements(llc, 1)
    memory = summary.as_dict().get("memory_bytes") or 0
    if memory:
        elements = min(elements, int(memory * rule.memory_fraction) // (3 * 8 * max_ranks))
    return int(elements)


# STREAM at each cache level hwloc reports (stream --level, likwid-bench's working sets): the bound of the kernels
# whose working set per thread fits that level (hympi.report.explain). A bound, not a verdict: one run per core count
# of the study's layouts, its cores as ranks, no warm-up, this many seconds of triads (cache-sized kernels repeat
# thousands of times in that).
CACHE_STREAM_MIN_TIME_S = 0.2


def cache_levels(summary: MachineSummary) -> tuple[str, ...]:
    """The cache levels STREAM can be sized for on this machine (those hwloc reports), nearest first."""
    reported = {f"l{level}" for level, _, _ in summary.caches}
    return tuple(level for level in CACHE_LEVELS if level in reported)


def app_args(app: StudyApp, quick: bool, summary: MachineSummary, max_ranks: int) -> tuple[str, ...]:
    """The app arguments the study uses on this machine."""
    args = app.quick_args if quick else app.full_args
    if app.name == "stream":
        args = ("--elements", str(stream_elements(summary, max_ranks)), *args)
    return args


@dataclass(frozen=True)
class StudyOptions:
    """What `hympi study` was asked for."""

    quick: bool
    out_dir: Path
    db: Path
    apps: tuple[str, ...]
    repeat: int
    timeout: float
    resume: bool
    min_time: float = FULL_MIN_TIME_S
    auto: bool = False
    max_repeat: int = FULL_MAX_REPEAT
    confidence: float = 0.95
    seed: int = 0
    warmup: bool = True
    programs: tuple[ProgramRun, ...] = ()
    disturbed_above: float = DEFAULT_DISTURBED_ABOVE
    wait_quiet: float = 0.0
    ignore_load: bool = False


def membind_axis(store: Store, study_id: int, summary: MachineSummary, options: StudyOptions,
                 say: Callable[[str], None]) -> tuple[str, ...]:
    """The memory policies the layout sweeps cross with the bindings: with >= 2 NUMA domains none and interleave
    (quick) or every policy (full), the default first; with one domain only the default, and a study note says why
    (every policy puts every page on the one node: the runs would measure noise). Nothing is said when the study
    sweeps no app's layouts."""
    if not any(app.name in options.apps for app in STUDY_APPS):
        return (DEFAULT_MEMBIND,)
    if summary.numa_nodes >= 2:
        policies = (DEFAULT_MEMBIND, "interleave") if options.quick else \
            (DEFAULT_MEMBIND, *(p for p in MEMORY_POLICIES if p != DEFAULT_MEMBIND))
        say(f"memory policies: {', '.join(policies)} (--membind) on {summary.numa_nodes} NUMA domains")
        return policies
    note = (f"memory policies: not swept, this machine has {summary.numa_nodes} NUMA domain, where "
            f"{', '.join(MEMORY_POLICIES)} all put every page on the same node (the layouts ran with membind "
            f"{DEFAULT_MEMBIND}); the axis needs >= 2 domains")
    store.add_study_note(study_id, note)
    say(note)
    return (DEFAULT_MEMBIND,)


def _unbuilt(spec: AppSpec) -> str | None:
    """Why the study skips an app: its binary is not built yet; None when it is built."""
    try:
        binary(spec.binary)
    except HympiFatal:
        return f"skipped, {spec.binary} is not built yet"
    return None


@dataclass(frozen=True)
class _OpenSweep:
    """A study sweep ready to run: a resumed one with its recorded parameters (its seed keeps the order it started
    with) and their plan."""

    sweep: Sweep
    resumed: bool
    params: SweepParams
    plan: Plan


@dataclass(frozen=True)
class _Study:
    """A study under way: where it records, what it was asked for, the machine and where it speaks."""

    store: Store
    machine: MachineRecord
    study_id: int
    options: StudyOptions
    summary: MachineSummary
    console: Console
    say: Callable[[str], None]

    def warn(self, note: str) -> None:
        """Records a study note on what was skipped or went wrong, and says it in yellow."""
        self.store.add_study_note(self.study_id, note)
        self.say(f"[yellow]{escape(note)}[/yellow]")  # it may quote the user's text: no markup in it

    def open(self, params: SweepParams, skipped: str) -> _OpenSweep | None:
        """Plans `params`, has the app check them and opens (or resumes) their sweep; None, with the note
        '`skipped`, it rejected ARGS: why', when the app rejects them."""
        the_plan = plan(params, self.summary.pus)
        try:
            validate_layouts(params, the_plan.items)
        except (UsageError, HympiFatal) as exc:
            self.warn(f"{skipped}, it rejected '{' '.join(params.app_args)}': {exc}")
            return None
        return self.open_planned(params, the_plan)

    def open_planned(self, params: SweepParams, the_plan: Plan) -> _OpenSweep:
        """Opens (or resumes) the sweep of `params`, planned as `the_plan`."""
        sweep, resumed = open_sweep(self.store, self.machine, params, len(the_plan.items), self.options.resume,
                                    self.study_id)
        if resumed:
            params = SweepParams.from_dict(sweep.params)
            the_plan = plan(params, self.summary.pus)
        elif self.options.resume:  # as `hympi sweep --resume`: a new sweep is said to be one, and why
            self.say(escape(resume_missed(self.store, params, sweep, by_id=False)))  # a study has no --resume ID
        return _OpenSweep(sweep=sweep, resumed=resumed, params=params, plan=the_plan)

    def run(self, opened: _OpenSweep, declared_inputs: Sequence[Path] = ()) -> SweepResult:
        """Runs the whole plan of an opened sweep (a program's `declared_inputs` watched as its inputs); notes how
        --repeat auto ended, if it did."""
        result = run_sweep(self.store, opened.sweep, opened.params, opened.plan.items, self.console,
                           declared_inputs=declared_inputs)
        if result.auto is not None:
            self.store.add_study_note(self.study_id, f"{opened.params.app}: {result.auto.text}")
            self.say(f"  {result.auto.text}")
        return result


@dataclass(frozen=True)
class StudyResult:
    """What a study leaves: its report's index page, and how the runs of every sweep it reported ended (status ->
    count; with --resume, the runs recorded before it too, as `hympi sweep` counts them)."""

    report: Path
    statuses: Mapping[str, int]

    def not_ok(self) -> dict[str, int]:
        """The statuses other than ok, with their counts: failed, timeout, unverified."""
        return {status: n for status, n in sorted(self.statuses.items()) if status != "ok"}


def run_study(options: StudyOptions, summary: MachineSummary, console: Console,
              say: Callable[[str], None] | None = None) -> StudyResult:
    """Sweeps every built app over the layouts that fill the cores, records notes for the ones skipped, reports."""
    say = say or (lambda text: console.print(text, highlight=False))
    layouts = study_layouts(summary.cores, options.quick)
    max_ranks = max(r for r, _ in layouts)
    caches = ", ".join(f"L{lvl} {cnt}x{size // 1024} KiB" for lvl, size, cnt in summary.caches)
    say(f"[bold]topology[/bold]: {summary.packages} package(s), {summary.numa_nodes} NUMA domain(s), "
        f"{summary.cores} cores, {summary.pus} PUs; {caches}")
    rounds = (f"--repeat auto ({options.repeat} to {options.max_repeat} rounds)" if options.auto
              else f"{options.repeat} repeat(s)")
    say(f"layouts: {', '.join(f'{r}x{t}' for r, t in layouts)}; {rounds}"
        f"{', 1 warm-up each' if options.warmup else ''}; min time {options.min_time:g} s per run; order seed "
        f"{options.seed}; {'quick' if options.quick else 'full'} problem sizes")
    if not options.ignore_load:
        # The busy line names other processes: their names are not markup.
        quiet_start(options.disturbed_above, options.wait_quiet, slurm.in_allocation(), lambda text: say(escape(text)))
    with Store.open(options.db) as store:
        machine = record_machine(store, summary, "mpirun")
        study_id = store.create_study(machine.id, options.quick, str(options.out_dir))
        study = _Study(store=store, machine=machine, study_id=study_id, options=options, summary=summary,
                       console=console, say=say)
        membinds = membind_axis(store, study_id, summary, options, say)
        sweep_ids: list[int] = []
        for app in (a for a in STUDY_APPS if a.name in options.apps):
            spec = get_app(app.name)
            if (unbuilt := _unbuilt(spec)) is not None:
                study.warn(f"{app.name}: {unbuilt}")
                continue
            params = SweepParams(app=app.name, layouts=layouts, repeat=options.repeat,
                                 app_args=app_args(app, options.quick, summary, max_ranks), timeout=options.timeout,
                                 min_time=options.min_time, seed=options.seed, warmup=options.warmup,
                                 auto=options.auto, max_repeat=options.max_repeat, confidence=options.confidence,
                                 membinds=membinds, disturbed_above=options.disturbed_above)
            if (opened := study.open(params, f"{app.name}: skipped")) is None:
                continue
            say(f"[bold]{app.name}[/bold] ({spec.description}): sweep {opened.sweep.id}"
                f"{' resumed' if opened.resumed else ''}, {len(opened.plan.items)} runs, args "
                f"{' '.join(opened.params.app_args)}")
            study.run(opened)
            sweep_ids.append(opened.sweep.id)
            if app.name == STREAM_APP:
                sweep_ids += run_cache_stream(study, layouts)
        for entry in options.programs:
            sweep_ids.append(run_program_sweep(study, layouts, entry))
        if DATA_LAYOUT in options.apps:
            sweep_ids += run_data_layout_experiment(study)
        if PINGPONG in options.apps:
            sweep_ids += run_pingpong_probe(study)
        store.finish_study(study_id)
        say("writing the report")
        report = write_report(store, options.out_dir, sweep_ids, store.study(study_id).notes,
                              title=f"hympi study of {machine.hostname}" + (" (quick)" if options.quick else ""),
                              disturbed_above=options.disturbed_above)
        return StudyResult(report=report, statuses=Counter(run.status for run in store.runs(sweep_ids)))


def run_program_sweep(study: _Study, layouts: tuple[tuple[int, int], ...], entry: ProgramRun) -> int:
    """Sweeps one program of a programs file over the study's layouts, with the study's rounds; returns the sweep id.
    A program has no timed region to stretch: the minimum time does not apply."""
    options = study.options
    params = from_record(SweepParams, {
        **program_fields(entry.program), "layouts": layouts, "repeat": options.repeat, "app_args": entry.args,
        "timeout": options.timeout, "min_time": 0.0, "seed": options.seed, "warmup": options.warmup,
        "auto": options.auto, "max_repeat": options.max_repeat, "confidence": options.confidence,
        "disturbed_above": options.disturbed_above})
    params.check()
    opened = study.open_planned(params, plan(params, study.summary.pus))
    study.say(f"[bold]{escape(opened.params.app)}[/bold] (your program: {escape(entry.program.summary())}): sweep "
              f"{opened.sweep.id}{' resumed' if opened.resumed else ''}, {len(opened.plan.items)} runs, args "
              f"{escape(' '.join(opened.params.app_args))}")
    study.run(opened, [resolve_in(entry.program.workdir, name) for name in entry.inputs])
    return opened.sweep.id


def run_cache_stream(study: _Study, layouts: tuple[tuple[int, int], ...]) -> list[int]:
    """STREAM at each cache level of the machine (CACHE_STREAM_MIN_TIME_S), one sweep per level; returns their ids."""
    options = study.options
    counts = sorted({r * t for r, t in layouts})
    sweep_ids: list[int] = []
    for level in cache_levels(study.summary):
        params = SweepParams(app=STREAM_APP, layouts=tuple((c, 1) for c in counts), repeat=1,
                             app_args=("--level", level), timeout=options.timeout, min_time=CACHE_STREAM_MIN_TIME_S,
                             seed=options.seed, warmup=False, disturbed_above=options.disturbed_above)
        if (opened := study.open(params, f"{STREAM_APP} --level {level}: skipped")) is None:
            continue
        study.say(f"[bold]{STREAM_APP}[/bold] at {level.upper()}: sweep {opened.sweep.id}"
                  f"{' resumed' if opened.resumed else ''}, {len(opened.plan.items)} runs, args "
                  f"{' '.join(opened.params.app_args)}")
        study.run(opened)
        sweep_ids.append(opened.sweep.id)
    return sweep_ids


def run_pingpong_probe(study: _Study) -> list[int]:
    """Runs the ping-pong probe (one sweep per ProbeRun, recorded like any run); notes a missing binary or failure."""
    spec = get_app(PINGPONG)
    if (unbuilt := _unbuilt(spec)) is not None:
        study.warn(f"{PINGPONG}: {unbuilt}")
        return []
    options, summary = study.options, study.summary
    args = PINGPONG_QUICK_ARGS if options.quick else PINGPONG_FULL_ARGS
    sweep_ids: list[int] = []
    for probe in pingpong_runs(summary.cores):
        # A 1-core machine, or the 4-rank virtual-node run on fewer PUs, shares cores: still shows the levels.
        # The probe times its own round trips: no warm-up run, and the minimum time does not apply (HYMPI_MIN_TIME=0).
        params = SweepParams(app=PINGPONG, layouts=((probe.ranks, 1),), app_args=args, timeout=options.timeout,
                             oversubscribe=probe.ranks > summary.pus, virtual_nodes=probe.virtual_nodes,
                             min_time=0.0, seed=options.seed, warmup=False, disturbed_above=options.disturbed_above)
        where = f"{probe.ranks} ranks" + (f" on {probe.virtual_nodes} virtual nodes" if probe.virtual_nodes > 1 else "")
        if (opened := study.open(params, f"{PINGPONG}: {where} skipped")) is None:
            continue
        study.say(f"[bold]{PINGPONG}[/bold] ({spec.description}): sweep {opened.sweep.id}"
                  f"{' resumed' if opened.resumed else ''}, {where}, args {' '.join(args)}")
        result = study.run(opened)
        sweep_ids.append(opened.sweep.id)
        bad = {status: n for status, n in result.statuses.items() if status != "ok"}
        if bad:
            study.warn(f"{PINGPONG}: the run with {where} ended {', '.join(bad)}; its level is missing from the "
                       "communication hierarchy (stderr tail under Runs)")
    return sweep_ids


def run_data_layout_experiment(study: _Study) -> list[int]:
    """Fig. 9: one sweep per data layout (BT-MZ, 1 rank, binding core), their rounds interleaved in a seeded order so
    load drift hits every layout alike. On fewer than MIN_NUMA NUMA domains every layout puts every page on the one
    domain: the study notes that and runs nothing. A missing binary or rejected arguments are notes too."""
    options, summary = study.options, study.summary
    if summary.numa_nodes < MIN_NUMA:
        study.warn(NOTE_PREFIX + needs_numa(summary.numa_nodes))
        return []
    if (unbuilt := _unbuilt(get_app(DATA_LAYOUT_APP))) is not None:
        study.warn(NOTE_PREFIX + unbuilt)
        return []
    threads = data_layout_threads(summary, options.quick)
    args = DATA_LAYOUT_QUICK_ARGS if options.quick else DATA_LAYOUT_FULL_ARGS
    # --repeat N is honoured; auto (the study's default) becomes the rounds a verdict against first touch needs.
    repeat = max(options.repeat, DATA_LAYOUT_QUICK_REPEAT if options.quick else DATA_LAYOUT_FULL_REPEAT) \
        if options.auto else options.repeat
    sweeps: list[_OpenSweep] = []
    for layout in layouts():
        params = SweepParams(app=DATA_LAYOUT_APP, layouts=tuple((1, t) for t in threads), repeat=repeat,
                             app_args=(*args, OPTION, layout), timeout=options.timeout, min_time=options.min_time,
                             seed=options.seed, warmup=options.warmup, disturbed_above=options.disturbed_above)
        if (opened := study.open(params, f"{NOTE_PREFIX}{DATA_LAYOUT_APP} skipped")) is None:
            return []
        sweeps.append(opened)
    study.say(f"[bold]{DATA_LAYOUT}[/bold] (Jin et al. Fig. 9: {DATA_LAYOUT_APP} {' '.join(args)}, 1 rank, "
              f"{', '.join(layouts())}): sweeps {', '.join(str(s.sweep.id) for s in sweeps)}, threads "
              f"{', '.join(map(str, threads))}, {repeat} round(s) each")
    rounds = sorted({item.repeat for s in sweeps for item in s.plan.items})
    for round_no in rounds:
        order = np.random.default_rng([sweeps[0].params.seed, round_no, len(sweeps)]).permutation(len(sweeps))
        for k in order:
            opened = sweeps[int(k)]
            items = tuple(i for i in opened.plan.items if i.repeat == round_no)
            run_sweep(study.store, study.store.sweep(opened.sweep.id), opened.params, items, study.console)
            if round_no != rounds[-1]:  # more rounds to come: not finished (a killed study resumes it)
                study.store.set_sweep_status(opened.sweep.id, "running")
    return [s.sweep.id for s in sweeps]
