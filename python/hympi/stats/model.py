"""A three-term performance model fitted to the measured layouts of one app group (report.model picks them),
predicting the layouts that were not run:

    t(R, T) = a / (R x T)  +  b x f(R)  +  c x g(T),      a, b, c >= 0 (non-negative least squares)

t is the time per unit of work, 1 / rate, so layouts that ran different numbers of iterations compare alike.
  a / cores  computation that divides over every core (t_comp);
  f(R) = 0 for one rank, else 1 + log2(R): one rank exchanges nothing; from two ranks on every rank pays its halo
             messages (the 1) and each reduction of the timed region takes log2(R) tree steps (t_comm);
  g(T) = 0 for one thread, else 1 + log2(T): one thread needs no fork/join; from two threads on every parallel
             region pays a fork/join (the 1) and a barrier of log2(T) tree steps (t_sync).
Measured times are medians over the ok timed runs (warm-ups excluded). The error printed is the leave-one-out
relative error of the time when at least 4 layouts were measured, else the in-sample error (an exact fit with 3).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

TERMS = ("t_comp", "t_comm", "t_sync")
MIN_LAYOUTS = 3

FloatArray = npt.NDArray[np.float64]


def f_ranks(ranks: int) -> float:
    """The communication shape: 0 for one rank, else 1 + log2(ranks)."""
    return 0.0 if ranks <= 1 else 1.0 + math.log2(ranks)


def g_threads(threads: int) -> float:
    """The synchronisation shape: 0 for one thread, else 1 + log2(threads)."""
    return 0.0 if threads <= 1 else 1.0 + math.log2(threads)


def design(layouts: list[tuple[int, int]]) -> FloatArray:
    """The model's columns [1/cores, f(R), g(T)] for each (ranks, threads)."""
    return np.array([[1.0 / (r * t), f_ranks(r), g_threads(t)] for r, t in layouts], dtype=float).reshape(-1, 3)


def nnls(a: FloatArray, y: FloatArray, max_iter: int = 100) -> FloatArray:
    """min ||a x - y|| subject to x >= 0 (Lawson-Hanson active set); raises ValueError on mismatched shapes."""
    m, n = a.shape
    if y.shape != (m,):
        raise ValueError(f"nnls: {m} rows but {y.shape} right-hand side")
    scale: FloatArray = np.linalg.norm(a, axis=0)
    scale[scale == 0] = 1.0
    a = a / scale  # unit columns, so one tolerance fits every term
    tol = 1e-12 * max(1.0, float(np.linalg.norm(y)))
    x = np.zeros(n)
    active = np.zeros(n, dtype=bool)  # the passive set P: coefficients free to be positive
    for _ in range(max_iter):
        w = a.T @ (y - a @ x)
        free = ~active & (w > tol)
        if not free.any():
            break
        active[int(np.argmax(np.where(free, w, -np.inf)))] = True
        while True:
            z = np.zeros(n)
            z[active] = np.linalg.lstsq(a[:, active], y, rcond=None)[0]
            if (z[active] > 0).all():
                break
            bad = active & (z <= 0)
            denom = x[bad] - z[bad]
            alpha = float(np.min(np.divide(x[bad], denom, out=np.zeros_like(denom), where=denom > 0)))
            x = x + alpha * (z - x)
            active &= x > tol
            x[~active] = 0.0
        x = z
    return x / scale


@dataclass(frozen=True)
class ModelRow:
    """One layout: measured (None if not run) and predicted rate, and the relative errors of the time."""

    ranks: int
    threads: int
    measured: float | None
    predicted: float | None
    error: float | None
    loo_error: float | None

    @property
    def label(self) -> str:
        """'2x1'."""
        return f"{self.ranks}x{self.threads}"


@dataclass(frozen=True)
class ModelFit:
    """The model fitted to the layouts of one binding and memory policy (`bind`, `membind`) whose rates are in
    `unit`, or why there is none (coefficients None, `note` says why)."""

    bind: str
    unit: str
    coefficients: tuple[float, float, float] | None
    rows: tuple[ModelRow, ...]
    error: float | None
    error_kind: str
    note: str
    membind: str

    def predict(self, ranks: int, threads: int) -> float | None:
        """Predicted time per unit of work for a layout, None without a fit."""
        if self.coefficients is None:
            return None
        return float(design([(ranks, threads)])[0] @ np.array(self.coefficients))


