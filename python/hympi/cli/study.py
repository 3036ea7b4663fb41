"""hympi study: the one-command characterisation of this machine, ending with the report."""

from __future__ import annotations

import argparse
import sys

from hympi.cli.common import add_db_option, ensure_out_dir
from hympi.cli.parser import Subparsers, path_argument
from hympi.console import HympiConsole, say_on_stderr
from hympi.errors import StoppedBySignal, UsageError
from hympi.launch.mpirun import configured_flavor
from hympi.outputs import check_not_input
from hympi.params import from_record, register, resolve, rounds, texts
from hympi.program import PROGRAM_KEYS, load_programs
from hympi.store import check_database
from hympi.study import StudyOptions, run_study
from hympi.study_options import STUDY, check_apps
from hympi.topology import machine_summary


def add_parser(sub: Subparsers, name: str, summary: str) -> None:
    """Registers `hympi study`."""
    p = sub.add_parser(name, help=summary,
                       description="Topology, STREAM, then sweeps of every built app over the layouts that fill the "
                                   "cores (plus 1x1), memory per layout, the data-layout experiment (BT-MZ with its "
                                   "arrays placed four ways; needs >= 2 NUMA domains), the ping-pong "
                                   "latency/bandwidth per level of the communication hierarchy, and the HTML report.")
    p.add_argument("--out", default="hympi-report", type=path_argument("--out"),
                   help="report directory (default ./hympi-report)")
    add_db_option(p)
    register(p, STUDY)
    p.add_argument("--programs", default=None, metavar="FILE",
                   help=f"a programs file (TOML, [[program]] entries: {', '.join(PROGRAM_KEYS)}): sweep each of "
                        "your programs too; alone, without --apps, only them")
    p.add_argument("--resume", action="store_true", help="continue interrupted sweeps of an earlier study")
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    """Checks the options, runs the study and prints where the report is; UsageError on bad input."""
    values = resolve(args, STUDY)
    programs = load_programs(args.programs) if args.programs is not None else ()
    if programs and args.apps is None:
        values["apps"] = ()  # the user's programs, not hympi's own apps, unless --apps asks for them too
    check_apps(texts(values, "apps"))
    measured = rounds(values)
    if args.app_args:
        raise UsageError(f"hympi study takes no app arguments, got '{' '.join(args.app_args)}'")
    configured_flavor()  # before the report directory or the database is made
    # A database path that cannot be one, or a file that is not one, is refused before the report directory is made.
    check_not_input("--out", args.out, {"--db": args.db})
    check_database(args.db)
    out = ensure_out_dir(args.out)
    options = from_record(StudyOptions, {**values, "out_dir": out, "db": args.db, "resume": args.resume,
                                         "repeat": measured.repeat, "auto": measured.auto,
                                         "max_repeat": measured.max_repeat, "programs": programs})
    try:
        result = run_study(options, machine_summary(), HympiConsole())
    except StoppedBySignal as exc:
        say_on_stderr(f"hympi: study stopped by signal {exc.signum} ({exc.name}); continue with hympi study --resume")
        return exc.exit_code
    print(f"report: {result.report.resolve()}")
    # As `hympi sweep`: exit 0 only when every run ended ok, so that a script or a batch job sees a study whose
    # launches failed or whose apps got a wrong answer; the report is written either way and lists each such run.
    if not_ok := result.not_ok():
        counts = ", ".join(f"{n} {status}" for status, n in not_ok.items())
        print(f"hympi: {sum(not_ok.values())} of {sum(result.statuses.values())} runs did not end ok ({counts}); "
              "the report lists them under Runs", file=sys.stderr)
        return 1
    return 0
