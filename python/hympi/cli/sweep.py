"""hympi sweep APP: every ranks x threads x binding x memory policy layout (or, for a two-level app, every
N1 x N2 x inner mode), repeated, recorded; resumable."""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
from pathlib import Path

from rich.console import Console

from hympi.apps import APPS
from hympi.cli.common import (
    add_db_option,
    add_mpi_param_options,
    mpi_params_from_args,
    parse_integer,
    parse_seconds,
    report_interrupt,
)
from hympi.cli.parser import Subparsers
from hympi.errors import HympiFatal, UsageError
from hympi.launch import slurm, slurm_jobs
from hympi.launch.mpirun import BIND_POLICIES, DISTRIBUTIONS, MEMORY_POLICIES, format_command
from hympi.report.analysis import group_runs, recommend
from hympi.report.explain import explain, verdict_reasons
from hympi.settings import settings
from hympi.store import Store
from hympi.sweep import (
    AUTO_MIN_REPEAT,
    DEFAULT_CHECKPOINT_EVERY,
    DEFAULT_MAX_REPEAT,
    DEFAULT_TIMEOUT_S,
    LAUNCHERS,
    PROBES,
    SweepParams,
    batch_request,
    checkpoint_apps,
    command_for,
    cpu_limit,
    cross_layouts,
    default_min_time,
    open_sweep,
    parse_choice_list,
    parse_int_list,
    plan,
    random_seed,
    record_machine,
    restartable,
    restartable_items,
    run_sweep,
    validate_layouts,
)
from hympi.topology import machine_summary
from hympi.twolevel import INNER_MODES, TWO_LEVEL_APPS, check_options, expand, sweep_axes


def _resume_value(text: str) -> int:
    """--resume ID: a positive sweep id."""
    return parse_integer("--resume", text, 1, "a sweep id")


def parse_repeat(text: str) -> tuple[int, bool]:
    """--repeat N or auto -> (measured rounds, auto); UsageError naming the value otherwise."""
    if text.strip() == "auto":
        return AUTO_MIN_REPEAT, True
    return parse_integer("--repeat", text, 1, "a number of runs or 'auto'"), False


def parse_seed(text: str) -> int:
    """--seed N: an integer >= 0."""
    return parse_integer("--seed", text, 0)


def parse_confidence(text: str) -> float:
    """--confidence C: a level in [0.5, 1)."""
    try:
        value = float(text)
    except ValueError:
        raise UsageError(f"--confidence: '{text}' is not a number") from None
    if not (math.isfinite(value) and 0.5 <= value < 1.0):
        raise UsageError(f"--confidence must be in [0.5, 1) (e.g. 0.95), got {text}")
    return value


def add_measurement_options(p: argparse.ArgumentParser, repeat_help: str, min_time_help: str) -> None:
    """--repeat N|auto, --max-repeat, --confidence, --min-time, --seed, --no-warmup (sweep and study)."""
    p.add_argument("--repeat", default=None, help=repeat_help)
    p.add_argument("--max-repeat", type=int, default=None, metavar="N",
                   help=f"--repeat auto: at most N measured rounds (default {DEFAULT_MAX_REPEAT})")
    p.add_argument("--confidence", default="0.95",
                   help="--repeat auto and the verdicts: confidence level of the intervals (default 0.95)")
    p.add_argument("--min-time", default=None, metavar="S", help=min_time_help)
    p.add_argument("--seed", default=None, metavar="N",
                   help="seed of the randomised run order (default: drawn at random; recorded with the sweep)")
    p.add_argument("--no-warmup", action="store_true",
                   help=f"skip the uncounted warm-up run per layout (never done for {', '.join(PROBES)})")


