"""hympi place --matrix FILE: rank-to-core map minimising volume x distance, written as rankfiles."""

from __future__ import annotations

import argparse
import json
import socket
from pathlib import Path

from rich.console import Console
from rich.table import Table

from hympi.cli.common import check_output_file
from hympi.cli.parser import Subparsers
from hympi.errors import UsageError
from hympi.place import PlacementReport, place
from hympi.place.groups import BETWEEN, GROUP_NAMES, parse_groups
from hympi.place.mapping import FILLS
from hympi.place.matrix import read_matrix
from hympi.place.rankfile import write_hydra, write_openmpi_rankfile


def add_parser(sub: Subparsers, name: str) -> None:
    """Registers `hympi place`."""
    p = sub.add_parser(name, help="map ranks to cores from a communication matrix",
                       description="Map ranks to cores so heavy talkers share caches, packages and nodes; "
                                   "write an Open MPI rankfile (and FILE.hydra for MPICH).",
                       epilog="Matrix formats ('#' starts a comment): a hympi profile JSON file (its 'bytes'); a "
                              "coordinate list, first line 'ranks N', then one 'src dst volume' line per entry "
                              "(ranks 0..N-1, volume >= 0, repeated pairs add up; memory grows with the lines, "
                              "use it for thousands of ranks); or a dense text matrix (row i: the volume rank i "
                              "sends to each rank).")
    p.add_argument("--matrix", required=True,
                   help="hympi profile JSON, coordinate list ('ranks N' + 'src dst volume' lines) or dense text")
    p.add_argument("--topology", default="this", help="this | <file.xml> | synthetic:'<description>' (one node)")
    p.add_argument("--nodes", type=int, default=1, help="number of such nodes (default 1)")
    p.add_argument("--ranks-per-node", type=int, default=None, help="ranks on each node (default: ranks / nodes)")
    p.add_argument("--fill", default="compact", help=f"within a node: {' or '.join(FILLS)} (default compact)")
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
        return [socket.gethostname()] if nodes == 1 else [f"node{i}" for i in range(nodes)]
    names = [h.strip() for h in hosts.split(",")]
    if len(names) != nodes or not all(names):
        raise UsageError(f"--hosts '{hosts}' must name {nodes} host(s)")
    return names


def _pct(share: float) -> str:
    """'12.5%'."""
    return f"{100 * share:.1f}%"


def comparison_table(report: PlacementReport) -> Table:
    """Cost and traffic shares of each mapping."""
    m = report.cluster
    table = Table(title=f"{m.nodes} node(s) x {m.cores_per_node} cores, {report.per_node} ranks/node")
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


def main(args: argparse.Namespace) -> int:
    """Reads the matrix and topology, maps, compares, writes rankfiles."""
    if args.out:
        check_output_file(args.out, "--out")
        check_output_file(f"{args.out}.hydra", "--out")  # its MPICH twin is written beside it
    matrix = read_matrix(args.matrix)
    groups = parse_groups(args.groups, matrix.ranks) if args.groups is not None else None
    hosts = host_names(args.hosts, args.nodes)
    report = place(matrix, args.topology, args.nodes, args.ranks_per_node, args.fill, groups)
    best = report.best()
    rankfile = write_openmpi_rankfile(report.cluster, best.slots, hosts)
    if args.out:
        out = Path(args.out)
        try:
            out.write_text(rankfile)
            Path(f"{out}.hydra").write_text(write_hydra(report.cluster, best.slots, hosts, out.name))
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
