"""The layout model of one app group: hympi.stats.model fitted to the group's measured layouts of one binding and
memory policy, and the paragraph the report prints about it."""

from __future__ import annotations

from hympi.report.analysis import AppGroup
from hympi.stats.model import ModelFit, fit_layouts
from hympi.store.db import DEFAULT_MEMBIND


def _pick_bind(group: AppGroup) -> tuple[str, str] | None:
    """The binding and memory policy with the most distinct measured (ranks, threads) layouts (ties: the default
    memory policy, then alphabetical)."""
    seen: dict[tuple[str, str], set[tuple[int, int]]] = {}
    for s in group.layouts:
        if s.rate_median is not None:
            seen.setdefault((s.bind, s.membind), set()).add((s.ranks, s.threads))
    if not seen:
        return None
    return sorted(seen, key=lambda b: (-len(seen[b]), b[0], b[1] != DEFAULT_MEMBIND, b[1]))[0]


def fit_model(group: AppGroup, machine_cores: int | None = None) -> ModelFit:
    """Fits the model to the group's measured layouts (one binding and memory policy) and predicts the other splits
    of the measured core counts and of `machine_cores`; with fewer than 3 distinct layouts returns no coefficients
    and says so."""
    picked = _pick_bind(group)
    unit = group.rate_unit
    if picked is None:
        return ModelFit("", unit, None, (), None, "", "no layout produced a rate, so there is nothing to fit",
                        DEFAULT_MEMBIND)
    bind, membind = picked
    # The group's LayoutStats already hold each layout's median over its ok, non-warm-up runs.
    measured = {(s.ranks, s.threads): s.rate_median for s in group.layouts
                if (s.bind, s.membind) == picked and s.rate_median is not None}
    return fit_layouts(measured, bind, membind, unit, machine_cores)


def policy(fit: ModelFit) -> str:
    """'core', or 'core, membind interleave' under another memory policy than the default: what was fitted."""
    return fit.bind if fit.membind == DEFAULT_MEMBIND else f"{fit.bind}, membind {fit.membind}"


def describe(fit: ModelFit) -> str:
    """The model and its error in one paragraph (or why there is no model)."""
    if fit.coefficients is None:
        return f"Model: {fit.note}."
    a, b, c = fit.coefficients
    per = f"s per {fit.unit.removesuffix('/s')}" if fit.unit.endswith("/s") else "s per unit of work"
    measured = sum(1 for r in fit.rows if r.measured is not None)
    text = (f"Model t(R, T) = a / (R x T) + b x f(R) + c x g(T), f(R) = 1 + log2 R and g(T) = 1 + log2 T (0 for "
            f"one rank or thread), t = 1 / rate, fitted by non-negative least squares to the {measured} measured "
            f"layouts with bind {policy(fit)}: a = {a:.4g}, b = {b:.4g}, c = {c:.4g} ({per}). "
            f"{fit.error_kind.capitalize()} error of the time: {100 * (fit.error or 0.0):.1f} % (mean absolute).")
    return f"{text} Note: {fit.note}." if fit.note else text
