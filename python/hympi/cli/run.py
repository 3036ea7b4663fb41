"""hympi run APP: launch one app with a ranks x threads layout and show its result."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Callable
from typing import TypeVar

from rich.markup import escape
from rich.table import Table

from hympi.apps import APPS, get_app
from hympi.busy.accounting import Interference
from hympi.busy.sampler import Sampler
from hympi.cli.common import (
    Launch,
    add_mpi_param_options,
    asks_for_help,
    launch_ended,
    launch_of,
    mpi_params_from_args,
    print_app_help,
    refuse_unknown_for_program,
    run_program_probed,
    write_through,
    write_through_err,
)
from hympi.cli.parser import Subparsers
from hympi.console import HympiConsole, add_plain_row
from hympi.launch.command import launch_command
from hympi.launch.cvars import ignored_texts
from hympi.launch.layout import layout_pus, layout_words
from hympi.launch.mpirun import LaunchSpec, RunOutcome, one_mpi_job, run_command
from hympi.layout_options import LAUNCH
from hympi.params import DEFAULT_DISTURBED_ABOVE, DISTURBED_ABOVE, disturbed_above_of, register, resolve
from hympi.paths import program_named
from hympi.place.rankfile import binding_problems
from hympi.place.tree import ClusterTree, load_node_tree
from hympi.program import PROGRAM, program_of, refuse_program_flags
from hympi.result import PREFIX, ResultRecord, placement_share

RESULT_PREFIX = PREFIX.encode()
RUN_DISTURBED_ABOVE = DISTURBED_ABOVE.described(
    "warn when other work used more than this many cores of the run's PUs (on average) while it ran (default "
    f"$HYMPI_DISTURBED_ABOVE or {DEFAULT_DISTURBED_ABOVE:g})")


def add_parser(sub: Subparsers, name: str, summary: str) -> None:
    """Registers `hympi run`."""
    p = sub.add_parser(name, help=summary,
                       description="Run an app: hympi run APP [options] [app options] [-- APP-ARGS]; "
                                   "hympi run APP -- --help shows the app's own options")
    p.add_argument("app", help=f"one of: {', '.join(sorted(APPS))}; or a program of your own, by its path (anything "
                              "with a '/': ./solver, /usr/bin/lmp), its arguments after --")
    register(p, LAUNCH)
    register(p, PROGRAM)
    register(p, (RUN_DISTURBED_ABOVE,))
    add_mpi_param_options(p)
    p.add_argument("--json", action="store_true", help="print the result record as JSON")
    p.set_defaults(handler=main, forwards_unknown=True)


def result_table(record: ResultRecord) -> Table:
    """The fields people compare across layouts, one per row (fits any terminal width)."""
    # The app's output names the problem and unit, from its arguments or input file: no markup of hympi's.
    table = Table(title=escape(f"{record.app} {record.problem}"), show_header=False)
    rows = [("layout", layout_words(record.ranks, record.threads)),
            ("binding", f"{record.bind} ({record.dist})"),
            ("memory policy", memory_text(record)),
            ("time", f"{record.time_s:.4g} s"),
            ("rate", f"{record.rate:.4g} {record.rate_unit}"),
            ("comm / comp", f"{record.comm_s:.3g} s / {record.comp_s:.3g} s"),
            ("imbalance (max/avg)", f"{record.imbalance:.3f}"),
            ("peak memory", f"{record.max_rss_mib:.1f} MiB/rank, {record.node_rss_mib:.1f} MiB/node"),
            ("verified", "yes" if record.verified else "NO")]
    if record.bound_fraction is not None and record.kernel_gbs is not None and record.bound_gbs is not None:
        rows.insert(5, ("bandwidth", f"{record.kernel_gbs:.4g} GB/s, {record.bound_fraction:.2f} of the bound "
                                     f"{record.bound_gbs:.4g} GB/s (triad, {record.triad_source})"))
    for name, value in rows:
        add_plain_row(table, name, value)
    return table


def program_table(outcome: RunOutcome, spec: LaunchSpec) -> Table:
    """A program's run: its layout, how the launcher bound it, the wall time and its figure of merit."""
    assert outcome.record is not None
    metrics = outcome.record["metrics"]
    merit = metrics["merit"]
    # The cells quote the user's --verify and arguments, which rich would read as markup ('[/a-z]+' as a tag).
    table = Table(title=escape(f"{outcome.record['app']} {outcome.record['problem']}"), show_header=False)
    rows = [("layout", layout_words(spec.ranks, spec.threads)),
            ("binding", f"{spec.bind} ({spec.dist}), by the launcher"),
            ("wall time", f"{outcome.seconds:.4g} s"),
            ("figure of merit", f"{merit['value']:.6g} {merit['unit']} ({merit['better']} is better)"),
            ("verified", metrics["verification"])]
    for name, value in rows:
        add_plain_row(table, name, value)
    return table


