"""Why one layout beats another: per layout, the timed region split into computation, communication (and
overlap), load imbalance and unaccounted time, the kernel's share of the STREAM bandwidth of the same layout at the
memory level its working set fits, and thread and parallel efficiency; and short sentences naming the terms that
make the difference between two layouts.

Everything comes from the ok, timed runs of an AppGroup (warm-up runs, repeat 0, are ignored), medians over repeats.
Layouts may run different numbers of iterations (apps scale them to a minimum kernel time), so comparisons between
layouts are made for the same amount of work: a layout's time per unit of work is 1 / rate, and each term is its
share of time_s times that.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from hympi.contract import contract
from hympi.params import DEFAULT_CONFIDENCE
from hympi.probe import Waiting, recorded_waiting_rank, recorded_working_threads
from hympi.report.analysis import (
    MEMORY_LEVEL,
    AppGroup,
    Layout,
    LayoutKey,
    group_titles,
    labels,
    recommend,
    stream_level,
    verdict,
)
from hympi.stats.compare import CI_CONTAINS_ONE, Comparison
from hympi.stats.median import median_or_none
from hympi.store import WARMUP_REPEAT, Run

MEMORY_BOUND = 0.8
"""A layout whose kernel moves at least this share of the STREAM triad bandwidth of its own layout at the level its
working set fits, and at most all of it, is bound by that level's bandwidth (memory-bound when the level is memory);
above 1 the level or the kernel's bytes-moved count is wrong."""

STREAM_APP = "stream"

CACHE_LEVELS = tuple(level for level in contract().enums["StreamLevel"] if level != MEMORY_LEVEL)
"""stream --level's cache levels, nearest first: a kernel's bound is the nearest one its working set fits."""

PHASE_SLACK = 0.02
"""comp_s and comm_s are averages over ranks and time_s the maximum, so neither can exceed time_s beyond timer noise;
one that does comes from phases that cover more than the timed region (records of older app versions)."""



def timed_ok(runs: Iterable[Run]) -> list[Run]:
    """The ok runs that count: warm-up runs (repeat 0) are discarded."""
    return [r for r in runs if r.status == "ok" and r.repeat != WARMUP_REPEAT]


def _by_layout(runs: Iterable[Run]) -> dict[LayoutKey, list[Run]]:
    """The timed ok runs keyed by (ranks, threads, bind, membind)."""
    out: dict[LayoutKey, list[Run]] = {}
    for run in timed_ok(runs):
        out.setdefault((run.ranks, run.threads, run.bind, run.membind), []).append(run)
    return out


def _phases(run: Run) -> dict[str, object]:
    """The run's phase table ({} when absent or malformed)."""
    phases = (run.record or {}).get("phases")
    return phases if isinstance(phases, dict) else {}


def _top_comm_phase(runs: list[Run]) -> str | None:
    """The communication phase with the most time summed over `runs`, None when no run recorded one."""
    totals: dict[str, float] = {}
    for run in runs:
        for name, phase in _phases(run).items():
            if isinstance(phase, dict) and phase.get("kind") == "communication":
                avg = phase.get("avg_s")
                if isinstance(avg, (int, float)):
                    totals[name] = totals.get(name, 0.0) + float(avg)
    best = max(totals.items(), key=lambda kv: kv[1], default=None)
    return best[0] if best is not None and best[1] > 0 else None


