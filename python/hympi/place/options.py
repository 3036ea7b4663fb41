"""The parameters of `hympi place` (and of `hympi layout`, which shares the node counts), declared once
(hympi.params); apart from the numpy mapping so that building hympi's parser stays cheap."""

from __future__ import annotations

from dataclasses import dataclass

from hympi.limits import MAX_NODE_PUS, MAX_NODES
from hympi.params import Param, choice, count_within

FILLS = ("spread", "compact")

NODES = Param("nodes", "--nodes", "number of nodes (default 1, or one per topology given)", count_within(MAX_NODES),
              metavar="N")
RANKS_PER_NODE = Param("ranks_per_node", "--ranks-per-node", "ranks on each node (default: ranks / nodes; on unlike "
                       "nodes in proportion to their cores)", count_within(MAX_NODE_PUS), metavar="R")
FILL = Param("fill", "--fill", f"within a node: {' or '.join(FILLS)} (default compact)", choice(FILLS, "fill"),
             "compact", metavar="FILL")

# The parameters of `hympi place` with a value of their own (the matrix, topologies, hosts and groups are read and
# checked against each other in hympi.cli.place).
PLACE = (NODES, RANKS_PER_NODE, FILL)


@dataclass(frozen=True)
class PlaceParams:
    """The values PLACE resolved to (hympi.params.from_record); None: not given."""

    nodes: int | None = None
    ranks_per_node: int | None = None
    fill: str = "compact"
