"""The HYMPI_RESULT line every app prints, parsed and validated against contract.toml's [result] fields."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hympi.contract import FieldEntry, contract
from hympi.stats.median import median_or_none
from hympi.store import Run

PREFIX = "HYMPI_RESULT "
# A record's rate is larger-is-better for every app and program; a program's lower-is-better figure of merit (a time)
# is recorded as its inverse, in this unit ('1/(s)'), and shown to people as the figure itself (shown_rate).
INVERSE_UNIT = "1/({})"


class ResultError(ValueError):
    """A HYMPI_RESULT line that breaks the contract; the message names the field."""


@dataclass(frozen=True)
class ResultRecord:
    """One app's result, typed as contract.toml declares it (optional fields None when absent).

    `raw` is the JSON object as printed, for storage; the typed attributes are what code reads.
    """

    app: str
    problem: str
    time_s: float
    rate: float
    rate_unit: str
    verified: bool
    metrics: Mapping[str, Any]
    ranks: int
    threads: int
    threads_default: bool
    oversubscribed: bool
    shared_pus: int
    bind: str
    dist: str
    comm_s: float
    comp_s: float
    imbalance: float
    max_rss_mib: float
    node_rss_mib: float
    phases: Mapping[str, Any]
    hosts: tuple[Any, ...]
    nodes: int
    mpi_library: str
    threads_level: str
    topology_hash: str
    binding: tuple[Any, ...]
    timestamp: str
    timed_repetitions: int | None = None
    repetitions_fixed: bool | None = None
    min_time_s: float | None = None
    bytes_moved: float | None = None
    kernel_gbs: float | None = None
    triad_gbs: float | None = None
    triad_source: str | None = None
    bound_gbs: float | None = None
    bound_fraction: float | None = None
    working_set_bytes: float | None = None
    stream_level: str | None = None
    cache_bytes_per_pu: float | None = None
    mpi_cvars: Mapping[str, str | None] | None = None
    io: Mapping[str, Any] | None = None
    membind: str | None = None
    page_placement: Mapping[str, Any] | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False)


def _typed(entry: FieldEntry, value: object) -> object:
    """`value` as the field's Python type; ResultError naming the field when it is not of the declared type."""
    kind = entry.type
    ok = {"string": isinstance(value, str), "boolean": isinstance(value, bool),
          "integer": isinstance(value, int) and not isinstance(value, bool),
          "number": isinstance(value, (int, float)) and not isinstance(value, bool),
          "object": isinstance(value, dict), "array": isinstance(value, list)}.get(kind)
    if entry.enum is not None:
        names = contract().enums[entry.enum]
        if value not in names:
            raise ResultError(f"HYMPI_RESULT field '{entry.name}' must be one of {', '.join(names)}, got {value!r}")
        return value
    if not ok:
        raise ResultError(f"HYMPI_RESULT field '{entry.name}' must be of type {kind}, got {json.dumps(value)}")
    if kind == "number":
        return float(value)  # type: ignore[arg-type]
    if kind == "array":
        return tuple(value)  # type: ignore[arg-type]
    return value


def parse_record(data: object) -> ResultRecord:
    """The typed record of one HYMPI_RESULT object; raises ResultError naming the first missing, undeclared or
    mistyped field."""
    if not isinstance(data, dict):
        raise ResultError(f"HYMPI_RESULT must be a JSON object, got {type(data).__name__}")
    declared = {f.name: f for f in contract().fields}
    for key in data:
        if key not in declared:
            raise ResultError(f"HYMPI_RESULT field '{key}' is not declared in contract.toml")
    values: dict[str, object] = {}
    for entry in contract().fields:
        if entry.name not in data:
            if entry.required:
                raise ResultError(f"HYMPI_RESULT lacks required field '{entry.name}'")
            continue
        values[entry.name] = _typed(entry, data[entry.name])
    return ResultRecord(**values, raw=dict(data))  # type: ignore[arg-type]


