"""Rank-to-core mapping that minimises sum(volume x tree distance): recursive partitioning along the tree.

Algorithm (docs/placement.md has the details and the complexity):
1. Top down over the tree (network -> nodes -> packages -> caches -> cores), the ranks assigned to a subtree
   are split into one group per child, of the sizes the children get (block counts per node; within a
   node spread evenly over the children, or filled in order with fill='compact'), so that the volume cut
   between groups is minimal: exactly (enumerating all partitions) when there are at most EXACT_LIMIT of
   them, else by recursive bisection, each bisection by greedy graph growing followed by Kernighan-Lin
   pairwise-swap refinement.
2. A final global pass swaps any two ranks while that lowers the total cost (for n <= GLOBAL_LIMIT).
The tree distance counts levels up to the lowest common ancestor, so the cost is the sum over tree levels
of the volume cut at that level: step 1 minimises the expensive (upper) cuts first.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from hympi.errors import UsageError
from hympi.place.matrix import CommMatrix
from hympi.place.tree import ClusterTree, Slot

EXACT_LIMIT = 20000  # enumerate a split exactly when it has at most this many candidate partitions
GLOBAL_LIMIT = 96  # global swap refinement up to this many ranks (O(n^3) per pass)
FILLS = ("spread", "compact")

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


def cost(cluster: ClusterTree, weights: Weights, slots: Sequence[Slot]) -> float:
    """sum over rank pairs i<j of (v_ij + v_ji) x distance(slot_i, slot_j)."""
    n = len(slots)
    return sum(weights[i][j] * cluster.distance(slots[i], slots[j]) for i in range(n) for j in range(i + 1, n)
               if weights[i][j])


def shares(cluster: ClusterTree, matrix: CommMatrix, slots: Sequence[Slot]) -> dict[str, float]:
    """Fraction of the off-diagonal volume that is inter-node, inter-package and intra-package."""
    out = {"inter-node": 0.0, "inter-package": 0.0, "intra-package": 0.0}
    total = matrix.total()
    for i, row in enumerate(matrix.volume):
        for j, v in enumerate(row):
            if i != j and v:
                out[cluster.level(slots[i], slots[j])] += v
    return {k: (v / total if total else 0.0) for k, v in out.items()}


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


def _cut(weights: Weights, groups: Sequence[Sequence[int]]) -> float:
    """Volume between different groups."""
    owner = {r: g for g, members in enumerate(groups) for r in members}
    return sum(weights[a][b] for a in owner for b in owner if a < b and owner[a] != owner[b])


def _count_partitions(sizes: Sequence[int]) -> int:
    """Number of ways to split sum(sizes) items into ordered groups of these sizes."""
    out, left = 1, sum(sizes)
    for s in sizes:
        out *= math.comb(left, s)
        left -= s
    return out


def _exact_partition(ranks: list[int], sizes: list[int], weights: Weights) -> list[list[int]]:
    """Minimum-cut split into groups of the given sizes by enumeration (small cases)."""
    best: tuple[float, list[list[int]]] | None = None

    def rec(left: list[int], k: int, acc: list[list[int]]) -> None:
        nonlocal best
        if k == len(sizes) - 1:
            groups = [*acc, left]
            c = _cut(weights, groups)
            if best is None or c < best[0] - 1e-12:
                best = (c, [list(g) for g in groups])
            return
        for combo in itertools.combinations(left, sizes[k]):
            chosen = set(combo)
            rec([r for r in left if r not in chosen], k + 1, [*acc, list(combo)])

    rec(list(ranks), 0, [])
    assert best is not None
    return best[1]


def _greedy_partition(ranks: list[int], sizes: list[int], weights: Weights) -> list[list[int]]:
    """Greedy graph growing (each group grows by its most connected rank) + Kernighan-Lin swaps."""
    free = list(ranks)
    groups: list[list[int]] = []
    for size in sizes[:-1]:
        group: list[int] = []
        if size:
            # Seed with the free rank that talks least to the other free ranks' heaviest partners:
            # the lowest-index rank of minimal total volume keeps chains and grids contiguous.
            seed = min(free, key=lambda r: (sum(weights[r][o] for o in free), r))
            group.append(seed)
            free.remove(seed)
        while len(group) < size:
            nxt = max(free, key=lambda r: (sum(weights[r][g] for g in group) - 0.5 * sum(weights[r][o] for o in free),
                                           -r))
            group.append(nxt)
            free.remove(nxt)
        groups.append(group)
    groups.append(free)
    return _refine_groups(groups, weights)


def _refine_groups(groups: list[list[int]], weights: Weights, max_passes: int = 20) -> list[list[int]]:
    """Kernighan-Lin style: swap two ranks of different groups while that lowers the cut."""
    owner = {r: g for g, members in enumerate(groups) for r in members}
    everyone = list(owner)
    for _ in range(max_passes):
        improved = False
        # ext[r][g]: r's volume to group g
        ext = {r: [0.0] * len(groups) for r in everyone}
        for r in everyone:
            for o in everyone:
                if o != r:
                    ext[r][owner[o]] += weights[r][o]
        for a, b in itertools.combinations(everyone, 2):
            ga, gb = owner[a], owner[b]
            if ga == gb:
                continue
            gain = (ext[a][gb] - ext[a][ga]) + (ext[b][ga] - ext[b][gb]) - 2 * weights[a][b]
            if gain > 1e-12:
                owner[a], owner[b] = gb, ga
                for r in everyone:
                    if r != a:
                        ext[r][ga] -= weights[r][a]
                        ext[r][gb] += weights[r][a]
                    if r != b:
                        ext[r][gb] -= weights[r][b]
                        ext[r][ga] += weights[r][b]
                improved = True
        if not improved:
            break
    out: list[list[int]] = [[] for _ in groups]
    for r in everyone:
        out[owner[r]].append(r)
    return [sorted(g) for g in out]


def partition(ranks: list[int], sizes: list[int], weights: Weights) -> list[list[int]]:
    """Splits `ranks` into groups of `sizes` with minimal volume between groups."""
    if len(sizes) == 1:
        return [list(ranks)]
    if _count_partitions(sizes) <= EXACT_LIMIT:
        return _exact_partition(ranks, sizes, weights)
    if len(sizes) == 2:
        return _greedy_partition(ranks, sizes, weights)
    # k-way as recursive bisection: halve the children, bisect the ranks to match, recurse.
    half = len(sizes) // 2
    left, right = _greedy_partition(ranks, [sum(sizes[:half]), sum(sizes[half:])], weights)
    return partition(left, sizes[:half], weights) + partition(right, sizes[half:], weights)


def _map_subtree(cluster: ClusterTree, node: int, prefix: tuple[frozenset[int], ...], cores: tuple[int, ...],
                 ranks: list[int], weights: Weights, fill: str, out: dict[int, Slot]) -> None:
    """Recursively places `ranks` on `cores` (a subtree of one node) following the tree."""
    if not ranks:
        return
    if len(cores) == 1:
        assert len(ranks) == 1
        out[ranks[0]] = Slot(node, cores[0])
        return
    children = cluster.tree.children(prefix, cores)
    while len(children) == 1:  # a level that does not branch here
        deeper = cluster.tree.cores[children[0][0]].path[: len(prefix) + 1]
        if deeper == prefix:
            raise AssertionError(f"cores {cores} share one cpuset path")
        prefix = deeper
        children = cluster.tree.children(prefix, cores)
    sizes = split_counts(len(ranks), [len(c) for c in children], fill)
    groups = partition(ranks, sizes, weights)
    for child, group in zip(children, groups, strict=True):
        child_prefix = cluster.tree.cores[child[0]].path[: len(prefix) + 1]
        _map_subtree(cluster, node, child_prefix, child, group, weights, fill, out)


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
    """The computed placement: recursive partitioning along the tree, then global swap refinement."""
    if fill not in FILLS:
        raise UsageError(f"unknown fill '{fill}' (expected {', '.join(FILLS)})")
    n = matrix.ranks
    check_fit(cluster, n, per_node)
    weights = matrix.symmetric()
    counts = node_counts(n, cluster.nodes, per_node)
    groups = partition(list(range(n)), counts, weights) if cluster.nodes > 1 else [list(range(n))]
    slots = map_within_nodes(cluster, groups, weights, fill)
    if n <= GLOBAL_LIMIT:
        slots = global_refine(cluster, weights, slots)
    return Placement("tree-map", tuple(slots))


def map_within_nodes(cluster: ClusterTree, node_ranks: Sequence[Sequence[int]], weights: Weights,
                     fill: str = "compact") -> list[Slot]:
    """Slots of ranks 0..n-1 when node_ranks[k] lists the ranks on node k: each node's ranks partitioned down its
    tree (the ranks must be 0..n-1 once each, at most a node's cores per node)."""
    out: dict[int, Slot] = {}
    all_cores = tuple(range(cluster.cores_per_node))
    root = cluster.tree.cores[0].path[:1]
    for node, members in enumerate(node_ranks):
        _map_subtree(cluster, node, root, all_cores, list(members), weights, fill, out)
    return [out[r] for r in range(len(out))]


def brute_force(cluster: ClusterTree, matrix: CommMatrix) -> float:
    """Minimum cost over every assignment of the ranks to distinct cores (tiny cases only: tests)."""
    weights = matrix.symmetric()
    every = [Slot(node, c) for node in range(cluster.nodes) for c in range(cluster.cores_per_node)]
    if math.perm(len(every), matrix.ranks) > 2_000_000:
        raise UsageError(f"brute force over {len(every)} cores for {matrix.ranks} ranks is too large")
    d = [[cluster.distance(a, b) for b in every] for a in every]
    pairs = [(i, j, weights[i][j]) for i in range(matrix.ranks) for j in range(i + 1, matrix.ranks) if weights[i][j]]
    return min(sum(w * d[p[i]][p[j]] for i, j, w in pairs)
               for p in itertools.permutations(range(len(every)), matrix.ranks))
