"""hympi place --matrix FILE: rank-to-core map minimising volume x distance, written as rankfiles: reads the matrix
and the nodes, places the ranks, prints the comparison, writes the rankfiles."""

from __future__ import annotations

import argparse
import json
import socket
from dataclasses import dataclass
from pathlib import Path

from rich.table import Table

from hympi.cli.common import check_output_file
from hympi.cli.parser import Subparsers
from hympi.console import HympiConsole
from hympi.errors import UsageError
from hympi.node_topologies import read_node_topologies
from hympi.outputs import write_output
from hympi.params import from_record, register, resolve
from hympi.place.groups import BETWEEN, parse_groups
from hympi.place.matrix import read_matrix
from hympi.place.options import (
    GROUP_NAMES,
    HOSTS,
    MATRIX,
    NODE_TOPOLOGIES,
    NODES,
    OUT,
    PLACE,
    TOPOLOGY,
    PlaceParams,
)
from hympi.place.placement import PlacementReport, place
from hympi.place.rankfile import check_host_names, write_hydra, write_openmpi_rankfile
from hympi.place.tree import NodeTree, load_node_tree, parse_topology_xml


def add_parser(sub: Subparsers, name: str, summary: str) -> None:
    """Registers `hympi place`."""
    p = sub.add_parser(name, help=summary,
                       description="Map ranks to cores so heavy talkers share caches, packages and nodes; "
                                   "write an Open MPI rankfile (and FILE.hydra for MPICH).",
                       epilog="Matrix formats ('#' starts a comment): a hympi profile JSON file (its 'bytes'); a "
                              "coordinate list, first line 'ranks N', then one 'src dst volume' line per entry "
                              "(ranks 0..N-1, volume >= 0, repeated pairs add up; memory grows with the lines, "
                              "use it for thousands of ranks); or a dense text matrix (row i: the volume rank i "
                              "sends to each rank).")
    register(p, PLACE)
    p.set_defaults(handler=main)


def host_names(hosts: tuple[str, ...], nodes: int) -> list[str]:
    """One host name per node: --hosts, this host for one node, node0.. otherwise."""
    if not hosts:
        return check_host_names([socket.gethostname()], "this host's name") if nodes == 1 else \
            [f"node{i}" for i in range(nodes)]
    if len(hosts) != nodes:
        raise UsageError(f"{HOSTS.flag} '{','.join(hosts)}' must name {nodes} host(s)")
    return list(hosts)


@dataclass(frozen=True)
class NodeChoice:
    """The nodes asked for: one topology copied `nodes` times, or one tree per node (and the hosts they came from)."""

    topology: str
    nodes: int
    trees: tuple[NodeTree, ...] = ()
    hosts: tuple[str, ...] = ()


def choose_nodes(params: PlaceParams) -> NodeChoice:
    """--topology (once or per node), --node-topologies and --nodes, checked against each other; UsageError for
    a contradiction or a topology that cannot be loaded."""
    if params.node_topologies is not None and params.topology:
        raise UsageError(f"{NODE_TOPOLOGIES.flag} and {TOPOLOGY.flag} both describe the nodes; give one of them")
    if params.node_topologies is not None:
        gathered = read_node_topologies(params.node_topologies)
        trees = tuple(parse_topology_xml(n.xml, f"{params.node_topologies} node {n.node}") for n in gathered.nodes)
        names = tuple(n.host for n in gathered.nodes)
        # Virtual nodes share one machine (host/vnN): a rankfile cannot tell them apart by host.
        real = len(set(names)) == len(names) and not any("/" in h for h in names)
        if real:
            check_host_names(names, f"{NODE_TOPOLOGIES.flag} {params.node_topologies}")
        return _checked(NodeChoice(params.node_topologies, len(trees), trees, names if real else ()), params.nodes)
    specs = params.topology or ("this",)
    if len(specs) == 1:
        return NodeChoice(specs[0], 1 if params.nodes is None else params.nodes)
    return _checked(NodeChoice(",".join(specs), len(specs), tuple(load_node_tree(t) for t in specs)), params.nodes)


def _checked(choice: NodeChoice, nodes: int | None) -> NodeChoice:
    """`choice`, unless --nodes says another number of nodes (UsageError)."""
    if nodes is not None and nodes != choice.nodes:
        raise UsageError(f"{NODES.flag} {nodes} contradicts the {choice.nodes} node topologies given")
    return choice