@dataclass(frozen=True)
class Breakdown(Layout):
    """One layout's timed region, explained: medians over its ok timed runs (None where nothing was recorded)."""

    runs: int
    rate: float | None
    rate_min: float | None
    rate_max: float | None
    time_s: float | None
    comp_s: float | None
    comm_s: float | None
    imbalance: float | None
    has_phases: bool
    top_comm_phase: str | None
    kernel_gbs: float | None
    stream_gbs: float | None
    thread_efficiency: float | None
    parallel_efficiency: float | None
    working_set_bytes: float | None = field(default=None, kw_only=True)
    """Bytes the kernel sweeps per rank (the app's record), None when it recorded none."""
    bound_level: str | None = field(default=None, kw_only=True)
    """The level whose STREAM rate stream_gbs is (l1, l2, l3 or memory), None without STREAM."""
    levels_measured: bool = field(default=False, kw_only=True)
    """Whether STREAM ran at cache levels too, so bound_level was chosen by the working set; else memory's."""
    working_threads: int | None = field(default=None, kw_only=True)
    """The fewest threads per rank the probe saw compute in any run (hympi.probe.working_threads), None for runs
    without the probe (hympi's apps use every thread they are given)."""

    waiting: Waiting | None = field(default=None, kw_only=True)
    """The rank that computed least (hympi.probe.waiting_rank), its shares the medians over the runs the probe saw;
    None unless every run names the same rank."""

    @property
    def working_per_rank(self) -> int:
        """The threads per rank that computed: the layout's, or fewer where the probe saw some idle."""
        return min(self.threads, self.working_threads or self.threads)

    @property
    def computing_cores(self) -> int:
        """The cores the layout computed on: ranks x the threads that worked, at most the cores it was bound to
        (cores_used)."""
        return min(self.ranks * self.working_per_rank, self.cores_used)

    @property
    def consistent(self) -> bool:
        """False when computation or communication alone exceeds the timed region: the phases then cover more
        than the region the rate and time_s cover, and the split would be wrong."""
        if self.time_s is None or self.comp_s is None or self.comm_s is None:
            return True
        return max(self.comp_s, self.comm_s) <= self.time_s * (1.0 + PHASE_SLACK)

    @property
    def _timed(self) -> bool:
        """True when the phases and the region's time are both known and agree, so the split adds up."""
        return (self.has_phases and self.time_s is not None and self.comp_s is not None and self.comm_s is not None
                and self.consistent)

    @property
    def overlap_s(self) -> float | None:
        """Communication hidden behind computation: comp + comm - time when positive, else 0."""
        if not self._timed:
            return None
        assert self.time_s is not None and self.comp_s is not None and self.comm_s is not None
        return max(0.0, self.comp_s + self.comm_s - self.time_s)

    @property
    def other_s(self) -> float | None:
        """Time of the region outside the recorded phases: time - comp - comm when positive, else 0."""
        if not self._timed:
            return None
        assert self.time_s is not None and self.comp_s is not None and self.comm_s is not None
        return max(0.0, self.time_s - self.comp_s - self.comm_s)

    @property
    def imbalance_loss_s(self) -> float | None:
        """Time the average rank waits for the slowest one's computation: comp_s x (imbalance - 1)."""
        if not self.has_phases or self.comp_s is None or self.imbalance is None:
            return None
        return max(0.0, self.comp_s * (self.imbalance - 1.0))

    @property
    def working_set_per_thread(self) -> float | None:
        """working_set_bytes over the threads of a rank: what must fit one thread's share of a cache."""
        return self.working_set_bytes / self.threads if self.working_set_bytes is not None else None

    @property
    def bandwidth_share(self) -> float | None:
        """kernel GB/s over the STREAM triad GB/s of the same layout at bound_level; None when either was not
        measured."""
        if self.kernel_gbs is None or not self.stream_gbs:
            return None
        return self.kernel_gbs / self.stream_gbs

    def terms(self) -> dict[str, float] | None:
        """The region as shares of time_s that add up to 1: computation, imbalance, communication, other.

        Waiting for the slowest rank happens inside the others' communication calls (or at the end of the region),
        so the imbalance loss is taken out of the exposed communication first, then out of the unaccounted time.
        None when the layout recorded no phases or no time.
        """
        if not self._timed or not self.time_s:
            return None
        assert self.comp_s is not None and self.comm_s is not None
        overlap, other, loss = self.overlap_s or 0.0, self.other_s or 0.0, self.imbalance_loss_s or 0.0
        exposed = max(0.0, self.comm_s - overlap)
        comp = min(self.comp_s, self.time_s)
        from_comm = min(loss, exposed)
        from_other = min(loss - from_comm, other)
        t = self.time_s
        return {"computation": comp / t, "imbalance": (from_comm + from_other) / t,
                "communication": (exposed - from_comm) / t, "other": (other - from_other) / t}


