"""What a tune measured: one score per configuration, read back from the sweeps attached to the tune."""

from __future__ import annotations

from dataclasses import dataclass

from hympi.launch.cvars import ignored
from hympi.params import DEFAULT_CONFIDENCE, MIN_SEPARATE
from hympi.probe import recorded_working_threads
from hympi.result import runs_rate_unit, shown_median
from hympi.stats.compare import MIN_SAMPLES, Comparison, Sample, compare, is_finite_positive, too_few_runs
from hympi.stats.median import median_or_none
from hympi.store import WARMUP_REPEAT, Run, Store, Sweep
from hympi.sweep import SweepParams
from hympi.tune.space import Configuration

MEASURED_STATUSES = ("ok", "failed", "timeout", "unverified")


@dataclass(frozen=True)
class Measured:
    """One measured configuration: its score (median rate of the ok measured runs that no other work disturbed,
    higher is better; None when no such run was ok), how many measured runs it took, its status, peak memory per
    rank and the MPI parameters the library ignored. `rates` are the rates the score is the median of (for
    confidence intervals); `disturbed` counts the ok runs left out because other work overlapped them (hympi.busy);
    `checked` says whether the app read the parameters back at all (an app without MPI_T read-back cannot tell);
    `working_threads` the fewest threads per rank the probe saw compute in its runs (None: not probed)."""

    config: Configuration
    score: float | None
    runs: int
    status: str
    max_rss_mib: float | None
    ignored: tuple[str, ...] = ()
    rates: tuple[float, ...] = ()
    checked: bool = True
    sweep_id: int | None = None
    disturbed: int = 0
    working_threads: int | None = None
    rate_unit: str = ""  # of the score's rates: a lower-is-better figure's is its inverse (hympi.result.INVERSE_UNIT)

    def score_text(self) -> str:
        """The score as people read it, the median of its runs' figures (hympi.result.shown_median): '12.3 GFLOP/s',
        '1.86 s' (the median time: for 4 runs, not 1 / the median rate); '-' for none."""
        return shown_median(self.rates, self.rate_unit)


def sweep_configuration(sweep: Sweep) -> Configuration:
    """The configuration a tune's sweep measured (its single layout and binding, its MPI parameters)."""
    params = SweepParams.from_dict(sweep.params)
    ranks, threads = params.layouts[0]
    return Configuration(ranks, threads, params.binds[0], tuple(sorted(params.mpi_params)))


def _status(runs: list[Run]) -> str:
    """'ok' when any run was ok, else the worst outcome: timeout (often memory exhaustion or a hang), failed,
    unverified."""
    statuses = {r.status for r in runs}
    for status in ("ok", "timeout", "failed", "unverified"):
        if status in statuses:
            return status
    return "failed"


def usable_rate(run: Run) -> float | None:
    """The run's rate where it counts towards a score: an ok run, not disturbed, with a finite rate > 0."""
    rate = run.value("rate") if run.status == "ok" and not run.disturbed else None
    return rate if rate is not None and is_finite_positive(rate) else None


def measure(config: Configuration, runs: list[Run], sweep_id: int | None = None) -> Measured:
    """The Measured of one configuration from its runs (warm-ups are left out); status 'failed' without runs."""
    measured = [r for r in runs if r.repeat != WARMUP_REPEAT]
    ok = [r for r in measured if r.status == "ok"]
    rates = tuple(rate for r in ok if (rate := usable_rate(r)) is not None)
    memory = [m for r in measured if (m := r.value("max_rss_mib")) is not None]
    names: set[str] = set()
    checked = False
    for run in measured:
        back = run.read_back()
        if back is not None and run.mpi_params:
            checked = True
            names.update(ignored(run.mpi_params, back))
    return Measured(config=config, score=median_or_none(rates), runs=len(measured),
                    status=_status(measured) if measured else "failed", max_rss_mib=median_or_none(memory),
                    ignored=tuple(sorted(names)), rates=rates, checked=checked or not config.mpi_params,
                    sweep_id=sweep_id, disturbed=sum(1 for r in ok if r.disturbed),
                    working_threads=min((w for r in measured if (w := recorded_working_threads(r.record)) is not None),
                                        default=None),
                    rate_unit=runs_rate_unit(ok))


def tune_results(store: Store, tune_id: int) -> list[Measured]:
    """Every configuration the tune finished measuring, in the order they were started (a configuration whose sweep
    was interrupted is left out: resuming the tune measures it again); UsageError if there is no such tune."""
    store.tune(tune_id)
    sweeps = [s for s in store.tune_sweeps(tune_id) if s.status == "finished"]
    runs = store.runs([s.id for s in sweeps]) if sweeps else []
    first: dict[Configuration, int] = {}
    grouped: dict[Configuration, list[Run]] = {}
    config_of = {s.id: sweep_configuration(s) for s in sweeps}
    for sweep in sweeps:  # the same configuration measured twice (a resume raced another) pools its runs
        first.setdefault(config_of[sweep.id], sweep.id)
        grouped.setdefault(config_of[sweep.id], [])
    for run in runs:
        grouped[config_of[run.sweep_id]].append(run)
    return [measure(config, grouped[config], first[config]) for config in grouped]


@dataclass(frozen=True)
class Speedup:
    """A configuration's score over the default's: the ratio of medians, its bootstrap interval when both have
    enough ok runs (stats.compare), and whether the interval excludes 1."""

    ratio: float | None
    low: float | None = None
    high: float | None = None
    separated: bool = False
    text: str = ""


def speedup(measured: Measured, default: Measured | None, confidence: float = DEFAULT_CONFIDENCE) -> Speedup:
    """The speedup of `measured` over the default configuration, with a confidence interval (stats.compare's
    bootstrap) where both have >= MIN_SAMPLES ok runs; the text says 'indistinguishable' when the interval holds 1
    and why no interval exists otherwise."""
    if measured.score is None:
        return Speedup(None, text=measured.status)
    if default is None or default.score is None:
        return Speedup(None, text="no default score")
    ratio = measured.score / default.score
    if measured.config == default.config:
        return Speedup(1.0, 1.0, 1.0, False, "1 (the default)")
    a = Sample("config", measured.rates, measured.config.threads, measured.config.ranks * measured.config.threads)
    b = Sample("default", default.rates, default.config.threads, default.config.ranks * default.config.threads)
    verdict = compare(a, b, confidence)
    if not isinstance(verdict, Comparison):
        return Speedup(ratio, text=f"{ratio:.2f}x (no interval: {MIN_SAMPLES}+ ok runs each needed)")
    seen = verdict.seen_from("config")
    low, high = seen.low, seen.high
    if verdict.separated:
        return Speedup(ratio, low, high, True, f"{ratio:.2f}x ({verdict.ci_text()})")
    level = f"{round(confidence * 100):g} % CI"
    if verdict.fewest < MIN_SEPARATE:
        return Speedup(ratio, low, high, False, f"{ratio:.2f}x ({level} {low:.2f}-{high:.2f}): "
                                                 f"{too_few_runs(verdict.fewest)}")
    return Speedup(ratio, low, high, False, f"indistinguishable ({ratio:.2f}x, {level} {low:.2f}-{high:.2f})")


def best(results: list[Measured]) -> Measured | None:
    """The configuration with the highest score (the first measured among equals), None when none has one."""
    scored = [m for m in results if m.score is not None]
    return max(scored, key=lambda m: m.score or 0.0) if scored else None


def default_of(results: list[Measured], config: Configuration) -> Measured | None:
    """The measurement of `config` (the space's default) among the results, if any."""
    return next((m for m in results if m.config == config), None)
