"""hympi affinity: where every rank and thread of a layout really runs."""

from __future__ import annotations

import argparse

from hympi.cli.common import add_layout_options, asks_for_help, layout_spec, print_app_help
from hympi.cli.parser import Subparsers
from hympi.cli.run import report
from hympi.launch.mpirun import launch


def add_parser(sub: Subparsers, name: str) -> None:
    """Registers `hympi affinity`."""
    p = sub.add_parser(name, help="binding table of a layout",
                       description="Show where each rank and thread runs (host, PU, core, NUMA, package).")
    add_layout_options(p)
    p.add_argument("--check", action="store_true",
                   help="fail if a thread runs outside its set or two threads share a core under core binding")
    p.add_argument("--json", action="store_true", help="print the result record as JSON")
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    """Launches hympi-affinity with the layout and prints its table."""
    if asks_for_help(args.app_args):
        return print_app_help("hympi-affinity")
    app_args = ["--check"] if args.check else []
    spec = layout_spec(args, "hympi-affinity", app_args + list(args.app_args))
    return report(launch(spec, timeout=args.timeout), args.json, args.timeout)