def memory_text(record: ResultRecord) -> str:
    """'interleave; 100 % of 2048 pages where intended (f 100 %, u 100 %)': the policy and, for an app that reports
    its arrays, the share of their pages on the NUMA nodes the policy meant ('-' for a record without either)."""
    policy = record.membind or "-"
    share = placement_share(record.page_placement)
    if share is None or record.page_placement is None:
        return policy
    pages = sum(int(s.get("pages", 0) or 0) for s in record.page_placement.values() if isinstance(s, dict))
    arrays = ", ".join(f"{name} {100 * float(s.get('share_on_intended', 0.0)):.0f} %"
                       for name, s in sorted(record.page_placement.items()) if isinstance(s, dict))
    return f"{policy}; {100 * share:.0f} % of {pages} pages where intended ({arrays})"


def failure_message(outcome: RunOutcome, timeout: float | None) -> str:
    """Why a run that is not 'ok' failed, in one line."""
    if outcome.status == "timeout":
        return f"run timed out after {timeout:g} s and was killed" if timeout else "run timed out and was killed"
    if outcome.status == "unverified" and outcome.returncode == 0:
        # The app did not require its check (rb3d's --verify none, affinity without --check): nothing failed, but
        # nothing was confirmed either.
        return "run unverified: the app exited 0 without requiring verification (e.g. --verify none)"
    if outcome.status == "unverified":
        return f"run failed verification (exit code {outcome.returncode})"
    if outcome.returncode == 0 and outcome.stderr.rstrip().splitlines()[-1:] == []:
        return f"run exited with code 0 but printed no {PREFIX.strip()} line"
    last = outcome.stderr.rstrip().splitlines()[-1] if outcome.stderr.strip() else ""
    if last.startswith("hympi: "):  # hympi's own reason (a program's verification or metric not found)
        return f"run failed: {last.removeprefix('hympi: ')}"
    if outcome.returncode == 0:
        return f"run exited with code 0 but printed no {PREFIX.strip()} line"
    return f"run failed ({outcome.exit_text()})"


def echo_output(lines: bytes) -> None:
    """Writes a launch's output lines to hympi's own as they come (run_command's echo), less any HYMPI_RESULT line:
    the table after the run shows it. A run of minutes or hours shows its progress as under plain mpirun."""
    if RESULT_PREFIX in lines:
        lines = b"".join(line for line in lines.splitlines(keepends=True) if not line.startswith(RESULT_PREFIX))
    write_through(lines)


def live_echo(as_json: bool) -> Callable[[bytes], None] | None:
    """echo_output, unless hympi's own output is to be JSON alone (--json)."""
    return None if as_json else echo_output


# What a watched launch returns: its outcome, or a program's outcome with what else its launch made.
Ran = TypeVar("Ran")


def watched(launch: Launch, run: Callable[[], Ran]) -> tuple[Ran, Interference | None]:
    """run()'s outcome, and the other work on the PUs the layout binds while it ran (hympi.busy), as a sweep's runs
    are watched; None under Slurm (its steps are its daemons' children, not hympi's)."""
    if launch.launcher == "slurm":
        return run(), None
    spec = launch.spec
    layout = (spec.ranks, spec.threads, spec.bind)
    pus = layout_pus((layout,), spec.dist, launch.virtual_nodes, spec.oversubscribe).get(layout)
    with Sampler() as sampler:
        outcome = run()
    return outcome, sampler.interference(pus)


