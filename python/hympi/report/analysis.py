"""Statistics per layout and the plain-language recommendation, computed from the stored runs.

Warm-up runs (repeat number 0) are kept in AppGroup.runs for the record but enter no statistic, and neither do
disturbed runs (other work on their PUs above the sweep's threshold, hympi.busy); every 'A vs B' sentence comes from
hympi.stats.compare (ratio of medians with a bootstrap confidence interval).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from hympi.launch.layout import layout_words
from hympi.params import AUTO, DEFAULT_CONFIDENCE, MIN_SEPARATE, REPEAT
from hympi.place.tree import parse_cpu_list
from hympi.result import run_placement_share, runs_rate_unit, shown_median, shown_spread
from hympi.stats.compare import (
    MIN_SAMPLES,
    VERDICT_NEEDS,
    Comparison,
    Refusal,
    Sample,
    compare,
    contenders,
    is_finite_positive,
    tie_break,
)
from hympi.stats.median import median_or_none
from hympi.store import WARMUP_REPEAT, Run
from hympi.store.db import DEFAULT_MEMBIND

LayoutKey = tuple[int, int, str, str]
"""(ranks, threads, bind, membind): what the report groups runs by."""


@dataclass(frozen=True)
class Layout:
    """A run's layout: ranks x threads under one binding policy and one memory policy (keyword: `membind`)."""

    ranks: int
    threads: int
    bind: str
    membind: str = field(default=DEFAULT_MEMBIND, kw_only=True)
    bound_pus: int | None = field(default=None, kw_only=True)
    """The PUs its ranks' threads were bound to, each (host, PU) once, in the run that saw fewest (bound_pus); None
    where no run recorded its binding."""

    @property
    def key(self) -> LayoutKey:
        """(ranks, threads, bind, membind)."""
        return (self.ranks, self.threads, self.bind, self.membind)

    @property
    def cores(self) -> int:
        """Cores (hardware threads) the layout asks for: ranks x threads."""
        return self.ranks * self.threads

    @property
    def cores_used(self) -> int:
        """Cores the layout could compute on: ranks x threads, or the PUs they were bound to where fewer. An
        oversubscribed 3x1 on 2 cores (ESyS-Particle's manager and 2 workers) uses 2, not 'all 3 cores'."""
        return min(self.cores, self.bound_pus) if self.bound_pus else self.cores

    @property
    def label(self) -> str:
        """'2x1' (ranks x threads)."""
        return f"{self.ranks}x{self.threads}"


@dataclass(frozen=True)
class LayoutStats(Layout):
    """Every measured run of one (ranks, threads, bind, membind) layout of one app configuration, summarised.

    `runs`, `ok` and every statistic leave the warm-up runs out; `warmups` counts them and `rates` holds the ok rates.
    `placement_median` is the median share of the reported arrays' pages on their intended NUMA nodes (None when no
    run reported its arrays). `disturbed` counts the measured runs that overlapped other work (in `runs` and `ok`,
    in no statistic), `disturbed_rates` are their rates and `disturbed_load` their median outside load in cores.
    """

    runs: int
    ok: int
    statuses: tuple[tuple[str, int], ...]
    rate_min: float | None
    rate_median: float | None
    rate_max: float | None
    time_median: float | None
    comm_median: float | None
    comp_median: float | None
    imbalance_median: float | None
    rss_per_process_mib: float | None
    rss_per_core_mib: float | None
    rss_per_node_mib: float | None
    rates: tuple[float, ...] = ()
    warmups: int = 0
    placement_median: float | None = None
    disturbed: int = 0
    disturbed_rates: tuple[float, ...] = ()
    disturbed_load: float | None = None
    rounds: tuple[tuple[int, int], ...] = ()  # the (sweep, round) of each rate, for comparisons round by round

    def describe(self) -> str:
        """'2 ranks x 1 thread, bind core' for sentences (', membind interleave' under another memory policy than
        the default)."""
        policy = "" if self.membind == DEFAULT_MEMBIND else f", membind {self.membind}"
        return f"{layout_words(self.ranks, self.threads)}, bind {self.bind}{policy}"

    def spread(self, rate_unit: str) -> tuple[float | None, float | None, float | None]:
        """Min, median and max of the layout's rates as people read them (hympi.result.shown_spread)."""
        return shown_spread(self.rates, rate_unit)

    def median_text(self, rate_unit: str) -> str:
        """The layout's median as people read it: '250 steps/s', '0.13 s'; '-' for none (hympi.result.shown_median)."""
        return shown_median(self.rates, rate_unit)


