"""The predictor across programs (the ANN of Wang et al., "Research of MPI programs optimization technology on
multi-core clusters", §3.2): a neural network trained on the tunes in the results store predicts, for a program it
has not seen, the configuration (layout and MPI parameters) with the highest speedup over the space's default, from
the program's profile features and the configuration's encoding.

Training rows: for every program with a measured default configuration, each measured configuration gives
features(program) ++ encode(configuration) -> log(score / default score). A configuration that failed (crashed,
timed out, ran out of memory) gets the target `log(FAILED_FACTOR) + min(0, worst ok log speedup of the
program)`: worse than anything that ran, so the model steers away from it without inventing a number far outside
the measured range.

Model: scikit-learn `MLPRegressor` behind a `StandardScaler` (both in one Pipeline), `HIDDEN_LAYERS` ReLU units,
L2 penalty `ALPHA`, L-BFGS (the solver scikit-learn recommends for small data sets) for at most `MAX_ITER`
iterations; `ENSEMBLE_SEEDS` networks differing only in their initial weights are averaged (in log speedup), so
one unlucky initialisation does not decide the pick. The same rows always give the same model.

Evaluation: leave one program out -- train on the others, predict the held-out program's best configuration and
look up what its own tune MEASURED for that configuration. ratio = measured speedup of the pick / best measured
speedup. A pick its tune did not measure is reported as such (no ratio is guessed). The baseline is the
configuration with the highest mean log speedup over the training programs that measured it: if the network does
not beat it, the features add nothing. `predict` runs the same evaluation over its own training programs first
(`self_check`) and recommends the constant pick where the network does not beat it.

A program that computed with fewer threads per rank than its thread check gave it (hympi.tune.features.thread_limit:
one, for a program without OpenMP) gets its picks, the network's and the constant one, among the configurations of
at most that many threads per rank (all of them, should none be that narrow): the network learns what a thread is
worth from programs that use theirs, and would credit such a program with cores it leaves idle. Its training rows
keep every measured configuration.
"""

from __future__ import annotations

import math
import warnings
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hympi.errors import HympiError, UsageError
from hympi.launch.cvars import cvar_from_json
from hympi.program import Program
from hympi.store import Store, TuneRecord
from hympi.tune.features import (
    BUSY_PROFILE_NAME,
    busy_profile_text,
    feature_vector,
    thread_limit,
    thread_limit_text,
)
from hympi.tune.programs import stored_profile
from hympi.tune.results import Measured, tune_results
from hympi.tune.space import Configuration, CvarSource, SearchSpace, library_space, parse_space
from hympi.tune.tuner import TuneParams

HIDDEN_LAYERS = (16,)
ALPHA = 1e-2
MAX_ITER = 500
ENSEMBLE_SEEDS = (0, 1, 2)
FAILED_FACTOR = 0.5
MIN_PROGRAMS = 2
# How much higher the network's leave-one-program-out mean ratio must be than the constant pick's before its
# picks are trusted over the constant: with a handful of programs, a smaller lead is one program's luck.
BEAT_MARGIN = 0.05


@dataclass(frozen=True)
class Candidate:
    """One configuration of a program's space: its key and label, its encoding, and what its tune measured
    (score = median rate, None when not measured or failed; failed = every measurement failed)."""

    key: str
    label: str
    threads: int
    encoding: tuple[float, ...]
    score: float | None = None
    failed: bool = False

    @property
    def measured(self) -> bool:
        """Whether the tune ran this configuration (successfully or not)."""
        return self.score is not None or self.failed


