"""hympi tune params|run|best|predict|evaluate: MPI control variables and layout, searched together; the best as
files to use. The tune's parameters are declared in hympi.tune.options; predict and evaluate's work is in
cli/tune_predict.py."""

from __future__ import annotations

import argparse
import json
import sys

from rich.markup import escape
from rich.table import Table

from hympi.apps import APPS, get_app
from hympi.busy.quiet import quiet_start
from hympi.cli import tune_predict
from hympi.cli.common import (
    add_cvars_option,
    add_db_option,
    refuse_unknown_for_program,
    report_interrupt,
    subject_inputs,
)
from hympi.cli.parser import Subparsers, show_trailer
from hympi.console import HympiConsole, add_plain_row
from hympi.errors import HympiFatal, UsageError
from hympi.launch import slurm
from hympi.launch.cvars import Cvar, CvarListing, load_listing
from hympi.launch.mpirun import configured_flavor
from hympi.outputs import check_not_input
from hympi.params import QUIET_CHECK, Value, from_record, parse_row_id, register, resolve, rounds
from hympi.paths import binary, program_named
from hympi.program import ENV, PROGRAM, STDIN
from hympi.store import Store
from hympi.sweep import program_subject, record_machine
from hympi.topology import machine_summary
from hympi.tune.options import FORMATS, PROFILE_DISTURBED_ABOVE, PROFILE_TIMEOUT, TUNE_RUN
from hympi.tune.output import best_of_tune, render, tuned_flavor
from hympi.tune.results import Measured, best, default_of, speedup
from hympi.tune.search import check_strategy, default_budget
from hympi.tune.space import SearchSpace, certain_layouts, library_space, listing_source, read_space
from hympi.tune.tuner import (
    TuneOutcome,
    TuneParams,
    check_fit,
    check_layouts,
    open_tune,
    run_tune,
    tune_resume_missed,
)

DESCRIPTION_WIDTH = 70
# What follows `--` for the subcommands that launch the program (run, predict), shown in their usage lines.
APP_ARGS = "[-- APP-ARGS]"
# --cvars of predict and evaluate, which read search spaces.
SPACES_AGAINST_LISTING = "read spaces against a saved 'hympi tune params --json' listing, not the library"


def add_parser(sub: Subparsers, name: str, summary: str) -> None:
    """Registers `hympi tune` and its subcommands params, run and best."""
    p = sub.add_parser(name, help=summary,
                       description="hympi tune params | run APP --space FILE | best: tune MPI control variables "
                                   "(from the installed library) together with ranks, threads and binding")
    tune_sub = p.add_subcommands("tune_command")

    params = tune_sub.add_parser("params", help="list the MPI library's control variables (MPI_T cvars)")
    params.add_argument("--grep", default=None, metavar="TEXT", help="only variables whose name or description "
                                                                     "contains TEXT (case-insensitive)")
    params.add_argument("--json", action="store_true", help="print the listing as JSON (usable as --cvars FILE)")
    add_cvars_option(params, "read a saved listing instead of the library")
    params.set_defaults(handler=main)

    run = tune_sub.add_parser("run", help="measure configurations of a search space and report the best",
                              description="hympi tune run APP --space FILE [options] [-- APP-ARGS]")
    run.add_argument("app", help=f"one of: {', '.join(sorted(APPS))}; or a program of your own, by its path (anything "
                                "with a '/'), its arguments after --")
    run.add_argument("--space", required=True, metavar="FILE", help="search space (TOML; see docs/tune.md)")
    register(run, TUNE_RUN)
    register(run, QUIET_CHECK)
    register(run, PROGRAM)
    add_cvars_option(run, "check the space against a saved 'hympi tune params --json' listing instead of the library")
    add_db_option(run)
    run.add_argument("--resume", action="store_true",
                     help="continue the latest unfinished tune with the same program, space and options")
    run.set_defaults(handler=main, forwards_unknown=True)
    show_trailer(run, APP_ARGS)

    best_p = tune_sub.add_parser("best", help="the best configuration as mca-params.conf, MPICH env or run flags")
    best_p.add_argument("--tune", default=None, metavar="ID", help="which tune (default: the latest)")
    best_p.add_argument("--format", default=None, choices=FORMATS,
                        help="mca (Open MPI mca-params.conf), mpich (environment file) or flags (hympi run "
                             "command); default: the machine's library's file and the flags")
    add_db_option(best_p)
    best_p.set_defaults(handler=main)
    add_predict_parser(tune_sub, "predict")
    add_evaluate_parser(tune_sub, "evaluate")


