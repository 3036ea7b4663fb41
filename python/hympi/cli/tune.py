"""hympi tune params|run|best|predict|evaluate: MPI control variables and layout, searched together; the best as
files to use. Its options here; the subcommands' work in cli/tune_main.py and cli/tune_predict.py."""

from __future__ import annotations

import argparse

from hympi.apps import APPS
from hympi.cli.common import add_db_option, seconds
from hympi.cli.parser import Parser, Subparsers
from hympi.params import register
from hympi.tune.options import DEFAULT_PROFILE_TIMEOUT_S, FORMATS, TUNE_RUN


def add_parser(sub: Subparsers, name: str) -> None:
    """Registers `hympi tune` and its subcommands params, run and best."""
    p = sub.add_parser(name, help="search MPI parameters and layout for the fastest configuration",
                       description="hympi tune params | run APP --space FILE | best: tune MPI control variables "
                                   "(from the installed library) together with ranks, threads and binding")
    tune_sub = p.add_subparsers(dest="tune_command", required=True, parser_class=Parser)

    params = tune_sub.add_parser("params", help="list the MPI library's control variables (MPI_T cvars)")
    params.add_argument("--grep", default=None, metavar="TEXT", help="only variables whose name or description "
                                                                     "contains TEXT (case-insensitive)")
    params.add_argument("--json", action="store_true", help="print the listing as JSON (usable as --cvars FILE)")
    params.add_argument("--cvars", default=None, metavar="FILE", help="read a saved listing instead of the library")
    params.set_defaults(handler=main)

    run = tune_sub.add_parser("run", help="measure configurations of a search space and report the best",
                              description="hympi tune run APP --space FILE [options] [-- APP-ARGS]")
    run.add_argument("app", help=f"one of: {', '.join(sorted(APPS))}")
    run.add_argument("--space", required=True, metavar="FILE", help="search space (TOML; see docs/tune.md)")
    register(run, TUNE_RUN)
    run.add_argument("--cvars", default=None, metavar="FILE",
                     help="check the space against a saved 'hympi tune params --json' listing instead of the library")
    add_db_option(run)
    run.add_argument("--resume", action="store_true",
                     help="continue the latest unfinished tune with the same program, space and options")
    run.set_defaults(handler=main, forwards_unknown=True)

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
                   help=f"one of: {', '.join(sorted(APPS))} (or give it first after --)")
    p.add_argument("--space", required=True, metavar="FILE", help="search space (TOML) to choose from")
    add_db_option(p)
    _add_cvars_option(p)
    p.add_argument("--timeout", type=seconds, default=DEFAULT_PROFILE_TIMEOUT_S, metavar="S",
                   help=f"kill the profiled run after S seconds (default {DEFAULT_PROFILE_TIMEOUT_S:g})")
    p.set_defaults(handler=main, forwards_unknown=True)


def add_evaluate_parser(sub: Subparsers, name: str) -> None:
    """Registers `hympi tune evaluate`."""
    p = sub.add_parser(name, help="leave-one-program-out evaluation of the predictor",
                       description="For every tuned program: train on the others, predict its best configuration "
                                   "and divide the speedup its own tune measured for that configuration by the best "
                                   "measured one. Programs without a stored profile are profiled once.")
    add_db_option(p)
    _add_cvars_option(p)
    p.add_argument("--no-profile", action="store_true", help="leave out programs without a stored profile")
    p.add_argument("--timeout", type=seconds, default=DEFAULT_PROFILE_TIMEOUT_S, metavar="S",
                   help=f"kill a profiled run after S seconds (default {DEFAULT_PROFILE_TIMEOUT_S:g})")
    p.set_defaults(handler=main)


def _add_cvars_option(parser: argparse.ArgumentParser) -> None:
    """--cvars FILE: a saved control variable listing instead of the library's."""
    parser.add_argument("--cvars", default=None, metavar="FILE",
                        help="read spaces against a saved 'hympi tune params --json' listing, not the library")


def main(args: argparse.Namespace) -> int:
    """Runs the tune subcommand named on the command line (cli/tune_main.SUBCOMMANDS; UsageError on bad input)."""
    from hympi.cli import tune_main  # numpy, scikit-learn, the sweep and the store: only when a tune subcommand runs

    return tune_main.SUBCOMMANDS[args.tune_command](args)