@dataclass(frozen=True)
class ProgramData:
    """A tuned program as the predictor sees it: features, the configurations of its space and their scores."""

    program: str
    features: tuple[float, ...]
    encoding_names: tuple[str, ...]
    default_key: str
    candidates: tuple[Candidate, ...]
    thread_limit: int | None = None  # features.thread_limit of its thread check
    # The cores other work used beside its kept profiled run (features.BUSY_PROFILE_NAME; None: stored before it
    # was measured): not a network input, but a profile taken beside other work misleads it.
    outside_cores: float | None = None

    def choices(self) -> tuple[Candidate, ...]:
        """The candidates its pick is made among (within_thread_limit)."""
        return within_thread_limit(self.candidates, self.thread_limit)

    @property
    def default_score(self) -> float | None:
        """The default configuration's measured score (None: not measured or failed)."""
        for c in self.candidates:
            if c.key == self.default_key:
                return c.score
        return None

    def speedup(self, key: str) -> float | None:
        """Measured speedup of configuration `key` over the default: 0.0 if it failed, None if not measured."""
        default = self.default_score
        for c in self.candidates:
            if c.key == key:
                if c.failed and c.score is None:
                    return 0.0
                return None if c.score is None or not default else c.score / default
        return None

    def best(self) -> Candidate | None:
        """The measured configuration with the highest score (None if nothing ran)."""
        ok = [c for c in self.candidates if c.score is not None]
        return max(ok, key=lambda c: c.score or 0.0) if ok else None

    def rows(self) -> list[tuple[Candidate, float]]:
        """(configuration, target log speedup) for every measured configuration; [] without a default score."""
        default = self.default_score
        if not default or default <= 0:
            return []
        ok = [(c, math.log(c.score / default)) for c in self.candidates if c.score is not None and c.score > 0]
        worst = min((t for _, t in ok), default=0.0)
        failed = [(c, math.log(FAILED_FACTOR) + min(0.0, worst)) for c in self.candidates
                  if c.failed and c.score is None]
        return ok + failed


@dataclass(frozen=True)
class Predictor:
    """An ensemble of trained networks and the encoding they were trained on."""

    encoding_names: tuple[str, ...]
    models: tuple[Any, ...]  # scikit-learn Pipelines (untyped)
    programs: tuple[str, ...]
    rows: int

    def log_speedups(self, features: Sequence[float], encodings: Sequence[Sequence[float]]) -> np.ndarray:
        """Predicted log speedup of each encoded configuration for a program with these features."""
        x = np.array([[*features, *e] for e in encodings], dtype=float)
        from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]  # scikit-learn's dependency

        with threadpool_limits(1):
            predictions = [np.asarray(m.predict(x), dtype=float) for m in self.models]
        return np.asarray(np.mean(predictions, axis=0), dtype=float)


def within_thread_limit(candidates: Sequence[Candidate], limit: int | None) -> tuple[Candidate, ...]:
    """The candidates of at most `limit` threads per rank (all of them without a limit, or when none is)."""
    within = tuple(c for c in candidates if limit is None or c.threads <= limit)
    return within or tuple(candidates)


def _check_encoding(programs: Sequence[ProgramData]) -> tuple[str, ...]:
    """The encoding all programs share; HympiError naming the first program whose space encodes otherwise."""
    names = programs[0].encoding_names
    for p in programs[1:]:
        if p.encoding_names != names:
            raise HympiError(f"{p.program}'s space encodes configurations as {list(p.encoding_names)}, "
                             f"{programs[0].program}'s as {list(names)}: one model needs one encoding")
    return names


def train(programs: Sequence[ProgramData], seeds: Sequence[int] = ENSEMBLE_SEEDS) -> Predictor:
    """The ensemble trained on every row of `programs`; HympiError for fewer than MIN_PROGRAMS usable programs."""
    usable = [p for p in programs if p.rows()]
    if len(usable) < MIN_PROGRAMS:
        raise HympiError(f"training needs at least {MIN_PROGRAMS} programs with a measured default configuration, "
                         f"got {len(usable)}")
    names = _check_encoding(usable)
    # scikit-learn takes seconds to import: only when a model is trained, not with every hympi command.
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPRegressor
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from threadpoolctl import threadpool_limits

    x = np.array([[*p.features, *c.encoding] for p in usable for c, _ in p.rows()], dtype=float)
    y = np.array([t for p in usable for _, t in p.rows()], dtype=float)
    models = []
    for seed in seeds:
        model = make_pipeline(StandardScaler(), MLPRegressor(hidden_layer_sizes=HIDDEN_LAYERS, alpha=ALPHA,
                                                             solver="lbfgs", max_iter=MAX_ITER, random_state=seed))
        # Matrices of a few hundred rows: BLAS threads only contend (10x slower on a loaded 2-core machine).
        with warnings.catch_warnings(), threadpool_limits(1):
            # L-BFGS stopping at MAX_ITER on a tiny data set is expected, not a fault worth a warning per seed.
            warnings.simplefilter("ignore", ConvergenceWarning)
            model.fit(x, y)
        models.append(model)
    return Predictor(names, tuple(models), tuple(p.program for p in usable), len(y))