def _efficiency(rate: float | None, ref: float | None, factor: int) -> float | None:
    """rate / (factor x ref), None when a rate is missing."""
    return rate / (factor * ref) if rate is not None and ref else None


def _rate_of(rates: dict[LayoutKey, float], ranks: int, threads: int, bind: str, membind: str) -> float | None:
    """The median rate of (ranks, threads) with this binding and memory policy, else with this binding under any
    memory policy, else the best of that split over the bindings."""
    if (ranks, threads, bind, membind) in rates:
        return rates[(ranks, threads, bind, membind)]
    for same_bind in (True, False):
        others = [v for (r, t, b, _), v in rates.items() if (r, t) == (ranks, threads) and (b == bind or not same_bind)]
        if others:
            return max(others)
    return None


def stream_rates(stream: AppGroup | None) -> dict[LayoutKey, float]:
    """Median STREAM triad rate (GB/s) per layout of a STREAM group ({} without one)."""
    if stream is None:
        return {}
    return {s.key: s.rate_median for s in stream.layouts if s.rate_median is not None}


@dataclass(frozen=True)
class CacheStream:
    """STREAM at one cache level (stream --level): its triad rates per layout and the level's bytes per PU."""

    level: str
    bytes_per_pu: float
    rates: Mapping[LayoutKey, float]


@dataclass(frozen=True)
class StreamBounds:
    """The STREAM measurements of one machine: from memory (the group with most timed ok runs, None if it did not
    run) and at the cache levels that ran, nearest first."""

    memory: AppGroup | None
    caches: tuple[CacheStream, ...] = ()

    def bound(self, layout: Layout, working_set_per_thread: float | None) -> tuple[float | None, str | None]:
        """The STREAM rate (GB/s) `layout` is measured against, and its level: the nearest measured cache level
        whose bytes per PU hold the working set of one thread, else memory. (None, None) when neither ran."""
        if working_set_per_thread is not None:
            for cache in self.caches:
                # Each thread streams its own cache-sized arrays: any split of the same cores has the same bound
                # (hympi study runs one per core count).
                rate = _rate_of(dict(cache.rates), layout.ranks, layout.threads, layout.bind, layout.membind) or \
                    max((v for (r, t, _, _), v in cache.rates.items() if r * t == layout.cores), default=None)
                if working_set_per_thread <= cache.bytes_per_pu and rate is not None:
                    return rate, cache.level
        rate = _rate_of(stream_rates(self.memory), layout.ranks, layout.threads, layout.bind, layout.membind)
        return (rate, MEMORY_LEVEL) if rate is not None else (None, None)


def _cache_stream(group: AppGroup) -> CacheStream | None:
    """The CacheStream of a STREAM group sized for a cache level, None for memory or without bytes per PU."""
    sizes = [v for v in (r.value("cache_bytes_per_pu") for r in timed_ok(group.runs)) if v]
    level = stream_level(group)
    if level == MEMORY_LEVEL or not sizes:
        return None
    return CacheStream(level, statistics.median(sizes), stream_rates(group))


