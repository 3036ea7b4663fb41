"""hympi place --matrix FILE: rank-to-core map minimising volume x distance, written as rankfiles: reads the matrix
and the nodes, places the ranks, prints the comparison, writes the rankfiles."""

from __future__ import annotations

import argparse
import json
import socket
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

from hympi.cli.common import check_output_file
from hympi.cli.parser import Subparsers
from hympi.errors import UsageError
from hympi.node_topologies import read_node_topologies
from hympi.outputs import write_output
from hympi.params import from_record, register, resolve
from hympi.place.groups import BETWEEN, GROUP_NAMES, parse_groups
from hympi.place.matrix import read_matrix
from hympi.place.options import PLACE, PlaceParams
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
    p.add_argument("--matrix", required=True,
                   help="hympi profile JSON, coordinate list ('ranks N' + 'src dst volume' lines) or dense text")
    p.add_argument("--topology", action="append", default=None,
                   help="this | <file.xml> | synthetic:'<description>': one node, copied --nodes times (default this); "
                        "given several times, one per node (unlike nodes)")
    p.add_argument("--node-topologies", default=None, metavar="FILE",
                   help="one node per entry of FILE, as `hympi info --all-nodes --json` wrote it (each node's own "
                        "hwloc tree; hosts from it when they are distinct real hosts)")
    register(p, PLACE)
    p.add_argument("--hosts", default=None, help="comma-separated host names for the rankfile, one per node")
    p.add_argument("--groups", default=None, metavar="COARSE:FINE",
                   help="two MPI groups in world-rank order (hympi-pencil --groups): also compare each group on its "
                        "own contiguous nodes with the groups interleaved; the rankfile gets groups-contiguous")
    p.add_argument("--out", default=None, help="write the Open MPI rankfile here (and OUT.hydra)")
    p.add_argument("--json", action="store_true", help="print the comparison as JSON")
    p.set_defaults(handler=main)




def host_names(hosts: str | None, nodes: int) -> list[str]:
    """One host name per node: --hosts, this host for one node, node0.. otherwise."""
    if hosts is None:
        return check_host_names([socket.gethostname()], "this host's name") if nodes == 1 else \
            [f"node{i}" for i in range(nodes)]
    names = [h.strip() for h in hosts.split(",")]
    if len(names) != nodes or not all(names):
        raise UsageError(f"--hosts '{hosts}' must name {nodes} host(s)")
    return check_host_names(names, "--hosts")


@dataclass(frozen=True)
class NodeChoice:
    """The nodes asked for: one topology copied `nodes` times, or one tree per node (and the hosts they came from)."""

    topology: str
    nodes: int
    trees: tuple[NodeTree, ...] = ()
    hosts: tuple[str, ...] = ()


def choose_nodes(args: argparse.Namespace, counts: PlaceParams) -> NodeChoice:
    """--topology (once or per node), --node-topologies and --nodes, checked against each other; UsageError for
    a contradiction or a topology that cannot be loaded."""
    if args.node_topologies is not None and args.topology:
        raise UsageError("--node-topologies and --topology both describe the nodes; give one of them")
    if args.node_topologies is not None:
        gathered = read_node_topologies(args.node_topologies)
        trees = tuple(parse_topology_xml(n.xml, f"{args.node_topologies} node {n.node}") for n in gathered.nodes)
        names = tuple(n.host for n in gathered.nodes)
        # Virtual nodes share one machine (host/vnN): a rankfile cannot tell them apart by host.
        real = len(set(names)) == len(names) and not any("/" in h for h in names)
        if real:
            check_host_names(names, f"--node-topologies {args.node_topologies}")
        return _checked(NodeChoice(args.node_topologies, len(trees), trees, names if real else ()), counts.nodes)
    specs = args.topology or ["this"]
    if len(specs) == 1:
        return NodeChoice(specs[0], 1 if counts.nodes is None else counts.nodes)
    return _checked(NodeChoice(",".join(specs), len(specs), tuple(load_node_tree(t) for t in specs)), counts.nodes)


def _checked(choice: NodeChoice, nodes: int | None) -> NodeChoice:
    """`choice`, unless --nodes says another number of nodes (UsageError)."""
    if nodes is not None and nodes != choice.nodes:
        raise UsageError(f"--nodes {nodes} contradicts the {choice.nodes} node topologies given")
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


def place_inputs(args: argparse.Namespace) -> dict[str, str | None]:
    """Every file `hympi place` reads (option -> path), which its --out must not replace: the matrix, the node
    topologies file and each --topology that is a file (not 'this' or 'synthetic:...')."""
    inputs: dict[str, str | None] = {"--matrix": args.matrix, "--node-topologies": args.node_topologies}
    for number, spec in enumerate(args.topology or [], 1):
        if Path(spec).is_file():
            inputs[f"--topology ({number})" if len(args.topology) > 1 else "--topology"] = spec
    return inputs


def main(args: argparse.Namespace) -> int:
    """Reads the matrix and topology, maps, compares, writes rankfiles."""
    counts = from_record(PlaceParams, resolve(args, PLACE))
    if args.out:
        inputs = place_inputs(args)
        check_output_file(args.out, "--out", inputs)
        check_output_file(f"{args.out}.hydra", "--out", inputs)  # its MPICH twin is written beside it
    matrix = read_matrix(args.matrix)
    groups = parse_groups(args.groups, matrix.ranks) if args.groups is not None else None
    nodes = choose_nodes(args, counts)
    hosts = list(nodes.hosts) if args.hosts is None and nodes.hosts else host_names(args.hosts, nodes.nodes)
    report = place(matrix, nodes.topology, nodes.nodes, counts.ranks_per_node, counts.fill, groups, nodes.trees)
    best = report.best()
    rankfile = write_openmpi_rankfile(report.cluster, best.slots, hosts)
    if args.out:
        out = Path(args.out)
        try:
            write_output(out, rankfile)
            write_output(f"{out}.hydra", write_hydra(report.cluster, best.slots, hosts, out.name))
        except OSError as exc:
            raise UsageError(f"cannot write --out {args.out} ({exc.strerror or exc})") from None
    if args.json:
        print(json.dumps({**report.as_dict(), "rankfile": args.out, "hosts": hosts}))
        return 0
    console = Console()
    console.print(comparison_table(report))
    if report.groups is not None:
        console.print(groups_table(report))
    if args.out:
        print(f"rankfile ({best.name}) written to {args.out} (MPICH/Hydra: {args.out}.hydra)")
    else:
        print(rankfile, end="")
    return 0