def warn_if_disturbed(busy: Interference | None, limit: float) -> None:
    """One line on stderr when other work used more than `limit` cores of the run's PUs: its figures are not the
    layout's alone (a sweep marks such a run and leaves it out of every verdict)."""
    if busy is not None and busy.disturbed(limit):
        print(f"hympi: warning: other work used {busy.outside_cores:.2f} cores of this run's PUs while it ran (more "
              f"than {RUN_DISTURBED_ABOVE.flag} {limit:g}): its figures are not the layout's alone", file=sys.stderr)


def report(outcome: RunOutcome, as_json: bool, timeout: float | None = None) -> int:
    """Prints the outcome of a launch whose output live_echo showed (and its error output, write_through_err);
    returns the exit code (0 ok, 1 failed, timed out or unverified)."""
    if as_json:
        print(json.dumps(outcome.record if outcome.record is not None else {"status": outcome.status}))
    elif outcome.result is not None:
        HympiConsole().print(result_table(outcome.result))
    if outcome.status != "ok":
        print(f"hympi: error: {failure_message(outcome, timeout)}", file=sys.stderr)
        return 1
    return 0


def run_program(args: argparse.Namespace) -> int:
    """Launches a program of the user's own (hympi.program), bound by the launcher, and judges its output."""
    refuse_unknown_for_program(args, "run")
    program = program_of(args.app, resolve(args, PROGRAM))
    mpi_params = mpi_params_from_args(args)
    limit = disturbed_above_of(args)  # before the launch: a bad value is bad input
    launch = launch_of(args, "run", program.path, args.app_args, program=True)
    launch = dataclasses.replace(launch, spec=dataclasses.replace(launch.spec, mpi_params=mpi_params))
    spec = launch.spec
    (outcome, _, run_dir), busy = watched(launch, lambda: run_program_probed(program, launch, args.app_args,
                                                                           live_echo(args.json), write_through_err))
    warn_if_disturbed(busy, limit)
    launch_ended(program, run_dir, outcome.status == "ok")
    if args.json:
        print(json.dumps(outcome.record if outcome.record is not None else {"status": outcome.status}))
    else:
        if outcome.record is not None:
            HympiConsole().print(program_table(outcome, spec))
            for finding in outcome.record["probe"]["findings"]:
                print(f"hympi: finding: {finding}", file=sys.stderr)
    if outcome.status != "ok":  # its error output was shown as it came
        print(f"hympi: error: {failure_message(outcome, launch.timeout)}", file=sys.stderr)
        return 1
    return 0


def main(args: argparse.Namespace) -> int:
    """Validates, launches and reports one run."""
    if program_named(args.app):
        return run_program(args)
    refuse_program_flags(args.app, resolve(args, PROGRAM))
    app = get_app(args.app)
    if asks_for_help(args.app_args):
        return print_app_help(app.binary)  # the help needs no layout and no launch
    mpi_params = mpi_params_from_args(args)
    limit = disturbed_above_of(args)  # before the launch: a bad value is bad input
    launch = launch_of(args, "run", app.binary, args.app_args)
    spec = dataclasses.replace(launch.spec, mpi_params=mpi_params)
    outcome, busy = watched(launch, lambda: one_mpi_job(run_command(
        launch_command(spec, launch.launcher), launch.timeout, echo=live_echo(args.json), echo_err=write_through_err),
        spec.ranks))
    warn_if_disturbed(busy, limit)
    code = report(outcome, args.json, launch.timeout)
    read_back = outcome.record.get("mpi_cvars") if outcome.record is not None else None
    for text in ignored_texts(mpi_params, read_back if isinstance(read_back, dict) else None):
        print(f"hympi: warning: {text}", file=sys.stderr)
    if spec.rankfile and outcome.result is not None and outcome.result.binding:
        # The rankfile took effect only if every rank really runs on its slot's PUs.
        problems = binding_problems(list(outcome.result.binding), spec.rankfile,
                                    ClusterTree(load_node_tree("this"), 1))
        for problem in problems:
            print(f"rankfile problem: {problem}", file=sys.stderr)
        print(f"rankfile check: {'FAILED' if problems else 'PASSED'}", file=sys.stderr)
        code = code or (1 if problems else 0)
    return code