def explain(group: AppGroup, stream: StreamBounds | None = None) -> tuple[Breakdown, ...]:
    """One Breakdown per layout of `group`, in the group's order; `stream` is the STREAM of the same machine
    (pick_stream).

    Layouts without an ok timed run get a Breakdown whose measures are all None. Never raises on missing fields.
    """
    # The rate and phase medians are the group's LayoutStats (same ok, non-warm-up runs); the runs themselves only
    # for what LayoutStats does not keep: whether phases were recorded, the main communication phase, kernel GB/s.
    by_layout = _by_layout(group.runs)
    rates = {s.key: s.rate_median for s in group.layouts if s.rate_median is not None}
    if group.app == STREAM_APP:
        stream = None  # STREAM against itself would always say 1.00, against another level nothing useful
    out = []
    for s in group.layouts:
        runs = by_layout.get(s.key, [])
        comp, comm = s.comp_median, s.comm_median
        has_phases = any(_phases(r) for r in runs) or bool((comp or 0.0) + (comm or 0.0) > 0)
        one_thread = _rate_of(rates, s.ranks, 1, s.bind, s.membind)
        serial = _rate_of(rates, 1, 1, s.bind, s.membind)
        working_set = median_or_none(r.value("working_set_bytes") for r in runs)
        working = [w for w in (recorded_working_threads(r.record) for r in runs) if w is not None]
        waits = [w for w in (recorded_waiting_rank(r.record) for r in runs) if w is not None]
        bound, level = (stream.bound(s, working_set / s.threads if working_set is not None else None)
                        if stream is not None else (None, None))
        out.append(Breakdown(
            ranks=s.ranks, threads=s.threads, bind=s.bind, runs=s.ok, rate=s.rate_median, rate_min=s.rate_min,
            rate_max=s.rate_max, time_s=s.time_median, comp_s=comp if has_phases else None,
            comm_s=comm if has_phases else None, imbalance=s.imbalance_median if has_phases else None,
            has_phases=has_phases, top_comm_phase=_top_comm_phase(runs),
            kernel_gbs=median_or_none(r.value("kernel_gbs") for r in runs),
            stream_gbs=bound,
            thread_efficiency=_efficiency(s.rate_median, one_thread, s.threads) if s.threads > 1 else None,
            parallel_efficiency=_efficiency(s.rate_median, serial, s.cores_used) if s.cores_used > 1 else None,
            membind=s.membind, working_set_bytes=working_set, bound_level=level,
            levels_measured=bool(stream and stream.caches), working_threads=min(working, default=None),
            bound_pus=s.bound_pus, waiting=_waiting(waits)))
    return tuple(out)


def _waiting(waits: list[Waiting]) -> Waiting | None:
    """Breakdown.waiting of a layout's runs: their medians when every run names the same rank, else None."""
    if not waits or len({w.rank for w in waits}) > 1:
        return None
    return Waiting(waits[0].rank, statistics.median(w.waiting for w in waits),
                   statistics.median(w.in_mpi for w in waits), statistics.median(w.others for w in waits))


def pick_stream(group: AppGroup, groups: Iterable[AppGroup]) -> StreamBounds | None:
    """The STREAM measured on `group`'s machine: from memory (the group with most timed ok runs) and at each cache
    level that ran (likewise); None if STREAM did not run there."""
    mine = [g for g in groups if g.app == STREAM_APP and g.machine_id == group.machine_id]
    if not mine:
        return None
    most = {level: max((g for g in mine if stream_level(g) == level), key=lambda g: len(timed_ok(g.runs)),
                       default=None) for level in (*CACHE_LEVELS, MEMORY_LEVEL)}
    caches = (_cache_stream(g) for g in (most[level] for level in CACHE_LEVELS) if g is not None)
    return StreamBounds(most[MEMORY_LEVEL], tuple(c for c in caches if c is not None))


def ranked(breakdowns: Iterable[Breakdown]) -> list[Breakdown]:
    """The layouts with a rate, fastest (highest median rate) first."""
    return sorted((b for b in breakdowns if b.rate is not None), key=lambda b: b.rate or 0.0, reverse=True)


def _pct(share: float) -> str:
    """0.2213 -> '22 %' (one decimal below 10 %)."""
    value = 100.0 * share
    return f"{value:.1f} %" if abs(value) < 9.95 else f"{value:.0f} %"


