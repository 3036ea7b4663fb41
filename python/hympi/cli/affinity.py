"""hympi affinity: where every rank and thread of a layout really runs, checked against the layout spec."""

from __future__ import annotations

import argparse
import sys

from rich.markup import escape
from rich.table import Table

from hympi.cli.common import (
    asks_for_help,
    launch_ended,
    launch_of,
    print_app_help,
    run_program_probed,
    write_through_err,
)
from hympi.cli.parser import Subparsers
from hympi.cli.run import live_echo, report
from hympi.console import HympiConsole, add_plain_row
from hympi.errors import UsageError
from hympi.launch.command import launch_command
from hympi.launch.layout import LayoutSpec, cpu_list
from hympi.launch.layout_check import layout_mismatches
from hympi.launch.mpirun import LaunchSpec, one_mpi_job, run_command
from hympi.layout_options import LAUNCH
from hympi.params import register, resolve
from hympi.paths import program_named
from hympi.place.tree import load_node_tree
from hympi.prepare import PREPARE
from hympi.probe import affinity_problems
from hympi.program import ENV, KEEP_RUN_DIRS, STDIN, program_of, refuse_program_flags

# A program's declarations that its launch needs (its metric and verification judge a run; affinity judges none).
PROGRAM_LAUNCH = (STDIN, ENV, PREPARE, KEEP_RUN_DIRS)


def add_parser(sub: Subparsers, name: str, summary: str) -> None:
    """Registers `hympi affinity`."""
    p = sub.add_parser(name, help=summary,
                       description="Show where each rank and thread runs (host, PU, core, NUMA, package).")
    p.add_argument("program", nargs="?", default=None,
                   help="a program of your own (by its path, anything with a '/'; its arguments after --) to watch "
                        "through the probe instead of hympi-affinity")
    register(p, LAUNCH)
    register(p, PROGRAM_LAUNCH)  # what a program needs to start: its variables, standard input and prepared input
    p.add_argument("--check", action="store_true",
                   help="fail if a thread runs outside its set, two threads share a core under core binding, or any "
                        "thread is not on the cpuset the layout spec intends ('hympi layout' prints them)")
    p.add_argument("--json", action="store_true", help="print the result record as JSON")
    p.set_defaults(handler=main)


def intended_layout(spec: LaunchSpec, bind: str) -> LayoutSpec:
    """The one-node layout spec whose cpusets the run must show, whoever binds (the same rule for hympi and the
    launcher); `bind` is the binding asked for (a rankfile's run launches with HYMPI_BIND=none)."""
    return LayoutSpec(1, spec.ranks, spec.threads, bind, spec.dist, spec.rankfile, spec.oversubscribe)


def check_program(args: argparse.Namespace) -> int:
    """Runs a program of the user's own under the probe, bound by the launcher, and prints where each of its ranks'
    OpenMP threads was bound and ran; with --check, compares that with the layout spec."""
    if not program_named(args.program):
        raise UsageError(f"hympi affinity {args.program}: a program of your own is named by its path (./"
                         f"{args.program}); without one, hympi-affinity is run")
    program = program_of(args.program, resolve(args, PROGRAM_LAUNCH))
    launch = launch_of(args, "affinity", program.path, args.app_args, program=True)
    spec = launch.spec
    outcome, processes, run_dir = run_program_probed(program, launch, args.app_args)
    launch_ended(program, run_dir, outcome.status == "ok")
    table = Table(title=escape(f"{program.name}: where each thread was bound and ran (probe)"))
    for column in ("host", "rank", "thread", "bound", "ran on PUs"):
        table.add_column(column)
    for p in processes:
        for t in p.threads:
            add_plain_row(table, p.host, str(p.rank), str(t.number), cpu_list(t.bound), cpu_list(t.used))
    HympiConsole().print(table)
    if outcome.status != "ok":
        print(f"hympi: error: the run {outcome.status}: {outcome.stderr_tail(1).removeprefix('hympi: ')}",
              file=sys.stderr)
        return 1
    if not args.check:
        return 0
    problems = affinity_problems(processes, intended_layout(spec, spec.bind).placements(load_node_tree("this")))
    for problem in problems:
        print(f"layout mismatch: {problem}", file=sys.stderr)
    print(f"layout check (launcher binds, probe watches): {'FAILED' if problems else 'PASSED'}", file=sys.stderr)
    return 1 if problems else 0


def main(args: argparse.Namespace) -> int:
    """Launches hympi-affinity with the layout, prints its table and, with --check, compares it with the spec."""
    if args.program is not None:
        return check_program(args)
    refuse_program_flags("hympi-affinity", resolve(args, PROGRAM_LAUNCH))
    if asks_for_help(args.app_args):
        return print_app_help("hympi-affinity")
    app_args = ["--check"] if args.check else []
    launch = launch_of(args, "affinity", "hympi-affinity", app_args + list(args.app_args))
    spec = launch.spec
    outcome = one_mpi_job(run_command(launch_command(spec, launch.launcher), launch.timeout,
                                      echo=live_echo(args.json), echo_err=write_through_err), spec.ranks)
    code = report(outcome, args.json, launch.timeout)
    if not args.check or outcome.result is None:
        return code
    places = intended_layout(spec, spec.bind).placements(load_node_tree("this"))
    problems = layout_mismatches(places, list(outcome.result.binding))
    for problem in problems:
        print(f"layout mismatch: {problem}", file=sys.stderr)
    print(f"layout check ({spec.binder} binds): {'FAILED' if problems else 'PASSED'}", file=sys.stderr)
    return code or (1 if problems else 0)