def measurement(args: argparse.Namespace, default_repeat: int, default_min_time_s: float,
                ) -> tuple[int, bool, int, float, float, int]:
    """(repeat, auto, max_repeat, confidence, min_time, seed) from the options; UsageError on bad input."""
    repeat, auto = parse_repeat(args.repeat) if args.repeat is not None else (default_repeat, False)
    if args.max_repeat is not None and not auto:
        raise UsageError(f"--max-repeat {args.max_repeat} applies only with --repeat auto")
    max_repeat = args.max_repeat if args.max_repeat is not None else max(DEFAULT_MAX_REPEAT, repeat)
    if auto and max_repeat < AUTO_MIN_REPEAT:
        raise UsageError(f"--max-repeat must be >= {AUTO_MIN_REPEAT} (the rounds --repeat auto always runs), "
                         f"got {max_repeat}")
    confidence = parse_confidence(args.confidence)
    min_time = parse_seconds("--min-time", args.min_time, True) if args.min_time is not None else default_min_time_s
    seed = parse_seed(args.seed) if args.seed is not None else random_seed()
    return repeat, auto, max_repeat, confidence, min_time, seed


def add_parser(sub: Subparsers, name: str) -> None:
    """Registers `hympi sweep`."""
    p = sub.add_parser(name, help="sweep layouts of one app into the results database",
                       description="Run APP for every ranks x threads x binding x memory policy layout, --repeat "
                                   "times each, and record every run: hympi sweep APP --ranks 1,2 --threads 1,2 "
                                   "[-- app args]")
    p.add_argument("app", help=f"one of: {', '.join(sorted(APPS))}")
    p.add_argument("--ranks", "-n", default=None, help="comma-separated MPI rank counts (default 1)")
    p.add_argument("--threads", "-t", default=None, help="comma-separated OpenMP threads per rank (default 1)")
    p.add_argument("--n1", default=None,
                   help=f"two-level apps ({', '.join(TWO_LEVEL_APPS)}), instead of --ranks/--threads: "
                        "comma-separated level-1 rank counts (default 1)")
    p.add_argument("--n2", default=None,
                   help="two-level apps: comma-separated level-2 sizes, OpenMP threads per rank (--inner openmp) or "
                        "ranks per group (--inner mpi) (default 1)")
    p.add_argument("--inner", default=None,
                   help=f"two-level apps: comma-separated level-2 modes from {', '.join(INNER_MODES)} (default both); "
                        "openmp launches N1 ranks x N2 threads, mpi N1*N2 ranks x 1 thread with --n2 N2")
    p.add_argument("--bind", default=None,
                   help=f"comma-separated bindings from {', '.join(BIND_POLICIES)} (default HYMPI_BIND or core)")
    p.add_argument("--dist", default=None,
                   help=f"distribution: {', '.join(DISTRIBUTIONS)} (default HYMPI_DIST or compact)")
    p.add_argument("--membind", default=None,
                   help=f"comma-separated memory policies from {', '.join(MEMORY_POLICIES)}, crossed with the "
                        "bindings (default HYMPI_MEMBIND or none: first touch)")
    add_measurement_options(p, "measured runs per layout, or auto: 3, then more rounds of the layouts still in the "
                               "noise of the best until it is separated or --max-repeat is spent (default 1)",
                            "minimum seconds of each run's timed region; apps scale their iterations to reach it "
                            "(default $HYMPI_MIN_TIME or 1; 0 = off)")
    p.add_argument("--timeout", default=str(DEFAULT_TIMEOUT_S),
                   help=f"seconds before a run is killed and recorded as timeout (default {DEFAULT_TIMEOUT_S:g})")
    p.add_argument("--oversubscribe", action="store_true", default=None,
                   help="also run layouts with ranks x threads > PUs")
    p.add_argument("--virtual-nodes", default=None,
                   help="split this machine into N pretend nodes (HYMPI_VIRTUAL_NODES)")
    add_mpi_param_options(p)
    add_db_option(p)
    p.add_argument("--resume", nargs="?", const=True, default=False, type=_resume_value, metavar="ID",
                   help="continue the latest unfinished sweep with the same parameters (or sweep ID)")
    p.add_argument("--checkpoint-dir", default=None, metavar="DIR",
                   help=f"apps with checkpoints ({', '.join(checkpoint_apps())}): every run writes its checkpoint "
                        "to DIR/<run>.h5; a run that times out or is killed restarts from it when the same command "
                        "runs again (a sweep with a checkpoint directory always resumes); a run that ends removes "
                        "its checkpoint")
    p.add_argument("--checkpoint-every", default=None, metavar="N",
                   help=f"with --checkpoint-dir: a checkpoint every N steps (default {DEFAULT_CHECKPOINT_EVERY})")
    p.add_argument("--launcher", default="mpirun", help=f"{' or '.join(LAUNCHERS)} (default mpirun)")
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


