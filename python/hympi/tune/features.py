"""What the predictor knows about a program: a fixed, ordered vector of features from one profiled run (dynamic)
and from how and where that run was laid out (static).

Dynamic features (from the profiler's JSON: size_bins, histograms, mpi_time_s, wall_time_s):
- `mpi_share`: the share of the ranks' wall time spent inside MPI calls.
- For each call group (`GROUPS`: p2p, alltoall, reduce, bcast, barrier): `<group>_small`, `<group>_medium`,
  `<group>_large`, the share of the group's events whose size lies in each coarse class (`SIZE_CLASSES`: a
  profiler bin belongs to the class its lower edge falls in; 0 for a group without events), and
  `<group>_log_rate`, log10(1 + events per rank per second of wall time) -- for a collective group that is its
  calls per second.
Static features: `ranks`, `ranks_per_node` (ranks / nodes the run reported, virtual nodes included), `threads`
(OpenMP threads per rank), and the machine's `cores`, `numa_nodes`, `packages` (hympi.topology.MachineSummary).

The thread check (`THREAD_CHECK_NAMES`, stored with the features, not given to the network): `checked_threads`, the
threads per rank of a probed run at the space's layout with the most threads per rank (1: the space has none with
more), and `working_threads`, the fewest threads any of its ranks computed with (hympi.probe.working_threads).
A program that computes with fewer threads than it was given (no OpenMP, or OpenMP only outside its hot loops)
runs a ranks x threads layout on fewer cores than the layout holds; the network learns what threads are worth from
programs that use them, so such a program's picks are made among the configurations it can use (`thread_limit`)
where those are sure to be faster: with w of T threads computing, a layout of T threads per rank spreads the work
over T/w times fewer computing ranks than the profiled one-thread layout, so each computes T/w times as long; with
the MPI share m measured there, its time is at least (T/w)(1 - m) of the profiled run's (its MPI time cannot fall
below 0), longer whenever m < 1 - w/T. A program above that share (HPC Challenge at N = 256, m = 0.8-0.9 at two
ranks) may run faster on fewer ranks with cores idle, and keeps every configuration.

Collectives are grouped by their communication pattern (`call_group`): every rank to every rank (Alltoall*,
Allgather*), reductions (Allreduce, Reduce, Reduce_scatter*, Scan, Exscan), one to many or many to one (Bcast,
Gather*, Scatter*), and Barrier; a name outside these (a future profiler kind) is not counted.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from hympi.errors import HympiError
from hympi.profile import Profile
from hympi.topology import MachineSummary

GROUPS = ("p2p", "alltoall", "reduce", "bcast", "barrier")
# Coarse size classes by lower bin edge in bytes: below 4 KiB (Open MPI's shared-memory eager range), up to
# 256 KiB, and above.
SIZE_CLASSES: tuple[tuple[str, float], ...] = (("small", 0.0), ("medium", 4096.0), ("large", 262144.0))
STATIC_NAMES = ("ranks", "ranks_per_node", "threads", "cores", "numa_nodes", "packages")
FEATURE_NAMES: tuple[str, ...] = (
    "mpi_share",
    *(f"{g}_{c}" for g in GROUPS for c in (*(name for name, _ in SIZE_CLASSES), "log_rate")),
    *STATIC_NAMES,
)

THREAD_CHECK_NAMES = ("checked_threads", "working_threads")
STORED_NAMES = (*FEATURE_NAMES, *THREAD_CHECK_NAMES)
# The cores other work used beside the kept profiled run (hympi.busy), stored with the features, not given to the
# network; absent from profiles stored before it was measured.
BUSY_PROFILE_NAME = "profile_outside_cores"


@dataclass(frozen=True)
class StaticFeatures:
    """How and where the profiled run ran: layout, nodes it reported and the machine's topology."""

    ranks: int
    threads: int
    nodes: int
    machine: MachineSummary

    def as_dict(self) -> dict[str, float]:
        """The static features by name (raises HympiError for a layout that cannot be, e.g. 0 nodes)."""
        if self.ranks < 1 or self.threads < 1 or self.nodes < 1:
            raise HympiError(f"layout {self.ranks} ranks x {self.threads} threads on {self.nodes} nodes is not a run")
        return {"ranks": float(self.ranks), "ranks_per_node": self.ranks / self.nodes, "threads": float(self.threads),
                "cores": float(self.machine.cores), "numa_nodes": float(self.machine.numa_nodes),
                "packages": float(self.machine.packages)}