def find_result_line(stdout: str) -> str | None:
    """The JSON text of the last HYMPI_RESULT line in `stdout`, or None if there is none."""
    # Searched from the end, not split into lines: a program's output may be tens of MiB of short lines.
    start = stdout.rfind("\n" + PREFIX) + 1
    if start == 0 and not stdout.startswith(PREFIX):
        return None
    end = stdout.find("\n", start)
    return stdout[start + len(PREFIX):end if end >= 0 else len(stdout)]


def parse_result(stdout: str) -> ResultRecord | None:
    """The last HYMPI_RESULT record in `stdout`, validated; None if there is none; ResultError if it is not JSON or
    breaks the contract."""
    text = find_result_line(stdout)
    if text is None:
        return None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ResultError(f"HYMPI_RESULT is not valid JSON: {exc}") from None
    return parse_record(data)


def placement_share(page_placement: Mapping[str, Any] | None) -> float | None:
    """The share of the reported arrays' pages that are on their intended NUMA nodes, over every array of a record's
    `page_placement` (pages never touched count as elsewhere; None without arrays or pages)."""
    if not page_placement:
        return None
    pages = on_intended = 0.0
    for summary in page_placement.values():
        if isinstance(summary, Mapping):
            pages += float(summary.get("pages", 0) or 0)
            on_intended += float(summary.get("on_intended", 0) or 0)
    return on_intended / pages if pages > 0 else None


def run_placement_share(run: Run) -> float | None:
    """The share of the pages of the arrays a run reported (page_placement) on their intended NUMA nodes, None when
    it reported none."""
    placement = run.record.get("page_placement") if run.record else None
    return placement_share(placement) if isinstance(placement, dict) else None


def runs_rate_unit(runs: Iterable[Run]) -> str:
    """The unit of the rates of `runs` (one app configuration's): the last that recorded one says it; '' for none."""
    units = [str(r.record.get("rate_unit", "")) for r in runs if r.record and r.record.get("rate_unit")]
    return units[-1] if units else ""


def figure_unit(rate_unit: str) -> str | None:
    """The unit of the lower-is-better figure of merit whose inverse a rate in `rate_unit` is ('s' for '1/(s)'),
    None for a rate that is itself the figure."""
    head, _, tail = INVERSE_UNIT.partition("{}")
    return rate_unit[len(head):-len(tail)] if rate_unit.startswith(head) and rate_unit.endswith(tail) else None


def shown_figure(rate: float, rate_unit: str) -> tuple[float, str]:
    """A run's rate and its unit as people compare them: (250, 'steps/s') as they are, a lower-is-better figure of
    merit as the figure ((0.13, 's'), not (7.692, '1/(s)'))."""
    figure = figure_unit(rate_unit)
    if figure is not None and rate > 0:
        return 1.0 / rate, figure
    return rate, rate_unit


def shown_spread(rates: Sequence[float], rate_unit: str) -> tuple[float | None, float | None, float | None]:
    """Min, median and max of runs' rates in `rate_unit` as people read them: of the rates, or of a lower-is-better
    figure of merit, recorded as its inverse (figure_unit), of the figures themselves (the median time, not 1 / the
    median rate, which for an even count is the harmonic mean of the middle two times; min the fastest run);
    Nones for no rates."""
    values = list(rates) if figure_unit(rate_unit) is None else [1.0 / r for r in rates]
    return min(values, default=None), median_or_none(values), max(values, default=None)


def figure_text(value: float, unit: str) -> str:
    """A figure as hympi prints it: 4 significant digits, then its unit ('250 steps/s', '0.13 s', '7' for none)."""
    return f"{value:.4g} {unit}".rstrip()


def shown_median(rates: Sequence[float], rate_unit: str) -> str:
    """The median of shown_spread with the figure's unit: '250 steps/s', '0.13 s'; '-' for no rates."""
    value = shown_spread(rates, rate_unit)[1]
    return "-" if value is None else figure_text(value, figure_unit(rate_unit) or rate_unit)


def shown_rate(rate: float, rate_unit: str) -> str:
    """shown_figure as text: '250 steps/s', '0.13 s'."""
    return figure_text(*shown_figure(rate, rate_unit))