@dataclass(frozen=True)
class AppGroup:
    """The runs of one app configuration (app + its arguments) on one machine; for a program of the user's own,
    `subject` says what was run and measured (its path and file, figure of merit, check, output file, standard input
    and variables: hympi.program.Program.summary), "" for one of hympi's apps."""

    app: str
    app_args: tuple[str, ...]
    machine_id: int
    problem: str
    rate_unit: str
    runs: tuple[Run, ...]
    layouts: tuple[LayoutStats, ...]
    subject: str = ""

    @property
    def slug(self) -> str:
        """A file-name-safe identifier for the group's plots."""
        return file_slug(self.app, self.problem, self.machine_id, self.app_args, self.subject)


def file_slug(app: str, problem: str, machine_id: int, app_args: tuple[str, ...], subject: str = "") -> str:
    """A file-name-safe identifier of one app configuration on one machine: app and problem with every other
    character a dash, the machine, a digest of the arguments (and of a program's `subject`, when it has one)."""
    safe = "".join(c if c.isalnum() else "-" for c in f"{app}-{problem or 'x'}")
    text = "\0".join(app_args) + (f"\0\0{subject}" if subject else "")
    digest = hashlib.sha1(text.encode()).hexdigest()[:8]
    return f"{safe.strip('-')}-m{machine_id}-{digest}"


def bound_pus(run: Run) -> int | None:
    """How many PUs the threads of a run were bound to, each (host, PU) once, from its binding rows (an app's
    HYMPI_RESULT, the probe's for a program); None without rows or with one that names no PU it was bound to."""
    rows = run.record.get("binding") if run.record else None
    if not isinstance(rows, list) or not rows:
        return None
    pus: set[tuple[str, int]] = set()
    for row in rows:
        text = row.get("bound") if isinstance(row, dict) else None
        try:
            bound = parse_cpu_list(text) if isinstance(text, str) else frozenset[int]()
        except ValueError:  # not a PU list: the run says nothing countable about its binding
            return None
        if not bound:
            return None
        pus.update((str(row.get("host", "")), pu) for pu in bound)
    return len(pus)


def _values(runs: list[Run], name: str) -> list[float]:
    """Field `name` of the ok runs that have it."""
    return [v for v in (r.value(name) for r in runs if r.status == "ok") if v is not None]


def layout_stats(ranks: int, threads: int, bind: str, runs: list[Run], membind: str = DEFAULT_MEMBIND,
                 ) -> LayoutStats:
    """Min/median/max rate and medians of time, comm, comp, memory and page placement over the ok measured runs of
    one layout that no other work disturbed."""
    warmups = sum(1 for r in runs if r.repeat == WARMUP_REPEAT)
    measured = [r for r in runs if r.repeat != WARMUP_REPEAT]
    hit = [r for r in measured if r.disturbed]
    runs = [r for r in measured if not r.disturbed]
    rated = [(r, v) for r in runs if r.status == "ok" and (v := r.value("rate")) is not None and is_finite_positive(v)]
    rates = [v for _, v in rated]
    statuses: dict[str, int] = {}
    for run in measured:
        statuses[run.status] = statuses.get(run.status, 0) + 1
    per_core: list[float] = []
    bound: list[int] = []
    for run in (r for r in runs if r.status == "ok"):
        pus = bound_pus(run)  # read once: the layout's bound_pus and this run's memory per core
        if pus is not None:
            bound.append(pus)
        node = run.value("node_rss_mib")
        if node is not None and run.record is not None:
            nodes = run.record.get("nodes", 1) or 1
            per_core.append(node * nodes / min(ranks * threads, pus or ranks * threads))
    shares = [v for v in (run_placement_share(r) for r in runs if r.status == "ok") if v is not None]
    return LayoutStats(ranks, threads, bind, len(measured), statuses.get("ok", 0), tuple(sorted(statuses.items())),
                       min(rates) if rates else None, median_or_none(rates), max(rates) if rates else None,
                       median_or_none(_values(runs, "time_s")), median_or_none(_values(runs, "comm_s")),
                       median_or_none(_values(runs, "comp_s")), median_or_none(_values(runs, "imbalance")),
                       median_or_none(_values(runs, "max_rss_mib")), median_or_none(per_core),
                       median_or_none(_values(runs, "node_rss_mib")), tuple(rates), warmups, median_or_none(shares),
                       len(hit), tuple(v for v in _values(hit, "rate") if is_finite_positive(v)),
                       median_or_none([r.interference.outside_cores for r in hit if r.interference is not None]),
                       tuple((r.sweep_id, r.repeat) for r, _ in rated), membind=membind,
                       bound_pus=min(bound, default=None))