def checkpoint_options(args: argparse.Namespace) -> tuple[str, int]:
    """(absolute checkpoint directory or "", checkpoint cadence) from --checkpoint-dir / --checkpoint-every;
    UsageError for a cadence without a directory or one that is not an integer >= 1 (the directory itself is
    checked by SweepParams.check)."""
    if args.checkpoint_dir is None:
        if args.checkpoint_every is not None:
            raise UsageError("--checkpoint-every needs --checkpoint-dir")
        return "", 0
    if not args.checkpoint_dir.strip():
        raise UsageError("--checkpoint-dir needs a directory, got ''")
    every = DEFAULT_CHECKPOINT_EVERY if args.checkpoint_every is None else \
        parse_integer("--checkpoint-every", args.checkpoint_every, 1, "a number of steps")
    return str(Path(args.checkpoint_dir).expanduser().absolute()), every


def params_from_args(args: argparse.Namespace) -> SweepParams:
    """Checked SweepParams from the command line (UsageError on bad input)."""
    layout_args: tuple[tuple[str, ...], ...] = ()
    if args.n1 is not None or args.n2 is not None or args.inner is not None:
        check_options(args.app, args.ranks is not None or args.threads is not None, tuple(args.app_args))
        two_level = expand(parse_int_list("--n1", "1" if args.n1 is None else args.n1),
                           parse_int_list("--n2", "1" if args.n2 is None else args.n2),
                           parse_choice_list("--inner", ",".join(INNER_MODES) if args.inner is None else args.inner,
                                             INNER_MODES))
        layouts, layout_args = sweep_axes(two_level)
    else:
        layouts = cross_layouts(parse_int_list("--ranks", "1" if args.ranks is None else args.ranks),
                                parse_int_list("--threads", "1" if args.threads is None else args.threads))
    # --bind is a list here, so only the single-valued layout options go through the layer's override.
    resolved = (settings().override("dist", args.dist, "--dist")
                .override("oversubscribe", args.oversubscribe, "--oversubscribe")
                .override("virtual_nodes", args.virtual_nodes, "--virtual-nodes"))
    binds = parse_choice_list("--bind", args.bind if args.bind is not None else resolved.text("bind"), BIND_POLICIES)
    membinds = parse_choice_list("--membind", args.membind if args.membind is not None else resolved.text("membind"),
                                 MEMORY_POLICIES)
    timeout = parse_seconds("--timeout", args.timeout, False)
    probe = args.app in PROBES
    repeat, auto, max_repeat, confidence, min_time, seed = measurement(args, 1, 0.0 if probe else default_min_time())
    checkpoint_dir, checkpoint_every = checkpoint_options(args)
    params = SweepParams(args.app, layouts, binds, resolved.text("dist"), repeat,
                         tuple(args.app_args), timeout, bool(resolved.value("oversubscribe")),
                         int(resolved.value("virtual_nodes")), args.launcher, min_time, seed,
                         not (args.no_warmup or probe), auto, max_repeat, confidence,
                         checkpoint_dir=checkpoint_dir, checkpoint_every=checkpoint_every, membinds=membinds,
                         layout_args=layout_args)
    params.check()
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
    except KeyboardInterrupt:
        print(f"hympi: stopped waiting; job {job_id} goes on (scancel {job_id} stops it)", file=sys.stderr)
        return 130
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
    console = Console()
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
    if submit and not outside:
        raise UsageError("--submit and --wait submit an sbatch script: they need --launcher slurm outside an "
                         "allocation" + (" (this process runs in Slurm job "
                                         f"{slurm_jobs.current_job()})" if slurm.in_allocation() else ""))
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
    for ranks, threads in the_plan.skipped:
        print(f"hympi: skipping {ranks}x{threads}: {ranks * threads} > {summary.pus} PUs (use --oversubscribe)",
              file=sys.stderr)
    if outside:
        req = batch_request(params, Path(args.db), len(the_plan.items))
        script = slurm.sbatch_script(req)
        if args.dry_run:
            print(script, end="")
            print("# job steps the script's sweep runs with srun:")
            for item in the_plan.items:
                print(format_command(command_for(params, item)))
            return 0
        if submit:
            slurm_jobs.check_reachable()  # before anything is written: an unreachable Slurm leaves no trace
        target = Path(args.sbatch or f"hympi-sweep-{params.app}.sbatch")
        try:
            target.write_text(script)
        except OSError as exc:
            raise UsageError(f"cannot write sbatch script {target} ({exc.strerror or exc})") from None
        target.chmod(0o755)
        if not submit:
            print(f"wrote {target}: {len(the_plan.items)} runs; submit with: sbatch {target}")
            return 0
        return submit_script(target, req, len(the_plan.items), args.wait)
    if args.dry_run:
        for item in the_plan.items:
            print(format_command(command_for(params, item, restartable(params, item))))
        return 0
    store = Store.open(args.db)
    try:
        machine = record_machine(store, summary, params.launcher)
        sweep, resumed = open_sweep(store, machine, params, len(the_plan.items), resume)
        if resumed:  # the recorded parameters (seed included) decide the order of what is left
            params = SweepParams.from_dict(sweep.params)
            the_plan = plan(params, cpu_limit(params, summary))
        done = len(store.done_keys(sweep.id))
        again = len(restartable_items(store, sweep.id, params))
        restarts = f", {again} to restart from a checkpoint" if again else ""
        verb = "resuming" if resumed else "starting"
        warm = len(the_plan.layouts) if params.warmup else 0
        rounds = f"{params.repeat}..{params.max_repeat} rounds (--repeat auto)" if params.auto else \
            f"{params.repeat} round(s)"
        console.print(f"{verb} sweep {sweep.id}: {params.app}, {len(the_plan.items)} runs ({warm} warm-up, "
                      f"{rounds}, order seed {params.seed}, min time {params.min_time:g} s; {done} already recorded"
                      f"{restarts}) -> {args.db}", highlight=False)
        result = run_sweep(store, sweep, params, the_plan.items, console)
        runs = store.runs([sweep.id])
        counts = ", ".join(f"{n} {status}" for status, n in sorted(result.statuses.items())) or "nothing to run"
        if result.restarted:
            counts += f"; {result.restarted} restarted from a checkpoint"
        if result.restartable:
            console.print(f"sweep {sweep.id} stopped: {counts}; {result.restartable} run(s) left a checkpoint in "
                          f"{params.checkpoint_dir}: run the same command again to restart them from it",
                          highlight=False)
        else:
            console.print(f"sweep {sweep.id} finished: {counts}", highlight=False)
        if result.auto is not None:
            console.print(result.auto.text, highlight=False)
        for group in group_runs(runs, {sweep.id: machine.id}):
            console.print(f"{group.app} {group.problem}: {recommend(group, params.confidence)}", highlight=False)
            for line in verdict_reasons(group, explain(group), params.confidence):
                console.print(f"  why: {line}", highlight=False)
        console.print(f"results: {args.db} (hympi report --db {args.db}; hympi export --db {args.db})",
                      highlight=False)
        failed = sum(1 for r in runs if r.status != "ok")
        return 1 if failed else 0
    except KeyboardInterrupt as exc:  # SIGTERM (SweepInterrupted): the batch system's stop; exit as killed by it
        return report_interrupt("sweep", args.db, exc)
    finally:
        store.close()