def rank(predictor: Predictor, features: Sequence[float],
         candidates: Sequence[Candidate]) -> list[tuple[Candidate, float]]:
    """Every candidate with its predicted speedup, best first (ties: the order of `candidates`)."""
    if not candidates:
        raise HympiError("no configuration to choose from (empty space)")
    predicted = predictor.log_speedups(features, [c.encoding for c in candidates])
    order = sorted(range(len(candidates)), key=lambda i: -float(predicted[i]))
    return [(candidates[i], math.exp(float(predicted[i]))) for i in order]


def baseline_pick(training: Sequence[ProgramData], candidates: Sequence[Candidate]) -> Candidate | None:
    """The candidate with the highest mean target (log speedup) over the training programs that measured it."""
    targets: dict[str, list[float]] = {}
    for p in training:
        for c, t in p.rows():
            targets.setdefault(c.key, []).append(t)
    scored = [(sum(targets[c.key]) / len(targets[c.key]), i) for i, c in enumerate(candidates) if c.key in targets]
    if not scored:
        return None
    return candidates[max(scored, key=lambda s: (s[0], -s[1]))[1]]


@dataclass(frozen=True)
class ProgramVerdict:
    """Leave-one-program-out result for one program.

    thread_limit = the program's (both picks were made among configurations of at most that many threads per rank);
    measured = measured speedup of the predicted configuration (0.0: it failed; None: its tune did not run it);
    ratio = measured / best (None when measured is None); baseline_* the same for the baseline's pick;
    outside_cores = ProgramData's (the other work beside its profile).
    """

    program: str
    predicted: str
    predicted_speedup: float
    thread_limit: int | None
    measured: float | None
    best: str
    best_speedup: float
    ratio: float | None
    default_score: float
    baseline: str | None
    baseline_measured: float | None
    baseline_ratio: float | None
    outside_cores: float | None = None

    def note(self) -> str:
        """Why a ratio is missing or zero ('' when it is an ordinary one)."""
        if self.measured is None:
            return "the predicted configuration was not measured by this program's tune"
        return "the predicted configuration failed in this program's tune" if self.measured == 0.0 else ""


def _ratio(value: float | None, best: float) -> float | None:
    """value / best, None when value is None."""
    return None if value is None else value / best


def cross_validate(programs: Sequence[ProgramData],
                   seeds: Sequence[int] = ENSEMBLE_SEEDS) -> tuple[list[ProgramVerdict], list[str]]:
    """Leave-one-program-out verdicts, and notes on the programs left out (no default measured, too few others)."""
    usable = [p for p in programs if p.rows()]
    notes = [f"{p.program}: no measured default configuration, left out" for p in programs if not p.rows()]
    if len(usable) < MIN_PROGRAMS + 1:
        raise HympiError(f"leave-one-program-out needs at least {MIN_PROGRAMS + 1} programs with a measured default "
                         f"configuration, got {len(usable)}")
    verdicts = []
    for held in usable:
        training = [p for p in usable if p is not held]
        predictor = train(training, seeds)
        (pick, expected), *_ = rank(predictor, held.features, held.choices())
        best = held.best()
        default = held.default_score
        assert best is not None and best.score is not None and default  # rows() is non-empty
        best_speedup = best.score / default
        base = baseline_pick(training, held.choices())
        base_measured = held.speedup(base.key) if base else None
        measured = held.speedup(pick.key)
        verdicts.append(ProgramVerdict(held.program, pick.label, expected, held.thread_limit, measured, best.label,
                                       best_speedup, _ratio(measured, best_speedup), default,
                                       base.label if base else None, base_measured,
                                       _ratio(base_measured, best_speedup), held.outside_cores))
    return verdicts, notes


def narrowed_notes(verdicts: Sequence[ProgramVerdict]) -> list[str]:
    """'PROGRAM: picked among ...' for each held-out program whose picks its thread limit narrowed."""
    return [f"{v.program}: {thread_limit_text(v.thread_limit)}" for v in verdicts if v.thread_limit is not None]


def busy_notes(verdicts: Sequence[ProgramVerdict], disturbed_above: float) -> list[str]:
    """busy_profile_text for each held-out program profiled beside more than `disturbed_above` cores of other work."""
    return [text for v in verdicts if (text := busy_profile_text(v.program, v.outside_cores, disturbed_above))]


