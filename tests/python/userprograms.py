"""Programs hympi did not build, for the tests of any executable under study (issue 32): our own hybrid MPI + OpenMP
program (tests/programs/hybrid.c, compiled here), LAMMPS from Debian's package `lammps` and HPC Challenge from its
package `hpcc` (the bootstrap installs both), each with the regular expressions that read its figure of merit and
show that it finished correctly."""

from __future__ import annotations

import functools
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pytest

import skips
from hympi.program import load_programs
from mpiapps import mpirun_command

REPO = Path(__file__).resolve().parents[2]
HYBRID_SOURCE = REPO / "tests" / "programs" / "hybrid.c"
# LAMMPS's examples/melt/in.melt with its size and run length as variables: the example itself sets neither from
# the command line, and Debian ships it in lammps-examples, 145 MB installed for this one 600-byte file.
LAMMPS_INPUT = REPO / "tests" / "data" / "lammps" / "in.melt"

# lmp's last lines: "Loop time of 1.50 on 1 procs for 500 steps with 4000 atoms", "Performance: 143584.889 tau/day,
# 332.372 timesteps/s" ("ns/day, hours/ns, ..." before it in other unit systems), "98.2% CPU use with 1 MPI tasks x
# 1 OpenMP threads", and last of all "Total wall time: 0:00:01".
LAMMPS_RATE = r"([0-9]+(?:\.[0-9]*)?) timesteps/s"
LAMMPS_COMPLETED = r"(?m)^Total wall time: [0-9]+:[0-9]{2}:[0-9]{2}$"
# "procs" counts ranks times OpenMP threads; the world size is in LAMMPS_LAYOUT.
LAMMPS_LOOP = r"Loop time of ([0-9.]+) on ([0-9]+) procs for ([0-9]+) steps with ([0-9]+) atoms"
LAMMPS_LAYOUT = r"([0-9]+) MPI tasks x ([0-9]+) OpenMP threads"

# HPC Challenge, as the README's example of a program that writes its results into a file declares it: its inputs
# (hpccinf.in, and grid, its preparation, which writes the hpccinf.txt HPC Challenge reads from where it runs), the
# file it appends each run's results to, its figure of merit and check.
HPCC_PROGRAMS = REPO / "docs" / "examples" / "hpcc" / "hympi-programs.toml"

HYBRID_RATE = r"rate: ([0-9]+(?:\.[0-9]*)?) Mupdates/s"
HYBRID_VERIFIED = r"(?m)^verification: SUCCESSFUL"
HYBRID_LAYOUT = r"hybrid: ([0-9]+) ranks x ([0-9]+) threads"

SPAWN_SOURCE = REPO / "tests" / "programs" / "spawn.c"
EARLY_THREAD_SOURCE = REPO / "tests" / "programs" / "early_thread.c"
SPAWN_RATE = r"rate: ([0-9]+(?:\.[0-9]*)?) sums/s"
SPAWN_VERIFIED = r"(?m)^ranks: [0-9]+, worker sum verified$"

FARM_SOURCE = REPO / "tests" / "programs" / "farm.py"
FARM_RATE = r"rate: ([0-9]+(?:\.[0-9]*)?) tasks/s"
FARM_VERIFIED = r"(?m)^farm: [0-9]+ tasks on [0-9]+ workers, results verified$"


@dataclass(frozen=True)
class Invocation:
    """A program as a test hands it to hympi: its command line (executable first) and what hympi's --metric,
    --metric-unit, --better, --verify, --output-file and --prepare take for it (the same names as
    hympi.program.Program's fields): the expression whose first group is the figure of merit, its unit and
    direction, the expression that matches only the output of a run that completed correctly, the file it writes
    them into ("": none) and the command that makes its input for each launch ("": none)."""

    command: tuple[str, ...]
    metric: str
    metric_unit: str
    better: Literal["higher", "lower"]
    verify: str
    output_file: str = ""
    prepare: str = ""


@functools.cache
def _compile(directory: Path, source: Path = HYBRID_SOURCE) -> Path:
    mpicc = shutil.which("mpicc")
    if mpicc is None:
        skips.skip(skips.Reason.OPEN_MPI, "mpicc is not on PATH")
    directory.mkdir(parents=True, exist_ok=True)
    binary = directory / source.stem
    proc = subprocess.run([mpicc, "-fopenmp", "-O2", "-o", str(binary), str(source), "-lm"],
                          capture_output=True, text=True, timeout=120, check=False)
    if proc.returncode != 0:
        skips.skip(skips.Reason.NOT_BUILT, f"mpicc -fopenmp could not compile {source}: {proc.stderr.strip()}")
    return binary


def shell_program(directory: Path, name: str, body: str) -> Path:
    """An executable /bin/sh script `directory`/`name` running `body`: a program of the user's own in a few lines."""
    path = directory / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def hybrid_binary(factory: pytest.TempPathFactory) -> Path:
    """tests/programs/hybrid.c compiled with `mpicc -fopenmp -O2`, once per session (per xdist worker) whichever
    test asks first; skips (fails under CI) without mpicc or when it does not compile."""
    return _compile(factory.getbasetemp() / "userprograms")


