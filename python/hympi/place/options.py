"""The parameters of `hympi place` (and of `hympi layout`, which shares the node counts), declared once
(hympi.params); apart from the numpy mapping so that building hympi's parser stays cheap."""

from __future__ import annotations

from dataclasses import dataclass

from hympi.errors import UsageError
from hympi.limits import MAX_NODE_PUS, MAX_NODES
from hympi.params import JSON, Param, choice, count_within, parse_path
from hympi.place.rankfile import check_host_names

FILLS = ("spread", "compact")
# The two MPI groups of hympi-pencil --groups, in world-rank order.
GROUP_NAMES = ("coarse", "fine")


def group_sizes(option: str, text: str) -> tuple[int, ...]:
    """'COARSE:FINE' as its two group sizes (>= 1 each); UsageError naming the value otherwise (whether they add up
    to the matrix's ranks is hympi.place.groups.parse_groups's check, once the matrix is read)."""
    if text == "auto":
        raise UsageError(f"{option} 'auto' cannot be placed: give the split the run chose, COARSE:FINE (its "
                         "metrics.groups coarse and fine ranks)")
    parts = text.split(":")
    if len(parts) > len(GROUP_NAMES):
        raise UsageError(f"{option} '{text}' has {len(parts)} groups; at most two (COARSE:FINE) are supported")
    if len(parts) != len(GROUP_NAMES):
        raise UsageError(f"{option} '{text}' must be COARSE:FINE, two group sizes in world-rank order")
    try:
        sizes = tuple(int(p) for p in parts)
    except ValueError:
        raise UsageError(f"{option} '{text}' must be COARSE:FINE with integer sizes") from None
    for name, size in zip(GROUP_NAMES, sizes, strict=True):
        if size < 1:
            raise UsageError(f"{option} '{text}' leaves the {name} group empty ({size} ranks)")
    return sizes


def _group_split(option: str, text: str) -> str:
    """--groups as given, once group_sizes accepts it (kept as text: its form, COARSE:FINE, is the one the apps
    take)."""
    group_sizes(option, text)
    return text


def _host_list(option: str, text: str) -> tuple[str, ...]:
    """--hosts 'a,b': names a rankfile can hold (how many the nodes need is checked once the nodes are known)."""
    names = tuple(h.strip() for h in text.split(","))
    if not all(names):
        raise UsageError(f"{option} '{text}' has an empty host name")
    return tuple(check_host_names(names, option))


MATRIX = Param("matrix", "--matrix", "hympi profile JSON, coordinate list ('ranks N' + 'src dst volume' lines) or "
               "dense text", parse_path, metavar="FILE", required=True)
TOPOLOGY = Param("topology", "--topology", "this | <file.xml> | synthetic:'<description>': one node, copied --nodes "
                 "times (default this); given several times, one per node (unlike nodes)", parse_path,
                 metavar="SPEC", repeated=True)
NODE_TOPOLOGIES = Param("node_topologies", "--node-topologies", "one node per entry of FILE, as `hympi info "
                        "--all-nodes --json` wrote it (each node's own hwloc tree; hosts from it when they are "
                        "distinct real hosts)", parse_path, metavar="FILE")
NODES = Param("nodes", "--nodes", "number of nodes (default 1, or one per topology given)", count_within(MAX_NODES),
              metavar="N")
RANKS_PER_NODE = Param("ranks_per_node", "--ranks-per-node", "ranks on each node (default: ranks / nodes; on unlike "
                       "nodes in proportion to their cores)", count_within(MAX_NODE_PUS), metavar="R")
FILL = Param("fill", "--fill", f"within a node: {' or '.join(FILLS)} (default compact)", choice(FILLS, "fill"),
             "compact", metavar="FILL")
HOSTS = Param("hosts", "--hosts", "comma-separated host names for the rankfile, one per node", _host_list,
              metavar="NAMES")
GROUPS = Param("groups", "--groups", "two MPI groups in world-rank order (hympi-pencil --groups): also compare each "
               "group on its own contiguous nodes with the groups interleaved; the rankfile gets groups-contiguous",
               _group_split, metavar="COARSE:FINE")
OUT = Param("out", "--out", "write the Open MPI rankfile here (and OUT.hydra)", parse_path, metavar="FILE")

# Every parameter of `hympi place`, in the order its help lists them.
PLACE = (MATRIX, TOPOLOGY, NODE_TOPOLOGIES, NODES, RANKS_PER_NODE, FILL, HOSTS, GROUPS, OUT,
         JSON.described("print the comparison as JSON"))


@dataclass(frozen=True)
class PlaceParams:
    """The values PLACE resolved to (hympi.params.from_record); None or (): not given."""

    matrix: str
    topology: tuple[str, ...] = ()
    node_topologies: str | None = None
    nodes: int | None = None
    ranks_per_node: int | None = None
    fill: str = "compact"
    hosts: tuple[str, ...] = ()
    groups: str | None = None
    out: str | None = None
    json: bool = False