def mean_ratio(verdicts: Sequence[ProgramVerdict], baseline: bool = False) -> float | None:
    """Mean ratio over the verdicts that have one (the baseline's with `baseline`); None if none has."""
    ratios = [v.baseline_ratio if baseline else v.ratio for v in verdicts]
    known = [r for r in ratios if r is not None]
    return sum(known) / len(known) if known else None


def beats_constant(mean: float | None, constant: float | None) -> bool | None:
    """Whether the network's mean ratio beats the constant pick's by at least BEAT_MARGIN (a tie or a smaller lead
    does not); None when either has no ratio."""
    if mean is None or constant is None:
        return None
    return mean - constant >= BEAT_MARGIN


@dataclass(frozen=True)
class SelfCheck:
    """The network against the constant pick, leaving one of `programs` training programs out at a time: the mean
    ratios as `hympi tune evaluate` computes them (both None when there were too few programs to leave one out)."""

    programs: int
    predictor: float | None
    constant: float | None

    @property
    def predictor_wins(self) -> bool | None:
        """beats_constant of the two means (None: not compared)."""
        return beats_constant(self.predictor, self.constant)


def self_check(training: Sequence[ProgramData], seeds: Sequence[int] = ENSEMBLE_SEEDS) -> SelfCheck:
    """cross_validate over `training` (the programs a prediction is trained on); with fewer than MIN_PROGRAMS + 1
    usable programs nothing is left out and the check has no means."""
    usable = [p for p in training if p.rows()]
    if len(usable) < MIN_PROGRAMS + 1:
        return SelfCheck(programs=len(usable), predictor=None, constant=None)
    verdicts, _ = cross_validate(usable, seeds)
    return SelfCheck(programs=len(usable), predictor=mean_ratio(verdicts), constant=mean_ratio(verdicts, baseline=True))


# From the store ---------------------------------------------------------------------------------------------------
def stored_space(tune: TuneRecord, cvars: CvarSource) -> SearchSpace:
    """The search space a tune ran, rebuilt from the TOML data and the parameters' cvars it stored (a tune recorded
    without them is rebuilt as library_space: `cvars` asked only when it has MPI parameters); UsageError when it no
    longer parses against them."""
    source = tune.space.get("source", {})
    stored = tune.space.get("cvars")
    if isinstance(stored, list):
        try:
            known = {c.name: c for c in (cvar_from_json(entry, i) for i, entry in enumerate(stored))}
        except ValueError as exc:
            raise UsageError(f"tune {tune.id} stored an unreadable cvar: {exc}") from None
        return parse_space(source, known)
    return library_space(source, cvars)


def pooled(measured: Sequence[Measured]) -> dict[str, tuple[float | None, bool]]:
    """Per configuration key over several tunes of one program: (median of every ok rate, failed = measured but
    never ok: failed, timed out or unverified)."""
    rates: dict[str, list[float]] = {}
    for m in measured:
        rates.setdefault(m.config.key(), []).extend(m.rates)
    return {key: (float(np.median(r)) if r else None, not r) for key, r in rates.items()}


def program_data(program: str, features: dict[str, float], space: SearchSpace,
                 measured: Sequence[Measured]) -> ProgramData:
    """A program's features and every configuration of its space with what its tunes measured."""
    scores = pooled(measured)
    candidates = []
    for config in space.configurations():
        score, failed = scores.get(config.key(), (None, False))
        candidates.append(Candidate(config.key(), config.label(), config.threads, tuple(space.encode(config)),
                                    score, failed))
    return ProgramData(program, tuple(feature_vector(features)), tuple(space.feature_names()), space.default.key(),
                       tuple(candidates), thread_limit(features), features.get(BUSY_PROFILE_NAME))


@dataclass(frozen=True)
class TunedProgram:
    """A program with finished tunes: the tunes, the space of the one that measured most, all it measured.
    `command` is what launches it: the app's name, or a program of your own's path (its `app` is the file's name),
    `subject` that program (its variables and standard input, as its tune ran it; None for an app)."""

    program: str
    app: str
    command: str
    app_args: tuple[str, ...]
    tunes: tuple[TuneRecord, ...]
    space: SearchSpace
    measured: tuple[Measured, ...]
    subject: Program | None = None


def finished_programs(store: Store) -> set[str]:
    """Names of the programs with at least one finished tune (read from the store alone)."""
    return {t.program for t in store.tunes() if t.status == "finished"}


