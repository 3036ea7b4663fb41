"""hympi study: the one-command characterisation of this machine, ending with the report."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.console import Console

from hympi.cli.common import add_db_option, ensure_out_dir, parse_seconds
from hympi.cli.parser import Subparsers
from hympi.cli.sweep import add_measurement_options, measurement
from hympi.errors import SweepInterrupted, UsageError
from hympi.launch.mpirun import configured_flavor
from hympi.study_options import (
    FULL_MAX_REPEAT,
    FULL_MIN_TIME_S,
    QUICK_MAX_REPEAT,
    QUICK_MIN_TIME_S,
    check_apps,
    default_apps,
)
from hympi.sweep_options import AUTO_MIN_REPEAT, default_min_time, min_time_is_set, parse_choice_list
from hympi.topology import machine_summary


def add_parser(sub: Subparsers, name: str) -> None:
    """Registers `hympi study`."""
    p = sub.add_parser(name, help="characterise this machine and write the report",
                       description="Topology, STREAM, then sweeps of every built app over the layouts that fill the "
                                   "cores (plus 1x1), memory per layout, the data-layout experiment (BT-MZ with its "
                                   "arrays placed four ways; needs >= 2 NUMA domains), the ping-pong "
                                   "latency/bandwidth per level of the communication hierarchy, and the HTML report.")
    p.add_argument("--quick", action="store_true", help="small problems, finishes in minutes on a small machine")
    p.add_argument("--out", default="hympi-report", help="report directory (default ./hympi-report)")
    add_db_option(p)
    p.add_argument("--apps", default=",".join(default_apps()),
                   help="comma-separated subset of the apps to sweep (and data-layout, the Fig. 9 experiment; "
                        "pingpong, the hierarchy probe)")
    add_measurement_options(p, f"measured runs per layout, or auto (the default): {AUTO_MIN_REPEAT} rounds, then more "
                               "rounds of the layouts still in the noise of the best, up to --max-repeat "
                               f"(default {QUICK_MAX_REPEAT} quick, {FULL_MAX_REPEAT} full)",
                            f"minimum seconds of each run's timed region (default $HYMPI_MIN_TIME, else "
                            f"{QUICK_MIN_TIME_S:g} quick, {FULL_MIN_TIME_S:g} full; 0 = off)")
    p.add_argument("--timeout", default=None, help="seconds per run (default 120 quick, 1800 full)")
    p.add_argument("--resume", action="store_true", help="continue interrupted sweeps of an earlier study")
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    """Checks the options, runs the study and prints where the report is; UsageError on bad input."""
    from hympi.study import StudyOptions, run_study  # numpy, the sweeps and the report: only when a study runs

    apps = parse_choice_list("--apps", args.apps, default_apps())
    check_apps(apps)
    timeout = parse_seconds("--timeout", args.timeout, False) if args.timeout is not None else \
        (120.0 if args.quick else 1800.0)
    if args.repeat is None:
        args.repeat = "auto"
    if args.max_repeat is None and args.repeat == "auto":
        args.max_repeat = QUICK_MAX_REPEAT if args.quick else FULL_MAX_REPEAT
    env_min_time = default_min_time() if min_time_is_set() else None
    min_default = env_min_time if env_min_time is not None else (QUICK_MIN_TIME_S if args.quick else FULL_MIN_TIME_S)
    repeat, auto, max_repeat, confidence, min_time, seed = measurement(args, AUTO_MIN_REPEAT, min_default)
    if args.app_args:
        raise UsageError(f"hympi study takes no app arguments, got '{' '.join(args.app_args)}'")
    configured_flavor()  # before the report directory or the database is made
    out = ensure_out_dir(args.out)
    options = StudyOptions(args.quick, out, Path(args.db), apps, repeat, timeout, args.resume, min_time, auto,
                           max_repeat, confidence, seed, not args.no_warmup)
    try:
        index = run_study(options, machine_summary(), Console())
    except SweepInterrupted as exc:
        print(f"hympi: study stopped by signal {exc.signum}; continue with hympi study --resume", file=sys.stderr)
        return exc.exit_code
    print(f"report: {index.resolve()}")
    return 0
