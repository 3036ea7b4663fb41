"""The launch command of one run for a named launcher: the one place `hympi run`, `affinity`, `info` and `sweep`
turn a launcher name into an argument list."""

from __future__ import annotations

from hympi.launch import slurm
from hympi.launch.detect import find_launcher
from hympi.launch.layout import TARGETS
from hympi.launch.mpirun import LaunchSpec, build_command

# What every command's --launcher takes: mpirun, the default MPI launcher ($HYMPI_MPIRUN, else mpirun or mpiexec
# on PATH), or a layout spec target, checked against its --version banner (hympi.launch.detect).
DEFAULT_LAUNCHER = "mpirun"
LAUNCHERS = (DEFAULT_LAUNCHER, *TARGETS)


def launch_command(spec: LaunchSpec, target: str | None) -> list[str]:
    """The command that launches `spec` with launcher `target` (one of LAUNCHERS; None too: the default MPI
    launcher); HympiFatal when that launcher is not installed, UsageError when it cannot spell a launcher-bound
    layout."""
    if target in (None, DEFAULT_LAUNCHER):
        return build_command(spec)
    found = find_launcher(target)
    if target == "slurm":
        return slurm.build_srun_command(spec, found.path)
    return build_command(spec, found.path, "mpich" if target == "mpich" else "openmpi")
