"""Placement on unlike nodes (every node its own tree, e.g. from `hympi info --all-nodes`): rank counts per node,
the round-robin and block baselines, and the tree map.

The tree map reuses mapping.py node by node. The ranks are first split into one group per node, of that node's
count; then each group is mapped down its own node's tree (mapping.map_within_nodes on a one-node cluster), and
pairs of ranks swap while the total cost drops (mapping.global_refine). On identical nodes the split only has to
minimise the volume between nodes. On unlike nodes it also matters which node a group lands on: the cluster tree
counts every node from the network root (ClusterTree.distance), so ranks on a node of height h that share less than
the node are at least H + 1 - h apart (H: the tallest node's height), and the split maximises
sum over nodes of h_k x (volume inside node k) instead. That is exact (enumerated) when there are at most
mapping.EXACT_LIMIT splits, else mapping.partition's minimum-cut split, improved by single swaps up to
mapping.GLOBAL_LIMIT ranks.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from hympi.errors import UsageError
from hympi.place.graph import Graph, from_matrix, subgraph
from hympi.place.mapping import (
    EXACT_LIMIT,
    GLOBAL_LIMIT,
    Placement,
    Weights,
    count_partitions,
    global_refine,
    map_within_nodes,
    node_counts,
    partition,
    split_counts,
)
from hympi.place.matrix import CommMatrix
from hympi.place.options import FILL
from hympi.place.tree import ClusterTree, Slot


def unlike_node_counts(cluster: ClusterTree, ranks: int, per_node: int | None) -> list[int]:
    """Ranks on each node: `per_node` on every node in order (block counts), or without it in proportion to each
    node's cores (every core when the ranks fill the cluster). UsageError when the ranks do not fit or a node has
    fewer cores than `per_node`."""
    cores = [cluster.cores_of(k) for k in range(cluster.nodes)]
    if per_node is None:
        if ranks > sum(cores):
            raise UsageError(f"matrix has {ranks} ranks but the {cluster.nodes} nodes have "
                             f"{'+'.join(map(str, cores))} = {sum(cores)} cores")
        return split_counts(ranks, cores, "spread")
    if per_node < 1:
        raise UsageError(f"--ranks-per-node must be >= 1, got {per_node}")
    for k, c in enumerate(cores):
        if per_node > c:
            raise UsageError(f"--ranks-per-node {per_node} exceeds the {c} cores of node {k}")
    if ranks > cluster.nodes * per_node:
        raise UsageError(f"matrix has {ranks} ranks but {cluster.nodes} nodes x {per_node} ranks per node "
                         f"= {cluster.nodes * per_node} cannot hold them")
    return node_counts(ranks, cluster.nodes, per_node)


def unlike_round_robin(counts: Sequence[int]) -> Placement:
    """Rank r on the next node that still has room, cores in order of arrival (mpirun --map-by node)."""
    used = [0] * len(counts)
    slots = []
    node = 0
    for _ in range(sum(counts)):
        while used[node] >= counts[node]:
            node = (node + 1) % len(counts)
        slots.append(Slot(node, used[node]))
        used[node] += 1
        node = (node + 1) % len(counts)
    return Placement("round-robin", tuple(slots))


def unlike_block(counts: Sequence[int]) -> Placement:
    """Consecutive ranks fill each node's count in order, cores in order (mpirun --map-by core)."""
    return Placement("block", tuple(Slot(node, core) for node, n in enumerate(counts) for core in range(n)))


def _inside(weights: Weights, members: Sequence[int]) -> float:
    """Volume between ranks of one group."""
    return sum(weights[a][b] for a, b in itertools.combinations(members, 2))


def _score(weights: Weights, groups: Sequence[Sequence[int]], heights: Sequence[int]) -> float:
    """sum over nodes of height x volume inside: the larger, the lower the total cost's lower bound."""
    return sum(h * _inside(weights, g) for h, g in zip(heights, groups, strict=True))


def _all_splits(ranks: list[int], sizes: Sequence[int]) -> list[list[list[int]]]:
    """Every split of `ranks` into ordered groups of these sizes."""
    if len(sizes) == 1:
        return [[ranks]]
    out = []
    for combo in itertools.combinations(ranks, sizes[0]):
        chosen = set(combo)
        rest = [r for r in ranks if r not in chosen]
        out += [[list(combo), *tail] for tail in _all_splits(rest, sizes[1:])]
    return out


def _swap_refine(weights: Weights, groups: list[list[int]], heights: Sequence[int]) -> list[list[int]]:
    """Swaps two ranks of different nodes while that raises the score (first improvement, O(n^3) per pass)."""
    improved = True
    while improved:
        improved = False
        for p, q in itertools.combinations(range(len(groups)), 2):
            if heights[p] == heights[q]:
                continue  # between equally tall nodes the minimum-cut split already decided
            for i, j in itertools.product(range(len(groups[p])), range(len(groups[q]))):
                a, b = groups[p][i], groups[q][j]
                gain = (heights[p] * sum(weights[b][m] - weights[a][m] for m in groups[p] if m != a)
                        + heights[q] * sum(weights[a][m] - weights[b][m] for m in groups[q] if m != b))
                if gain > 1e-9:
                    groups[p][i], groups[q][j] = b, a
                    improved = True
    return groups


def split_over_nodes(cluster: ClusterTree, g: Graph, counts: Sequence[int]) -> list[list[int]]:
    """The ranks of each node (counts[k] on node k), maximising sum of node height x volume inside the node."""
    ranks = list(range(sum(counts)))
    heights = [cluster.tree_of(k).height for k in range(cluster.nodes)]
    if count_partitions(counts) <= EXACT_LIMIT:
        weights = g.dense()  # few ranks: enumerable
        return max(_all_splits(ranks, counts), key=lambda groups: _score(weights, groups, heights))
    groups = [part.tolist() for part in partition(g, list(counts))]
    return _swap_refine(g.dense(), groups, heights) if len(ranks) <= GLOBAL_LIMIT else groups


def unlike_tree_map(cluster: ClusterTree, matrix: CommMatrix, counts: Sequence[int],
                    fill: str = "compact") -> Placement:
    """The computed placement on unlike nodes: the split over nodes, each node's group mapped down its own tree,
    then global swap refinement; UsageError for an unknown fill."""
    FILL.check_text(fill)
    g = from_matrix(matrix)
    slots: dict[int, Slot] = {}
    for node, members in enumerate(split_over_nodes(cluster, g, counts)):
        # Relabel the node's ranks 0..m-1: map_within_nodes maps the ranks 0..n-1 of the graph it gets.
        sub = subgraph(g, np.asarray(members, dtype=np.int64))
        local = map_within_nodes(ClusterTree(cluster.tree_of(node), 1), [list(range(len(members)))], sub, fill)
        slots.update({rank: Slot(node, s.core) for rank, s in zip(members, local, strict=True)})
    placed = [slots[r] for r in range(matrix.ranks)]
    if matrix.ranks <= GLOBAL_LIMIT:
        placed = global_refine(cluster, g.dense(), placed)
    return Placement("tree-map", tuple(placed))


def place_unlike(cluster: ClusterTree, matrix: CommMatrix, per_node: int | None, fill: str
                 ) -> tuple[list[int], tuple[Placement, ...]]:
    """The ranks of each node and the three mappings (round-robin, block, tree-map) on unlike nodes; UsageError when
    the ranks do not fit."""
    counts = unlike_node_counts(cluster, matrix.ranks, per_node)
    return counts, (unlike_round_robin(counts), unlike_block(counts), unlike_tree_map(cluster, matrix, counts, fill))
