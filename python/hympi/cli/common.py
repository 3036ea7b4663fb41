"""Options and checks shared by the subcommands that launch apps."""

from __future__ import annotations

import argparse

from hympi.errors import UsageError
from hympi.launch.mpirun import BIND_POLICIES, DISTRIBUTIONS, LaunchSpec, check_layout, validate_with_app
from hympi.place.rankfile import check_rankfile
from hympi.topology import machine_summary


def add_layout_options(parser: argparse.ArgumentParser) -> None:
    """--ranks, --threads, --bind, --dist, --oversubscribe, --virtual-nodes, --timeout."""
    parser.add_argument("--ranks", "-n", type=int, default=1, help="MPI ranks (default 1)")
    parser.add_argument("--threads", "-t", type=int, default=1, help="OpenMP threads per rank (default 1)")
    parser.add_argument("--bind", default="core", help=f"binding: {', '.join(BIND_POLICIES)} (default core)")
    parser.add_argument("--dist", default="compact", help=f"distribution: {', '.join(DISTRIBUTIONS)}")
    parser.add_argument("--oversubscribe", action="store_true", help="allow ranks x threads > PUs")
    parser.add_argument("--virtual-nodes", type=int, default=1,
                        help="split this machine into N pretend nodes (HYMPI_VIRTUAL_NODES)")
    parser.add_argument("--timeout", type=float, default=None, help="kill the run after this many seconds")
    parser.add_argument("--rankfile", default=None, help="Open MPI rankfile to place ranks with")


def layout_spec(args: argparse.Namespace, app_binary: str, app_args: list[str]) -> LaunchSpec:
    """A checked LaunchSpec from parsed options; raises UsageError before anything is launched."""
    if args.virtual_nodes < 1:
        raise UsageError(f"--virtual-nodes must be >= 1, got {args.virtual_nodes}")
    if args.timeout is not None and args.timeout <= 0:
        raise UsageError(f"--timeout must be > 0, got {args.timeout}")
    env = (("HYMPI_VIRTUAL_NODES", str(args.virtual_nodes)),)
    bind = args.bind
    if args.rankfile:
        # mpirun binds every rank where the rankfile says; the app must not rebind it (HYMPI_BIND=none).
        check_rankfile(args.rankfile, args.ranks)
        bind = "none"
    spec = LaunchSpec(app_binary, args.ranks, args.threads, bind, args.dist, tuple(app_args),
                      args.oversubscribe, env, args.rankfile)
    check_layout(spec, machine_summary().pus)
    validate_with_app(spec)
    return spec


def add_db_option(parser: argparse.ArgumentParser) -> None:
    """--db PATH: the SQLite results database (default ./hympi-results.db)."""
    parser.add_argument("--db", default="hympi-results.db", help="results database (default ./hympi-results.db)")
