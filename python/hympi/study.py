"""hympi study: characterise this machine (topology, STREAM, layout sweeps of every built app, the data-layout
experiment where the machine has several NUMA domains, the ping-pong hierarchy probe) and report."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from rich.console import Console

from hympi.apps import get_app
from hympi.contract import contract
from hympi.errors import HympiFatal, UsageError
from hympi.launch.mpirun import DEFAULT_MEMBIND, MEMORY_POLICIES
from hympi.params import from_record
from hympi.paths import binary
from hympi.program import ProgramRun
from hympi.report.datalayout import MIN_NUMA, NOTE_PREFIX, OPTION, layouts, needs_numa
from hympi.report.writer import write_report
from hympi.stats.compare import MIN_SEPARATE
from hympi.store import MachineRecord, Store
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
    open_sweep,
    plan,
    program_fields,
    record_machine,
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


def run_study(options: StudyOptions, summary: MachineSummary, console: Console,
              say: Callable[[str], None] | None = None) -> Path:
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
    with Store.open(options.db) as store:
        machine = record_machine(store, summary, "mpirun")
        study_id = store.create_study(machine.id, options.quick, str(options.out_dir))
        membinds = membind_axis(store, study_id, summary, options, say)
        sweep_ids: list[int] = []
        for app in (a for a in STUDY_APPS if a.name in options.apps):
            spec = get_app(app.name)
            try:
                binary(spec.binary)
            except HympiFatal:
                note = f"{app.name}: skipped, {spec.binary} is not built yet"
                store.add_study_note(study_id, note)
                say(f"[yellow]{note}[/yellow]")
                continue
            params = SweepParams(app=app.name, layouts=layouts, repeat=options.repeat,
                                 app_args=app_args(app, options.quick, summary, max_ranks), timeout=options.timeout,
                                 min_time=options.min_time, seed=options.seed, warmup=options.warmup,
                                 auto=options.auto, max_repeat=options.max_repeat, confidence=options.confidence,
                                 membinds=membinds)
            the_plan = plan(params, summary.pus)
            try:
                validate_layouts(params, the_plan.items)
            except (UsageError, HympiFatal) as exc:
                note = f"{app.name}: skipped, it rejected '{' '.join(params.app_args)}': {exc}"
                store.add_study_note(study_id, note)
                say(f"[yellow]{note}[/yellow]")
                continue
            sweep, resumed = open_sweep(store, machine, params, len(the_plan.items), options.resume, study_id)
            if resumed:  # its recorded seed keeps the order it started with
                params = SweepParams.from_dict(sweep.params)
                the_plan = plan(params, summary.pus)
            say(f"[bold]{app.name}[/bold] ({spec.description}): sweep {sweep.id}"
                f"{' resumed' if resumed else ''}, {len(the_plan.items)} runs, args {' '.join(params.app_args)}")
            result = run_sweep(store, sweep, params, the_plan.items, console)
            sweep_ids.append(sweep.id)
            if result.auto is not None:
                store.add_study_note(study_id, f"{app.name}: {result.auto.text}")
                say(f"  {result.auto.text}")
        for entry in options.programs:
            sweep_ids.append(run_program_sweep(store, machine, study_id, options, layouts, summary.pus, entry, console,
                                               say))
        if DATA_LAYOUT in options.apps:
            sweep_ids += run_data_layout_experiment(store, machine, study_id, options, summary, console, say)
        if PINGPONG in options.apps:
            sweep_ids += run_pingpong_probe(store, machine, study_id, options, summary, console, say)
        store.finish_study(study_id)
        study = store.study(study_id)
        say("writing the report")
        return write_report(store, options.out_dir, sweep_ids, study.notes,
                            title=f"hympi study of {machine.hostname}" + (" (quick)" if options.quick else ""))


def run_program_sweep(store: Store, machine: MachineRecord, study_id: int, options: StudyOptions,
                      layouts: tuple[tuple[int, int], ...], pus: int, entry: ProgramRun, console: Console,
                      say: Callable[[str], None]) -> int:
    """Sweeps one program of a programs file over the study's layouts, with the study's rounds; returns the sweep id.
    A program has no timed region to stretch: the minimum time does not apply."""
    params = from_record(SweepParams, {
        **program_fields(entry.program), "layouts": layouts, "repeat": options.repeat, "app_args": entry.args,
        "timeout": options.timeout, "min_time": 0.0, "seed": options.seed, "warmup": options.warmup,
        "auto": options.auto, "max_repeat": options.max_repeat, "confidence": options.confidence})
    params.check()
    the_plan = plan(params, pus)
    sweep, resumed = open_sweep(store, machine, params, len(the_plan.items), options.resume, study_id)
    if resumed:
        params = SweepParams.from_dict(sweep.params)
        the_plan = plan(params, pus)
    say(f"[bold]{params.app}[/bold] (your program: {entry.program.summary()}): sweep {sweep.id}"
        f"{' resumed' if resumed else ''}, {len(the_plan.items)} runs, args {' '.join(params.app_args)}")
    result = run_sweep(store, sweep, params, the_plan.items, console)
    if result.auto is not None:
        store.add_study_note(study_id, f"{params.app}: {result.auto.text}")
        say(f"  {result.auto.text}")
    return sweep.id


def run_pingpong_probe(store: Store, machine: MachineRecord, study_id: int, options: StudyOptions,
                       summary: MachineSummary, console: Console, say: Callable[[str], None]) -> list[int]:
    """Runs the ping-pong probe (one sweep per ProbeRun, recorded like any run); notes a missing binary or failure."""
    spec = get_app(PINGPONG)
    try:
        binary(spec.binary)
    except HympiFatal:
        note = f"{PINGPONG}: skipped, {spec.binary} is not built yet"
        store.add_study_note(study_id, note)
        say(f"[yellow]{note}[/yellow]")
        return []
    args = PINGPONG_QUICK_ARGS if options.quick else PINGPONG_FULL_ARGS
    sweep_ids: list[int] = []
    for probe in pingpong_runs(summary.cores):
        # A 1-core machine, or the 4-rank virtual-node run on fewer PUs, shares cores: still shows the levels.
        # The probe times its own round trips: no warm-up run, and the minimum time does not apply (HYMPI_MIN_TIME=0).
        params = SweepParams(app=PINGPONG, layouts=((probe.ranks, 1),), app_args=args, timeout=options.timeout,
                             oversubscribe=probe.ranks > summary.pus, virtual_nodes=probe.virtual_nodes,
                             min_time=0.0, seed=options.seed, warmup=False)
        the_plan = plan(params, summary.pus)
        where = f"{probe.ranks} ranks" + (f" on {probe.virtual_nodes} virtual nodes" if probe.virtual_nodes > 1 else "")
        try:
            validate_layouts(params, the_plan.items)
        except (UsageError, HympiFatal) as exc:
            note = f"{PINGPONG}: {where} skipped, it rejected '{' '.join(args)}': {exc}"
            store.add_study_note(study_id, note)
            say(f"[yellow]{note}[/yellow]")
            continue
        sweep, resumed = open_sweep(store, machine, params, len(the_plan.items), options.resume, study_id)
        say(f"[bold]{PINGPONG}[/bold] ({spec.description}): sweep {sweep.id}{' resumed' if resumed else ''}, "
            f"{where}, args {' '.join(args)}")
        result = run_sweep(store, sweep, params, the_plan.items, console)
        sweep_ids.append(sweep.id)
        bad = {status: n for status, n in result.statuses.items() if status != "ok"}
        if bad:
            note = (f"{PINGPONG}: the run with {where} ended {', '.join(bad)}; its level is missing from the "
                    "communication hierarchy (stderr tail under All runs)")
            store.add_study_note(study_id, note)
            say(f"[yellow]{note}[/yellow]")
    return sweep_ids


def run_data_layout_experiment(store: Store, machine: MachineRecord, study_id: int, options: StudyOptions,
                               summary: MachineSummary, console: Console, say: Callable[[str], None]) -> list[int]:
    """Fig. 9: one sweep per data layout (BT-MZ, 1 rank, binding core), their rounds interleaved in a seeded order so
    load drift hits every layout alike. On fewer than MIN_NUMA NUMA domains every layout puts every page on the one
    domain: the study notes that and runs nothing. A missing binary or rejected arguments are notes too."""
    def note(text: str) -> list[int]:
        store.add_study_note(study_id, NOTE_PREFIX + text)
        say(f"[yellow]{NOTE_PREFIX}{text}[/yellow]")
        return []

    if summary.numa_nodes < MIN_NUMA:
        return note(needs_numa(summary.numa_nodes))
    spec = get_app(DATA_LAYOUT_APP)
    try:
        binary(spec.binary)
    except HympiFatal:
        return note(f"skipped, {spec.binary} is not built yet")
    threads = data_layout_threads(summary, options.quick)
    args = DATA_LAYOUT_QUICK_ARGS if options.quick else DATA_LAYOUT_FULL_ARGS
    # --repeat N is honoured; auto (the study's default) becomes the rounds a verdict against first touch needs.
    repeat = max(options.repeat, DATA_LAYOUT_QUICK_REPEAT if options.quick else DATA_LAYOUT_FULL_REPEAT) \
        if options.auto else options.repeat
    sweeps: list[tuple[SweepParams, Plan, int]] = []
    for layout in layouts():
        params = SweepParams(app=DATA_LAYOUT_APP, layouts=tuple((1, t) for t in threads), repeat=repeat,
                             app_args=(*args, OPTION, layout), timeout=options.timeout, min_time=options.min_time,
                             seed=options.seed, warmup=options.warmup)
        the_plan = plan(params, summary.pus)
        try:
            validate_layouts(params, the_plan.items)
        except (UsageError, HympiFatal) as exc:
            return note(f"skipped, {DATA_LAYOUT_APP} rejected '{' '.join(params.app_args)}': {exc}")
        sweep, resumed = open_sweep(store, machine, params, len(the_plan.items), options.resume, study_id)
        if resumed:  # its recorded seed keeps the order it started with
            params = SweepParams.from_dict(sweep.params)
            the_plan = plan(params, summary.pus)
        sweeps.append((params, the_plan, sweep.id))
    say(f"[bold]{DATA_LAYOUT}[/bold] (Jin et al. Fig. 9: {DATA_LAYOUT_APP} {' '.join(args)}, 1 rank, "
        f"{', '.join(layouts())}): sweeps {', '.join(str(i) for _, _, i in sweeps)}, threads "
        f"{', '.join(map(str, threads))}, {repeat} round(s) each")
    rounds = sorted({item.repeat for _, p, _ in sweeps for item in p.items})
    for round_no in rounds:
        order = np.random.default_rng([sweeps[0][0].seed, round_no, len(sweeps)]).permutation(len(sweeps))
        for k in order:
            params, the_plan, sweep_id = sweeps[int(k)]
            items = tuple(i for i in the_plan.items if i.repeat == round_no)
            run_sweep(store, store.sweep(sweep_id), params, items, console)
            if round_no != rounds[-1]:  # more rounds to come: not finished (a killed study resumes it)
                store.set_sweep_status(sweep_id, "running")
    return [sweep_id for _, _, sweep_id in sweeps]