def _plural(n: int, word: str) -> str:
    """'1 thread', '2 threads'."""
    return f"{n} {word}{'' if n == 1 else 's'}"


def _name(b: Breakdown, other: Breakdown) -> str:
    """The layout's label, with its binding and memory policy where the two layouts differ in them."""
    differ = [f"bind {b.bind}"] if b.bind != other.bind else []
    differ += [f"membind {b.membind}"] if b.membind != other.membind else []
    return f"{b.label} ({', '.join(differ)})" if differ else b.label


def _sentence(text: str) -> str:
    """`text` with its first letter capitalised and a full stop (labels such as '1x2' start with a digit)."""
    return f"{text[:1].upper()}{text[1:]}."


def _causes(better: Breakdown, worse: Breakdown, b: str, w: str) -> dict[str, Callable[[str], str]]:
    """Per term, the plain sentence saying how the slower layout `worse` spends more time on it than `better`,
    given that share of its time ('45 %')."""

    def computation(share: str) -> str:
        idle = worse.working_per_rank < worse.threads
        eff = (f" at a thread efficiency of {worse.thread_efficiency:.2f}"
               if worse.threads > 1 and worse.thread_efficiency is not None and not idle else "")
        if idle:  # the probe saw threads that did nothing: the layout's cores are not what it computed on
            return (f"{w} computes on {worse.computing_cores} of its {worse.cores_used} cores (the probe saw "
                    f"{worse.working_per_rank} of the {_plural(worse.threads, 'thread')} per rank work), "
                    f"{b} on {better.computing_cores}: {share} of its time")
        if worse.computing_cores < better.computing_cores:
            return (f"{w} computes on {worse.computing_cores} of the {better.computing_cores} cores {b} uses{eff}: "
                    f"{share} of its time")
        if worse.computing_cores > better.computing_cores:
            return (f"{w} computes slower on {_plural(worse.computing_cores, 'core')} than {b} on "
                    f"{better.computing_cores}{eff}: {share} of its time")
        if worse.threads != better.threads:
            return (f"{w} computes slower with {_plural(worse.threads, 'thread')} per rank{eff}: {share} of its "
                    "time")
        return f"{w} computes longer{eff}: {share} of its time"

    def communication(share: str) -> str:
        mostly = f", mostly in {worse.top_comm_phase}," if worse.top_comm_phase else ""
        return f"{w} communicates more{mostly} than {b}: {share} of its time"

    def imbalance(share: str) -> str:
        if worse.imbalance is not None and worse.imbalance > 1.0:
            return (f"{w}'s slowest rank computes {worse.imbalance:.2f}x the average and the others wait for it: "
                    f"{share} of its time")
        return f"{w}'s ranks wait for each other more: {share} of its time"

    def other(share: str) -> str:
        return f"{w} spends more time outside the recorded phases (unaccounted): {share} of its time"

    return {"computation": computation, "communication": communication, "imbalance": imbalance, "other": other}


_SAVED = {"computation": "computation", "communication": "communication", "imbalance": "waiting for the slowest rank",
          "other": "time outside the recorded phases"}
"""What the slower layout saves on, named after a 'less on'."""


def _where(level: str | None) -> str:
    """'from memory', 'in L2': where a level's STREAM ran."""
    return "from memory" if level in (None, MEMORY_LEVEL) else f"in {str(level).upper()}"


def _bound_by(level: str | None) -> str:
    """'memory-bound', 'L2-bound'."""
    return "memory-bound" if level in (None, MEMORY_LEVEL) else f"{str(level).upper()}-bound"


def _size(n: float) -> str:
    """Bytes as '48 KiB' or '3.2 MiB'."""
    return f"{n / 1024:.3g} KiB" if n < 2**20 else f"{n / 2**20:.3g} MiB"