def group_runs(runs: list[Run], machine_of_sweep: dict[int, int],
               subject_of_sweep: Mapping[int, str] | None = None) -> list[AppGroup]:
    """Runs grouped by (machine, app, app arguments, MPI parameters, subject), each with its per-layout statistics,
    in first-seen order (runs under other MPI parameters are other measurements, never pooled into one layout).
    `subject_of_sweep` gives each sweep of a program of the user's own what it ran and measured (AppGroup.subject):
    sweeps of one program name and arguments that read another standard input, set other variables, measure another
    figure of merit or ran another file are other groups, never pooled into one layout's statistics."""
    subjects = subject_of_sweep or {}
    groups: dict[tuple[int, str, tuple[str, ...], tuple[tuple[str, str], ...], str], list[Run]] = {}
    for run in runs:
        groups.setdefault((machine_of_sweep.get(run.sweep_id, 0), run.app, run.app_args, run.mpi_params,
                           subjects.get(run.sweep_id, "")), []).append(run)
    out = []
    for (machine_id, app, app_args, _, subject), members in groups.items():
        by_layout: dict[LayoutKey, list[Run]] = {}
        for run in members:
            by_layout.setdefault((run.ranks, run.threads, run.bind, run.membind), []).append(run)
        # The default memory policy first among layouts of one binding, so a group of one policy keeps its order.
        layouts = tuple(layout_stats(r, t, b, rs, m) for (r, t, b, m), rs in
                        sorted(by_layout.items(), key=lambda kv: (kv[0][0] * kv[0][1], kv[0][1], kv[0][2],
                                                                  kv[0][3] != DEFAULT_MEMBIND, kv[0][3])))
        problems = [r.problem for r in members if r.problem]
        out.append(AppGroup(app, app_args, machine_id, problems[-1] if problems else "", runs_rate_unit(members),
                            tuple(members), layouts, subject))
    return out


def _sample(s: LayoutStats, label: str) -> Sample:
    """The comparison input of one layout: its ok rates and what the tie-break needs."""
    return Sample(label, s.rates, s.threads, s.cores_used, s.rss_per_node_mib, s.rounds)


@dataclass(frozen=True)
class Statement:
    """One 'A vs B' sentence of a recommendation: why the pair is stated (topics) and the verdict."""

    topics: tuple[str, ...]
    result: Comparison | Refusal

    @property
    def topic(self) -> str:
        """The first reason this pair is stated."""
        return self.topics[0]


@dataclass(frozen=True)
class Verdict:
    """The structured recommendation of one app group: the layout to use and every comparison that backs it.

    `recommended` is None when no layout has the MIN_SAMPLES ok runs a comparison needs. `contenders` are the
    layouts not separated from the fastest median (one: the best is separated from the runner-up). `withheld` says
    why there is no verdict, and what would give one, when other work disturbed so many runs of a layout that it
    cannot be judged or when the fastest median looks faster than another contender on too few runs to say so
    ("" else).
    """

    recommended: LayoutStats | None
    contenders: tuple[LayoutStats, ...]
    statements: tuple[Statement, ...]
    confidence: float
    withheld: str = ""


def labels(group: AppGroup) -> dict[LayoutStats, str]:
    """'2x1' per layout, or '2x1 core' when the group has several bindings; ' membind=interleave' follows under a
    memory policy other than the default."""
    binds = {s.bind for s in group.layouts}
    return {s: (s.label if len(binds) == 1 else f"{s.label} {s.bind}")
            + ("" if s.membind == DEFAULT_MEMBIND else f" membind={s.membind}") for s in group.layouts}


def pair(group: AppGroup, a: LayoutStats, b: LayoutStats, confidence: float = DEFAULT_CONFIDENCE,
         ) -> Comparison | Refusal:
    """The verdict on layouts a vs b of a group (ratio of medians, bootstrap CI; see hympi.stats.compare)."""
    names = labels(group)
    return compare(_sample(a, names[a]), _sample(b, names[b]), confidence)


