"""Options and checks shared by the subcommands that launch apps."""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from hympi.errors import SweepInterrupted, UsageError
from hympi.launch.command import LAUNCHERS
from hympi.launch.cvars import check_params, load_listing, parse_assignment
from hympi.launch.layout import LAYOUT_BINDS
from hympi.launch.mpirun import (
    BIND_POLICIES,
    BINDERS,
    DISTRIBUTIONS,
    MEMORY_POLICIES,
    LaunchSpec,
    check_layout,
    configured_flavor,
    validate_with_app,
)
from hympi.limits import check_path
from hympi.outputs import Inputs, check_not_input
from hympi.params import parse_seconds
from hympi.paths import binary
from hympi.place.rankfile import check_rankfile_fits
from hympi.settings import Settings, settings
from hympi.topology import machine_summary

HELP_FLAGS = ("-h", "--help")


def seconds(text: str) -> float:
    """argparse type of --timeout: a finite number of seconds > 0 (nan, inf, 0 and negatives are refused)."""
    try:
        return parse_seconds("--timeout", text, allow_zero=False)
    except UsageError:
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds > 0, got '{text}'") from None


def add_layout_options(parser: argparse.ArgumentParser) -> None:
    """--ranks, --threads, --bind, --dist, --membind, --oversubscribe, --virtual-nodes, --timeout."""
    parser.add_argument("--ranks", "-n", "-np", type=int, default=1, metavar="R",
                        help="MPI ranks (default 1)")
    parser.add_argument("--threads", "-t", type=int, default=1, metavar="T", help="OpenMP threads per rank (default 1)")
    # No argparse defaults for the options of the options layer: unset, they come from hympi.toml, HYMPI_* or
    # contract.toml's default (layout_spec resolves them).
    parser.add_argument("--bind", default=None, help=f"binding: {', '.join(BIND_POLICIES)} (default core; HYMPI_BIND)")
    parser.add_argument("--dist", default=None, help=f"distribution: {', '.join(DISTRIBUTIONS)} (HYMPI_DIST)")
    parser.add_argument("--membind", default=None,
                        help=f"memory policy: {', '.join(MEMORY_POLICIES)} (default none: first touch; HYMPI_MEMBIND)")
    parser.add_argument("--oversubscribe", action="store_true", default=None,
                        help="allow ranks x threads > PUs (HYMPI_OVERSUBSCRIBE)")
    parser.add_argument("--virtual-nodes", default=None, metavar="N",
                        help="split this machine into N pretend nodes (HYMPI_VIRTUAL_NODES; needs >= N ranks)")
    parser.add_argument("--timeout", type=seconds, default=None, metavar="S",
                        help="kill the run after S seconds")
    parser.add_argument("--rankfile", default=None, metavar="FILE", help="Open MPI rankfile to place ranks with")
    parser.add_argument("--launcher", default=None, metavar="NAME",
                        help=f"{', '.join(LAUNCHERS)}: launch with that launcher, checked against its --version "
                             "(default: $HYMPI_MPIRUN, mpirun or mpiexec)")
    parser.add_argument("--binder", default=None, metavar="WHO",
                        help="hympi: hympi binds ranks and threads with hwloc, the launcher binds nothing (default for "
                             "hympi's apps); launcher: the launcher binds with the layout's arguments ('hympi layout' "
                             "shows them) and OpenMP places the threads (always for a program of your own)")


def layout_settings(args: argparse.Namespace) -> Settings:
    """The options layer with the layout flags given on the command line on top; UsageError for a bad value."""
    return (settings().override("bind", args.bind, "--bind").override("dist", args.dist, "--dist")
            .override("membind", args.membind, "--membind")
            .override("oversubscribe", args.oversubscribe, "--oversubscribe")
            .override("virtual_nodes", args.virtual_nodes, "--virtual-nodes"))


def layout_spec(args: argparse.Namespace, app_binary: str, app_args: list[str], program: bool = False) -> LaunchSpec:
    """A checked LaunchSpec from parsed options; raises UsageError before anything is launched. A `program` of the
    user's own (hympi.program) never calls hympi's binding: the launcher binds it (or nothing, with --bind none),
    and it has no --validate-ranks to ask."""
    resolved = layout_settings(args)
    configured_flavor()  # a bad HYMPI_MPI_FLAVOR is refused here, not when the launch command is built
    virtual_nodes = int(resolved.value("virtual_nodes"))
    if args.ranks >= 1 and args.ranks < virtual_nodes:
        # Each pretend node needs a rank; fewer ranks would silently give fewer nodes than asked for.
        raise UsageError(f"--virtual-nodes {virtual_nodes} needs at least {virtual_nodes} ranks, "
                         f"got --ranks {args.ranks}")
    if args.timeout is not None and not (math.isfinite(args.timeout) and args.timeout > 0):
        raise UsageError(f"--timeout must be a finite number of seconds > 0, got {args.timeout}")
    env = (("HYMPI_VIRTUAL_NODES", str(virtual_nodes)),)
    bind = resolved.text("bind")
    if args.launcher is not None and args.launcher not in LAUNCHERS:
        raise UsageError(f"unknown launcher '{args.launcher}' (expected {', '.join(LAUNCHERS)})")
    binder = args.binder or ("launcher" if program else "hympi")
    if binder not in BINDERS:
        raise UsageError(f"unknown binder '{binder}' (expected {', '.join(BINDERS)})")
    if program and binder != "launcher":
        raise UsageError(f"--binder {binder}: a program of your own does not call hympi's binding; the launcher binds "
                         "it (--binder launcher)")
    if binder == "launcher" and not args.rankfile and bind not in LAYOUT_BINDS and not (program and bind == "none"):
        raise UsageError(f"--binder launcher needs --bind {' or '.join(LAYOUT_BINDS)}, got '{bind}'")
    if args.rankfile:
        # mpirun binds every rank where the rankfile says; the app must not rebind it (HYMPI_BIND=none).
        # Every slot and host is checked here, because mpirun reports a bad one only as ORTE noise.
        check_rankfile_fits(args.rankfile, args.ranks)
        bind = "none"
    spec = LaunchSpec(app_binary, args.ranks, args.threads, bind, resolved.text("dist"), tuple(app_args),
                      bool(resolved.value("oversubscribe")), env, args.rankfile, membind=resolved.text("membind"),
                      binder=binder)
    check_layout(spec, machine_summary().pus)
    if not program:
        validate_with_app(spec)
    return spec


