"""The report's Tuning section, as data: per tuned program the speedup of its best configuration over the default
(with stats.compare's interval), what each search strategy spent and reached, the MPI memory per process of
every parameter value, and the predictor's leave-one-program-out verdicts."""

from __future__ import annotations

import re
from dataclasses import dataclass

from hympi.errors import HympiError, UsageError
from hympi.store import Store, TuneRecord
from hympi.tune.predict import ProgramVerdict, busy_notes, evaluate
from hympi.tune.results import Measured, Speedup, best, default_of, speedup, tune_results
from hympi.tune.space import UNSET_LABEL, Configuration, CvarSource


@dataclass(frozen=True)
class TuneSummary:
    """One tune: its strategy, configurations measured of the space, runs spent, best reached and its speedup."""

    tune: TuneRecord
    results: tuple[Measured, ...]
    space_size: int | None
    default: Configuration | None
    best: Measured | None
    speedup: Speedup
    # The best configuration over the same layout with the library's defaults: what its MPI parameters add (None
    # when it sets none or that layout was not measured with the defaults).
    params_gain: Speedup | None = None

    @property
    def runs(self) -> int:
        """Measured runs over every configuration (warm-ups not counted)."""
        return sum(m.runs for m in self.results)


@dataclass(frozen=True)
class MemoryPoint:
    """Peak memory per process (median of a configuration's runs) with the value one MPI parameter had."""

    parameter: str
    value: str
    ranks: int
    max_rss_mib: float


@dataclass(frozen=True)
class ProgramTuning:
    """Every tune of one program and the memory points of all its measured configurations."""

    program: str
    tunes: tuple[TuneSummary, ...]
    memory: tuple[MemoryPoint, ...]

    @property
    def slug(self) -> str:
        """A file-name-safe name for the program's figures."""
        return "tune-" + re.sub(r"[^A-Za-z0-9]+", "-", self.program).strip("-").lower()

    def reference(self) -> TuneSummary:
        """The tune that measured most of the space (the exhaustive one when there is one), finished ones first."""
        return max(self.tunes, key=lambda t: (t.tune.status == "finished", len(t.results),
                                              t.tune.strategy == "exhaustive", -t.tune.id))

    def memory_spread(self, parameter: str) -> float | None:
        """Largest relative difference of memory per process between values of `parameter` at equal ranks (None
        without two values to compare)."""
        spreads = []
        for ranks in {p.ranks for p in self.memory if p.parameter == parameter}:
            by_value: dict[str, list[float]] = {}
            for p in self.memory:
                if p.parameter == parameter and p.ranks == ranks:
                    by_value.setdefault(p.value, []).append(p.max_rss_mib)
            means = [sum(v) / len(v) for v in by_value.values()]
            if len(means) >= 2 and max(means) > 0:
                spreads.append((max(means) - min(means)) / max(means))
        return max(spreads) if spreads else None

    def parameters(self) -> list[str]:
        """The MPI parameters that appear in the memory points, by name."""
        return sorted({p.parameter for p in self.memory})


def _summary(store: Store, tune: TuneRecord) -> TuneSummary:
    """One tune's results, best and speedup over the default (the space's default as stored with the tune)."""
    results = tune_results(store, tune.id)
    key = tune.space.get("default")
    default = Configuration.from_key(key) if isinstance(key, str) else None
    top = best(results)
    base = default_of(results, default) if default is not None else None
    size = tune.space.get("configurations")
    gain = None
    if top is not None and top.config.mpi_params:
        plain = default_of(results, Configuration(top.config.ranks, top.config.threads, top.config.bind))
        gain = speedup(top, plain) if plain is not None and plain.score is not None else None
    return TuneSummary(tune, tuple(results), int(size) if isinstance(size, int) else None, default, top,
                       speedup(top, base) if top is not None else Speedup(None, text="no configuration ran ok"), gain)


def _memory(tunes: list[TuneSummary]) -> tuple[MemoryPoint, ...]:
    """Per measured configuration with a memory figure, one point per MPI parameter any tune of it varied."""
    measured = {m.config: m for t in tunes for m in t.results if m.max_rss_mib is not None}
    names = sorted({n for c in measured for n, _ in c.mpi_params})
    return tuple(MemoryPoint(name, c.params().get(name, UNSET_LABEL), c.ranks, m.max_rss_mib or 0.0)
                 for name in names for c, m in measured.items())


def tuning_data(store: Store, tune_ids: set[int] | None = None) -> list[ProgramTuning]:
    """Every tuned program of the store (or of the given tunes), by name; [] when the store has no tune."""
    tunes: dict[str, list[TuneSummary]] = {}
    for tune in store.tunes():
        if tune_ids is None or tune.id in tune_ids:
            tunes.setdefault(tune.program, []).append(_summary(store, tune))
    return [ProgramTuning(p, tuple(tunes[p]), _memory(tunes[p])) for p in sorted(tunes)]


@dataclass(frozen=True)
class Prediction:
    """The predictor's leave-one-program-out verdicts, or why there are none, notes on programs left out, and the
    held-out programs profiled beside other work (as `hympi tune evaluate` names them)."""

    verdicts: tuple[ProgramVerdict, ...]
    notes: tuple[str, ...]
    missing: str = ""
    busy: tuple[str, ...] = ()


def prediction(store: Store, cvars: CvarSource, disturbed_above: float) -> Prediction:
    """evaluate() over the store, naming the profiles taken beside more than `disturbed_above` cores of other work;
    a Prediction saying why when it cannot run (too few programs, no profiles, the spaces cannot be rebuilt without
    the library's control variables)."""
    try:
        verdicts, notes = evaluate(store, cvars)
    except (HympiError, UsageError) as exc:
        return Prediction((), (), str(exc))
    return Prediction(tuple(verdicts), tuple(notes), busy=tuple(busy_notes(verdicts, disturbed_above)))