def add_predict_parser(sub: Subparsers, name: str) -> None:
    """Registers `hympi tune predict`."""
    p = sub.add_parser(name, help="predict the best layout and MPI parameters of a program from its profile",
                       description="Profile the program once at the space's default layout (or reuse its stored "
                                   "profile), train the network on the other tuned programs in the database and "
                                   "print the configuration with the highest predicted speedup over the default.")
    p.add_argument("app", nargs="?", default=None,
                   help=f"one of: {', '.join(sorted(APPS))}; or a program of your own, by its path (anything with a "
                        "'/'), its arguments after --; or give it first after --")
    p.add_argument("--space", required=True, metavar="FILE", help="search space (TOML) to choose from")
    add_db_option(p)
    add_cvars_option(p, SPACES_AGAINST_LISTING)
    p.add_argument("--profile-again", action="store_true",
                   help="profile the program again instead of reusing its stored profile (one taken on a busy "
                        "machine, or before the program changed)")
    register(p, (PROFILE_TIMEOUT, PROFILE_DISTURBED_ABOVE, STDIN, ENV))
    p.set_defaults(handler=main, forwards_unknown=True)
    show_trailer(p, APP_ARGS)


def add_evaluate_parser(sub: Subparsers, name: str) -> None:
    """Registers `hympi tune evaluate`."""
    p = sub.add_parser(name, help="leave-one-program-out evaluation of the predictor",
                       description="For every tuned program: train on the others, predict its best configuration "
                                   "and divide the speedup its own tune measured for that configuration by the best "
                                   "measured one. Programs without a stored profile are profiled once.")
    add_db_option(p)
    add_cvars_option(p, SPACES_AGAINST_LISTING)
    p.add_argument("--no-profile", action="store_true", help="leave out programs without a stored profile")
    register(p, (PROFILE_TIMEOUT, PROFILE_DISTURBED_ABOVE))
    p.set_defaults(handler=main)




def _no_app_args(args: argparse.Namespace) -> None:
    """UsageError for app arguments given to a subcommand that runs no app."""
    if args.app_args:
        raise UsageError(f"hympi tune {args.tune_command} takes no app arguments, got '{' '.join(args.app_args)}'")


def cvar_table(cvars: list[Cvar], library: str) -> Table:
    """The control variables as a table: name, type, value, enum items, scope, description."""
    # The MPI library wrote these texts: '[...]' in a description is no markup of hympi's.
    table = Table(title=escape(f"{len(cvars)} MPI control variables of {library}"))
    for column in ("name", "type", "value", "enum values", "scope", "description"):
        table.add_column(column, no_wrap=column in ("name", "type"), overflow="fold")
    for cvar in cvars:
        description = cvar.description if len(cvar.description) <= DESCRIPTION_WIDTH \
            else cvar.description[:DESCRIPTION_WIDTH - 3] + "..."
        add_plain_row(table, cvar.name, cvar.datatype, cvar.value if cvar.value is not None else "-",
                      ", ".join(cvar.enum), cvar.scope, description)
    return table


def filtered(listing: CvarListing, text: str | None) -> list[Cvar]:
    """The cvars whose name or description contains `text` (all without it), by name."""
    needle = (text or "").lower()
    return [c for _, c in sorted(listing.cvars.items())
            if not needle or needle in c.name.lower() or needle in c.description.lower()]


def main_params(args: argparse.Namespace) -> int:
    """Prints the library's control variables (filtered by --grep), as a table or JSON."""
    _no_app_args(args)
    listing = load_listing(args.cvars)
    cvars = filtered(listing, args.grep)
    if args.json:
        print(json.dumps({"format": "hympi-mpit", "mpi_library": listing.mpi_library,
                          "cvars": [c.as_dict() for c in cvars]}, indent=1))
        return 0
    HympiConsole().print(cvar_table(cvars, listing.mpi_library))
    return 0


