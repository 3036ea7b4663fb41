"""Rank-to-core mapping that minimises sum(volume x tree distance): recursive partitioning along the tree.

Algorithm (docs/placement.md has the details and the complexity):
1. Top down over the tree (network -> nodes -> packages -> caches -> cores), the ranks assigned to a subtree
   are split into one group per child, of the sizes the children get (block counts per node; within a
   node spread evenly over the children, or filled in order with fill='compact'), so that the volume cut
   between groups is minimal: exactly (enumerating all partitions) when there are at most EXACT_LIMIT of
   them, else by recursive bisection, each bisection multilevel (bisect.py: heavy-edge coarsening, greedy
   growing, boundary Fiduccia-Mattheyses refinement); the matrix stays sparse throughout.
2. A final global pass swaps any two ranks while that lowers the total cost (for n <= GLOBAL_LIMIT).
The tree distance counts levels up to the lowest common ancestor, so the cost is the sum over tree levels
of the volume cut at that level: step 1 minimises the expensive (upper) cuts first.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from hympi.errors import UsageError
from hympi.place.arrays import distances, packages, slot_arrays
from hympi.place.bisect import bisect
from hympi.place.graph import Graph, from_matrix, subgraph
from hympi.place.matrix import CommMatrix, IntArray
from hympi.place.options import FILL
from hympi.place.tree import ClusterTree, Slot

EXACT_LIMIT = 20000  # enumerate a split exactly when it has at most this many candidate partitions
BISECT_TRIES = 2  # independent multilevel bisections (random matchings) per split; the smallest cut is kept
GLOBAL_LIMIT = 96  # global swap refinement up to this many ranks (O(n^3) per pass)

Weights = Sequence[Sequence[float]]


@dataclass(frozen=True)
class Placement:
    """Rank r runs on slots[r]."""

    name: str
    slots: tuple[Slot, ...]


def node_counts(ranks: int, nodes: int, per_node: int) -> list[int]:
    """Ranks on each node: per_node on every node in order until the ranks run out (block counts)."""
    counts = []
    left = ranks
    for _ in range(nodes):
        counts.append(min(per_node, left))
        left -= counts[-1]
    return counts


def check_fit(cluster: ClusterTree, ranks: int, per_node: int) -> None:
    """Raises UsageError when the ranks do not fit the nodes and cores."""
    cores = cluster.cores_per_node
    if per_node < 1:
        raise UsageError(f"--ranks-per-node must be >= 1, got {per_node}")
    if per_node > cores:
        raise UsageError(f"--ranks-per-node {per_node} exceeds the {cores} cores of a node")
    if ranks > cluster.nodes * per_node:
        raise UsageError(f"matrix has {ranks} ranks but {cluster.nodes} nodes x {per_node} ranks per node "
                         f"= {cluster.nodes * per_node} ({cluster.nodes} x {cores} cores) cannot hold them")


def round_robin(cluster: ClusterTree, ranks: int, per_node: int) -> Placement:
    """Rank r on node r mod N, cores in order (mpirun --map-by node)."""
    return Placement("round-robin", dealt(cluster, (ranks,), per_node))


def dealt(cluster: ClusterTree, batches: Sequence[int], per_node: int) -> tuple[Slot, ...]:
    """Consecutive batches of ranks, each dealt round robin over the nodes from node 0 (full nodes skipped; block
    counts per node), cores in order of arrival."""
    counts = node_counts(sum(batches), cluster.nodes, per_node)
    used = [0] * cluster.nodes
    slots = []
    for size in batches:
        node = 0
        for _ in range(size):
            while used[node] >= counts[node]:
                node = (node + 1) % cluster.nodes
            slots.append(Slot(node, used[node]))
            used[node] += 1
            node = (node + 1) % cluster.nodes
    return tuple(slots)


def block(cluster: ClusterTree, ranks: int, per_node: int) -> Placement:
    """Consecutive ranks fill a node's cores in order, then the next node (mpirun --map-by core)."""
    slots = [Slot(r // per_node, r % per_node) for r in range(ranks)]
    return Placement("block", tuple(slots))


def cost(cluster: ClusterTree, matrix: CommMatrix, slots: Sequence[Slot]) -> float:
    """sum over rank pairs i<j of (v_ij + v_ji) x distance(slot_i, slot_j), over the stored entries only."""
    at = slot_arrays(slots)
    d = distances(cluster, (at[0][matrix.src], at[1][matrix.src]), (at[0][matrix.dst], at[1][matrix.dst]))
    return float(matrix.vol @ d)


def shares(cluster: ClusterTree, matrix: CommMatrix, slots: Sequence[Slot]) -> dict[str, float]:
    """Fraction of the off-diagonal volume that is inter-node, inter-package and intra-package."""
    at = slot_arrays(slots)
    nodes, package = at[0], packages(cluster, at)
    off_node = nodes[matrix.src] != nodes[matrix.dst]
    off_package = ~off_node & (package[matrix.src] != package[matrix.dst])
    total = matrix.total()
    parts = {"inter-node": float(matrix.vol[off_node].sum()), "inter-package": float(matrix.vol[off_package].sum())}
    parts["intra-package"] = total - parts["inter-node"] - parts["inter-package"]
    return {k: (v / total if total else 0.0) for k, v in parts.items()}


def split_counts(n: int, capacities: Sequence[int], fill: str) -> list[int]:
    """How many of n ranks each child gets: proportional to capacity (spread) or in order (compact)."""
    if fill == "compact":
        out, left = [], n
        for cap in capacities:
            out.append(min(cap, left))
            left -= out[-1]
        return out
    total = sum(capacities)
    exact = [n * c / total for c in capacities]
    out = [min(math.floor(e), c) for e, c in zip(exact, capacities, strict=True)]
    # Largest remainder first; ties to the earlier child, so the split is deterministic.
    order = sorted(range(len(capacities)), key=lambda k: (-(exact[k] - out[k]), k))
    left = n - sum(out)
    while left:
        for k in order:
            if left and out[k] < capacities[k]:
                out[k] += 1
                left -= 1
    return out


def _assignments(sizes: Sequence[int]) -> npt.NDArray[np.int16]:
    """Every split of vertices 0..n-1 into ordered groups of these sizes, one row of group labels each (groups
    chosen in lexicographic order, group by group)."""
    n = sum(sizes)
    rows = np.full((1, n), len(sizes) - 1, dtype=np.int16)
    for label, size in enumerate(sizes[:-1]):
        blocks = []
        for row in rows:
            free = np.flatnonzero(row == len(sizes) - 1).tolist()
            chosen = list(itertools.combinations(free, size))
            combos = np.array(chosen, dtype=np.int64).reshape(len(chosen), size)
            block = np.repeat(row[None, :], len(combos), axis=0)
            block[np.arange(len(combos))[:, None], combos] = label
            blocks.append(block)
        rows = np.concatenate(blocks)
    return rows


def count_partitions(sizes: Sequence[int]) -> int:
    """Number of ways to split sum(sizes) items into ordered groups of these sizes (a multinomial; never fails)."""
    out, left = 1, sum(sizes)
    for s in sizes:
        out *= math.comb(left, s)
        left -= s
    return out


def _exact_partition(g: Graph, sizes: Sequence[int]) -> list[IntArray]:
    """Minimum-cut split of g's vertices into groups of the given sizes by enumeration (at most EXACT_LIMIT
    candidates, each cut evaluated over the edges at once; the first minimum in enumeration order wins)."""
    labels = _assignments(sizes)
    cuts = (labels[:, g.rows] != labels[:, g.indices]).astype(np.float64) @ g.weights
    best = labels[int(np.flatnonzero(cuts <= cuts.min() + 1e-9)[0])]
    return [np.flatnonzero(best == k) for k in range(len(sizes))]


def partition(g: Graph, sizes: Sequence[int]) -> list[IntArray]:
    """Splits the vertices of g into groups of `sizes` (summing to g.n) with minimal weight between groups: exactly
    when there are at most EXACT_LIMIT ways, else by recursive multilevel bisection (deterministic)."""
    everyone = np.arange(g.n, dtype=np.int64)
    if len(sizes) == 1:
        return [everyone]
    if max(sizes) <= 1:  # every pair is cut whatever the order: all pairs meet at this level
        return [everyone[k:k + 1] if sizes[k] else everyone[:0] for k in range(len(sizes))]
    if count_partitions(sizes) <= EXACT_LIMIT:
        return _exact_partition(g, sizes)
    half = len(sizes) // 2
    size0 = sum(sizes[:half])
    if 0 < size0 < g.n:
        part = min((bisect(g, size0, np.random.default_rng([g.n, k])) for k in range(BISECT_TRIES)), key=g.cut)
        left, right = np.flatnonzero(part == 0), np.flatnonzero(part == 1)
    else:
        left, right = everyone[:size0], everyone[size0:]
    return ([left[x] for x in partition(subgraph(g, left), sizes[:half])]
            + [right[x] for x in partition(subgraph(g, right), sizes[half:])])


def _map_subtree(cluster: ClusterTree, node: int, prefix: tuple[frozenset[int], ...], cores: tuple[int, ...],
                 ranks: IntArray, g: Graph, fill: str, out: dict[int, Slot]) -> None:
    """Recursively places `ranks` (g: their induced graph) on `cores` (a subtree of one node) following the
    tree."""
    if not len(ranks):
        return
    if len(cores) == 1:
        assert len(ranks) == 1
        out[int(ranks[0])] = Slot(node, cores[0])
        return
    children = cluster.tree.children(prefix, cores)
    while len(children) == 1:  # a level that does not branch here
        deeper = cluster.tree.cores[children[0][0]].path[: len(prefix) + 1]
        if deeper == prefix:
            raise AssertionError(f"cores {cores} share one cpuset path")
        prefix = deeper
        children = cluster.tree.children(prefix, cores)
    sizes = split_counts(len(ranks), [len(c) for c in children], fill)
    for child, group in zip(children, partition(g, sizes), strict=True):
        child_prefix = cluster.tree.cores[child[0]].path[: len(prefix) + 1]
        _map_subtree(cluster, node, child_prefix, child, ranks[group], subgraph(g, group) if len(group) > 1 else g,
                     fill, out)


def global_refine(cluster: ClusterTree, weights: Weights, slots: list[Slot], labels: Sequence[int] | None = None,
                  max_passes: int = 10) -> list[Slot]:
    """Swaps pairs of ranks while the total cost drops (first-improvement local search); with `labels`, only ranks
    of the same label swap, so every label keeps the slots it was given."""
    n = len(slots)
    for _ in range(max_passes):
        improved = False
        for i, j in itertools.combinations(range(n), 2):
            si, sj = slots[i], slots[j]
            if si == sj or (labels is not None and labels[i] != labels[j]):
                continue
            delta = 0.0
            for m in range(n):
                if m in (i, j):
                    continue
                sm = slots[m]
                delta += (weights[i][m] - weights[j][m]) * (cluster.distance(sj, sm) - cluster.distance(si, sm))
            if delta < -1e-9:
                slots[i], slots[j] = sj, si
                improved = True
        if not improved:
            break
    return slots


def tree_map(cluster: ClusterTree, matrix: CommMatrix, per_node: int, fill: str = "compact") -> Placement:
    """The computed placement: recursive partitioning along the tree, then global swap refinement (small n)."""
    FILL.check_text(fill)
    n = matrix.ranks
    check_fit(cluster, n, per_node)
    g = from_matrix(matrix)
    counts = node_counts(n, cluster.nodes, per_node)
    groups = partition(g, counts) if cluster.nodes > 1 else [np.arange(n, dtype=np.int64)]
    slots = map_within_nodes(cluster, groups, g, fill)
    if n <= GLOBAL_LIMIT:
        slots = global_refine(cluster, g.dense(), slots)
    return Placement("tree-map", tuple(slots))


def map_within_nodes(cluster: ClusterTree, node_ranks: Sequence[Sequence[int] | IntArray], g: Graph,
                     fill: str = "compact") -> list[Slot]:
    """Slots of ranks 0..n-1 when node_ranks[k] lists the ranks on node k: each node's ranks partitioned down its
    tree (the ranks must be 0..n-1 once each, at most a node's cores per node)."""
    out: dict[int, Slot] = {}
    all_cores = tuple(range(cluster.cores_per_node))
    root = cluster.tree.cores[0].path[:1]
    for node, members in enumerate(node_ranks):
        ranks = np.asarray(members, dtype=np.int64)
        _map_subtree(cluster, node, root, all_cores, ranks, subgraph(g, ranks), fill, out)
    return [out[r] for r in range(len(out))]


def brute_force(cluster: ClusterTree, matrix: CommMatrix) -> float:
    """Minimum cost over every assignment of the ranks to distinct cores (tiny cases only: tests)."""
    weights = from_matrix(matrix).dense()
    every = [Slot(node, c) for node in range(cluster.nodes) for c in range(cluster.cores_per_node)]
    if math.perm(len(every), matrix.ranks) > 2_000_000:
        raise UsageError(f"brute force over {len(every)} cores for {matrix.ranks} ranks is too large")
    d = [[cluster.distance(a, b) for b in every] for a in every]
    pairs = [(i, j, weights[i][j]) for i in range(matrix.ranks) for j in range(i + 1, matrix.ranks) if weights[i][j]]
    return min(sum(w * d[p[i]][p[j]] for i, j, w in pairs)
               for p in itertools.permutations(range(len(every)), matrix.ranks))
