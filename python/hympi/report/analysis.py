"""Statistics per layout and the plain-language recommendation, computed from the stored runs."""

from __future__ import annotations

import hashlib
import statistics
from dataclasses import dataclass

from hympi.store import Run


@dataclass(frozen=True)
class LayoutStats:
    """Every run of one (ranks, threads, bind) layout of one app configuration, summarised."""

    ranks: int
    threads: int
    bind: str
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

    @property
    def cores(self) -> int:
        """Cores (hardware threads) the layout uses: ranks x threads."""
        return self.ranks * self.threads

    @property
    def label(self) -> str:
        """'2x1' (ranks x threads)."""
        return f"{self.ranks}x{self.threads}"

    def describe(self) -> str:
        """'2 ranks x 1 thread, bind core' for sentences."""
        r = f"{self.ranks} rank{'s' if self.ranks != 1 else ''}"
        t = f"{self.threads} thread{'s' if self.threads != 1 else ''}"
        return f"{r} x {t}, bind {self.bind}"


@dataclass(frozen=True)
class AppGroup:
    """The runs of one app configuration (app + its arguments) on one machine."""

    app: str
    app_args: tuple[str, ...]
    machine_id: int
    problem: str
    rate_unit: str
    runs: tuple[Run, ...]
    layouts: tuple[LayoutStats, ...]

    @property
    def slug(self) -> str:
        """A file-name-safe identifier for the group's plots."""
        safe = "".join(c if c.isalnum() else "-" for c in f"{self.app}-{self.problem or 'x'}")
        digest = hashlib.sha1("\0".join(self.app_args).encode()).hexdigest()[:8]
        return f"{safe.strip('-')}-m{self.machine_id}-{digest}"


def _median(values: list[float]) -> float | None:
    """Median, or None for no values."""
    return statistics.median(values) if values else None


def _values(runs: list[Run], name: str) -> list[float]:
    """Field `name` of the ok runs that have it."""
    return [v for v in (r.value(name) for r in runs if r.status == "ok") if v is not None]


def layout_stats(ranks: int, threads: int, bind: str, runs: list[Run]) -> LayoutStats:
    """Min/median/max rate and medians of time, comm, comp and memory over the ok runs of one layout."""
    rates = _values(runs, "rate")
    statuses: dict[str, int] = {}
    for run in runs:
        statuses[run.status] = statuses.get(run.status, 0) + 1
    per_core = []
    for run in runs:
        node = run.value("node_rss_mib")
        if run.status == "ok" and node is not None and run.record is not None:
            nodes = run.record.get("nodes", 1) or 1
            per_core.append(node * nodes / (ranks * threads))
    return LayoutStats(ranks, threads, bind, len(runs), statuses.get("ok", 0), tuple(sorted(statuses.items())),
                       min(rates) if rates else None, _median(rates), max(rates) if rates else None,
                       _median(_values(runs, "time_s")), _median(_values(runs, "comm_s")),
                       _median(_values(runs, "comp_s")), _median(_values(runs, "imbalance")),
                       _median(_values(runs, "max_rss_mib")), _median(per_core),
                       _median(_values(runs, "node_rss_mib")))


def group_runs(runs: list[Run], machine_of_sweep: dict[int, int]) -> list[AppGroup]:
    """Runs grouped by (machine, app, app arguments), each with its per-layout statistics, in first-seen order."""
    groups: dict[tuple[int, str, tuple[str, ...]], list[Run]] = {}
    for run in runs:
        groups.setdefault((machine_of_sweep.get(run.sweep_id, 0), run.app, run.app_args), []).append(run)
    out = []
    for (machine_id, app, app_args), members in groups.items():
        by_layout: dict[tuple[int, int, str], list[Run]] = {}
        for run in members:
            by_layout.setdefault((run.ranks, run.threads, run.bind), []).append(run)
        layouts = tuple(layout_stats(r, t, b, rs) for (r, t, b), rs in
                        sorted(by_layout.items(), key=lambda kv: (kv[0][0] * kv[0][1], kv[0][1], kv[0][2])))
        problems = [r.problem for r in members if r.problem]
        units = [str(r.record.get("rate_unit", "")) for r in members if r.record and r.record.get("rate_unit")]
        out.append(AppGroup(app, app_args, machine_id, problems[-1] if problems else "", units[-1] if units else "",
                            tuple(members), layouts))
    return out


