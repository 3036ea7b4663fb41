"""hympi sweep APP: every ranks x threads x binding x memory policy layout (or, for a two-level app, every
N1 x N2 x inner mode), repeated, recorded; resumable. Its options here (the parameters that define the sweep are
declared in hympi.sweep_options); the sweep itself in cli/sweep_main.py."""

from __future__ import annotations

import argparse

from hympi.apps import APPS
from hympi.cli.common import add_db_option, add_mpi_param_options
from hympi.cli.parser import Subparsers
from hympi.params import parse_integer, register
from hympi.sweep_options import SWEEP


def _resume_value(text: str) -> int:
    """--resume ID: a positive sweep id."""
    return parse_integer("--resume", text, 1, "a sweep id")


def add_parser(sub: Subparsers, name: str) -> None:
    """Registers `hympi sweep`."""
    p = sub.add_parser(name, help="sweep layouts of one app into the results database",
                       description="Run APP for every ranks x threads x binding x memory policy layout, --repeat "
                                   "times each, and record every run: hympi sweep APP --ranks 1,2 --threads 1,2 "
                                   "[-- app args]")
    p.add_argument("app", help=f"one of: {', '.join(sorted(APPS))}")
    register(p, SWEEP)
    add_mpi_param_options(p)
    add_db_option(p)
    p.add_argument("--resume", nargs="?", const=True, default=False, type=_resume_value, metavar="ID",
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


def main(args: argparse.Namespace) -> int:
    """Runs `hympi sweep` (cli/sweep_main.main: UsageError on bad input, the sweep's exit code otherwise)."""
    from hympi.cli import sweep_main  # numpy, the store and the report sections: only when a sweep runs

    return sweep_main.main(args)
