"""The median of what some runs recorded, where a run may have recorded nothing: the statistic the report's tables,
the sweep's tie-break memory and the tuner's scores summarise runs with."""

from __future__ import annotations

import statistics
from collections.abc import Iterable


def median_or_none(values: Iterable[float | None]) -> float | None:
    """Median of the values that are not None; None when there is none (never raises)."""
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None
