"""Transposes and field memory per layout, for apps that record them (hympi-pencil: metrics.transpose_s,
transpose_share, steps, plane_bytes_per_rank, pencil_bytes_per_rank).

Layouts may run different numbers of time steps (the apps scale them to a minimum kernel time), so transpose times
are compared per time step: each run's rate is steps / transpose_s, and every 'A vs B' sentence is the verdict of
hympi.stats.compare on those rates (ratio of medians, bootstrap interval), never a ranking of bare medians. Without
`steps` in a record the whole run's transpose_s is used. Memory per rank is what the app reports (the largest rank),
not a timing: it is shown, not compared.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from hympi.params import DEFAULT_CONFIDENCE
from hympi.report.analysis import AppGroup, labels
from hympi.report.explain import timed_ok
from hympi.stats.compare import MIN_SAMPLES, Comparison, Refusal, Sample, compare
from hympi.stats.median import median_or_none
from hympi.store import Run

MIB = 2.0**20


def metric(run: Run, name: str) -> float | None:
    """A number from the run's record['metrics'] (None when absent, not a number, or a bool)."""
    metrics = (run.record or {}).get("metrics")
    value = metrics.get(name) if isinstance(metrics, dict) else None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _seconds(run: Run, per_step: bool) -> float | None:
    """Transpose seconds of one run, per time step when `per_step`; None without transposes."""
    seconds = metric(run, "transpose_s")
    if seconds is None or not per_step:
        return seconds
    steps = metric(run, "steps")
    return seconds / steps if steps else None


def _peak(runs: list[Run], name: str) -> float | None:
    """Largest metrics[name] over the runs that have it."""
    return max((v for v in (metric(r, name) for r in runs) if v is not None), default=None)


@dataclass(frozen=True)
class TransposeRow:
    """One layout: medians over its ok timed runs; memory in bytes per rank; rates = time steps per transpose second
    (what the comparison uses)."""

    label: str
    ranks: int
    threads: int
    nodes: int
    runs: int
    transpose_s: float | None
    per_step_s: float | None  # per time step, or the whole run's when the view's per_step is False
    per_step_min_s: float | None
    per_step_max_s: float | None
    share: float | None
    plane_bytes: float | None
    pencil_bytes: float | None
    rates: tuple[float, ...]

    @property
    def node_bytes(self) -> float | None:
        """Planes and pencils of every rank on one node (both are allocated at once), None when either is unknown."""
        if self.plane_bytes is None or self.pencil_bytes is None:
            return None
        return (self.plane_bytes + self.pencil_bytes) * self.ranks / max(1, self.nodes)


@dataclass(frozen=True)
class TransposeView:
    """The Transposes part of one app group: a row per layout and the verdicts of the fastest against the others
    (empty when no layout has MIN_SAMPLES runs); per_step is False when some record has no `steps`."""

    rows: tuple[TransposeRow, ...]
    verdicts: tuple[Comparison | Refusal, ...]
    per_step: bool
    confidence: float


def _row(label: str, runs: list[Run], per_step: bool) -> TransposeRow | None:
    """A layout's row from its ok timed runs, None when none recorded transposes or field memory."""
    runs = [r for r in runs if metric(r, "transpose_s") is not None or metric(r, "plane_bytes_per_rank") is not None]
    if not runs:
        return None
    times = [v for v in (_seconds(r, per_step) for r in runs) if v is not None]
    first = runs[0]
    nodes = int((first.record or {}).get("nodes", 1) or 1)
    return TransposeRow(label, first.ranks, first.threads, nodes, len(runs),
                        median_or_none(metric(r, "transpose_s") for r in runs), median_or_none(times),
                        min(times, default=None), max(times, default=None),
                        median_or_none(metric(r, "transpose_share") for r in runs),
                        _peak(runs, "plane_bytes_per_rank"), _peak(runs, "pencil_bytes_per_rank"),
                        tuple(1.0 / v for v in times if v > 0))


def transpose_view(group: AppGroup, confidence: float = DEFAULT_CONFIDENCE) -> TransposeView | None:
    """The group's transposes and field memory per layout, None when no ok timed run recorded either."""
    names = labels(group)
    timed = timed_ok(group.runs)
    # One unit for every layout: per time step only when every run says how many steps it ran.
    per_step = all(metric(r, "steps") for r in timed if metric(r, "transpose_s") is not None)
    rows = []
    for layout in group.layouts:
        mine = [r for r in timed if (r.ranks, r.threads, r.bind, r.membind) == layout.key]
        row = _row(names[layout], mine, per_step)
        if row is not None:
            rows.append(row)
    if not rows:
        return None
    samples = {row.label: Sample(row.label, row.rates, row.threads, row.ranks * row.threads) for row in rows}
    usable = [row for row in rows if len(row.rates) >= MIN_SAMPLES]
    verdicts: list[Comparison | Refusal] = []
    if usable:
        fastest = max(usable, key=lambda row: statistics.median(row.rates))
        verdicts = [compare(samples[fastest.label], samples[row.label], confidence) for row in rows
                    if row is not fastest and row.rates]
    return TransposeView(tuple(rows), tuple(verdicts), per_step, confidence)


def sentence(result: Comparison | Refusal, per_step: bool = True) -> str:
    """One verdict on transpose times: 'A transposes 1.31x as fast as B per time step (95 % CI 1.22-1.40)', or the
    comparison's own 'indistinguishable here' / 'cannot be separated' / 'cannot be compared' sentence."""
    if isinstance(result, Refusal):
        return result.sentence()
    if not result.separated:
        return result.sentence(choose=False)
    unit = " per time step" if per_step else ""
    return f"{result.better} transposes {result.ratio:.2f}x as fast as {result.worse}{unit} ({result.ci_text()})"