def tuned_programs(store: Store, cvars: CvarSource) -> list[TunedProgram]:
    """Every program with at least one finished tune, by name."""
    finished: dict[str, list[TuneRecord]] = {}
    for tune in store.tunes():
        if tune.status == "finished":
            finished.setdefault(tune.program, []).append(tune)
    out = []
    for program in sorted(finished):
        results = {t.id: tune_results(store, t.id) for t in finished[program]}
        widest = max(finished[program], key=lambda t: (len(results[t.id]), t.id))
        params = TuneParams.from_dict(widest.params)
        out.append(TunedProgram(program=program, app=widest.app, command=params.command, app_args=params.app_args,
                                tunes=tuple(finished[program]), space=stored_space(widest, cvars),
                                measured=tuple(m for t in finished[program] for m in results[t.id]),
                                subject=params.program_spec()))
    return out


def training_set(store: Store, programs: Sequence[TunedProgram]) -> tuple[list[ProgramData], list[str]]:
    """The programs the predictor can learn from (a stored profile and a measured default), and a note for each
    one left out."""
    data, notes = [], []
    for tuned in programs:
        record = stored_profile(store, tuned.program)
        if record is None:
            notes.append(f"{tuned.program}: no stored profile, left out")
            continue
        item = program_data(tuned.program, record.features, tuned.space, tuned.measured)
        if not item.rows():
            notes.append(f"{tuned.program}: its default configuration has no ok measurement, left out")
            continue
        data.append(item)
    return data, notes


def same_encoding(programs: Sequence[ProgramData], names: Sequence[str]) -> tuple[list[ProgramData], list[str]]:
    """The programs whose spaces encode configurations as `names`, and a note for each other one."""
    keep = [p for p in programs if list(p.encoding_names) == list(names)]
    notes = [f"{p.program}: its space has other axes or parameters than the others, left out"
             for p in programs if list(p.encoding_names) != list(names)]
    return keep, notes


def evaluate(store: Store, cvars: CvarSource,
             seeds: Sequence[int] = ENSEMBLE_SEEDS) -> tuple[list[ProgramVerdict], list[str]]:
    """Leave-one-program-out over the store's tuned programs with profiles (those sharing the most common space
    encoding), plus notes on programs left out; HympiError with fewer than MIN_PROGRAMS + 1 programs."""
    programs = finished_programs(store)
    if len(programs) < MIN_PROGRAMS + 1:  # say so before reading spaces (which may launch hympi-mpit)
        raise HympiError(f"leave-one-program-out needs finished tunes of at least {MIN_PROGRAMS + 1} programs, "
                         f"{store.path} has {len(programs)}")
    data, notes = training_set(store, tuned_programs(store, cvars))
    if not data:
        raise HympiError(f"no tuned program with a stored profile and a measured default in {store.path}")
    encodings = Counter(p.encoding_names for p in data)
    common = max(encodings, key=lambda names: (encodings[names], names))
    data, more = same_encoding(data, common)
    verdicts, left = cross_validate(data, seeds)
    return verdicts, notes + more + left


def _unmeasured(space: SearchSpace) -> dict[str, tuple[Configuration, Candidate]]:
    """Every configuration of `space` by key, with its candidate (nothing measured)."""
    return {c.key(): (c, Candidate(c.key(), c.label(), c.threads, tuple(space.encode(c))))
            for c in space.configurations()}


def predict_best(predictor: Predictor, features: dict[str, float],
                 space: SearchSpace) -> tuple[Configuration, float]:
    """The configuration of `space` with the highest predicted speedup over its default (within the program's
    thread limit), and that speedup; HympiError when the space encodes configurations otherwise than the predictor
    was trained on."""
    if list(space.feature_names()) != list(predictor.encoding_names):
        raise HympiError(f"the space encodes configurations as {space.feature_names()}, the predictor was trained "
                         f"on {list(predictor.encoding_names)} (tune programs with this space first)")
    configs = _unmeasured(space)
    choices = within_thread_limit([c for _, c in configs.values()], thread_limit(features))
    (best, speedup), *_ = rank(predictor, feature_vector(features), choices)
    return configs[best.key][0], speedup


def constant_pick(training: Sequence[ProgramData], space: SearchSpace,
                  limit: int | None = None) -> Configuration | None:
    """baseline_pick among the configurations of `space` within the program's thread limit (None when no training
    program measured any of them)."""
    configs = _unmeasured(space)
    pick = baseline_pick(training, within_thread_limit([c for _, c in configs.values()], limit))
    return configs[pick.key][0] if pick else None
