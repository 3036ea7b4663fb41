"""Placement of two MPI groups (hympi-pencil --groups COARSE:FINE): each group on its own contiguous nodes (after the
custom mapping of the small group in Sillero et al., "Hybrid OpenMP-MPI turbulent boundary layer code over 32k
cores", §3) against both groups interleaved over the nodes, and the off-node share of the traffic inside each group
(the transposes) and between them (the inflow plane).

The groups are contiguous in world-rank order, as MPI_Comm_split by group colour makes them: the first COARSE world
ranks are the coarse group, the next FINE the fine group.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from hympi.errors import UsageError
from hympi.place.arrays import slot_arrays
from hympi.place.graph import from_matrix, subgraph
from hympi.place.mapping import GLOBAL_LIMIT, Placement, dealt, global_refine, map_within_nodes, partition
from hympi.place.matrix import CommMatrix
from hympi.place.options import GROUP_NAMES, GROUPS, group_sizes
from hympi.place.tree import ClusterTree, Slot

BETWEEN = "between"


@dataclass(frozen=True)
class Groups:
    """Group sizes in world-rank order: group g holds the sizes[g] world ranks after those of groups 0..g-1."""

    sizes: tuple[int, ...]

    @property
    def labels(self) -> tuple[int, ...]:
        """The group of every world rank."""
        return tuple(g for g, size in enumerate(self.sizes) for _ in range(size))

    def members(self, group: int) -> list[int]:
        """The world ranks of one group."""
        start = sum(self.sizes[:group])
        return list(range(start, start + self.sizes[group]))


def parse_groups(text: str, ranks: int) -> Groups:
    """'COARSE:FINE' for a matrix of `ranks` ranks; raises UsageError naming the value for anything but two
    non-empty groups that add up to the ranks."""
    sizes = group_sizes(GROUPS.flag, text)
    if sum(sizes) != ranks:
        raise UsageError(f"{GROUPS.flag} '{text}' adds up to {sum(sizes)} ranks but the matrix has {ranks}")
    return Groups(sizes)


def contiguous_counts(cluster: ClusterTree, groups: Groups, per_node: int) -> list[list[int]]:
    """Ranks of each group on each node: every group on consecutive nodes, starting on a node of its own when the
    nodes suffice (else right after the previous group, sharing one node with it)."""
    own = sum(math.ceil(s / per_node) for s in groups.sizes) <= cluster.nodes
    out = []
    first = 0  # the first free slot, counted node by node
    for size in groups.sizes:
        if own and first % per_node:
            first += per_node - first % per_node
        counts = [0] * cluster.nodes
        for slot in range(first, first + size):
            counts[slot // per_node] += 1
        out.append(counts)
        first += size
    return out


def contiguous(cluster: ClusterTree, matrix: CommMatrix, groups: Groups, per_node: int,
               fill: str = "compact") -> Placement:
    """Each group on its own contiguous nodes (contiguous_counts); inside a group the ranks are split over its nodes
    with minimal cut, each node is mapped down its tree with every rank on it, then ranks of one group swap while
    the cost drops."""
    graph = from_matrix(matrix)
    node_ranks: list[list[int]] = [[] for _ in range(cluster.nodes)]
    for g, counts in enumerate(contiguous_counts(cluster, groups, per_node)):
        used = [node for node, c in enumerate(counts) if c]
        members = np.asarray(groups.members(g), dtype=np.int64)
        parts = partition(subgraph(graph, members), [counts[node] for node in used])
        for node, part in zip(used, parts, strict=True):
            node_ranks[node] += members[part].tolist()
    slots = map_within_nodes(cluster, node_ranks, graph, fill)
    if matrix.ranks <= GLOBAL_LIMIT:
        slots = global_refine(cluster, graph.dense(), slots, groups.labels)
    return Placement("groups-contiguous", tuple(slots))


def interleaved(cluster: ClusterTree, groups: Groups, per_node: int) -> Placement:
    """Every group dealt round robin over all nodes (each group from node 0, full nodes skipped), cores in order of
    arrival: both groups on every node, as a --map-by node launch spreads them."""
    return Placement("groups-interleaved", dealt(cluster, groups.sizes, per_node))


def group_shares(cluster: ClusterTree, matrix: CommMatrix, groups: Groups,
                 slots: Sequence[Slot]) -> dict[str, dict[str, float]]:
    """Per kind of traffic ('coarse' and 'fine': inside that group; 'between'): its share of the total volume
    ('volume') and the share of its own volume that crosses nodes ('inter-node'; 0 without such traffic)."""
    kinds = (*GROUP_NAMES, BETWEEN)
    labels = np.asarray(groups.labels, dtype=np.int64)
    nodes = slot_arrays(slots)[0]
    a, b = labels[matrix.src], labels[matrix.dst]
    kind = np.where(a == b, a, len(GROUP_NAMES))  # index into kinds
    off = nodes[matrix.src] != nodes[matrix.dst]
    volume = np.bincount(kind, weights=matrix.vol, minlength=len(kinds))
    crossing = np.bincount(kind[off], weights=matrix.vol[off], minlength=len(kinds))
    total = matrix.total()
    return {k: {"volume": float(volume[i] / total) if total else 0.0,
                "inter-node": float(crossing[i] / volume[i]) if volume[i] else 0.0} for i, k in enumerate(kinds)}