def _pct(share: float) -> str:
    """'12.5%'."""
    return f"{100 * share:.1f}%"


def comparison_table(report: PlacementReport) -> Table:
    """Cost and traffic shares of each mapping."""
    m = report.cluster
    title = f"{m.nodes} node(s) x {m.cores_per_node} cores, {report.per_node} ranks/node" if m.uniform else (
        f"{m.nodes} unlike nodes: {'+'.join(str(m.cores_of(k)) for k in range(m.nodes))} cores, "
        f"{'+'.join(map(str, report.node_ranks))} ranks")
    table = Table(title=title)
    for col in ("mapping", "cost (vol x hops)", "inter-node", "inter-package", "intra-package"):
        table.add_column(col, justify="right", no_wrap=col == "mapping")
    for p, c, s in zip(report.placements, report.costs, report.shares, strict=True):
        table.add_row(p.name, f"{c:.4g}", _pct(s["inter-node"]), _pct(s["inter-package"]), _pct(s["intra-package"]))
    return table


def groups_table(report: PlacementReport) -> Table:
    """Groups mode: per mapping, the share of each kind of traffic (inside a group, between them) that crosses
    nodes."""
    assert report.groups is not None and report.group_shares
    kinds = (*GROUP_NAMES, BETWEEN)
    volume = report.group_shares[0]
    sizes = dict(zip(GROUP_NAMES, report.groups.sizes, strict=True))
    table = Table(title="off-node share of each kind of traffic; of the volume: " + ", ".join(
        f"{k}{f' ({sizes[k]} ranks)' if k in sizes else ''} {_pct(volume[k]['volume'])}" for k in kinds))
    for col in ("mapping", "all", *kinds):
        table.add_column(col, justify="right", no_wrap=col == "mapping")
    for p, s, g in zip(report.placements, report.shares, report.group_shares, strict=True):
        table.add_row(p.name, _pct(s["inter-node"]), *(_pct(g[k]["inter-node"]) for k in kinds))
    return table


def place_inputs(params: PlaceParams) -> dict[str, str | None]:
    """Every file `hympi place` reads (option -> path), which its --out must not replace: the matrix, the node
    topologies file and each --topology that is a file (not 'this' or 'synthetic:...')."""
    inputs: dict[str, str | None] = {MATRIX.flag: params.matrix, NODE_TOPOLOGIES.flag: params.node_topologies}
    for number, spec in enumerate(params.topology, 1):
        if Path(spec).is_file():
            inputs[f"{TOPOLOGY.flag} ({number})" if len(params.topology) > 1 else TOPOLOGY.flag] = spec
    return inputs


def main(args: argparse.Namespace) -> int:
    """Reads the matrix and topology, maps, compares, writes rankfiles."""
    params = from_record(PlaceParams, resolve(args, PLACE))
    if params.out is not None:
        inputs = place_inputs(params)
        check_output_file(params.out, OUT.flag, inputs)
        check_output_file(f"{params.out}.hydra", OUT.flag, inputs)  # its MPICH twin is written beside it
    matrix = read_matrix(params.matrix)
    groups = parse_groups(params.groups, matrix.ranks) if params.groups is not None else None
    nodes = choose_nodes(params)
    hosts = list(nodes.hosts) if not params.hosts and nodes.hosts else host_names(params.hosts, nodes.nodes)
    report = place(matrix, nodes.topology, nodes.nodes, params.ranks_per_node, params.fill, groups, nodes.trees)
    best = report.best()
    rankfile = write_openmpi_rankfile(report.cluster, best.slots, hosts)
    if params.out is not None:
        out = Path(params.out)
        try:
            write_output(out, rankfile)
            write_output(f"{out}.hydra", write_hydra(report.cluster, best.slots, hosts, out.name))
        except OSError as exc:
            raise UsageError(f"cannot write {OUT.flag} {params.out} ({exc.strerror or exc})") from None
    if params.json:
        print(json.dumps({**report.as_dict(), "rankfile": params.out, "hosts": hosts}))
        return 0
    console = HympiConsole()
    console.print(comparison_table(report))
    if report.groups is not None:
        console.print(groups_table(report))
    if params.out is not None:
        print(f"rankfile ({best.name}) written to {params.out} (MPICH/Hydra: {params.out}.hydra)")
    else:
        print(rankfile, end="")
    return 0