def asks_for_help(app_args: list[str]) -> bool:
    """True when the app's arguments ask for its help text (-h or --help)."""
    return any(arg in HELP_FLAGS for arg in app_args)


def print_app_help(app_binary: str) -> int:
    """Prints the app's own --help (run directly, no MPI launch); returns hympi's exit code (0, or 1 on failure)."""
    proc = subprocess.run([str(binary(app_binary)), "--help"], capture_output=True, text=True, errors="replace",
                          timeout=60,
                          check=False, env={**os.environ, "OMP_NUM_THREADS": "1"})
    sys.stdout.write(proc.stdout)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        return 1
    return 0


def check_output_file(path: str, option: str, inputs: Inputs | None = None) -> Path:
    """An output file hympi may create or replace (through hympi.outputs.write_output: a temporary file in its
    directory, renamed over it); raises UsageError (nothing written) otherwise, and when it is one of the command's
    `inputs` (option -> path: writing it would destroy what the command reads)."""
    check_path(option, path)
    out = Path(path)
    parent = out.resolve().parent
    if out.is_dir():
        raise UsageError(f"{option} {path} is a directory, not a file")
    if not parent.is_dir():
        raise UsageError(f"{option} {path}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK) or (out.exists() and not os.access(out, os.W_OK)):
        raise UsageError(f"{option} {path} is not writable")
    check_not_input(option, out, inputs or {})
    return out


def ensure_out_dir(path: str | os.PathLike[str]) -> Path:
    """Creates `path` if needed and proves it is writable; raises UsageError (nothing else touched) otherwise."""
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise UsageError(f"output directory {out} exists and is not a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out, prefix=".hympi-write-test-"):
            pass
    except OSError as exc:
        raise UsageError(f"output directory {out} is not writable ({exc.strerror or exc})") from None
    return out


def path_argument(option: str) -> Callable[[str], str]:
    """argparse type of a path option: the path as given, refused while parsing when the system could not even look
    it up (longer than PATH_MAX or a component longer than NAME_MAX)."""
    def checked(text: str) -> str:
        try:
            return check_path(option, text)
        except UsageError as exc:
            raise argparse.ArgumentTypeError(str(exc).removeprefix(f"{option}: ")) from None
    return checked


def add_db_option(parser: argparse.ArgumentParser) -> None:
    """--db PATH: the SQLite results database (default ./hympi-results.db)."""
    parser.add_argument("--db", default="hympi-results.db", type=path_argument("--db"),
                        help="results database (default ./hympi-results.db)")


def add_mpi_param_options(parser: argparse.ArgumentParser) -> None:
    """--mpi-param NAME=VALUE (repeatable) and --cvars FILE (the control variables to check them against)."""
    parser.add_argument("--mpi-param", action="append", default=[], metavar="NAME=VALUE",
                        help="set MPI control variable NAME (repeatable; 'hympi tune params' lists them); passed "
                             "as OMPI_MCA_NAME / MPIR_CVAR_NAME and read back by the app")
    parser.add_argument("--cvars", default=None, metavar="FILE",
                        help="check MPI parameters against this saved 'hympi tune params --json' listing instead "
                             "of asking the installed library")


def mpi_params_from_args(args: argparse.Namespace) -> tuple[tuple[str, str], ...]:
    """The --mpi-param assignments, canonical and sorted; UsageError for a name that is not a control variable of
    the library or a value outside its type (the library is asked only when there are parameters). A bad
    HYMPI_MPI_FLAVOR is refused here too: the flavour names the variables that set the parameters."""
    configured_flavor()
    if not args.mpi_param:
        return ()
    assignments = [parse_assignment(text) for text in args.mpi_param]
    listing = load_listing(args.cvars)
    return check_params(assignments, listing.cvars, listing.library)


def report_interrupt(what: str, db: str, exc: KeyboardInterrupt) -> int:
    """Says that a `what` ('sweep', 'tune') stopped, where its finished runs are and how to continue; returns the exit
    code of a process killed by the signal for SIGTERM (SweepInterrupted) and re-raises Ctrl-C for main()."""
    if isinstance(exc, SweepInterrupted):
        print(f"hympi: {what} stopped by signal {exc.signum}; finished runs are in {db}; continue with --resume",
              file=sys.stderr)
        return exc.exit_code
    print(f"hympi: {what} interrupted; finished runs are in {db}; continue with --resume", file=sys.stderr)
    raise exc
