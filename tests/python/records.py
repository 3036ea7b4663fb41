"""A complete, contract-valid HYMPI_RESULT record for tests that need one (override any field)."""

from __future__ import annotations

from typing import Any


def full_record(**overrides: Any) -> dict[str, Any]:
    """Every required field of contract.toml's [result] with a plausible value, then `overrides`."""
    record: dict[str, Any] = {
        "app": "rb3d", "problem": "8^3", "time_s": 1.0, "rate": 2.0, "rate_unit": "GFLOP/s", "verified": True,
        "metrics": {}, "ranks": 1, "threads": 1, "threads_default": False, "oversubscribed": False, "shared_pus": 0,
        "bind": "core", "dist": "compact", "comm_s": 0.1, "comp_s": 0.9, "imbalance": 1.0, "max_rss_mib": 10.0,
        "node_rss_mib": 10.0, "phases": {}, "hosts": ["h"], "nodes": 1, "mpi_library": "MPI",
        "threads_level": "funneled", "topology_hash": "x", "binding": [], "timestamp": "2026-01-01T00:00:00Z"}
    record.update(overrides)
    return record
