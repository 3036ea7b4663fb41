"""Which launcher is installed and which layout spelling it takes: read from its --version banner, not assumed."""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass

from hympi.errors import HympiFatal, UsageError, unknown_name
from hympi.launch.banner import target_of_banner
from hympi.launch.layout import TARGETS
from hympi.launch.slurm import in_allocation
from hympi.settings import settings

# Names to try per target, after $HYMPI_MPIRUN / $HYMPI_SRUN; Debian installs the alternatives under these names.
_CANDIDATES = {"openmpi4": ("mpirun", "mpiexec", "mpirun.openmpi"),
               "openmpi5": ("mpirun", "mpiexec", "mpirun.openmpi"),
               "mpich": ("mpiexec.mpich", "mpiexec.hydra", "mpiexec", "mpirun.mpich", "mpirun"),
               "slurm": ("srun",)}


@dataclass(frozen=True)
class Launcher:
    """An installed launcher: its layout target, the path run and the first line of its version banner."""

    target: str
    path: str
    version: str


def probe(path: str) -> tuple[Launcher | None, str]:
    """(the launcher at `path`, or None when it does not run or its banner is unknown; the banner's first line or
    the reason it failed)."""
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, errors="replace",
                             timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"{path} --version failed ({exc})"
    text = out.stdout + out.stderr
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if out.returncode != 0:
        return None, f"{path} --version exited {out.returncode}: {lines[-1] if lines else 'no output'}"
    target = target_of_banner(text)
    hydra = re.search(r"Version:\s*(\S+)", text) if target == "mpich" else None
    version = f"HYDRA {hydra.group(1)}" if hydra else (lines[0] if lines else "")
    return (Launcher(target, path, version) if target else None), version or "no banner"


def _paths(target: str) -> list[str]:
    """Where to look for `target`'s launcher: the options layer's override, then the usual names on PATH."""
    override = settings().text("srun" if target == "slurm" else "mpirun")
    found = [shutil.which(name) for name in _CANDIDATES[target]]
    return list(dict.fromkeys([*([override] if override else []), *(p for p in found if p)]))


def find_launcher(target: str) -> Launcher:
    """The installed launcher for `target`; UsageError for an unknown target, HympiFatal when none is installed or
    the one found is another launcher (e.g. Open MPI 4 where openmpi5 was asked for)."""
    if target not in TARGETS:
        raise UsageError(unknown_name('launcher', TARGETS, target))
    seen = []
    for path in _paths(target):
        launcher, banner = probe(path)
        if launcher is not None and launcher.target == target:
            return launcher
        seen.append(f"{path}: {launcher.target + ' ' + banner if launcher else banner}")
    tried = "; ".join(seen) if seen else f"none of {', '.join(_CANDIDATES[target])} on PATH"
    raise HympiFatal(f"no {target} launcher installed ({tried})")


def detect_launcher() -> Launcher:
    """The launcher this machine would use: srun inside a Slurm allocation, else $HYMPI_MPIRUN, mpirun or mpiexec,
    named by its banner; HympiFatal when there is none."""
    order = ("slurm", "openmpi4") if in_allocation() else ("openmpi4",)
    reasons = []
    for kind in order:
        for path in _paths(kind):
            launcher, banner = probe(path)
            if launcher is not None:
                return launcher
            reasons.append(banner)
    raise HympiFatal(f"no MPI launcher found ({'; '.join(reasons) or 'no mpirun, mpiexec or srun on PATH'}); "
                     "install Open MPI or MPICH, or set HYMPI_MPIRUN")
