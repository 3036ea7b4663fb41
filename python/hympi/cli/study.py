"""hympi study: the one-command characterisation of this machine, ending with the report."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from hympi.cli.common import add_db_option
from hympi.errors import UsageError
from hympi.report import ensure_out_dir
from hympi.study import StudyOptions, check_apps, default_apps, run_study
from hympi.sweep import parse_choice_list
from hympi.topology import machine_summary


def add_parser(sub: argparse._SubParsersAction, name: str) -> None:
    """Registers `hympi study`."""
    p = sub.add_parser(name, help="characterise this machine and write the report",
                       description="Topology, STREAM, then sweeps of every built app over the layouts that fill the "
                                   "cores (plus 1x1), memory per layout, the ping-pong latency/bandwidth per level "
                                   "of the communication hierarchy, and the HTML report.")
    p.add_argument("--quick", action="store_true", help="small problems, finishes in minutes on a small machine")
    p.add_argument("--out", default="hympi-report", help="report directory (default ./hympi-report)")
    add_db_option(p)
    p.add_argument("--apps", default=",".join(default_apps()), help="comma-separated subset of the apps to sweep (and pingpong, the hierarchy probe)")
    p.add_argument("--repeat", type=int, default=None, help="runs per layout (default 3 quick, 5 full)")
    p.add_argument("--timeout", type=float, default=None, help="seconds per run (default 120 quick, 1800 full)")
    p.add_argument("--resume", action="store_true", help="continue interrupted sweeps of an earlier study")
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    """Checks the options, runs the study and prints where the report is."""
    apps = parse_choice_list("--apps", args.apps, default_apps())
    check_apps(apps)
    repeat = args.repeat if args.repeat is not None else (3 if args.quick else 5)
    timeout = args.timeout if args.timeout is not None else (120.0 if args.quick else 1800.0)
    if repeat < 1:
        raise UsageError(f"--repeat must be >= 1, got {repeat}")
    if not timeout > 0:
        raise UsageError(f"--timeout must be > 0, got {timeout}")
    if args.app_args:
        raise UsageError(f"hympi study takes no app arguments, got '{' '.join(args.app_args)}'")
    out = ensure_out_dir(args.out)
    options = StudyOptions(args.quick, out, Path(args.db), apps, repeat, timeout, args.resume)
    index = run_study(options, machine_summary(), Console())
    print(f"report: {index.resolve()}")
    return 0