def _ratio(a: float, b: float) -> str:
    """a/b as '1.31x'."""
    return f"{a / b:.2f}x" if b > 0 else "inf x"


def _other_kind(ref: LayoutStats, ranked: list[LayoutStats], name: str) -> str:
    """'; hybrid 1x2 is 0.92x of it': the best layout of the other kind (threads or not) on as many cores as `ref`."""
    same_cores = [s for s in ranked if s.cores == ref.cores and s is not ref]
    if ref.threads == 1:
        other, kind = [s for s in same_cores if s.threads > 1], "hybrid"
    else:
        other, kind = [s for s in same_cores if s.threads == 1], "pure MPI"
    if not other or other[0].rate_median is None or ref.rate_median is None:
        return ""
    return f"; {kind} {other[0].label} is {_ratio(other[0].rate_median, ref.rate_median)} of {name}"


def recommend(group: AppGroup) -> str:
    """A plain-language recommendation from the median rate per layout, with ratios between layouts."""
    ranked = sorted((s for s in group.layouts if s.rate_median is not None),
                    key=lambda s: s.rate_median or 0.0, reverse=True)
    failed = [s for s in group.layouts if s.ok < s.runs]
    failures = ""
    if failed:
        parts = [f"{s.label}: {', '.join(f'{n} {st}' for st, n in s.statuses if st != 'ok')}" for s in failed]
        failures = f" Not ok: {'; '.join(parts)}."
    if not ranked:
        return f"No layout of {group.app} produced a verified result, so there is nothing to recommend.{failures}"
    best = ranked[0]
    assert best.rate_median is not None
    unit = f" {group.rate_unit}" if group.rate_unit else ""
    if len(ranked) == 1:
        return (f"only {best.describe()} ran successfully ({best.rate_median:.4g}{unit}); nothing to compare it "
                f"with.{failures}")
    worst = ranked[-1]
    assert worst.rate_median is not None
    text = (f"best: {best.describe()} ({best.rate_median:.4g}{unit} median of {best.ok}): "
            f"{_ratio(best.rate_median, worst.rate_median)} the worst layout ({worst.label}, bind {worst.bind})")
    text += _other_kind(best, ranked, "it")
    most = max(s.cores for s in ranked)
    if best.cores < most:
        top = next(s for s in ranked if s.cores == most)
        assert top.rate_median is not None
        text += (f"; the best layout on all {most} cores, {top.label}, is only "
                 f"{_ratio(top.rate_median, best.rate_median)} of it: more cores do not pay off for this problem on "
                 "this machine")
        text += _other_kind(top, ranked, top.label)
    runner_up = ranked[1]
    if runner_up.rate_max is not None and best.rate_min is not None and runner_up.rate_max >= best.rate_min:
        text += (f". The repeats of {best.label} and {runner_up.label} overlap (min-max), so the difference "
                 "between them is within run-to-run noise")
    return text + "." + failures


def best_stream_bandwidth(groups: list[AppGroup]) -> tuple[float, str, str] | None:
    """The highest median STREAM triad rate and the layout that reached it, if STREAM ran."""
    best: tuple[float, str, str] | None = None
    for group in groups:
        if group.app != "stream":
            continue
        for s in group.layouts:
            if s.rate_median is not None and (best is None or s.rate_median > best[0]):
                best = (s.rate_median, group.rate_unit, s.describe())
    return best
