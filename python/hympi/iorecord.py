"""HYMPI_RESULT's "io" object (contract.toml [result.field.io]), typed: the I/O options a run was given and what its
checkpoints, restart and snapshots cost.

The frame writes IoSession::to_json(): the IoOptions (checkpoint, checkpoint_every, restart, snapshot,
snapshot_every, and the HDF5 options under "h5": sieve_bytes, alignment, chunk, transfer, slab_bytes, hints) next to
the totals (checkpoints, checkpoint_s, checkpoint_bytes, snapshots, snapshot_s, snapshot_bytes, restart_s,
restart_bytes, restart_step) and the solver's steps counted apart by whether a checkpoint was being written during
them (steps_writing, steps_writing_s, steps_writing_excess_s: their time beyond the median of the quiet steps just
before each; steps_quiet, steps_quiet_s). Every app with checkpoints reports it, with zero totals when it was asked
for no I/O (IoRecord.any). Reading is lenient about nesting ("options" / "totals" objects are looked into too) and about
absent keys (zero, or -1 for restart_step); a value of the wrong type counts as absent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# Bytes per GB (10^9, as every GB/s in hympi).
GB = 1e9


def _number(data: Mapping[str, Any], key: str, default: float = 0.0) -> float:
    """data[key] as a float when it is a JSON number (not a bool), else `default`."""
    value = data.get(key)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else default


def _flat(data: Mapping[str, Any]) -> dict[str, Any]:
    """The io object with its "options" and "totals" objects (if the frame nests them) merged into the top level."""
    out: dict[str, Any] = {}
    for part in ("options", "totals"):
        nested = data.get(part)
        if isinstance(nested, dict):
            out.update(nested)
    out.update({k: v for k, v in data.items() if k not in ("options", "totals")})
    return out


@dataclass(frozen=True)
class H5Settings:
    """The HDF5 options of a run that bear on bandwidth: sieve buffer, alignment, collective or independent
    transfers, MPI-IO hints, chunking (as H5Options::to_json records them)."""

    sieve_bytes: int = 0
    alignment: int = 0
    collective: bool = True
    hints: tuple[tuple[str, str], ...] = ()
    chunked: bool = False
    slab_bytes: int = 0  # bytes packed per transfer (0: not recorded)

    def label(self) -> str:
        """'sieve 4 MiB, align 4 KiB, collective, slab 8 MiB, cb_buffer_size=16777216' ('sieve default' for HDF5's
        64 KiB; no slab where the record has none)."""
        parts = [f"sieve {_size(self.sieve_bytes)}" if self.sieve_bytes else "sieve default",
                 f"align {_size(self.alignment)}" if self.alignment else "no alignment",
                 "collective" if self.collective else "independent"]
        if self.slab_bytes:
            parts.append(f"slab {_size(self.slab_bytes)}")
        if self.chunked:
            parts.append("chunked")
        parts += [f"{k}={v}" for k, v in self.hints]
        return ", ".join(parts)


def _size(n: int) -> str:
    """A byte count in the largest binary unit that divides it ('4 MiB', '4096 B' stays '4 KiB')."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"


def _hints(value: object) -> tuple[tuple[str, str], ...]:
    """MPI-IO hints as (key, value) pairs, from [[k, v], ...] or {k: v} (either is how a list of pairs may print)."""
    if isinstance(value, dict):
        return tuple((str(k), str(v)) for k, v in value.items())
    if isinstance(value, list):
        return tuple((str(p[0]), str(p[1])) for p in value if isinstance(p, (list, tuple)) and len(p) == 2)
    return ()


def h5_settings(data: Mapping[str, Any]) -> H5Settings:
    """The H5Settings of an io object's "h5" (or of its top level when the frame flattens them)."""
    h5 = data.get("h5")
    src: Mapping[str, Any] = h5 if isinstance(h5, dict) else data
    collective = src.get("collective", src.get("transfer", "collective") != "independent")
    chunk = src.get("chunk")
    return H5Settings(int(_number(src, "sieve_bytes")), int(_number(src, "alignment")),
                      collective if isinstance(collective, bool) else True, _hints(src.get("hints")),
                      isinstance(chunk, list) and any(isinstance(c, int) and c > 0 for c in chunk),
                      int(_number(src, "slab_bytes")))


@dataclass(frozen=True)
class IoRecord:
    """One run's "io": its checkpoint cadence and HDF5 settings, and the seconds and bytes of its checkpoints
    (written), restart (read) and snapshots; restart_step is -1 when the run did not restart."""

    checkpoint_every: int
    restarted: bool
    h5: H5Settings
    checkpoints: int
    checkpoint_s: float
    checkpoint_bytes: float
    snapshots: int
    snapshot_s: float
    snapshot_bytes: float
    restart_s: float
    restart_bytes: float
    restart_step: int
    steps_writing: int | None = None  # None: a record from before the steps were counted
    steps_writing_excess_s: float = 0.0

    @property
    def checkpoint_cost_s(self) -> float | None:
        """What the checkpoints cost the solver, measured within the run: the solver thread's own seconds on them and
        what its steps beside the background writer took beyond the quiet steps' median (None without a checkpoint or
        from a record without the step counts)."""
        if not self.checkpoints or self.steps_writing is None:
            return None
        return self.checkpoint_s + self.steps_writing_excess_s

    @property
    def write_gbs(self) -> float | None:
        """Checkpoint write bandwidth in GB/s (bytes over the seconds of every checkpoint), None without one."""
        return self.checkpoint_bytes / self.checkpoint_s / GB if self.checkpoints and self.checkpoint_s > 0 else None

    @property
    def read_gbs(self) -> float | None:
        """Restart read bandwidth in GB/s, None when the run did not restart."""
        return self.restart_bytes / self.restart_s / GB if self.restart_step >= 0 and self.restart_s > 0 else None

    @property
    def any(self) -> bool:
        """Whether the run wrote or read anything."""
        return self.checkpoints > 0 or self.snapshots > 0 or self.restart_step >= 0


def io_record(record: Mapping[str, Any] | None) -> IoRecord | None:
    """The typed "io" of a HYMPI_RESULT record, None when the record has none (an app without checkpoints, or a run
    that asked for no I/O)."""
    raw = record.get("io") if record is not None else None
    if not isinstance(raw, dict):
        return None
    data = _flat(raw)
    restart_path = data.get("restart", data.get("restart_path"))
    steps = data.get("steps_writing")
    return IoRecord(checkpoint_every=int(_number(data, "checkpoint_every")),
                    restarted=isinstance(restart_path, str) and bool(restart_path), h5=h5_settings(data),
                    checkpoints=int(_number(data, "checkpoints")), checkpoint_s=_number(data, "checkpoint_s"),
                    checkpoint_bytes=_number(data, "checkpoint_bytes"), snapshots=int(_number(data, "snapshots")),
                    snapshot_s=_number(data, "snapshot_s"), snapshot_bytes=_number(data, "snapshot_bytes"),
                    restart_s=_number(data, "restart_s"), restart_bytes=_number(data, "restart_bytes"),
                    restart_step=int(_number(data, "restart_step", -1.0)),
                    steps_writing=int(steps) if isinstance(steps, int) and not isinstance(steps, bool) else None,
                    steps_writing_excess_s=_number(data, "steps_writing_excess_s"))


def restart_step(record: Mapping[str, Any] | None) -> int | None:
    """The step a run restarted from (its io.restart_step), None when it did not restart or reported no io."""
    io = io_record(record)
    return io.restart_step if io is not None and io.restart_step >= 0 else None
