"""A model of hympi-blades' time per iteration that explains the MPI / hybrid ratio (seed 000 §4.4, Figs. 7-8):

    t_iter = t_comp + t_group_halo + t_blade_exchange

each term fitted on its own measured phase (metrics comp_iteration_s, group_halo_iteration_s,
blade_exchange_iteration_s: per iteration, max over ranks) by non-negative least squares (report.model.nnls), with
W = N1 x N2 workers on C cores (hwloc) and the oversubscription factor s = max(1, W / C):

    t_comp  = a1 x share x s  +  a2 x g(T)  +  a3 x g(T) x (s - 1)
        share = ceil(B / N1) x I x ceil(J / N2) x K cells of the busiest worker; g(T) = 0 for T = 1 OpenMP thread per
        rank, else 1 + log2(T): the fork/join and barrier per parallel region (report.model.g_threads), dearer when
        the threads share cores with other workers;
    t_group_halo     = b1 x m_halo x s   +  b2 x halo bytes / min(W, C)
        m_halo = messages per rank and iteration in the J split (0 for openmp or N2 = 1, 1 for N2 = 2, else 2);
    t_blade_exchange = c1 x m_blade x s  +  c2 x blade bytes / min(W, C)
        m_blade = 2 neighbour messages per rank and iteration when N1 > 1, else 0.

Measured values are medians over a layout's ok timed runs. The relative error is (model - measured) / measured of
t_iter for each layout, in sample (every layout takes part in the fit).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from hympi.report.model import g_threads, nnls


@dataclass(frozen=True)
class Observation:
    """One layout's medians: the sizes it ran, its phases per iteration (s) and the bytes it moved per iteration."""

    n1: int
    n2: int
    inner: str
    blades: int
    grid: tuple[int, int, int]
    cores: int
    iteration_s: float
    comp_s: float
    halo_s: float
    blade_s: float
    halo_bytes: float
    blade_bytes: float

    @property
    def threads(self) -> int:
        """OpenMP threads per rank: N2 in the hybrid mode, else 1."""
        return self.n2 if self.inner == "openmp" else 1

    @property
    def workers(self) -> int:
        """N1 x N2 (ranks x threads either way)."""
        return self.n1 * self.n2

    @property
    def oversubscription(self) -> float:
        """max(1, workers / cores)."""
        return max(1.0, self.workers / max(1, self.cores))

    @property
    def share(self) -> float:
        """Cells of the busiest worker: ceil(B / N1) blades of I x ceil(J / N2) x K."""
        i, j, k = self.grid
        return float(math.ceil(self.blades / self.n1) * i * math.ceil(j / self.n2) * k)

    @property
    def halo_messages(self) -> float:
        """Group-halo messages per rank and iteration (the J split of the MPI mode)."""
        if self.inner != "mpi" or self.n2 <= 1:
            return 0.0
        return 1.0 if self.n2 == 2 else 2.0

    @property
    def blade_messages(self) -> float:
        """Blade-exchange messages per rank and iteration: two neighbours once there are two groups."""
        return 2.0 if self.n1 > 1 else 0.0

    @property
    def parallel(self) -> float:
        """Effective parallelism min(workers, cores)."""
        return float(min(self.workers, max(1, self.cores)))


Column = tuple[str, Callable[[Observation], float]]


@dataclass(frozen=True)
class Term:
    """One term of the model: the phase it is fitted on and its explanatory columns."""

    name: str
    phase: Callable[[Observation], float]
    columns: tuple[Column, ...]


TERMS: tuple[Term, ...] = (
    Term("t_comp", lambda o: o.comp_s, (
        ("share x s", lambda o: o.share * o.oversubscription),
        ("g(T)", lambda o: g_threads(o.threads)),
        ("g(T) x (s-1)", lambda o: g_threads(o.threads) * (o.oversubscription - 1.0)))),
    Term("t_group_halo", lambda o: o.halo_s, (
        ("m_halo x s", lambda o: o.halo_messages * o.oversubscription),
        ("halo bytes / min(W,C)", lambda o: o.halo_bytes / o.parallel))),
    Term("t_blade_exchange", lambda o: o.blade_s, (
        ("m_blade x s", lambda o: o.blade_messages * o.oversubscription),
        ("blade bytes / min(W,C)", lambda o: o.blade_bytes / o.parallel))),
)
# The part of t_comp that is OpenMP overhead (the g(T) columns): what hybrid pays and MPI does not.
OPENMP_COLUMNS = ("g(T)", "g(T) x (s-1)")
MIN_OBSERVATIONS = 3


@dataclass(frozen=True)
class TermFit:
    """One fitted term: a coefficient per column (>= 0)."""

    term: Term
    coefficients: tuple[float, ...]

    def value(self, obs: Observation, only: tuple[str, ...] | None = None) -> float:
        """The term's model time for a layout (only the named columns when `only` is given)."""
        return sum(c * f(obs) for (name, f), c in zip(self.term.columns, self.coefficients, strict=True)
                   if only is None or name in only)


