"""Profiling any MPI program: run it under libhympi-profile.so and read the traffic matrix, message-size
histograms and MPI time it writes."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import SupportsInt

from hympi.contract import contract
from hympi.errors import HympiError, UsageError
from hympi.jsontypes import JsonObject
from hympi.launch.mpirun import RunOutcome, mpi_flavor, run_command
from hympi.paths import profile_library

MPI_LAUNCHER_NAMES = ("mpirun", "mpiexec", "orterun")
# Lower edges (bytes) of the message-size bins libhympi-profile counts in (contract.toml [profile]); the last bin is
# open-ended.
SIZE_BINS = contract().profile_size_bins


def _as_int_matrix(rows: Iterable[Iterable[SupportsInt]]) -> tuple[tuple[int, ...], ...]:
    """A JSON list of lists as a tuple matrix of ints."""
    return tuple(tuple(int(x) for x in r) for r in rows)


# What tells libhympi-profile where to write (profile/hympi_profile.cpp).
PROFILE_OUT_VAR = "HYMPI_PROFILE_OUT"


@dataclass(frozen=True)
class ProfilePlan:
    """The command to run, the environment that makes every MPI rank load the profiler, and the file the profile
    goes to (run_profile gives the profiler a fresh file beside it, so `out` changes only when a profile is whole)."""

    command: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    out: Path


def command_inputs(command: list[str]) -> dict[str, str]:
    """The files a command reads that an output must not replace: its program (as the shell finds it) and every
    argument naming an existing file."""
    inputs = {"program": shutil.which(command[0]) or command[0]} if command else {}
    inputs.update({f"argument {i}": arg for i, arg in enumerate(command[1:], 1) if os.path.isfile(arg)})
    return inputs


def plan_profile(command: list[str], out: str | Path, library: Path | None = None) -> ProfilePlan:
    """Adds LD_PRELOAD; an Open MPI launcher also gets -x so remote ranks see it and PROFILE_OUT_VAR.

    Raises UsageError when there is no command or its program is not found or not executable.
    """
    if not command:
        raise UsageError("no command to profile (usage: hympi profile [--out FILE] -- CMD ...)")
    if shutil.which(command[0]) is None:
        # Popen would raise FileNotFoundError (or PermissionError) only after the plan was made.
        raise UsageError(f"command '{command[0]}' not found or not executable")
    lib = library or profile_library()
    preload = os.environ.get("LD_PRELOAD", "")
    env = (("LD_PRELOAD", f"{lib}:{preload}" if preload else str(lib)),)
    cmd = list(command)
    if Path(cmd[0]).name in MPI_LAUNCHER_NAMES and mpi_flavor(cmd[0]) == "openmpi":
        # Local ranks inherit the launcher's environment; -x also forwards it to other nodes.
        cmd[1:1] = ["-x", "LD_PRELOAD", "-x", PROFILE_OUT_VAR]
    return ProfilePlan(tuple(cmd), env, Path(out).resolve())


@dataclass(frozen=True)
class Profile:
    """A traffic profile as libhympi-profile wrote it (a file of the older library: no histograms, zero times)."""

    ranks: int
    bytes: tuple[tuple[int, ...], ...]
    messages: tuple[tuple[int, ...], ...]
    collectives: JsonObject  # name -> {'calls': [per rank], 'send_bytes': [per rank]}, as written
    mpi_library: str
    path: Path
    size_bins: tuple[int, ...] = SIZE_BINS  # lower edges in bytes
    # kind ('p2p' or a collective such as 'MPI_Bcast') -> messages/calls per size bin, summed over ranks
    histograms: dict[str, tuple[int, ...]] = field(default_factory=dict)
    mpi_time_s: tuple[float, ...] = ()  # per rank: wall time inside MPI calls (summed over threads)
    wall_time_s: tuple[float, ...] = ()  # per rank: from MPI_Init's return to MPI_Finalize

    @property
    def mpi_share(self) -> float:
        """The fraction of the ranks' wall time spent in MPI; 0.0 when no wall time was recorded."""
        wall = sum(self.wall_time_s)
        return sum(self.mpi_time_s) / wall if wall > 0 else 0.0

    def top_pairs(self, count: int = 5) -> list[tuple[int, int, int, int]]:
        """The heaviest (src, dst, bytes, messages) pairs, largest first."""
        pairs = [(i, j, b, self.messages[i][j]) for i, row in enumerate(self.bytes) for j, b in enumerate(row) if b]
        return sorted(pairs, key=lambda p: (-p[2], p[0], p[1]))[:count]


def read_profile(path: str | Path) -> Profile:
    """Parses a hympi-profile JSON file; raises HympiError if it is not one."""
    p = Path(path)
    try:
        data = json.loads(p.read_text())
    except (OSError, ValueError) as exc:  # ValueError: JSONDecodeError and UnicodeDecodeError
        raise HympiError(f"cannot read profile {p}: {exc}") from None
    if data.get("format") != "hympi-profile":
        raise HympiError(f"{p} is not a hympi profile (format={data.get('format')!r})")
    n = int(data["ranks"])
    b, m = _as_int_matrix(data["bytes"]), _as_int_matrix(data["messages"])
    if len(b) != n or any(len(r) != n for r in b) or len(m) != n:
        raise HympiError(f"profile {p} matrix is not {n} x {n}")
    bins = tuple(int(x) for x in data.get("size_bins", SIZE_BINS))
    histograms = {str(kind): tuple(int(x) for x in counts) for kind, counts in data.get("histograms", {}).items()}
    if any(len(counts) != len(bins) for counts in histograms.values()):
        raise HympiError(f"profile {p} has a histogram that does not have {len(bins)} bins")
    mpi_time = tuple(float(x) for x in data.get("mpi_time_s", [0.0] * n))
    wall_time = tuple(float(x) for x in data.get("wall_time_s", [0.0] * n))
    if len(mpi_time) != n or len(wall_time) != n:
        raise HympiError(f"profile {p} does not have MPI and wall times for its {n} ranks")
    return Profile(n, b, m, data.get("collectives", {}), data.get("mpi_library", ""), p, bins, histograms,
                   mpi_time, wall_time)


def run_profile(plan: ProfilePlan, timeout: float | None = None, stdin: Path | int | None = None,
                echo: Callable[[bytes], None] | None = None, cwd: str | None = None,
                echo_err: Callable[[bytes], None] | None = None) -> tuple[RunOutcome, Profile | None]:
    """Runs the planned command in directory `cwd` (None: hympi's), reading `stdin` and echoing its output and error
    output to `echo` and `echo_err` (run_command's); the profile is None when the program wrote none (no
    MPI_Finalize). The profiler writes into a new directory beside plan.out, and only a profile read back whole
    replaces plan.out: a run that writes none, a failed or killed one, leaves plan.out as it was, and an old
    profile there is never read as this run's."""
    with tempfile.TemporaryDirectory(dir=plan.out.parent, prefix=f".{plan.out.name}.") as staging:
        written = Path(staging) / plan.out.name
        outcome = run_command(list(plan.command), timeout, {**dict(plan.env), PROFILE_OUT_VAR: str(written)},
                              cwd=cwd, stdin=stdin, echo=echo, echo_err=echo_err)
        # The profiler's own words (a full disk) name the file the user asked for.
        outcome = dataclasses.replace(outcome, stderr=outcome.stderr.replace(str(written), str(plan.out)))
        if not written.exists():
            return outcome, None
        profile = read_profile(written)
        os.replace(written, plan.out)
    return outcome, dataclasses.replace(profile, path=plan.out)
