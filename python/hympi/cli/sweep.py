"""hympi sweep APP: every ranks x threads x binding x memory policy layout (or, for a two-level app, every
N1 x N2 x inner mode), repeated, recorded; resumable. Its options here; the sweep itself in cli/sweep_main.py."""

from __future__ import annotations

import argparse
import math

from hympi.apps import APPS
from hympi.cli.common import add_db_option, add_mpi_param_options, parse_integer, parse_seconds
from hympi.cli.parser import Subparsers
from hympi.errors import UsageError
from hympi.launch.mpirun import BIND_POLICIES, DISTRIBUTIONS, MEMORY_POLICIES
from hympi.sweep_options import (
    AUTO_MIN_REPEAT,
    DEFAULT_CHECKPOINT_EVERY,
    DEFAULT_MAX_REPEAT,
    DEFAULT_TIMEOUT_S,
    LAUNCHERS,
    PROBES,
    checkpoint_apps,
    random_seed,
)
from hympi.twolevel import INNER_MODES, TWO_LEVEL_APPS


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


def main(args: argparse.Namespace) -> int:
    """Runs `hympi sweep` (cli/sweep_main.main: UsageError on bad input, the sweep's exit code otherwise)."""
    from hympi.cli import sweep_main  # numpy, the store and the report sections: only when a sweep runs

    return sweep_main.main(args)
