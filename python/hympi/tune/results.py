"""What a tune measured: one score per configuration, read back from the sweeps attached to the tune."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from hympi.store import WARMUP_REPEAT, Run, Store, Sweep
from hympi.sweep import SweepParams
from hympi.tune.cvars import ignored
from hympi.tune.space import Configuration

MEASURED_STATUSES = ("ok", "failed", "timeout", "unverified")


@dataclass(frozen=True)
class Measured:
    """One measured configuration: its score (median rate of the ok measured runs, higher is better; None when no
    run was ok), how many measured runs it took, its status, peak memory per rank and the MPI parameters the
    library ignored. `rates` are the ok rates the score is the median of (for confidence intervals); `checked` says
    whether the app read the parameters back at all (an app without MPI_T read-back cannot tell)."""

    config: Configuration
    score: float | None
    runs: int
    status: str
    max_rss_mib: float | None
    ignored: tuple[str, ...] = ()
    rates: tuple[float, ...] = ()
    checked: bool = True
    sweep_id: int | None = None

    @property
    def ok(self) -> bool:
        """Whether the configuration has a score."""
        return self.score is not None


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


def measure(config: Configuration, runs: list[Run], sweep_id: int | None = None) -> Measured:
    """The Measured of one configuration from its runs (warm-ups are left out); status 'failed' without runs."""
    measured = [r for r in runs if r.repeat != WARMUP_REPEAT]
    rates = tuple(rate for r in measured if r.status == "ok" and (rate := r.value("rate")) is not None
                  and rate > 0 and math.isfinite(rate))
    memory = [m for r in measured if (m := r.value("max_rss_mib")) is not None]
    names: set[str] = set()
    checked = False
    for run in measured:
        back = run.read_back()
        if back is not None and run.mpi_params:
            checked = True
            names.update(ignored(run.mpi_params, back))
    return Measured(config, statistics.median(rates) if rates else None, len(measured),
                    _status(measured) if measured else "failed", statistics.median(memory) if memory else None,
                    tuple(sorted(names)), rates, checked or not config.mpi_params, sweep_id)


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
