"""The launch command of one run for a named launcher: the one place `hympi run`, `affinity`, `info` and `sweep`
turn a launcher name into an argument list."""

from __future__ import annotations

from hympi.launch import slurm
from hympi.launch.detect import find_launcher
from hympi.launch.mpirun import LaunchSpec, build_command


def launch_command(spec: LaunchSpec, target: str | None) -> list[str]:
    """The command that launches `spec` with launcher `target` (None: the default MPI launcher); HympiFatal when that
    launcher is not installed, UsageError when it cannot spell a launcher-bound layout."""
    if target is None:
        return build_command(spec)
    found = find_launcher(target)
    if target == "slurm":
        return slurm.build_srun_command(spec, found.path)
    return build_command(spec, found.path, "mpich" if target == "mpich" else "openmpi")