def call_group(kind: str) -> str | None:
    """The group of a profiler kind ('p2p', 'MPI_Ialltoallv', ...), None for one no group counts."""
    if kind == "p2p":
        return "p2p"
    name = kind.lower().removeprefix("mpi_")
    if name.startswith("i"):
        name = name[1:]  # a non-blocking variant has its blocking twin's pattern
    if "barrier" in name:
        return "barrier"
    if "alltoall" in name or "allgather" in name:
        return "alltoall"
    if "reduce" in name or "scan" in name:
        return "reduce"
    if "bcast" in name or "gather" in name or "scatter" in name:
        return "bcast"
    return None


def _size_class(lower_edge: float) -> int:
    """Index in SIZE_CLASSES of the class a bin with this lower edge belongs to."""
    index = 0
    for i, (_, edge) in enumerate(SIZE_CLASSES):
        if lower_edge >= edge:
            index = i
    return index


def program_features(profile: Profile, static: StaticFeatures) -> dict[str, float]:
    """Every feature of FEATURE_NAMES, in that order; raises HympiError for a profile whose histograms do not
    match its size bins or whose ranks ran for no time."""
    walls = [float(w) for w in profile.wall_time_s]
    wall = sum(walls) / len(walls) if walls else 0.0
    if wall <= 0.0 or not math.isfinite(wall):
        raise HympiError(f"profile has no wall time per rank ({walls}): cannot turn counts into rates")
    ranks = max(profile.ranks, 1)
    counts = {g: [0.0] * len(SIZE_CLASSES) for g in GROUPS}
    for kind, per_bin in profile.histograms.items():
        group = call_group(kind)
        if group is None:
            continue
        if len(per_bin) != len(profile.size_bins):
            raise HympiError(f"profile histogram {kind!r} has {len(per_bin)} bins, the profile declares "
                             f"{len(profile.size_bins)} size bins")
        for edge, events in zip(profile.size_bins, per_bin, strict=True):
            counts[group][_size_class(float(edge))] += float(events)
    features: dict[str, float] = {"mpi_share": float(profile.mpi_share)}
    for group in GROUPS:
        total = sum(counts[group])
        for (name, _), count in zip(SIZE_CLASSES, counts[group], strict=True):
            features[f"{group}_{name}"] = count / total if total > 0 else 0.0
        features[f"{group}_log_rate"] = math.log10(1.0 + total / ranks / wall)
    features.update(static.as_dict())
    return {name: features[name] for name in FEATURE_NAMES}


def feature_vector(features: Mapping[str, float]) -> list[float]:
    """The features in FEATURE_NAMES order; raises HympiError naming a missing feature (a profile stored by an
    older hympi)."""
    missing = [name for name in FEATURE_NAMES if name not in features]
    if missing:
        raise HympiError(f"stored features lack {', '.join(missing)} (profile the program again)")
    return [float(features[name]) for name in FEATURE_NAMES]


def thread_check(checked_threads: int, working_threads: int | None) -> dict[str, float]:
    """The thread check's stored values; HympiError when no process of the run wrote a probe record."""
    if working_threads is None:
        raise HympiError(f"the thread check at {checked_threads} threads per rank left no probe record: no process "
                         "of it was seen")
    return {"checked_threads": float(checked_threads), "working_threads": float(working_threads)}


def thread_limit(features: Mapping[str, float]) -> int | None:
    """The most threads per rank a program computed with when it was given more, where more threads than that are
    sure to be slower (its MPI share below 1 - working / checked threads); None: it used every thread it was given,
    no check gave it more than one, or fewer ranks with idle threads may be faster."""
    checked, working = int(features["checked_threads"]), int(features["working_threads"])
    if working >= checked or features["mpi_share"] >= 1.0 - working / checked:
        return None
    return working


def busy_profile_text(program: str, cores: float | None, disturbed_above: float) -> str | None:
    """The warning for a profile taken beside `cores` (BUSY_PROFILE_NAME) > `disturbed_above` cores of other work,
    or None (None: not measured)."""
    if cores is None or cores <= disturbed_above:
        return None
    return (f"{program}: profiled beside other work ({cores:.2f} cores of it in the least disturbed of the runs): "
            "its MPI share, the network's first input, reads high when ranks wait for descheduled peers (profile "
            "it again on a quieter machine: hympi tune predict --profile-again)")


def thread_limit_text(limit: int) -> str:
    """Why a program's pick was made among fewer configurations, in words."""
    return (f"picked among the configurations of at most {limit} thread{'s' if limit > 1 else ''} per rank: it "
            "computed with no more when its thread check gave it more (the probe), and at its MPI share fewer "
            "computing ranks cannot be faster")