@dataclass(frozen=True)
class Prediction:
    """A layout's measured and modelled time per iteration, each term, and the relative error of the total."""

    obs: Observation
    terms: tuple[float, ...]
    openmp_overhead: float

    @property
    def model(self) -> float:
        """t_comp + t_group_halo + t_blade_exchange (s per iteration)."""
        return sum(self.terms)

    @property
    def error(self) -> float:
        """(model - measured) / measured; inf when nothing was measured."""
        return relative_error(self.model, self.obs.iteration_s)


@dataclass(frozen=True)
class BladesModel:
    """The fitted terms and the prediction of every observed layout."""

    fits: tuple[TermFit, ...]
    predictions: tuple[Prediction, ...]

    @property
    def worst(self) -> float:
        """The largest |relative error| over the layouts."""
        return max((abs(p.error) for p in self.predictions), default=math.inf)

    def predict(self, obs: Observation) -> Prediction:
        """The model's terms for a layout (measured or not)."""
        values = tuple(f.value(obs) for f in self.fits)
        return Prediction(obs, values, self.fits[0].value(obs, OPENMP_COLUMNS))


def relative_error(model: float, measured: float) -> float:
    """(model - measured) / measured; inf for a measured value <= 0 or not finite."""
    if not (math.isfinite(measured) and measured > 0):
        return math.inf
    return (model - measured) / measured


def fit_term(term: Term, observations: list[Observation]) -> TermFit:
    """The term's non-negative coefficients from the observations (ValueError for none)."""
    if not observations:
        raise ValueError(f"{term.name}: no observations to fit")
    a = np.array([[f(o) for _, f in term.columns] for o in observations], dtype=float)
    y = np.array([term.phase(o) for o in observations], dtype=float)
    return TermFit(term, tuple(float(c) for c in nnls(a, y)))


def fit(observations: list[Observation]) -> BladesModel | None:
    """Every term fitted and every layout predicted; None with fewer than MIN_OBSERVATIONS layouts."""
    if len(observations) < MIN_OBSERVATIONS:
        return None
    model = BladesModel(tuple(fit_term(t, observations) for t in TERMS), ())
    return BladesModel(model.fits, tuple(model.predict(o) for o in observations))


def _ms(seconds: float) -> str:
    """'0.123 ms'."""
    return f"{seconds * 1e3:.3g} ms"


def why_sentence(model: BladesModel, n2: int, ratio: float | None, low: float | None, high: float | None) -> str:
    """One sentence for level-2 size `n2`: whether hybrid wins (MPI / hybrid time ratio > 1 with its interval) and
    why, from the fitted terms averaged over the N1 measured in both modes (group halo and the extra blade messages
    of N1 x N2 ranks vs the OpenMP overhead)."""
    pairs = [(h, m) for h in model.predictions for m in model.predictions
             if h.obs.inner == "openmp" and m.obs.inner == "mpi" and h.obs.n2 == m.obs.n2 == n2
             and h.obs.n1 == m.obs.n1]
    if not pairs:
        return f"N2 = {n2}: not measured in both modes."
    halo = float(np.mean([m.terms[1] for _, m in pairs]))
    blade_extra = float(np.mean([m.terms[2] - h.terms[2] for h, m in pairs]))
    omp = float(np.mean([h.openmp_overhead for h, _ in pairs]))
    mpi_cost = halo + blade_extra
    if ratio is None or low is None or high is None:
        verdict = "no ratio (too few runs)"
    elif low <= 1.0 <= high:
        verdict = f"hybrid and MPI are indistinguishable (MPI / hybrid {ratio:.2f}, CI {low:.2f}-{high:.2f})"
    elif ratio > 1.0:
        verdict = f"hybrid wins (MPI / hybrid {ratio:.2f}, CI {low:.2f}-{high:.2f})"
    else:
        verdict = f"hybrid loses (MPI / hybrid {ratio:.2f}, CI {low:.2f}-{high:.2f})"
    if n2 == 1:
        return (f"N2 = 1: {verdict}; both modes run the same decomposition (no level 2: no group halo, one thread), "
                "so only noise can separate them.")
    side = "more" if mpi_cost > omp else "less"
    return (f"N2 = {n2}: {verdict}; in the model the MPI mode pays {_ms(halo)} of group halo and "
            f"{_ms(blade_extra)} of extra blade-exchange messages per iteration, {side} than the {_ms(omp)} of "
            f"OpenMP fork/join overhead the hybrid mode pays, so the model has "
            f"{'hybrid' if mpi_cost > omp else 'MPI'} ahead by {_ms(abs(mpi_cost - omp))}.")