def _tune_values(args: argparse.Namespace) -> dict[str, Value]:
    """The command line's tune parameters, each parsed and checked as hympi.tune.options declares it, with the
    rounds they ask for; UsageError on bad input (nothing asked of the MPI library yet)."""
    values = resolve(args, TUNE_RUN)
    measured = rounds(values)
    values["repeat"] = measured.repeat
    if measured.auto:
        values.update(auto=True, max_repeat=measured.max_repeat)
    return values


def _tune_params(args: argparse.Namespace, given: dict[str, Value], space: SearchSpace) -> TuneParams:
    """Checked TuneParams from the command line's values (_tune_values) and the space's size; UsageError on bad
    input."""
    values = dict(given)
    size = len(space.configurations())
    strategy = str(values["strategy"])
    if "max_runs" not in values:
        values["max_runs"] = default_budget(strategy, size)
    named = program_subject(args.app, resolve(args, PROGRAM))
    subject = tuple(sorted(named.items())) if program_named(args.app) else ()
    params = from_record(TuneParams, {**values, "app": named["app"], "app_args": tuple(args.app_args),
                                      "subject": subject})
    check_strategy(strategy, size, params.max_runs, params.ei_stop)
    params.check()
    return params


def results_table(outcome: TuneOutcome, space: SearchSpace) -> Table:
    """Every measured configuration, best first: score, runs (those other work disturbed, left out of the score),
    status, speedup over the default, memory."""
    default = default_of(outcome.results, space.default)
    table = Table(title=escape(f"tune {outcome.tune.id}: {outcome.tune.program} ({outcome.tune.strategy})"))
    for column in ("configuration", "score", "runs", "status", "speedup vs default", "peak MiB/rank"):
        table.add_column(column, overflow="fold")
    ranked = sorted(outcome.results, key=lambda m: (m.score is None, -(m.score or 0.0)))
    for m in ranked:
        runs = f"{m.runs} ({m.disturbed} disturbed)" if m.disturbed else str(m.runs)
        add_plain_row(table, m.config.label(), m.score_text(), runs, m.status,
                      speedup(m, default).text, f"{m.max_rss_mib:.1f}" if m.max_rss_mib is not None else "-")
    return table


def _summary(outcome: TuneOutcome, space: SearchSpace, params: TuneParams) -> list[str]:
    """The lines after the table: budget used, why it stopped, the best, threads the probe saw idle, what the
    library ignored."""
    size = len(space.configurations())
    measured = len(outcome.results)
    lines = [f"measured {measured} of {size} configurations ({100.0 * measured / size:.0f} %) with "
             f"{params.repeat_text} measured run(s) each; stopped: {outcome.stop}"]
    top: Measured | None = best(outcome.results)
    default = default_of(outcome.results, space.default)
    if top is not None and top.config == space.default:
        lines.append(f"best: the default configuration ({top.config.label()}); nothing measured beat it")
    elif top is not None:
        lines.append(f"best: {top.config.label()}: {speedup(top, default).text} over the default")
    if params.repeat < 2:
        lines.append("speedups have no confidence interval: measure with --repeat 2 or more (4 to separate)")
    ignored = sorted({name for m in outcome.results for name in m.ignored})
    if ignored:
        lines.append(f"ignored by the MPI library (set, but read back unchanged): {', '.join(ignored)}")
    idle = sorted({(m.config.ranks, m.config.threads, m.working_threads) for m in outcome.results
                   if m.working_threads is not None and m.working_threads < m.config.threads})
    if idle:
        layouts = ", ".join(f"{r}x{t} computed with {w} of its {t} threads per rank" for r, t, w in idle)
        lines.append(f"threads left idle (the probe): {layouts}; those configurations ran on fewer cores than they "
                     "hold")
    unchecked = [m for m in outcome.results if not m.checked]
    if unchecked:
        why = ("a program of your own reports no MPI_T read-back, so whether the library took the parameters is "
               "not known" if params.program_spec() is not None else "the app reported no MPI_T read-back")
        lines.append(f"{len(unchecked)} configuration(s) could not be checked: {why}")
    return lines


