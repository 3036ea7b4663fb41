"""Search strategies: which configuration of the space to measure next, given what was measured so far.

`exhaustive` measures every configuration in space order (OTPO's baseline); `random` measures a seeded random
sample without replacement; `guided` fits a surrogate model (a Gaussian process with a Matern kernel on the
configurations' features, targets log(score) normalised) after every measurement and proposes the unmeasured
configuration of highest expected improvement. Every strategy measures the default configuration first (speedups
are relative to it); guided then measures one seeded random configuration of every other layout (ranks x threads x
binding, at most GUIDED_LAYOUTS of them: the layout is the axis that moves most, and a model that never saw a
layout cannot rate it) and seeded random ones up to GUIDED_INITIAL, before the model decides. A
configuration that failed or timed out is given the score worst/2 so the model steers away from its neighbours.
Guided stops at the run budget, or when the best expected improvement falls below `ei_stop` (relative: 0.005 =
0.5 %) once `min_runs` configurations are measured. Every decision is deterministic given the seed and the results.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from hympi.errors import UsageError, unknown_name
from hympi.tune.options import DEFAULT_EI_STOP, STRATEGIES
from hympi.tune.space import Configuration, SearchSpace

# Random configurations guided measures (after the default) before it trusts the model.
GUIDED_INITIAL = 3
# Other layouts guided measures once each (seeded random MPI parameters) before it trusts the model.
GUIDED_LAYOUTS = 8
# Guided never stops on expected improvement before this many configurations are measured.
GUIDED_MIN_RUNS = 6
# A failed configuration scores this fraction of the worst ok score.
FAILED_FRACTION = 0.5


@dataclass(frozen=True)
class Proposal:
    """The next configuration to measure and why (for progress lines): 'default', 'order', 'random', 'seed' or
    'model' with the model's expected improvement (relative)."""

    config: Configuration
    reason: str
    expected_improvement: float | None = None


@dataclass(frozen=True)
class Stop:
    """Why a search ended: every configuration measured, budget spent, or improvement expected below the rule."""

    reason: str


