"""hympi info: the machine's topology summary."""

from __future__ import annotations

import argparse
import json

from rich.console import Console
from rich.table import Table

from hympi.cli.parser import Subparsers
from hympi.launch.mpirun import launcher_path, mpi_flavor
from hympi.topology import machine_summary


def add_parser(sub: Subparsers, name: str) -> None:
    """Registers `hympi info`."""
    p = sub.add_parser(name, help="topology summary", description="Topology of this machine (hwloc).")
    p.add_argument("--topology", default="this", help="this | synthetic:<description> | <file.xml>")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=main)


def _size(n: int) -> str:
    """Bytes in KiB/MiB for people."""
    return f"{n / 2**20:.0f} MiB" if n >= 2**20 else f"{n / 2**10:.0f} KiB"


def main(args: argparse.Namespace) -> int:
    """Prints the topology summary (and the MPI launcher in use)."""
    summary = machine_summary(args.topology)
    if args.json:
        print(json.dumps(summary.as_dict()))
        return 0
    table = Table(title=f"topology ({args.topology})", show_header=False)
    table.add_row("packages", str(summary.packages))
    table.add_row("NUMA domains", str(summary.numa_nodes))
    table.add_row("cores", str(summary.cores))
    table.add_row("PUs", str(summary.pus))
    for level, size, count in summary.caches:
        table.add_row(f"L{level} cache", f"{count} x {_size(size)}")
    table.add_row("hash", summary.hash)
    if args.topology == "this":
        launcher = launcher_path()
        table.add_row("MPI launcher", f"{launcher} ({mpi_flavor(launcher)})")
    Console().print(table)
    return 0
