"""Launching under Slurm: srun commands inside an allocation, or an sbatch script that runs the sweep there."""

from __future__ import annotations

import os
import re
import shlex
import shutil
from dataclasses import dataclass

from hympi.errors import HympiFatal, UsageError
from hympi.launch.mpirun import MPI_FLAVORS, LaunchSpec, launcher_path, mpi_flavor
from hympi.paths import binary
from hympi.place.tree import load_node_tree
from hympi.settings import settings


def in_allocation() -> bool:
    """True inside a Slurm job (salloc, sbatch), where srun can start job steps."""
    return bool(os.environ.get("SLURM_JOB_ID"))


def srun_path() -> str:
    """The srun to use: $HYMPI_SRUN, else srun on PATH, else plain 'srun' (for scripts run elsewhere)."""
    return settings().text("srun") or shutil.which("srun") or "srun"


# The process-management interface each MPI's ranks find each other through when srun starts them directly: Debian's
# Open MPI 4 (external PMIx) aborts in MPI_Init under pmi2 or none; MPICH's simple PMI speaks Slurm's pmi2.
PMI_OF_FLAVOR = {"openmpi": "pmix", "mpich": "pmi2"}


def srun_mpi_plugin() -> str | None:
    """srun's --mpi plugin: $HYMPI_SRUN_MPI, else the one the local MPI's flavour needs, else None (the cluster's
    MpiDefault) when no MPI launcher is installed here to tell the flavour."""
    chosen = settings().text("srun_mpi")
    if chosen:
        return chosen
    try:
        return PMI_OF_FLAVOR[mpi_flavor(launcher_path())]
    except HympiFatal:
        return None


def allocation_cpus() -> int | None:
    """CPUs the current allocation grants (tasks x cpus per task), or None outside one."""
    if not in_allocation():
        return None
    tasks = os.environ.get("SLURM_NTASKS") or os.environ.get("SLURM_NPROCS")
    per_task = os.environ.get("SLURM_CPUS_PER_TASK", "1")
    try:
        return int(tasks) * int(per_task) if tasks else None
    except ValueError:
        return None


def build_srun_command(spec: LaunchSpec, srun: str | None = None) -> list[str]:
    """The argument list `env VAR=VALUE... srun ... APP ARGS` for `spec`: one task per rank, threads as CPUs per
    task, hympi binds itself, the ranks wired up through srun_mpi_plugin(); MPI parameters are set under both
    flavours' names (srun does not say which library the app links). UsageError for a variable name env(1) would
    misread (one holding '=')."""
    env = spec.app_env()
    for flavor in MPI_FLAVORS:
        env.update(spec.mpi_env(flavor))
    for key in env:
        if "=" in key or not key:
            raise UsageError(f"cannot pass the environment variable {key!r} to srun (not a variable name)")
    if spec.binder == "launcher":  # srun binds as the layout spec says (one node: this one's topology)
        placement = list(spec.layout().arguments("slurm", load_node_tree("this")))
    else:
        placement = ["--ntasks", str(spec.ranks), "--cpus-per-task", str(spec.threads),
                     "--cpu-bind=none",  # hympi binds ranks and threads itself, with hwloc
                     *(["--overcommit"] if spec.oversubscribe else [])]
    # srun --export=ALL,VAR=VALUE lets a VAR already in srun's environment win (Slurm 22.05: a user's own
    # OMP_NUM_THREADS or HYMPI_MIN_TIME silently replaced every layout's), so env(1) sets the layout's variables in
    # srun's environment and --export=ALL carries them to every task (values may hold commas, too).
    cmd = ["env", *(f"{k}={v}" for k, v in env.items()), srun or srun_path(), *placement,
           "--kill-on-bad-exit=1", "--export=ALL"]
    plugin = srun_mpi_plugin()
    if plugin:  # without it the R tasks would be R singleton MPI jobs of one rank (or abort in MPI_Init)
        cmd.append(f"--mpi={plugin}")
    return [*cmd, str(binary(spec.app_binary)), *spec.launched_args()]


@dataclass(frozen=True)
class BatchRequest:
    """What the sbatch script asks for and the sweep command it runs inside the allocation."""

    job_name: str
    ntasks: int
    cpus_per_task: int
    time_limit_s: float | None
    workdir: str
    sweep_command: tuple[str, ...]
    nodes: int = 1


def sweep_job_name(subject: str) -> str:
    """The job name (and the stem of its sbatch script and output file) of a sweep of `subject`, an app or a
    program's name: characters outside [A-Za-z0-9._-] made '_', since the name is written into #SBATCH lines
    unquoted, where a space ends the value and a newline ends the header (sbatch then ignores every later line)."""
    return "hympi-sweep-" + re.sub(r"[^A-Za-z0-9._-]", "_", subject)


def _time_limit(seconds: float) -> str:
    """Seconds as Slurm's D-HH:MM:SS."""
    total = int(seconds + 59) // 60 * 60
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    return f"{days}-{hours:02d}:{rest // 60:02d}:00"


def batch_output(req: BatchRequest, job_id: str) -> str:
    """The name of the job's output file (in its working directory), as the script's --output spells it."""
    return f"{req.job_name}-{job_id}.out"


def sbatch_script(req: BatchRequest) -> str:
    """The text of an sbatch script that re-runs the same sweep (with --resume) inside the allocation."""
    lines = ["#!/bin/bash",
             f"#SBATCH --job-name={req.job_name}",
             f"#SBATCH --nodes={req.nodes}",
             f"#SBATCH --ntasks={req.ntasks}",
             f"#SBATCH --cpus-per-task={req.cpus_per_task}",
             f"#SBATCH --output={req.job_name}-%j.out"]  # batch_output() names it
    if req.time_limit_s is not None:
        lines.append(f"#SBATCH --time={_time_limit(req.time_limit_s)}")
    lines += ["# Written by 'hympi sweep --launcher slurm': inside the allocation hympi starts every layout with srun",
              "# and records it in the results database; resubmitting resumes without repeating finished runs.",
              "set -euo pipefail",
              f"cd {shlex.quote(req.workdir)}",
              "exec " + shlex.join(list(req.sweep_command)),
              ""]
    return "\n".join(lines)
