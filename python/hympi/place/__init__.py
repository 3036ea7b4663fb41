"""Topology-aware placement: communication matrix x hwloc tree -> rank-to-core map and rankfiles."""

from __future__ import annotations

import math
from dataclasses import dataclass

from hympi.errors import UsageError
from hympi.jsontypes import JsonObject
from hympi.place.mapping import Placement, block, check_fit, cost, round_robin, shares, tree_map
from hympi.place.matrix import CommMatrix
from hympi.place.tree import ClusterTree, load_node_tree


@dataclass(frozen=True)
class PlacementReport:
    """The computed map and the baselines it is compared with (cost and traffic shares of each)."""

    cluster: ClusterTree
    per_node: int
    placements: tuple[Placement, ...]
    costs: tuple[float, ...]
    shares: tuple[dict[str, float], ...]

    def best(self) -> Placement:
        """The computed (tree-map) placement."""
        return next(p for p in self.placements if p.name == "tree-map")

    def as_dict(self) -> JsonObject:
        """JSON-ready summary."""
        return {"nodes": self.cluster.nodes, "ranks_per_node": self.per_node,
                "cores_per_node": self.cluster.cores_per_node, "topology": self.cluster.tree.spec,
                "mappings": {p.name: {"cost": c, "shares": s, "slots": [[x.node, x.core] for x in p.slots]}
                             for p, c, s in zip(self.placements, self.costs, self.shares, strict=True)}}


def place(matrix: CommMatrix, topology: str = "this", nodes: int = 1, per_node: int | None = None,
          fill: str = "compact") -> PlacementReport:
    """Maps the matrix's ranks onto `nodes` copies of `topology` and compares with round-robin and block."""
    if nodes < 1:
        raise UsageError(f"--nodes must be >= 1, got {nodes}")
    cluster = ClusterTree(load_node_tree(topology), nodes)
    k = per_node if per_node is not None else math.ceil(matrix.ranks / nodes)
    if per_node is None and k > cluster.cores_per_node:
        raise UsageError(f"matrix has {matrix.ranks} ranks but {nodes} node(s) x {cluster.cores_per_node} cores "
                         f"= {nodes * cluster.cores_per_node} cannot hold them")
    check_fit(cluster, matrix.ranks, k)
    weights = matrix.symmetric()
    maps = (round_robin(cluster, matrix.ranks, k), block(cluster, matrix.ranks, k),
            tree_map(cluster, matrix, k, fill))
    return PlacementReport(cluster, k, maps, tuple(cost(cluster, weights, p.slots) for p in maps),
                           tuple(shares(cluster, matrix, p.slots) for p in maps))