def _beyond_stream(x: Breakdown) -> str:
    """Why a kernel can move more than the STREAM of its level: what is off, as far as the measurements tell."""
    if not x.levels_measured:
        return ("its data come at least partly from cache or its bytes-moved count is too high, so memory "
                "bandwidth does not bound it (the cache levels were not measured: hympi study measures them)")
    if x.working_set_per_thread is None:
        return ("it recorded no working set, so the level its data come from is unknown, or its bytes-moved count "
                "is too high")
    return (f"more than that level delivers to a working set of {_size(x.working_set_per_thread)} per thread, so "
            "its bytes-moved count is too high or its data sit in a nearer level than that working set fits")


def _bandwidth_note(better: Breakdown, worse: Breakdown, b: str, w: str) -> str:
    """What bounds the two kernels, from their share of the STREAM of the level their working set fits; '' when
    STREAM or kernel GB/s is missing. Never calls a kernel bound by a level it moves more than STREAM of."""
    sb, sw = better.bandwidth_share, worse.bandwidth_share
    if sb is None or sw is None:
        return ""
    above = [(name, x, share) for name, x, share in ((b, better, sb), (w, worse, sw)) if share > 1.0]
    if above:
        said = " and ".join(f"{name} {share:.2f} of STREAM {_where(x.bound_level)}" for name, x, share in above)
        return f"bandwidth share above 1 ({said} on the same layout): {_beyond_stream(above[0][1])}"
    unmeasured = "" if better.levels_measured else "; cache levels not measured"
    if sb >= MEMORY_BOUND and sw >= MEMORY_BOUND:
        same = better.bound_level == worse.bound_level
        rates = (f"STREAM {_where(better.bound_level)} reaches {better.stream_gbs:.3g} GB/s with {b} and "
                 f"{'' if same else _where(worse.bound_level) + ' '}{worse.stream_gbs:.3g} GB/s with {w}")
        if same:
            return (f"both are {_bound_by(better.bound_level)} (bandwidth share {sb:.2f} and {sw:.2f} of STREAM "
                    f"{_where(better.bound_level)} on their own layout{unmeasured}), so their speed follows the "
                    f"bandwidth each layout gets: {rates}")
        return (f"{b} is {_bound_by(better.bound_level)} and {w} {_bound_by(worse.bound_level)} (bandwidth share "
                f"{sb:.2f} and {sw:.2f} on their own layout): {rates}")
    return (f"bandwidth share of STREAM on their own layout: {b} {sb:.2f} {_where(better.bound_level)}, {w} "
            f"{sw:.2f} {_where(worse.bound_level)}{unmeasured}")


def _why_not_split(better: Breakdown, worse: Breakdown) -> str:
    """Why the two layouts' time cannot be split into terms (phases missing, beyond the region, no time_s)."""
    mixed = [x for x in (better, worse) if not x.consistent]
    silent = [x.label for x in (better, worse) if not x.has_phases]
    if mixed:
        x = mixed[0]
        return (f"the phases of {x.label} (computation {x.comp_s:.3g} s, communication {x.comm_s:.3g} s) exceed "
                f"its timed region ({x.time_s:.3g} s): they cover more than the rate does")
    if silent:
        return ("neither layout recorded computation and communication phases" if len(silent) == 2 else
                f"{silent[0]} recorded no computation and communication phases")
    return "no timed region (time_s) was recorded"


# Why two layouts judged by their repeats alone (no statistics) are not separated.
REPEATS_OVERLAP = "their repeats overlap"