def _identified(layouts: list[tuple[int, int]]) -> tuple[bool, bool]:
    """Whether some layout has more than one rank (t_comm can be fitted) and more than one thread (t_sync)."""
    return any(r > 1 for r, _ in layouts), any(t > 1 for _, t in layouts)


def _fit(points: dict[tuple[int, int], float]) -> FloatArray:
    """NNLS coefficients for measured times per (ranks, threads)."""
    keys = sorted(points)
    return nnls(design(keys), np.array([points[k] for k in keys]))


def _predictable(layout: tuple[int, int], comm: bool, sync: bool) -> bool:
    """A layout can be predicted only when every term it needs was identified by the measured ones."""
    return (layout[0] == 1 or comm) and (layout[1] == 1 or sync)


def _splits(cores: int) -> list[tuple[int, int]]:
    """Every ranks x threads split of `cores`."""
    return [(r, cores // r) for r in range(1, cores + 1) if cores % r == 0]


def fit_layouts(measured: dict[tuple[int, int], float], bind: str, membind: str, unit: str,
                machine_cores: int | None = None) -> ModelFit:
    """Fits the model to the measured rates per (ranks, threads) of one binding and memory policy and predicts the
    other splits of the measured core counts and of `machine_cores`; with fewer than 3 distinct layouts returns no
    coefficients and says so."""
    times = {k: 1.0 / v for k, v in measured.items()}
    if len(times) < MIN_LAYOUTS:
        names = ", ".join(f"{r}x{t}" for r, t in sorted(times))
        return ModelFit(bind, unit, None, (), None, "",
                        f"only {len(times)} layout(s) measured ({names}): too few to fit a 3-term model, so no "
                        "layout is predicted", membind)
    coef = _fit(times)
    comm, sync = _identified(list(times))
    loo: dict[tuple[int, int], float] = {}
    if len(times) >= 4:
        for key in times:
            rest = {k: v for k, v in times.items() if k != key}
            if _predictable(key, *_identified(list(rest))):
                pred = float(design([key])[0] @ _fit(rest))
                loo[key] = (pred - times[key]) / times[key]
    notes = []
    if not comm:
        notes.append("no layout with more than one rank was measured, so t_comm is unknown and no multi-rank "
                     "layout is predicted")
    if not sync:
        notes.append("no layout with more than one thread was measured, so t_sync is unknown and no multi-thread "
                     "layout is predicted")
    if loo:
        errors = [abs(e) for e in loo.values()]
        error, kind = statistics.mean(errors), "leave-one-out"
        skipped = [f"{r}x{t}" for r, t in sorted(times) if (r, t) not in loo]
        if skipped:
            notes.append(f"{', '.join(skipped)} cannot be predicted without itself (the only layout of its kind), "
                         "so the leave-one-out error leaves it out")
    else:
        errors = [abs(float(design([k])[0] @ coef) - v) / v for k, v in times.items()]
        error, kind = statistics.mean(errors), "in-sample"
        if len(times) == MIN_LAYOUTS:
            notes.append("3 layouts for 3 terms: the fit can pass through them, so the in-sample error says little "
                         "about the predictions")
    cores = {r * t for r, t in times} | ({machine_cores} if machine_cores and machine_cores > 0 else set())
    wanted = sorted(set(times) | {s for c in cores for s in _splits(c) if _predictable(s, comm, sync)},
                    key=lambda k: (k[0] * k[1], k[1]))
    rows = []
    for key in wanted:
        t_pred = float(design([key])[0] @ coef)
        pred_rate = 1.0 / t_pred if t_pred > 0 else None
        t_meas = times.get(key)
        err = (t_pred - t_meas) / t_meas if t_meas is not None else None
        rows.append(ModelRow(key[0], key[1], measured.get(key), pred_rate, err, loo.get(key)))
    return ModelFit(bind, unit, (float(coef[0]), float(coef[1]), float(coef[2])), tuple(rows), error, kind,
                    "; ".join(notes), membind)
