"""hympi sweep APP: every ranks x threads x binding x memory policy layout (or, for a two-level app, every
N1 x N2 x inner mode), repeated, recorded; resumable. The parameters that define a sweep are declared in
hympi.sweep_options; here they are registered, resolved into SweepParams, and the sweep is planned, validated, then
run (or printed, or written as an sbatch script)."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Mapping
from pathlib import Path

from hympi.apps import APPS
from hympi.busy.quiet import quiet_start
from hympi.cli.common import (
    add_db_option,
    add_mpi_param_options,
    check_output_file,
    mpi_params_from_args,
    report_interrupt,
    subject_inputs,
)
from hympi.cli.parser import Subparsers
from hympi.console import HympiConsole, say_on_stderr
from hympi.errors import HympiFatal, StdoutLost, StoppedBySignal, UsageError
from hympi.launch import slurm, slurm_jobs
from hympi.launch.detect import find_launcher
from hympi.launch.mpirun import format_command
from hympi.outputs import check_not_input, write_output
from hympi.params import QUIET_CHECK, Value, from_record, ints, parse_row_id, register, resolve, rounds, texts
from hympi.program import PROGRAM
from hympi.report.analysis import group_runs
from hympi.report.explain import recommendation_lines
from hympi.store import Store, Sweep
from hympi.sweep import (
    SweepParams,
    batch_request,
    cpu_limit,
    open_sweep,
    plan,
    planned_commands,
    program_subject,
    record_machine,
    restartable,
    restartable_items,
    resume_missed,
    run_sweep,
    validate_layouts,
)
from hympi.sweep_options import SWEEP, cross_layouts
from hympi.topology import machine_summary
from hympi.twolevel import INNER_MODES, check_options, expand, sweep_axes

# The flag that continues an unfinished sweep.
RESUME_FLAG = "--resume"


def _resume_value(text: str) -> int:
    """--resume ID: a positive sweep id."""
    return parse_row_id(RESUME_FLAG, text, "a sweep id")


def add_parser(sub: Subparsers, name: str, summary: str) -> None:
    """Registers `hympi sweep`."""
    p = sub.add_parser(name, help=summary,
                       description="Run APP for every ranks x threads x binding x memory policy layout, --repeat "
                                   "times each, and record every run: hympi sweep APP --ranks 1,2 --threads 1,2 "
                                   "[-- app args]")
    p.add_argument("app", help=f"one of: {', '.join(sorted(APPS))}; or a program of your own, by its path (anything "
                              "with a '/': ./solver, /usr/bin/lmp), its arguments after --")
    register(p, SWEEP)
    register(p, QUIET_CHECK)
    register(p, PROGRAM)
    add_mpi_param_options(p)
    add_db_option(p)
    p.add_argument(RESUME_FLAG, nargs="?", const=True, default=False, type=_resume_value, metavar="ID",
                   help="continue the latest unfinished sweep with the same parameters (or sweep ID)")
    p.add_argument("--sbatch", default=None, metavar="PATH",
                   help="slurm outside an allocation: where to write the sbatch script "
                        "(default hympi-sweep-APP.sbatch)")
    p.add_argument("--submit", action="store_true",
                   help="slurm outside an allocation: submit the sbatch script (after checking that the controller "
                        "answers) and print the job id")
    p.add_argument("--wait", action="store_true",
                   help="slurm outside an allocation: submit the script, wait for the job to end, print its output "
                        "and exit 0 only when every run in it succeeded")
    p.add_argument("--dry-run", action="store_true", help="print the launch commands; run and record nothing")
    p.set_defaults(handler=main)




def layouts_of(app: str, values: Mapping[str, Value], app_args: tuple[str, ...],
               ) -> tuple[tuple[tuple[int, int], ...], tuple[tuple[str, ...], ...]]:
    """The (ranks, threads) launches and their own app arguments: --ranks x --threads, or for a two-level app
    --n1 x --n2 x --inner (hympi.twolevel); UsageError for the two mixed."""
    if any(key in values for key in ("n1", "n2", "inner")):
        check_options(app, "ranks" in values or "threads" in values, app_args)
        return sweep_axes(expand(ints(values, "n1"), ints(values, "n2"), texts(values, "inner", INNER_MODES)))
    return cross_layouts(ints(values, "ranks"), ints(values, "threads")), ()


def params_from_args(args: argparse.Namespace) -> SweepParams:
    """Checked SweepParams from the command line (UsageError on bad input): each parameter as hympi.sweep_options
    declares it, then what only their combination decides."""
    values = resolve(args, SWEEP, {"app": args.app})
    named = program_subject(args.app, resolve(args, PROGRAM))
    layouts, layout_args = layouts_of(args.app, values, tuple(args.app_args))
    measured = rounds(values)
    if "checkpoint_every" in values and "checkpoint_dir" not in values:
        raise UsageError("--checkpoint-every needs --checkpoint-dir")
    checkpoint_dir = str(values.get("checkpoint_dir", ""))
    if "checkpoint_dir" in values:
        if not checkpoint_dir.strip():
            raise UsageError("--checkpoint-dir needs a directory, got ''")
        checkpoint_dir = str(Path(checkpoint_dir).expanduser().absolute())
    params = from_record(SweepParams, {
        **values, **named, "layouts": layouts, "layout_args": layout_args, "app_args": tuple(args.app_args),
        "repeat": measured.repeat, "auto": measured.auto, "max_repeat": measured.max_repeat,
        "checkpoint_dir": checkpoint_dir})
    params.check()
    if params.launcher not in ("mpirun", "slurm"):
        find_launcher(params.launcher)  # not installed, or another version: exit 1 before anything is written
    # Checked last: it asks the MPI library (one short launch) only when the rest of the command line is sound.
    mpi_params = mpi_params_from_args(args)
    return dataclasses.replace(params, mpi_params=mpi_params) if mpi_params else params


def make_checkpoint_dir(directory: str) -> Path | None:
    """Creates the checkpoint directory (and its parents); returns it when this call created it (to remove it again
    if the sweep is refused), None when it existed. UsageError when it cannot be created."""
    path = Path(directory)
    if path.is_dir():
        return None
    try:
        path.mkdir(parents=True)
    except OSError as exc:
        raise UsageError(f"--checkpoint-dir {directory} cannot be created ({exc.strerror or exc})") from None
    return path


def submit_script(script: Path, req: slurm.BatchRequest, runs: int, wait: bool) -> int:
    """Submits the written sbatch script (removing it when sbatch refuses it) and, with `wait`, follows the job to
    its end: prints its output and returns 0 when it completed, 1 otherwise (HympiFatal when Slurm fails us)."""
    try:
        job_id = slurm_jobs.submit(script, req.workdir)
    except HympiFatal:
        script.unlink(missing_ok=True)
        raise
    output = Path(req.workdir) / slurm.batch_output(req, job_id)
    print(f"submitted job {job_id} ({script}: {runs} runs); output: {output}", flush=True)
    if not wait:
        return 0
    try:
        final = slurm_jobs.wait_for(job_id)
    except KeyboardInterrupt as exc:
        say_on_stderr(f"hympi: stopped waiting; job {job_id} goes on (scancel {job_id} stops it)")
        return exc.exit_code if isinstance(exc, StoppedBySignal) else 130
    if output.is_file():
        print(output.read_text(errors="replace"), end="")
    if final is None:
        print(f"hympi: job {job_id} ended and Slurm has forgotten how; see {output}", file=sys.stderr)
        return 1
    print(f"job {job_id} {final.state} (exit code {final.exit_code})", flush=True)
    return 0 if final.state == "COMPLETED" and final.exit_code == 0 else 1


def main(args: argparse.Namespace) -> int:
    """Plans, validates, then runs (or prints, or writes an sbatch script for) the sweep."""
    params = params_from_args(args)
    # An input file named by mistake is not turned into a database (an empty one would be).
    check_not_input("--db", args.db, subject_inputs(params.program_spec(), params.app, params.app_args, args.cvars))
    quiet = resolve(args, QUIET_CHECK)  # checked before anything is written
    console = HympiConsole()
    resume = args.resume
    if isinstance(resume, int) and not isinstance(resume, bool):
        with Store.open(args.db, create=False) as existing:  # the recorded parameters win over the command line
            recorded = existing.sweep(resume)
        if recorded.app != params.app:
            raise UsageError(f"sweep {resume} is a sweep of {recorded.app}, not {params.app}")
        kept = SweepParams.from_dict(recorded.params)
        if args.app_args and tuple(args.app_args) != kept.app_args:
            raise UsageError(f"--resume {resume}: sweep {resume} ran with app arguments '{' '.join(kept.app_args)}', "
                             f"not '{' '.join(args.app_args)}'; start a new sweep to change them")
        if params.checkpoint_dir and params.checkpoint_dir != kept.checkpoint_dir:
            raise UsageError(f"--resume {resume}: sweep {resume} keeps its checkpoints in "
                             f"'{kept.checkpoint_dir or '(none)'}', not '{params.checkpoint_dir}'")
        if kept.program:
            kept.check()  # a program rebuilt since is another program: refused, not resumed
        params = kept
    elif params.checkpoint_dir:
        resume = True  # the checkpoint directory holds the sweep's state: the same command line continues it
    summary = machine_summary()
    the_plan = plan(params, cpu_limit(params, summary))
    if not the_plan.items:
        raise UsageError(f"every layout needs more than the {summary.pus} PUs of this machine "
                         "(pass --oversubscribe to run them anyway)")
    outside = params.launcher == "slurm" and not slurm.in_allocation()
    submit = args.submit or args.wait
    # Each of these only shapes the sbatch script; anywhere else it would be ignored without a word.
    script_flags = [flag for flag, given in (("--sbatch", args.sbatch is not None), ("--submit", args.submit),
                                             ("--wait", args.wait)) if given]
    if script_flags and not outside:
        raise UsageError(f"{' and '.join(script_flags)}: only a sweep with --launcher slurm outside an allocation "
                         "writes an sbatch script" + (" (this process runs in Slurm job "
                                                      f"{slurm_jobs.current_job()})" if slurm.in_allocation() else
                                                      f" (the launcher is {params.launcher})"))
    # The runs need the checkpoint directory, and the app checks the options naming it; a dry run or an sbatch
    # script creates nothing (the app then checks the options without it).
    created = make_checkpoint_dir(params.checkpoint_dir) if params.checkpoint_dir and not (args.dry_run or outside) \
        else None
    try:
        validate_layouts(params, the_plan.items)
    except BaseException:
        if created is not None:
            created.rmdir()
        raise
    # Said once the input has passed every check (the database, the sbatch script): bad input stays one line.
    skipped = [f"hympi: skipping {ranks}x{threads}: {ranks * threads} > {summary.pus} PUs (use --oversubscribe)"
               for ranks, threads in the_plan.skipped]
    if outside:
        req = batch_request(params, Path(args.db), len(the_plan.items))
        script = slurm.sbatch_script(req)
        if args.dry_run:
            say_on_stderr(*skipped)
            print(script, end="")
            print("# job steps the script's sweep runs with srun"
                  + (", each after its preparation (run by the sweep itself, on the first node):"
                     if (program := params.program_spec()) is not None and program.prepare else ":"))
            for item in the_plan.items:
                print(*map(format_command, planned_commands(params, item)), sep="\n")
            return 0
        target = check_output_file(args.sbatch or f"{slurm.sweep_job_name(params.app)}.sbatch", "--sbatch",
                                   {"--db": args.db, **subject_inputs(params.program_spec(), params.app,
                                                                      params.app_args, args.cvars)})
        if submit:
            slurm_jobs.check_reachable()  # before anything is written: an unreachable Slurm leaves no trace
        try:
            write_output(target, script, mode=0o755)
        except OSError as exc:
            raise UsageError(f"cannot write sbatch script {target} ({exc.strerror or exc})") from None
        say_on_stderr(*skipped)
        if not submit:
            print(f"wrote {target}: {len(the_plan.items)} runs; submit with: sbatch {target}")
            return 0
        return submit_script(target, req, len(the_plan.items), args.wait)
    if args.dry_run:
        say_on_stderr(*skipped)
        for item in the_plan.items:
            print(*map(format_command, planned_commands(params, item, restartable(params, item))), sep="\n")
        return 0
    store = Store.open(args.db)
    say_on_stderr(*skipped)
    sweep: Sweep | None = None
    try:
        machine = record_machine(store, summary, params.launcher)
        sweep, resumed = open_sweep(store, machine, params, len(the_plan.items), resume)
        if resumed:  # the recorded parameters (seed included) decide the order of what is left
            params = SweepParams.from_dict(sweep.params)
            the_plan = plan(params, cpu_limit(params, summary))
        elif args.resume is True:  # asked for, found nothing: say why before starting anew
            console.print(resume_missed(store, params, sweep), highlight=False, markup=False, soft_wrap=True)
        done = len(store.done_keys(sweep.id))
        again = len(restartable_items(store, sweep.id, params))
        restarts = f", {again} to restart from a checkpoint" if again else ""
        verb = "resuming" if resumed else "starting"
        warm = len(the_plan.layouts) if params.warmup else 0
        rounds = f"{params.repeat}..{params.max_repeat} rounds (--repeat auto)" if params.auto else \
            f"{params.repeat} round(s)"
        program = params.program_spec()
        timing = f"min time {params.min_time:g} s" if program is None else "probe preloaded"
        console.print(f"{verb} sweep {sweep.id}: {params.app}, {len(the_plan.items)} runs ({warm} warm-up, "
                      f"{rounds}, order seed {params.seed}, {timing}; {done} already recorded"
                      f"{restarts}) -> {args.db}", highlight=False, markup=False)
        if program is not None:
            console.print(f"your program: {program.summary()}", highlight=False, markup=False)
        if not quiet["ignore_load"]:
            quiet_start(params.disturbed_above, float(str(quiet["wait_quiet"])), slurm.in_allocation(),
                        lambda text: console.print(f"hympi: {text}", highlight=False, markup=False))
        result = run_sweep(store, sweep, params, the_plan.items, console)
        runs = store.runs([sweep.id])
        counts = ", ".join(f"{n} {status}" for status, n in sorted(result.statuses.items())) or "nothing to run"
        if result.restarted:
            counts += f"; {result.restarted} restarted from a checkpoint"
        if result.cancelled:
            console.print(f"sweep {sweep.id} stopped: {counts}; {result.cancelled} launch(es) cancelled by Slurm are "
                          "kept as attempts, not results: run it again with --resume to run them again",
                          highlight=False, markup=False)
        elif result.gave_up:
            console.print(f"sweep {sweep.id} stopped: {counts}; every launch failed, so nothing more was launched "
                          "(above)", highlight=False, markup=False)
        elif result.restartable:
            console.print(f"sweep {sweep.id} stopped: {counts}; {result.restartable} run(s) left a checkpoint in "
                          f"{params.checkpoint_dir}: run the same command again to restart them from it",
                          highlight=False, markup=False)
        else:
            console.print(f"sweep {sweep.id} finished: {counts}", highlight=False, markup=False)
        if result.auto is not None:
            console.print(result.auto.text, highlight=False, markup=False)
        groups = group_runs(runs, {sweep.id: machine.id})
        for line in recommendation_lines(groups, params.confidence):
            console.print(line, highlight=False, markup=False)
        console.print(f"results: {args.db} (hympi report --db {args.db}; hympi export --db {args.db})",
                      highlight=False, markup=False)
        failed = sum(1 for r in runs if r.status != "ok")
        return 1 if failed or result.cancelled else 0
    except KeyboardInterrupt as exc:  # SIGTERM (StoppedBySignal): the batch system's stop; exit as killed by it
        return report_interrupt("sweep", args.db, exc)
    except StdoutLost:  # before its first run (its header) or after its last: a sweep that ran on is not 'running'
        if sweep is not None and store.sweep(sweep.id).status == "running":
            store.set_sweep_status(sweep.id, "interrupted")
        raise
    finally:
        store.close()