def _counterpart(ref: LayoutStats, layouts: list[LayoutStats]) -> tuple[LayoutStats, str] | None:
    """The best-median layout of the other kind (hybrid vs pure MPI) on as many cores as `ref` (cores_used: an
    oversubscribed 3x1 bound to 2 cores is set against 1x2), and the kind."""
    same = [s for s in layouts if s.cores_used == ref.cores_used and s is not ref and s.rate_median is not None]
    kind = "hybrid" if ref.threads == 1 else "pure MPI"
    other = [s for s in same if (s.threads > 1) == (ref.threads == 1)]
    if not other:
        return None
    return max(other, key=lambda s: s.rate_median or 0.0), kind


def verdict(group: AppGroup, confidence: float = DEFAULT_CONFIDENCE) -> Verdict:
    """Which layout to use and the comparisons behind it; never ranks two layouts whose CI contains 1."""
    names = labels(group)
    disturbed = disturbed_reason(group)
    if disturbed:
        return Verdict(None, (), (), confidence, f"{disturbed}; {MEASURE_QUIETLY}")
    usable = [s for s in group.layouts if len(s.rates) >= MIN_SAMPLES]
    if not usable:
        return Verdict(None, (), (), confidence)
    samples = {names[s]: s for s in usable}
    top = [samples[c.label] for c in contenders([_sample(s, names[s]) for s in usable], confidence)]
    leads = _unconfirmed_leads(group, top, confidence)
    if leads:  # each lead is stated, so that the report's reasons say what stands behind it
        return Verdict(None, tuple(top), tuple(Statement(("runner-up",), c) for c in leads), confidence,
                       _unconfirmed_reason(group, leads))
    chosen = top[0]
    for other in top[1:]:  # among layouts the data cannot order, the tie-break (memory, threads, cores) decides
        winner = tie_break(_sample(chosen, names[chosen]), _sample(other, names[other]))[0]
        chosen = chosen if winner.label == names[chosen] else other
    statements: list[Statement] = []
    said: dict[frozenset[LayoutStats], int] = {}

    def state(topic: str, other: LayoutStats, ref: LayoutStats = chosen) -> None:
        key = frozenset((ref, other))
        if other is ref:
            return
        if key in said:  # the same pair for a second reason: one sentence that names both
            old = statements[said[key]]
            statements[said[key]] = Statement((*old.topics, topic), old.result)
            return
        said[key] = len(statements)
        statements.append(Statement((topic,), pair(group, ref, other, confidence)))

    ranked = sorted(usable, key=lambda s: s.rate_median or 0.0, reverse=True)
    if len(top) == 1 and len(ranked) > 1:
        state("runner-up", ranked[1])
    for other in top:  # every other contender, including the top median when the tie-break chose another
        state("indistinguishable", other)
    if ranked[-1] not in top:  # a contender is inside the noise of the best: not "the worst"
        state("worst", ranked[-1])
    found = _counterpart(chosen, usable)
    if found is not None:
        state(found[1], found[0])
    most = max(s.cores_used for s in usable)
    if chosen.cores_used < most:
        on_all = max((s for s in usable if s.cores_used == most), key=lambda s: s.rate_median or 0.0)
        state("all cores", on_all)
        found = _counterpart(on_all, usable)
        if found is not None:
            state(f"{found[1]} on all cores", found[0], on_all)
    for s in group.layouts:
        if s.ok > 0 and len(s.rates) < MIN_SAMPLES:
            state("too few runs", s)
    return Verdict(chosen, tuple(top), tuple(statements), confidence)


def _unconfirmed_leads(group: AppGroup, top: list[LayoutStats], confidence: float) -> list[Comparison]:
    """The fastest median against each other contender it leads by an interval that excludes 1 on fewer than
    MIN_SEPARATE runs a side, faster median first: the tie-break is for layouts the data cannot order, and would
    pick the layout these runs say is slower."""
    leads = [result for other in top[1:]
             if isinstance(result := pair(group, top[0], other, confidence), Comparison)
             and result.fewest < MIN_SEPARATE and (result.low > 1.0 or result.high < 1.0)]
    # An unseparated comparison names the tie-break's choice first: turn each round, faster median first.
    return [c if c.ratio >= 1.0 else c.turned() for c in leads]


# What a verdict that other work kept from being given asks for.
MEASURE_QUIETLY = "no verdict (measure again on a quiet machine, or with --repeat auto)"


