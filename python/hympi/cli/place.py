"""hympi place --matrix FILE: rank-to-core map minimising volume x distance, written as rankfiles. Its options
here; the placement in cli/place_main.py."""

from __future__ import annotations

import argparse

from hympi.cli.parser import Subparsers
from hympi.limits import MAX_NODE_PUS, MAX_NODES, count_argument
from hympi.place.options import FILLS


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
    p.add_argument("--topology", action="append", default=None,
                   help="this | <file.xml> | synthetic:'<description>': one node, copied --nodes times (default this); "
                        "given several times, one per node (unlike nodes)")
    p.add_argument("--node-topologies", default=None, metavar="FILE",
                   help="one node per entry of FILE, as `hympi info --all-nodes --json` wrote it (each node's own "
                        "hwloc tree; hosts from it when they are distinct real hosts)")
    p.add_argument("--nodes", type=count_argument(MAX_NODES), default=None,
                   help="number of nodes (default 1, or one per topology given)")
    p.add_argument("--ranks-per-node", type=count_argument(MAX_NODE_PUS), default=None,
                   help="ranks on each node (default: ranks / nodes; on unlike nodes in proportion to their cores)")
    p.add_argument("--fill", default="compact", help=f"within a node: {' or '.join(FILLS)} (default compact)")
    p.add_argument("--hosts", default=None, help="comma-separated host names for the rankfile, one per node")
    p.add_argument("--groups", default=None, metavar="COARSE:FINE",
                   help="two MPI groups in world-rank order (hympi-pencil --groups): also compare each group on its "
                        "own contiguous nodes with the groups interleaved; the rankfile gets groups-contiguous")
    p.add_argument("--out", default=None, help="write the Open MPI rankfile here (and OUT.hydra)")
    p.add_argument("--json", action="store_true", help="print the comparison as JSON")
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    """Runs `hympi place` (cli/place_main.main: UsageError on bad input)."""
    from hympi.cli import place_main  # numpy and the mapping algorithms: only when ranks are placed

    return place_main.main(args)
