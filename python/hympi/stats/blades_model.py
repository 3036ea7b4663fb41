"""A model of hympi-blades' time per iteration that explains the MPI / hybrid ratio (Jin et al., "High performance
computing using MPI and OpenMP on multi-core parallel systems", §4.4, Figs. 7-8):

    t_iter = t_comp + t_group_halo + t_blade_exchange

with W = N1 x N2 workers on C cores (hwloc), s = max(1, W / C) the oversubscription factor, and

    t_comp           = a1 x share  +  a2 x g(T)  +  a3 x g(T) x (s - 1)
    t_group_halo     = b1 x m_halo   +  b2 x wait x [m_halo > 0]   +  b3 x halo bytes / min(W, C)
    t_blade_exchange = c1 x m_blade  +  c2 x wait x [m_blade > 0]  +  c3 x g(T)  +  c4 x g(T) x (s - 1)
                       +  c5 x blade bytes / min(W, C)

  share = ceil(B / N1) x I x ceil(J / N2) x K cells of the busiest worker (its own computation);
  g(T) = 0 for T = 1 OpenMP thread per rank, else 1 + log2(T) (stats.model.g_threads): fork/join and barriers,
         dearer when the threads share cores with other workers (x (s - 1)); in the blade exchange it is the barrier
         the threads meet before one of them exchanges;
  wait = share x (s - 1): an oversubscribed worker waits in its first exchange while the workers sharing its core
         compute (the measured phase then holds that time);
  m_halo = group-halo messages per rank and iteration (0 for openmp or N2 = 1, 1 for N2 = 2, else 2);
  m_blade = 2 blade-exchange messages per rank and iteration once N1 > 1, else 0.

The coefficients (all >= 0) come from one non-negative least-squares problem (stats.model.nnls) with, per layout,
a row per phase (the term's columns against the measured phase: metrics comp_iteration_s, group_halo_iteration_s,
blade_exchange_iteration_s, per iteration, max over ranks) and a row for the total (every column against
iteration_s, weight TOTAL_WEIGHT). Each layout's rows are divided by its measured t_iter, so every layout counts
alike (relative errors, not seconds). The total rows are needed because the phases are maxima over ranks: under
oversubscription one rank waits in the halo while another waits in the blade exchange, and the maxima overlap.
Measured values are medians over a layout's ok timed runs; the relative error is (model - measured) / measured of
t_iter, in sample (every layout takes part in the fit).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from hympi.stats.model import g_threads, nnls


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


def _g(o: Observation) -> float:
    """g(T) of the layout's threads per rank."""
    return g_threads(o.threads)


def _g_shared(o: Observation) -> float:
    """g(T) x (s - 1)."""
    return g_threads(o.threads) * (o.oversubscription - 1.0)


def _wait(o: Observation) -> float:
    """share x (s - 1): what the workers sharing a core compute while this one waits."""
    return o.share * (o.oversubscription - 1.0)


TERMS: tuple[Term, ...] = (
    Term("t_comp", lambda o: o.comp_s, (
        ("share", lambda o: o.share), ("g(T)", _g), ("g(T) x (s-1)", _g_shared))),
    Term("t_group_halo", lambda o: o.halo_s, (
        ("m_halo", lambda o: o.halo_messages),
        ("wait", lambda o: _wait(o) if o.halo_messages else 0.0),
        ("halo bytes / min(W,C)", lambda o: o.halo_bytes / o.parallel))),
    Term("t_blade_exchange", lambda o: o.blade_s, (
        ("m_blade", lambda o: o.blade_messages),
        ("wait", lambda o: _wait(o) if o.blade_messages else 0.0),
        ("g(T)", _g), ("g(T) x (s-1)", _g_shared),
        ("blade bytes / min(W,C)", lambda o: o.blade_bytes / o.parallel))),
)
# The columns that are OpenMP overhead (the g(T) columns): what hybrid pays and MPI does not.
OPENMP_COLUMNS = ("g(T)", "g(T) x (s-1)")
# Weight of each layout's total-time row against its phase rows.
TOTAL_WEIGHT = 3.0
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
        return Prediction(obs, values, sum(f.value(obs, OPENMP_COLUMNS) for f in self.fits))


def relative_error(model: float, measured: float) -> float:
    """(model - measured) / measured; inf for a measured value <= 0 or not finite."""
    if not (math.isfinite(measured) and measured > 0):
        return math.inf
    return (model - measured) / measured


def fit(observations: list[Observation], terms: tuple[Term, ...] = TERMS) -> BladesModel | None:
    """Every term fitted (phase rows and total rows, relative, one NNLS) and every layout predicted; None with fewer
    than MIN_OBSERVATIONS layouts or a layout without a measured time > 0."""
    if len(observations) < MIN_OBSERVATIONS or any(not o.iteration_s > 0 for o in observations):
        return None
    width = sum(len(t.columns) for t in terms)
    rows: list[list[float]] = []
    target: list[float] = []
    for o in observations:
        total = [0.0] * width
        offset = 0
        for term in terms:
            row = [0.0] * width
            for j, (_, column) in enumerate(term.columns):
                row[offset + j] = total[offset + j] = column(o) / o.iteration_s
            rows.append(row)
            target.append(term.phase(o) / o.iteration_s)
            offset += len(term.columns)
        rows.append([TOTAL_WEIGHT * v for v in total])
        target.append(TOTAL_WEIGHT)
    x = nnls(np.array(rows, dtype=float), np.array(target, dtype=float))
    fits = []
    offset = 0
    for term in terms:
        fits.append(TermFit(term, tuple(float(c) for c in x[offset:offset + len(term.columns)])))
        offset += len(term.columns)
    model = BladesModel(tuple(fits), ())
    return BladesModel(model.fits, tuple(model.predict(o) for o in observations))