def _unconfirmed_reason(group: AppGroup, leads: list[Comparison]) -> str:
    """'2x1 looks 1.81x 1x1 (95 % CI 1.52-2.06) on 3 runs: too few to say so (...); no verdict (...)'; when other
    work disturbed runs of those layouts, they are named and a quiet machine is asked for: more runs of the same
    --repeat, which a sweep with --repeat 4 had, were no answer."""
    said = "; ".join(f"{c.better} looks {c.ratio:.2f}x {c.worse} ({c.ci_text()}) on {c.fewest} runs" for c in leads)
    stated = {name for c in leads for name in (c.better, c.worse)}
    disturbed = left_out(group, lambda name: name in stated)
    if disturbed:
        return f"{said}: too few to say so ({VERDICT_NEEDS}; {disturbed}); {MEASURE_QUIETLY}"
    return (f"{said}: too few to say so ({VERDICT_NEEDS}); no verdict (measure each "
            f"layout {MIN_SEPARATE} or more times: {REPEAT.flag} {MIN_SEPARATE} or {REPEAT.flag} {AUTO})")


def _disturbed_part(s: LayoutStats, name: str) -> str:
    """'6 of 10 runs of 1x2 overlapped other work using 0.9 cores'."""
    return f"{s.disturbed} of {s.runs} runs of {name} overlapped other work using {s.disturbed_load or 0.0:.1f} cores"


def left_out(group: AppGroup, named: Callable[[str], bool] = lambda name: True) -> str:
    """The disturbed runs of each layout whose label `named` accepts and whose ok runs other work kept out of the
    verdicts, as _disturbed_part says it; "" when there are none (a failed run beside other work costs no rate)."""
    return "; ".join(_disturbed_part(s, name) for s, name in labels(group).items()
                     if s.disturbed_rates and named(name))


def disturbed_reason(group: AppGroup) -> str:
    """Why no verdict can be given when other work disturbed a layout's runs until fewer than MIN_SAMPLES clean ok
    runs are left ('6 of 10 runs of 1x2 overlapped other work using 0.9 cores'), "" when none did: judging the
    others without it could recommend a layout that the disturbed one beats."""
    names = labels(group)
    return "; ".join(_disturbed_part(s, names[s]) for s in group.layouts
                     if s.disturbed and len(s.rates) < MIN_SAMPLES <= len(s.rates) + len(s.disturbed_rates))


def _sentence(statement: Statement, names: dict[str, LayoutStats], most: int, skip_first: bool = False,
              chosen: str = "") -> str:
    """One statement as text: why the pair is compared, then the verdict (skip_first: the verdict is said already)."""
    result = statement.result
    # A tie-break's "choose X" only where X is the recommended layout: in a pair stated for another reason
    # (e.g. against the worst), the noise can make it pick a layout the recommendation did not choose.
    choose = not isinstance(result, Comparison) or not chosen or result.better == chosen
    text = "" if skip_first else (result.sentence(choose) if isinstance(result, Comparison) else result.sentence())
    notes = []
    for topic in statement.topics:
        if topic == "worst":
            notes.append("the worst layout")
        elif topic in ("hybrid", "pure MPI"):
            notes.append(f"the best {topic} layout on as many cores")
        elif topic == "all cores":
            note = f"the best median on all {most} cores"
            if isinstance(result, Comparison) and result.separated and names[result.better].cores_used < most:
                note += ": more cores do not pay off for this problem on this machine"
            notes.append(note)
        elif topic.endswith("on all cores"):
            notes.append(f"on all {most} cores, the {topic.split(' on ')[0]} layout")
    if not notes:
        return text
    if len(statement.topics) == 1 and statement.topic.endswith("on all cores"):
        return f"on all {most} cores, against the best {statement.topic.split(' on ')[0]} layout: {text}"
    other = [name for name in (getattr(result, "worse", None), getattr(result, "better", None),
                               getattr(result, "second", None)) if name]
    if skip_first:
        return f"{other[0] if other else 'it'} is also {' and '.join(notes)}"
    # One layout can be several of these at once (the worst and the best hybrid one on as many cores).
    also = f", which is also {' and '.join(notes[1:])}" if len(notes) > 1 else ""
    return f"against {notes[0]}{also}: {text}"


