"""hympi profile [--out FILE] -- CMD ...: the traffic matrix, message sizes and MPI time of any MPI program."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

from rich.table import Table

from hympi.cli.common import check_output_file, write_through, write_through_err
from hympi.cli.parser import Subparsers
from hympi.console import HympiConsole
from hympi.errors import HympiError
from hympi.layout_options import RUN_TIMEOUT
from hympi.params import Param, from_record, parse_path, register, resolve
from hympi.profile import Profile, command_inputs, plan_profile, run_profile

# How libhympi-profile (profile/hympi_profile.cpp) begins each line it writes to the program's stderr.
PROFILER_SAYS = "libhympi-profile: "

DEFAULT_OUT = "hympi-profile.json"
OUT = Param("out", "--out", f"matrix file to write (default {DEFAULT_OUT})", parse_path, DEFAULT_OUT, metavar="FILE")
# Every parameter of `hympi profile` (the program's command line follows `--`).
PROFILE = (OUT, RUN_TIMEOUT.described("kill the program after S seconds (default: none)"),
           Param("quiet", "--quiet", "do not echo the program's output"))


@dataclass(frozen=True)
class ProfileParams:
    """The values PROFILE resolved to (hympi.params.from_record)."""

    out: str = DEFAULT_OUT
    timeout: float | None = None
    quiet: bool = False


def add_parser(sub: Subparsers, name: str, summary: str) -> None:
    """Registers `hympi profile`."""
    p = sub.add_parser(name, help=summary,
                       description="Run CMD (e.g. mpirun -np 4 ./a.out) with libhympi-profile.so preloaded; "
                                   "write the rank x rank bytes/messages matrix when it calls MPI_Finalize.")
    register(p, PROFILE)
    p.set_defaults(handler=main)


def summary_table(profile: Profile) -> Table:
    """Totals and the heaviest pairs."""
    total = sum(map(sum, profile.bytes))
    msgs = sum(map(sum, profile.messages))
    table = Table(title=f"point-to-point traffic, {profile.ranks} ranks: {total} B in {msgs} messages")
    for col in ("from", "to", "bytes", "messages", "share"):
        table.add_column(col, justify="right")
    for i, j, b, m in profile.top_pairs(8):
        table.add_row(str(i), str(j), str(b), str(m), f"{100.0 * b / total:.1f}%")
    return table


def _size_label(edge: int) -> str:
    """A bin's lower edge in B, KiB or MiB, as 'from EDGE up'."""
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if edge >= scale:
            return f"{edge / scale:g} {unit}+"
    return f"{edge} B+"


def histogram_table(profile: Profile) -> Table:
    """Messages (point-to-point) and calls (collectives) per size bin, summed over ranks."""
    table = Table(title="message sizes (p2p: messages; collectives: calls, by the bytes each rank sends)")
    table.add_column("kind")
    for edge in profile.size_bins:
        table.add_column(_size_label(edge), justify="right")
    for kind, counts in profile.histograms.items():
        table.add_row(kind, *(str(c) for c in counts))
    return table


def time_line(profile: Profile) -> str:
    """The MPI share of the ranks' wall time, with the spread of the per-rank MPI time."""
    if not any(profile.wall_time_s):
        return "time in MPI: not recorded (profile written by an older libhympi-profile)"
    return (f"time in MPI: {100.0 * profile.mpi_share:.1f}% of {sum(profile.wall_time_s):.3f} rank-seconds "
            f"(per rank {min(profile.mpi_time_s):.3f} to {max(profile.mpi_time_s):.3f} s)")


def main(args: argparse.Namespace) -> int:
    """Runs the program under the profiler and reports the matrix."""
    params = from_record(ProfileParams, resolve(args, PROFILE))
    # Before the program runs, not after; never the program or a file it is given.
    out = check_output_file(params.out, OUT.flag, command_inputs(args.app_args))
    plan = plan_profile(args.app_args, out)
    timeout = params.timeout
    # The command's output and error output as they come (a profiled run may take hours).
    outcome, profile = run_profile(plan, timeout, echo=None if params.quiet else write_through,
                                   echo_err=None if params.quiet else write_through_err)
    if outcome.returncode != 0:
        why = (f"timed out after {timeout:g} s and was killed" if outcome.status == "timeout"
               else f"exit code {outcome.returncode}")
        raise HympiError(f"profiled command failed ({why}): {' '.join(plan.command)}")
    if profile is None:
        # The profiler reports a file it could not write (a full disk) on the program's stderr, as its only words.
        said = [line for line in outcome.stderr.splitlines() if line.startswith(PROFILER_SAYS)]
        why = said[-1].removeprefix(PROFILER_SAYS) if said else "the command ran no MPI program to MPI_Finalize"
        raise HympiError(f"no profile written to {plan.out}: {why}")
    console = HympiConsole(stderr=True)
    console.print(summary_table(profile))
    console.print(time_line(profile))
    if profile.histograms:
        console.print(histogram_table(profile))
    print(f"profile written to {profile.path}", file=sys.stderr)
    return 0
