"""The placement of a communication matrix on a cluster tree: the computed map and the baselines it is compared
with."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from hympi.errors import UsageError
from hympi.jsontypes import JsonObject
from hympi.limits import MAX_JOB_THREADS
from hympi.place.groups import Groups, contiguous, group_shares, interleaved
from hympi.place.mapping import Placement, block, check_fit, cost, round_robin, shares, tree_map
from hympi.place.matrix import CommMatrix
from hympi.place.tree import ClusterTree, NodeTree, load_node_tree
from hympi.place.unlike import place_unlike


@dataclass(frozen=True)
class PlacementReport:
    """The computed map and the baselines it is compared with (cost and traffic shares of each)."""

    cluster: ClusterTree
    per_node: int
    placements: tuple[Placement, ...]
    costs: tuple[float, ...]
    shares: tuple[dict[str, float], ...]
    groups: Groups | None = None
    group_shares: tuple[dict[str, dict[str, float]], ...] = ()
    node_ranks: tuple[int, ...] = ()  # unlike nodes: the ranks of each node (per_node is then the largest)

    def best(self) -> Placement:
        """The placement the rankfile gets: groups-contiguous in groups mode, else the computed tree-map."""
        name = "groups-contiguous" if self.groups is not None else "tree-map"
        return next(p for p in self.placements if p.name == name)

    def as_dict(self) -> JsonObject:
        """JSON-ready summary."""
        mappings: JsonObject = {}
        for k, (p, c, s) in enumerate(zip(self.placements, self.costs, self.shares, strict=True)):
            mappings[p.name] = {"cost": c, "shares": s, "slots": [[x.node, x.core] for x in p.slots]}
            if self.group_shares:
                mappings[p.name]["groups"] = self.group_shares[k]
        out: JsonObject = {**self._cluster_fields(), "mappings": mappings, "chosen": self.best().name}
        if self.groups is not None:
            out["groups"] = list(self.groups.sizes)
        return out

    def _cluster_fields(self) -> JsonObject:
        """Nodes, ranks and cores per node and topology: one value each on identical nodes, one per node else."""
        c = self.cluster
        if c.uniform:
            return {"nodes": c.nodes, "ranks_per_node": self.per_node, "cores_per_node": c.cores_per_node,
                    "topology": c.tree.spec}
        return {"nodes": c.nodes, "ranks_per_node": list(self.node_ranks),
                "cores_per_node": [c.cores_of(k) for k in range(c.nodes)],
                "topology": [c.tree_of(k).spec for k in range(c.nodes)]}


def place(matrix: CommMatrix, topology: str = "this", nodes: int = 1, per_node: int | None = None,
          fill: str = "compact", groups: Groups | None = None, node_trees: Sequence[NodeTree] = ()) -> PlacementReport:
    """Maps the matrix's ranks onto `nodes` copies of `topology` (or one node per tree of `node_trees`) and compares
    with round-robin and block; with `groups` also each group on its own contiguous nodes and the groups
    interleaved, with per-group shares. UsageError when the ranks do not fit, or for groups on unlike nodes."""
    if nodes < 1:
        raise UsageError(f"--nodes must be >= 1, got {nodes}")
    cluster = ClusterTree.of_nodes(node_trees) if node_trees else ClusterTree(load_node_tree(topology), nodes)
    # The mappings hold arrays over every core of the modelled cluster: bounded like the threads of one job.
    cores = cluster.nodes * cluster.cores_per_node if cluster.uniform else \
        sum(cluster.cores_of(k) for k in range(cluster.nodes))
    MAX_JOB_THREADS.check(f"the cores of {cluster.nodes} node(s),", cores)
    if not cluster.uniform:
        return _place_unlike(cluster, matrix, per_node, fill, groups)
    k = per_node if per_node is not None else math.ceil(matrix.ranks / nodes)
    if per_node is None and k > cluster.cores_per_node:
        raise UsageError(f"matrix has {matrix.ranks} ranks but {nodes} node(s) x {cluster.cores_per_node} cores "
                         f"= {nodes * cluster.cores_per_node} cannot hold them")
    check_fit(cluster, matrix.ranks, k)
    maps: tuple[Placement, ...] = (round_robin(cluster, matrix.ranks, k), block(cluster, matrix.ranks, k),
                                   tree_map(cluster, matrix, k, fill))
    by_group: tuple[dict[str, dict[str, float]], ...] = ()
    if groups is not None:
        maps += (contiguous(cluster, matrix, groups, k, fill), interleaved(cluster, groups, k))
        by_group = tuple(group_shares(cluster, matrix, groups, p.slots) for p in maps)
    return PlacementReport(cluster, k, maps, tuple(cost(cluster, matrix, p.slots) for p in maps),
                           tuple(shares(cluster, matrix, p.slots) for p in maps), groups, by_group)


def _place_unlike(cluster: ClusterTree, matrix: CommMatrix, per_node: int | None, fill: str,
                  groups: Groups | None) -> PlacementReport:
    """place() on unlike nodes (place/unlike.py)."""
    if groups is not None:
        raise UsageError("--groups needs identical nodes (the nodes given differ)")
    counts, maps = place_unlike(cluster, matrix, per_node, fill)
    return PlacementReport(cluster, per_node or max(counts), maps, tuple(cost(cluster, matrix, p.slots) for p in maps),
                           tuple(shares(cluster, matrix, p.slots) for p in maps), node_ranks=tuple(counts))