def early_thread_binary(factory: pytest.TempPathFactory) -> Path:
    """hybrid.c linked with tests/programs/early_thread.c as a shared library, whose constructor starts a thread
    before the probe's constructor runs (as OpenBLAS's pool does); skips (fails under CI) as hybrid_binary."""
    directory = factory.getbasetemp() / "early-thread"
    mpicc = shutil.which("mpicc")
    if mpicc is None:
        skips.skip(skips.Reason.OPEN_MPI, "mpicc is not on PATH")
    directory.mkdir(parents=True, exist_ok=True)
    binary = directory / "hybrid-early"
    steps = ([mpicc, "-shared", "-fPIC", "-O2", "-o", str(directory / "libearly.so"), str(EARLY_THREAD_SOURCE)],
             [mpicc, "-fopenmp", "-O2", "-o", str(binary), str(HYBRID_SOURCE), f"-L{directory}", "-Wl,--no-as-needed",
              "-learly", f"-Wl,-rpath,{directory}", "-lm"])
    for step in steps:
        proc = subprocess.run(step, capture_output=True, text=True, timeout=120, check=False)
        if proc.returncode != 0:
            skips.skip(skips.Reason.NOT_BUILT, f"{' '.join(step)} failed: {proc.stderr.strip()}")
    return binary


def spawn_binary(factory: pytest.TempPathFactory) -> Path:
    """tests/programs/spawn.c compiled like hybrid_binary."""
    return _compile(factory.getbasetemp() / "userprograms", SPAWN_SOURCE)


def spawning(binary: Path, n: int) -> Invocation:
    """spawn.c's run: each launch starts one worker with MPI_Comm_spawn, which sums 1..n."""
    return Invocation(command=(str(binary), str(n)), metric=SPAWN_RATE, metric_unit="sums/s", better="higher",
                      verify=SPAWN_VERIFIED)


def farm(tasks: int, workers: int) -> Invocation:
    """tests/programs/farm.py under Debian's python3: `tasks` tasks on `workers` workers mpi4py.futures spawns;
    skips (fails under CI) without mpi4py for that python3."""
    python = shutil.which("python3", path="/usr/bin")
    if python is None or subprocess.run([python, "-c", "import mpi4py.futures"], capture_output=True, timeout=60,
                                        check=False).returncode != 0:
        skips.skip(skips.Reason.MPI4PY, "/usr/bin/python3 cannot import mpi4py.futures (Debian package python3-mpi4py)")
    return Invocation(command=(python, str(FARM_SOURCE), str(tasks), str(workers)), metric=FARM_RATE,
                      metric_unit="tasks/s", better="higher", verify=FARM_VERIFIED)


def hybrid(binary: Path, points: int, steps: int, *, broken: bool = False) -> Invocation:
    """hybrid.c's run over `points` points for `steps` steps; `broken` gives it a wrong start so its check fails."""
    return Invocation(command=(str(binary), str(points), str(steps), *(("--break",) if broken else ())),
                      metric=HYBRID_RATE, metric_unit="Mupdates/s", better="higher", verify=HYBRID_VERIFIED)


def lammps(*, cells: int = 10, steps: int = 500) -> Invocation:
    """LAMMPS's Lennard-Jones melt in a box of `cells`^3 fcc cells (4 atoms each) for `steps` steps, writing no
    files (no log.lammps); the defaults take about 1.5 s on one core of the test machine. Skips (fails under CI)
    when lmp is not installed."""
    lmp = shutil.which("lmp")
    if lmp is None:
        skips.skip(skips.Reason.LAMMPS, "lmp is not on PATH (Debian package lammps)")
    command = (lmp, "-in", str(LAMMPS_INPUT), "-var", "cells", str(cells), "-var", "steps", str(steps),
               "-log", "none", "-nocite")
    return Invocation(command=command, metric=LAMMPS_RATE, metric_unit="timesteps/s", better="higher",
                      verify=LAMMPS_COMPLETED)


def hpcc(directory: Path) -> Invocation:
    """HPC Challenge run in `directory`, where its inputs are put (its preparation writes the one it reads) and where it
    appends its results (its output file); skips (fails under CI) when hpcc is not installed."""
    if shutil.which("hpcc") is None:
        skips.skip(skips.Reason.HPCC, "hpcc is not on PATH (Debian package hpcc)")
    (entry,) = load_programs(str(HPCC_PROGRAMS))
    program = entry.program
    for name in entry.inputs:
        shutil.copy(HPCC_PROGRAMS.parent / name, directory)
    better: Literal["higher", "lower"] = "lower" if program.better == "lower" else "higher"
    return Invocation(command=(program.path, *entry.args), metric=program.metric, metric_unit=program.metric_unit,
                      better=better, verify=program.verify, output_file=program.output_file, prepare=program.prepare)


def launch(program: Invocation, ranks: int, threads: int, cwd: Path,
           timeout: float = 120) -> subprocess.CompletedProcess:
    """Runs `program` on `ranks` x `threads` under mpirun, unbound, in `cwd`; skips (fails under CI) without
    mpirun."""
    if not skips.have_mpirun():
        skips.skip(skips.Reason.OPEN_MPI, "mpirun is not on PATH")
    return subprocess.run([*mpirun_command(ranks, threads), *program.command], capture_output=True, text=True,
                          timeout=timeout, check=False, cwd=cwd)