def reasons(better: Breakdown, worse: Breakdown, separated: bool | None = None, noise: str = "") -> tuple[str, ...]:
    """Why one of two layouts is faster, in short sentences: a lead (which is faster and by how much, or that the
    two are within noise), then one sentence per term (computation, communication, imbalance, unaccounted) that
    costs the slower layout time, largest share of its time first, one for a term it saves on, how much the faster
    one communicates, and the bandwidth. Says so when the data cannot tell.

    `separated` says whether the statistics separated the two layouts, and `noise` why not when they did not
    (Comparison.noise_text); None = judge by the repeats' min-max overlap. The faster layout is explained whichever
    order the two come in.
    """
    if better.rate is None or worse.rate is None:
        missing = better if better.rate is None else worse
        return (f"{missing.label} has no verified timed run, so there is nothing to explain.",)
    if worse.rate > better.rate:
        better, worse = worse, better
    b, w = _name(better, worse), _name(worse, better)
    assert better.rate is not None and worse.rate is not None
    if worse.rate == better.rate:
        return (f"{b} and {w} ran at the same median rate: there is no difference to explain.",)
    t_b, t_w = 1.0 / better.rate, 1.0 / worse.rate  # time per unit of work
    noise = noise or CI_CONTAINS_ONE
    if separated is None:
        noise = REPEATS_OVERLAP
        separated = not (better.rate_min is not None and worse.rate_max is not None
                         and worse.rate_max >= better.rate_min)
    needs = f"{w} needs {t_w / t_b:.2f}x {b}'s time for the same work"
    # Too few runs is no evidence of noise: two runs a side 2x apart were said to be 'within run-to-run noise'.
    unseparated = "are within run-to-run noise of each other" if noise in (CI_CONTAINS_ONE, REPEATS_OVERLAP) else \
        "cannot be told apart yet"
    lead = (f"{b} is faster: {needs}." if separated else
            f"{b} and {w} {unseparated}: {noise}. What follows only describes the difference of their medians: "
            f"{needs}.")
    out = [lead]
    bandwidth = _bandwidth_note(better, worse, b, w)
    tb, tw = better.terms(), worse.terms()
    if tb is None or tw is None:
        out.append(_sentence(f"{_why_not_split(better, worse)}, so the runs cannot say where the time goes"))
        return (*out, _sentence(bandwidth)) if bandwidth else tuple(out)
    delta = {k: (tw[k] * t_w - tb[k] * t_b) / t_w for k in tw}  # shares of the slower layout's time
    order = sorted(delta, key=lambda k: delta[k], reverse=True)
    causes = _causes(better, worse, b, w)
    top = delta[order[0]]
    # The largest term always; another one when it is at least a quarter of it and over 1 % of the time.
    out += [_sentence(causes[k](_pct(delta[k]))) for k in order
            if k == order[0] or (delta[k] > 0.01 and delta[k] >= 0.25 * top)]
    saving = order[-1]
    if delta[saving] < 0 and -delta[saving] >= 0.25 * top:
        out.append(f"{w} spends {_pct(-delta[saving])} less of its time on {_SAVED[saving]} than {b}, not enough to "
                   "make up for it.")
    comm_share = (better.comm_s or 0.0) / better.time_s if better.time_s else 0.0
    if comm_share >= 0.0005:  # a layout that communicates nothing (one rank, STREAM) gets no such remark
        what = f"communication, mostly {better.top_comm_phase}," if better.top_comm_phase else "communication"
        overlap = better.overlap_s or 0.0
        # comp + comm - time, of the busiest rank's computation and the waiting rank's MPI time: beside one rank's
        # waiting it is the others computing meanwhile, no communication any rank hid behind its own computation.
        hidden = (f", {_pct(overlap / better.comm_s)} of it hidden behind computation"
                  if overlap > 0 and better.comm_s and not _waits(better) else "")
        out.append(_sentence(f"{what} is {_pct(comm_share)} of {b}'s run{hidden}"))
    out += [_waiting_sentence(layout, name) for layout, name in ((worse, w), (better, b)) if _waits(layout)]
    return (*out, _sentence(bandwidth)) if bandwidth else tuple(out)


WAITING_GAP = 0.3
"""How much less of its run one rank must compute than every other rank (and at most half as much) for the layout
to be said to have a rank that waits: a manager waiting for its workers, a core of the layout's that computes
little. ESyS-Particle's oversubscribed 3x1: the manager computed 0 %, the worker sharing its PU 37 %."""