def main_run(args: argparse.Namespace) -> int:
    """Validates everything (space, cvars, layouts, budget), then runs or resumes the tune and reports it."""
    try:
        if not program_named(args.app):
            binary(get_app(args.app).binary)
        else:
            refuse_unknown_for_program(args, "tune run")
    except HympiFatal as exc:  # the program to tune is not there: bad input, nothing launched
        raise UsageError(str(exc)) from None
    configured_flavor()  # the flavour names the variables that set the space's parameters
    # The space file, every flag and the layouts the machine cannot hold are checked before the library is asked
    # for its cvars (a launch of hympi-mpit, only for a space with MPI parameters).
    space_table = read_space(args.space)
    values = _tune_values(args)
    summary = machine_summary()
    check_fit(certain_layouts(space_table), summary.pus, bool(values["oversubscribe"]))
    space = library_space(space_table, listing_source(args.cvars))
    params = _tune_params(args, values, space)
    check_layouts(params, space, summary.pus)
    quiet = resolve(args, QUIET_CHECK)  # not part of the tune's identity: how it starts, not what it measures
    # An input file named by mistake is not turned into a database (an empty one would be).
    check_not_input("--db", args.db, {**subject_inputs(params.program_spec(), params.app, params.app_args, args.cvars),
                                      "--space": args.space})
    console = HympiConsole()
    store = Store.open(args.db)
    try:
        machine = record_machine(store, summary, "mpirun")
        tune, resumed = open_tune(store, machine, params, space, args.resume)
        if args.resume and not resumed:  # asked for, found nothing: say why before starting anew
            console.print(tune_resume_missed(store, params, space, tune), highlight=False, markup=False,
                          soft_wrap=True)
        params = TuneParams.from_dict(tune.params)
        verb = "resuming" if resumed else "starting"
        console.print(f"{verb} tune {tune.id}: {params.program}, {params.strategy} over "
                      f"{len(space.configurations())} configurations (at most {params.max_runs}), "
                      f"{params.repeat_text} measured run(s) each, seed {params.seed} -> {args.db}",
                      highlight=False, markup=False)
        if not quiet["ignore_load"]:  # as a sweep starts: its runs are marked disturbed either way
            quiet_start(params.disturbed_above, float(str(quiet["wait_quiet"])), slurm.in_allocation(),
                        lambda text: console.print(f"hympi: {text}", highlight=False, markup=False))
        outcome = run_tune(store, machine, tune, space, console)
        console.print(results_table(outcome, space))
        for line in _summary(outcome, space, params):
            console.print(line, highlight=False, markup=False)
        if best(outcome.results) is None:
            print(f"hympi: error: tune {tune.id} has no score: no configuration had a measured run that ended ok "
                  "undisturbed by other work (the table says why)", file=sys.stderr)
            return 1
        console.print(f"use it: hympi tune best --tune {tune.id} --db {args.db}", highlight=False, markup=False)
        return 0
    except KeyboardInterrupt as exc:  # StoppedBySignal (SIGTERM) too
        return report_interrupt("tune", args.db, exc)
    finally:
        store.close()


def main_best(args: argparse.Namespace) -> int:
    """Prints the best configuration of a tune as an mca-params.conf snippet, an MPICH env file or run flags."""
    _no_app_args(args)
    tune_id = parse_row_id("--tune", args.tune, "a tune id") if args.tune is not None else None
    with Store.read(args.db) as store:
        found = best_of_tune(store, tune_id)
    if args.format is not None:
        sys.stdout.write(render(found, args.format))
        return 0
    native = "mpich" if tuned_flavor(found.mpi_library) == "mpich" else "mca"
    sys.stdout.write(render(found, native))
    sys.stdout.write(render(found, "flags"))
    return 0


SUBCOMMANDS = {"params": main_params, "run": main_run, "best": main_best, "predict": tune_predict.predict_main,
               "evaluate": tune_predict.evaluate_main}


def main(args: argparse.Namespace) -> int:
    """Runs the tune subcommand named on the command line (SUBCOMMANDS; UsageError on bad input)."""
    return SUBCOMMANDS[args.tune_command](args)