def group_titles(groups: Sequence[AppGroup]) -> list[str]:
    """Each group's name in a summary: its app and problem, with its subject (a program's path and arguments) where
    another group on the same machine has the same app and problem."""
    titles = Counter((g.machine_id, g.app, g.problem) for g in groups)
    # A program run without arguments has no problem ("").
    return [" ".join(part for part in (g.app, g.problem) if part)
            + (f" ({g.subject})" if titles[(g.machine_id, g.app, g.problem)] > 1 and g.subject else "")
            for g in groups]


def recommend(group: AppGroup, confidence: float = DEFAULT_CONFIDENCE) -> str:
    """A plain-language recommendation: the layout to use and every 'A vs B' verdict with its confidence interval."""
    named = labels(group)
    failed = [s for s in group.layouts if s.ok < s.runs]
    failures = ""
    if failed:
        parts = [f"{named[s]}: {', '.join(f'{n} {st}' for st, n in s.statuses if st != 'ok')}" for s in failed]
        failures = f" Not ok: {'; '.join(parts)}."
    result = verdict(group, confidence)
    if result.withheld:  # before the counts below, which leave the disturbed runs out
        return f"{result.withheld}.{failures}"
    with_rates = [s for s in group.layouts if s.rate_median is not None]
    # Ok runs beside other work are in no rate: said, or "no verified result" would be said of verified runs.
    disturbed = left_out(group)
    if not with_rates:
        if disturbed:
            return f"{disturbed}; {MEASURE_QUIETLY}.{failures}"
        return f"No layout of {group.app} produced a verified result, so there is nothing to recommend.{failures}"
    chosen = result.recommended
    if chosen is None:
        aside = f" Left out: {disturbed}." if disturbed else ""
        if len(with_rates) == 1:
            only = with_rates[0]
            return (f"only {only.describe()} ran successfully ({only.median_text(group.rate_unit)}); nothing to "
                    f"compare it with.{aside}{failures}")
        counts = ", ".join(f"{named[s]}: {len(s.rates)}" for s in with_rates)
        return (f"No layout has the {MIN_SAMPLES} ok runs a comparison needs ({counts} ok); repeat the sweep with "
                f"--repeat auto (or 4 or more) before choosing.{aside}{failures}")
    names = {name: s for s, name in labels(group).items()}
    most = max(s.cores_used for s in group.layouts if len(s.rates) >= MIN_SAMPLES)
    what = f"{chosen.median_text(group.rate_unit)} median of {len(chosen.rates)}"
    statements = list(result.statements)
    if len(result.contenders) == 1 and statements and statements[0].topic == "runner-up" \
            and isinstance(statements[0].result, Comparison):
        first_statement = statements.pop(0)
        first = first_statement.result
        assert isinstance(first, Comparison)
        head = (f"best: {chosen.describe()} ({what}). {first.better} is fastest ({first.ratio:.2f}x {first.worse}, "
                f"{first.ci_text()})")
        if len(first_statement.topics) > 1:
            head += ". " + _sentence(first_statement, names, most, skip_first=True)
    elif len(result.contenders) == 1:
        head = f"best: {chosen.describe()} ({what}), the only layout with {MIN_SAMPLES} or more ok runs"
    else:
        head = f"no layout is separated from the rest at the top; recommended: {chosen.describe()} ({what})"
    chosen_name = next(name for name, s in names.items() if s is chosen)
    sentences = [head] + [_sentence(st, names, most, chosen=chosen_name) for st in statements]
    return ". ".join(t[:1].upper() + t[1:] for t in sentences) + "." + failures


MEMORY_LEVEL = "memory"


def stream_level(group: AppGroup) -> str:
    """The level a STREAM group's arrays were sized for (stream --level): what its runs recorded, memory when none
    recorded one (arrays given by --elements, records older than --level)."""
    levels = [str(r.record["stream_level"]) for r in group.runs if r.record and r.record.get("stream_level")]
    return levels[-1] if levels else MEMORY_LEVEL


def best_stream_bandwidth(groups: list[AppGroup]) -> tuple[float, str, str] | None:
    """The highest median STREAM triad rate from memory and the layout that reached it, if STREAM ran (the cache
    levels' rates are no memory bandwidth)."""
    best: tuple[float, str, str] | None = None
    for group in groups:
        if group.app != "stream" or stream_level(group) != MEMORY_LEVEL:
            continue
        for s in group.layouts:
            if s.rate_median is not None and (best is None or s.rate_median > best[0]):
                best = (s.rate_median, group.rate_unit, s.describe())
    return best