def _waits(layout: Breakdown) -> bool:
    """Whether one rank of `layout` computes far less of its run than every other (WAITING_GAP)."""
    if layout.waiting is None:
        return False
    least, others = 1.0 - layout.waiting.waiting, 1.0 - layout.waiting.others
    return others - least >= WAITING_GAP and others >= 2.0 * least


def _waiting_sentence(layout: Breakdown, name: str) -> str:
    """'2x1's rank 0 computed for 36 % of its run, the other ranks for 93 % or more: ...' (the probe's waiting_rank)."""
    found = layout.waiting
    assert found is not None
    # Not computing is in MPI (the library spins) or off the CPU (asleep, blocked, or sharing its PU).
    parts = [f"{_pct(share)} of its run {where}" for share, where in
             ((found.in_mpi, "in MPI"), (found.waiting - found.in_mpi, "off the CPU")) if share >= 0.01]
    return (f"{name}'s rank {found.rank} computed for {_pct(1.0 - found.waiting)} of its run, the other ranks for "
            f"{_pct(1.0 - found.others)} or more: it waited, {' and '.join(parts)}.")


def reason(better: Breakdown, worse: Breakdown, separated: bool | None = None, noise: str = "") -> str:
    """reasons() as one line of sentences."""
    return " ".join(reasons(better, worse, separated, noise))


_TOPICS = {"runner-up": "the runner-up", "indistinguishable": "a layout inside the noise", "worst": "the worst"}


def verdict_reasons(group: AppGroup, breakdowns: tuple[Breakdown, ...],
                    confidence: float = DEFAULT_CONFIDENCE) -> list[str]:
    """One 'why' line per 'A vs B' verdict of the group's recommendation, noisy or not as its confidence interval
    says; empty when nothing was compared (never fails on missing data: reason() says what is missing)."""
    by_layout = {b.key: b for b in breakdowns}
    by_name = {name: by_layout.get(s.key) for s, name in labels(group).items()}
    lines = []
    for statement in verdict(group, confidence).statements:
        result = statement.result
        if not isinstance(result, Comparison):
            continue
        better, worse = by_name.get(result.better), by_name.get(result.worse)
        if better is None or worse is None:
            continue
        about = _TOPICS.get(statement.topic, statement.topic)
        lines.append(f"{result.better} against {about} ({result.worse}): "
                     f"{reason(better, worse, separated=result.separated, noise=result.noise_text())}")
    return [*lines, *probe_findings(group)]


def recommendation_lines(groups: Sequence[AppGroup], confidence: float = DEFAULT_CONFIDENCE,
                         reasons: bool = True) -> Iterator[str]:
    """Each app configuration's 'title: recommendation' as a terminal shows it (hympi sweep's closing lines, hympi
    report's), with its '  why: ' lines after it when `reasons`."""
    for group, title in zip(groups, group_titles(groups), strict=True):
        yield f"{title}: {recommend(group, confidence)}"
        if reasons:
            yield from (f"  why: {line}" for line in verdict_reasons(group, explain(group), confidence))


def probe_findings(group: AppGroup) -> list[str]:
    """What the probe saw inside a program's runs (hympi.probe), one line per finding with the layouts it held in,
    in the order the layouts first show it: idle threads, threads sharing a PU."""
    layouts: dict[str, list[str]] = {}
    for run in timed_ok(group.runs):
        probe = run.record.get("probe") if run.record else None
        if not isinstance(probe, dict):
            continue
        for finding in probe.get("findings", []):
            name = f"{run.ranks}x{run.threads}"
            seen = layouts.setdefault(str(finding), [])
            if name not in seen:
                seen.append(name)
    return [f"{', '.join(names)} (probe): {finding}" for finding, names in layouts.items()]