def default_budget(strategy: str, size: int) -> int:
    """--max-runs when not given: the whole space for exhaustive and random, a quarter of it rounded down (at least
    GUIDED_MIN_RUNS, at most the space) for guided: issue 15's target is <= 25 % of the exhaustive runs."""
    if strategy == "guided":
        return min(size, max(GUIDED_MIN_RUNS, size // 4))
    return size


def check_strategy(strategy: str, size: int, max_runs: int, ei_stop: float) -> None:
    """Rejects an unknown strategy, a budget < 1, or a space larger than the budget without guided (UsageError)."""
    if strategy not in STRATEGIES:
        raise UsageError(unknown_name('strategy', STRATEGIES, strategy))
    if max_runs < 1:
        raise UsageError(f"--max-runs must be >= 1, got {max_runs}")
    if not (math.isfinite(ei_stop) and ei_stop >= 0):
        raise UsageError(f"--ei-stop must be a finite fraction >= 0, got {ei_stop:g}")
    if strategy != "guided" and size > max_runs:
        raise UsageError(f"the search space has {size} configurations, more than --max-runs {max_runs}: "
                         f"use --strategy guided or raise --max-runs")


def _order(space: SearchSpace, strategy: str, seed: int) -> list[Configuration]:
    """The measuring order of exhaustive (space order) and random (default first, then a seeded permutation)."""
    configs = list(space.configurations())
    if strategy == "exhaustive":
        return configs
    rest = [c for c in configs if c != space.default]
    rng = np.random.default_rng([seed, 1])
    return [space.default, *(rest[i] for i in rng.permutation(len(rest)))]


def _targets(scores: list[float | None]) -> np.ndarray:
    """log(score) per measurement; a failure gets log(worst ok score * FAILED_FRACTION) (0 when none is ok)."""
    ok = [s for s in scores if s is not None and s > 0]
    floor = math.log(min(ok) * FAILED_FRACTION) if ok else 0.0
    return np.array([math.log(s) if s is not None and s > 0 else floor for s in scores])


def expected_improvement(mean: np.ndarray, std: np.ndarray, best: float) -> np.ndarray:
    """E[max(y - best, 0)] for normal predictions (mean, std) of log(score): a relative improvement."""
    std = np.maximum(std, 1e-12)
    z = (mean - best) / std
    cdf = 0.5 * (1.0 + np.array([math.erf(v / math.sqrt(2.0)) for v in z]))
    pdf = np.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)
    return np.asarray((mean - best) * cdf + std * pdf)


class Search:
    """One strategy over one space: call propose() with every measurement so far; it returns the next Proposal or
    a Stop."""

    def __init__(self, space: SearchSpace, strategy: str, seed: int, max_runs: int,
                 ei_stop: float = DEFAULT_EI_STOP) -> None:
        self.space = space
        self.strategy = strategy
        self.seed = seed
        self.max_runs = max_runs
        self.ei_stop = ei_stop
        self.configs = space.configurations()
        check_strategy(strategy, len(self.configs), max_runs, ei_stop)
        if strategy != "guided":
            self.order = _order(space, strategy, seed)
        else:
            raw = np.array([space.encode(c) for c in self.configs], dtype=float)
            low, high = raw.min(axis=0), raw.max(axis=0)
            span = np.where(high > low, high - low, 1.0)
            # Every feature in [0, 1], so one length-scale prior suits all of them.
            self.features = (raw - low) / span
            self.index = {c: i for i, c in enumerate(self.configs)}

    def propose(self, measured: Mapping[Configuration, float | None]) -> Proposal | Stop:
        """The next configuration to measure given scores so far (None = failed or timed out), or why to stop."""
        done = [c for c in self.configs if c in measured]
        if len(done) >= len(self.configs):
            return Stop(f"all {len(self.configs)} configurations measured")
        if len(done) >= self.max_runs:
            return Stop(f"budget of {self.max_runs} configurations spent")
        if self.space.default not in measured:
            return Proposal(self.space.default, "default")
        if self.strategy != "guided":
            nxt = next(c for c in self.order if c not in measured)
            return Proposal(nxt, "order" if self.strategy == "exhaustive" else "random")
        return self._guided(measured)

    def _guided(self, measured: Mapping[Configuration, float | None]) -> Proposal | Stop:
        """Seeded random configurations until GUIDED_INITIAL are measured besides the default, then the model."""
        open_configs = [c for c in self.configs if c not in measured]
        for config in self._initial_design():
            if config not in measured:
                return Proposal(config, "seed")
        done = [c for c in self.configs if c in measured]
        y = _targets([measured[c] for c in done])
        x = self.features[[self.index[c] for c in done]]
        candidates = self.features[[self.index[c] for c in open_configs]]
        mean, std = self._fit_predict(x, y, candidates)
        ei = expected_improvement(mean, std, float(y.max()))
        best = int(np.argmax(ei))  # first of equals: space order breaks ties
        if len(done) >= GUIDED_MIN_RUNS and float(ei[best]) < self.ei_stop:
            return Stop(f"expected improvement {float(ei[best]) * 100:.2g} % is below --ei-stop "
                        f"{self.ei_stop * 100:g} % after {len(done)} configurations")
        return Proposal(open_configs[best], "model", float(ei[best]))

    def _initial_design(self) -> list[Configuration]:
        """What guided measures after the default before the model decides: one configuration of each other layout
        in seeded random order (at most GUIDED_LAYOUTS), then random ones up to GUIDED_INITIAL; the same for every
        budget, so a larger budget repeats a smaller one's first choices."""
        order = _order(self.space, "random", self.seed)[1:]
        layouts = {(self.space.default.ranks, self.space.default.threads, self.space.default.bind)}
        design: list[Configuration] = []
        for config in order:
            layout = (config.ranks, config.threads, config.bind)
            if layout not in layouts and len(design) < GUIDED_LAYOUTS:
                layouts.add(layout)
                design.append(config)
        design += [c for c in order if c not in design][:max(0, GUIDED_INITIAL - len(design))]
        return design

    def _fit_predict(self, x: np.ndarray, y: np.ndarray, candidates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Mean and standard deviation of log(score) at `candidates` from a Gaussian process fitted on (x, y)."""
        from sklearn.exceptions import ConvergenceWarning
        from sklearn.gaussian_process import GaussianProcessRegressor
        from sklearn.gaussian_process.kernels import ConstantKernel, Matern, WhiteKernel

        dims = x.shape[1]
        kernel = (ConstantKernel(1.0, (1e-2, 1e2)) * Matern(np.ones(dims), (5e-2, 2e1), nu=2.5)
                  + WhiteKernel(1e-2, (1e-6, 1.0)))
        model = GaussianProcessRegressor(kernel, normalize_y=True, n_restarts_optimizer=0,
                                         random_state=self.seed % (2**32))
        with warnings.catch_warnings():
            # Few points and a bounded optimiser: hitting a bound is expected and harmless here.
            warnings.simplefilter("ignore", ConvergenceWarning)
            model.fit(x, y)
            mean, std = model.predict(candidates, return_std=True)
        return np.asarray(mean), np.asarray(std)
