"""The communication hierarchy from stored ping-pong records: per level latency, bandwidth and the alpha-beta fit."""

from __future__ import annotations

from dataclasses import dataclass

from hympi.contract import enum_names
from hympi.jsontypes import JsonObject
from hympi.store import Run

PINGPONG_APP = "pingpong"
# Nearest first, as hympi-pingpong's CommLevel enum orders them; unknown names sort after these.
LEVEL_ORDER = enum_names("CommLevel")


@dataclass(frozen=True)
class LevelCurve:
    """One level's representative pair: one-way time and bandwidth per message size, and the Hockney fit."""

    level: str
    pair: tuple[int, int]
    pairs_at_level: int
    sizes: tuple[int, ...]
    latency_us: tuple[float, ...]
    bandwidth_mbs: tuple[float, ...]
    alpha_us: float
    beta_mbs: float

    @property
    def zero_byte_latency_us(self) -> float | None:
        """The measured one-way time of an empty message, None if 0 B was not probed."""
        # not strict: a record may carry sizes without the matching times (_floats reads a malformed list as empty)
        return next((t for s, t in zip(self.sizes, self.latency_us, strict=False) if s == 0), None)

    @property
    def peak_mbs(self) -> float | None:
        """The highest measured bandwidth, None without samples."""
        return max(self.bandwidth_mbs) if self.bandwidth_mbs else None


@dataclass(frozen=True)
class MultiPair:
    """k pairs of one level ping-ponging at once: overhead, slowest and fastest pair, aggregate bandwidth."""

    level: str
    pairs: int
    overhead_us: float
    per_pair_min_mbs: float
    per_pair_max_mbs: float
    aggregate_mbs: float


@dataclass(frozen=True)
class HierarchyProbe:
    """One successful ping-pong run: the levels it found, nearest first, and its multi-pair table."""

    run: Run
    machine_id: int
    virtual_nodes: int
    levels: tuple[LevelCurve, ...]
    multi: tuple[MultiPair, ...]

    @property
    def slug(self) -> str:
        """A file-name-safe identifier for the probe's plot."""
        return f"pingpong-m{self.machine_id}-r{self.run.id if self.run.id is not None else 0}"

    def describe(self) -> str:
        """'4 ranks on 2 virtual nodes' for headings."""
        nodes = f" on {self.virtual_nodes} virtual nodes" if self.virtual_nodes > 1 else " on one node"
        return f"{self.run.ranks} ranks{nodes}"


def level_rank(name: str) -> int:
    """Sort key: a level's place in LEVEL_ORDER (nearest first), unknown names last."""
    return LEVEL_ORDER.index(name) if name in LEVEL_ORDER else len(LEVEL_ORDER)


def _floats(values: object) -> tuple[float, ...]:
    """A JSON list of numbers as floats (empty for anything else)."""
    return tuple(float(v) for v in values) if isinstance(values, list) else ()


def _curve(name: str, data: JsonObject) -> LevelCurve:
    """One entry of metrics['levels'] (as hympi-pingpong writes it) as a LevelCurve."""
    pair = data.get("pair") or [0, 0]
    return LevelCurve(name, (int(pair[0]), int(pair[1])), int(data.get("pairs_at_level", 0)),
                      tuple(int(b) for b in data.get("bytes", [])), _floats(data.get("latency_us")),
                      _floats(data.get("bandwidth_mbs")), float(data.get("alpha_us", 0.0)),
                      float(data.get("beta_mbs", 0.0)))


def probe_of(run: Run, machine_id: int) -> HierarchyProbe | None:
    """The hierarchy a ping-pong run measured; None unless it is an ok run whose record has levels."""
    if run.app != PINGPONG_APP or run.status != "ok" or run.record is None:
        return None
    metrics = run.record.get("metrics") or {}
    levels = metrics.get("levels")
    if not isinstance(levels, dict) or not levels:
        return None
    curves = tuple(sorted((_curve(name, data) for name, data in levels.items()), key=lambda c: level_rank(c.level)))
    multi = tuple(sorted((MultiPair(str(m["level"]), int(m["pairs"]), float(m["overhead_us"]),
                                    float(m["per_pair_min_mbs"]), float(m["per_pair_max_mbs"]),
                                    float(m["aggregate_mbs"])) for m in metrics.get("multi", [])),
                         key=lambda m: (level_rank(m.level), m.pairs)))
    nodes = metrics.get("virtual_nodes", run.record.get("nodes", 1))
    return HierarchyProbe(run, machine_id, int(nodes or 1), curves, multi)


def hierarchy_probes(runs: list[Run], machine_of_sweep: dict[int, int]) -> list[HierarchyProbe]:
    """The probes of every ok ping-pong run, in the order they were recorded."""
    found = (probe_of(r, machine_of_sweep.get(r.sweep_id, 0)) for r in runs)
    return [p for p in found if p is not None]
