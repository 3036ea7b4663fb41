"""hympi sweep APP: every ranks x threads x binding layout, repeated, recorded; resumable."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.console import Console

from hympi.apps import APPS
from hympi.cli.common import add_db_option
from hympi.errors import UsageError
from hympi.launch import slurm
from hympi.launch.mpirun import BIND_POLICIES, DISTRIBUTIONS, format_command
from hympi.report.analysis import group_runs, recommend
from hympi.store import Store
from hympi.sweep import (
    DEFAULT_TIMEOUT_S,
    LAUNCHERS,
    SweepParams,
    batch_request,
    command_for,
    cpu_limit,
    cross_layouts,
    open_sweep,
    parse_choice_list,
    parse_int_list,
    plan,
    record_machine,
    run_sweep,
    validate_layouts,
)
from hympi.topology import machine_summary


def _resume_value(text: str) -> int:
    """--resume ID: a positive sweep id."""
    try:
        value = int(text)
    except ValueError:
        raise UsageError(f"--resume: '{text}' is not a sweep id") from None
    if value < 1:
        raise UsageError(f"--resume: sweep id must be >= 1, got {value}")
    return value


def add_parser(sub: argparse._SubParsersAction, name: str) -> None:
    """Registers `hympi sweep`."""
    p = sub.add_parser(name, help="sweep layouts of one app into the results database",
                       description="Run APP for every ranks x threads x binding layout, --repeat times each, and "
                                   "record every run: hympi sweep APP --ranks 1,2 --threads 1,2 [-- app args]")
    p.add_argument("app", help=f"one of: {', '.join(sorted(APPS))}")
    p.add_argument("--ranks", "-n", default="1", help="comma-separated MPI rank counts (default 1)")
    p.add_argument("--threads", "-t", default="1", help="comma-separated OpenMP threads per rank (default 1)")
    p.add_argument("--bind", default="core", help=f"comma-separated bindings from {', '.join(BIND_POLICIES)}")
    p.add_argument("--dist", default="compact", help=f"distribution: {', '.join(DISTRIBUTIONS)}")
    p.add_argument("--repeat", type=int, default=1, help="runs per layout (default 1)")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S,
                   help=f"seconds before a run is killed and recorded as timeout (default {DEFAULT_TIMEOUT_S:g})")
    p.add_argument("--oversubscribe", action="store_true", help="also run layouts with ranks x threads > PUs")
    p.add_argument("--virtual-nodes", type=int, default=1, help="split this machine into N pretend nodes")
    add_db_option(p)
    p.add_argument("--resume", nargs="?", const=True, default=False, type=_resume_value, metavar="ID",
                   help="continue the latest unfinished sweep with the same parameters (or sweep ID)")
    p.add_argument("--launcher", default="mpirun", help=f"{' or '.join(LAUNCHERS)} (default mpirun)")
    p.add_argument("--sbatch", default=None, metavar="PATH",
                   help="slurm outside an allocation: where to write the sbatch script (default hympi-sweep-APP.sbatch)")
    p.add_argument("--dry-run", action="store_true", help="print the launch commands; run and record nothing")
    p.set_defaults(handler=main)


def params_from_args(args: argparse.Namespace) -> SweepParams:
    """Checked SweepParams from the command line (UsageError on bad input)."""
    ranks = parse_int_list("--ranks", args.ranks)
    threads = parse_int_list("--threads", args.threads)
    binds = parse_choice_list("--bind", args.bind, BIND_POLICIES)
    params = SweepParams(args.app, cross_layouts(ranks, threads), binds, args.dist, args.repeat, tuple(args.app_args),
                         args.timeout, args.oversubscribe, args.virtual_nodes, args.launcher)
    params.check()
    return params


def main(args: argparse.Namespace) -> int:
    """Plans, validates, then runs (or prints, or writes an sbatch script for) the sweep."""
    params = params_from_args(args)
    console = Console()
    resume = args.resume
    if isinstance(resume, int) and not isinstance(resume, bool):
        with Store.open(args.db, create=False) as existing:  # the recorded parameters win over the command line
            recorded = existing.sweep(resume)
        if recorded.app != params.app:
            raise UsageError(f"sweep {resume} is a sweep of {recorded.app}, not {params.app}")
        params = SweepParams.from_dict(recorded.params)
    summary = machine_summary()
    the_plan = plan(params, cpu_limit(params, summary))
    if not the_plan.items:
        raise UsageError(f"every layout needs more than the {summary.pus} PUs of this machine "
                         "(pass --oversubscribe to run them anyway)")
    validate_layouts(params, the_plan.items)
    for ranks, threads in the_plan.skipped:
        print(f"hympi: skipping {ranks}x{threads}: {ranks * threads} > {summary.pus} PUs (use --oversubscribe)",
              file=sys.stderr)
    outside = params.launcher == "slurm" and not slurm.in_allocation()
    if outside:
        req = batch_request(params, Path(args.db), len(the_plan.items))
        script = slurm.sbatch_script(req)
        if args.dry_run:
            print(script, end="")
            print("# job steps the script's sweep runs with srun:")
            for item in the_plan.items:
                print(format_command(command_for(params, item)))
            return 0
        target = Path(args.sbatch or f"hympi-sweep-{params.app}.sbatch")
        try:
            target.write_text(script)
        except OSError as exc:
            raise UsageError(f"cannot write sbatch script {target} ({exc.strerror or exc})") from None
        target.chmod(0o755)
        print(f"wrote {target}: {len(the_plan.items)} runs; submit with: sbatch {target}")
        return 0
    if args.dry_run:
        for item in the_plan.items:
            print(format_command(command_for(params, item)))
        return 0
    store = Store.open(args.db)
    try:
        machine = record_machine(store, summary, params.launcher)
        sweep, resumed = open_sweep(store, machine, params, len(the_plan.items), resume)
        done = len(store.done_keys(sweep.id))
        verb = "resuming" if resumed else "starting"
        console.print(f"{verb} sweep {sweep.id}: {params.app}, {len(the_plan.items)} runs "
                      f"({done} already recorded) -> {args.db}", highlight=False)
        result = run_sweep(store, sweep, params, the_plan.items, console)
        runs = store.runs([sweep.id])
        counts = ", ".join(f"{n} {status}" for status, n in sorted(result.statuses.items())) or "nothing to run"
        console.print(f"sweep {sweep.id} finished: {counts}", highlight=False)
        for group in group_runs(runs, {sweep.id: machine.id}):
            console.print(f"{group.app} {group.problem}: {recommend(group)}", highlight=False)
        console.print(f"results: {args.db} (hympi report --db {args.db}; hympi export --db {args.db})",
                      highlight=False)
        failed = sum(1 for r in runs if r.status != "ok")
        return 1 if failed else 0
    except KeyboardInterrupt:
        print(f"hympi: sweep interrupted; finished runs are in {args.db}; continue with --resume", file=sys.stderr)
        raise
    finally:
        store.close()
