"""Which launcher a --version banner belongs to, and so which layout spelling it takes."""

from __future__ import annotations

import re

_OPEN_MPI = re.compile(r"\((?:Open MPI|OpenRTE)\)\s+(\d+)\.")
_SLURM = re.compile(r"^slurm(?:-wlm)?\s+(\d+\.\d+)", re.MULTILINE)


def target_of_banner(text: str) -> str | None:
    """openmpi4 (Open MPI <= 4), openmpi5 (5 and later), mpich (Hydra) or slurm from a --version banner; None when
    the banner is none of these."""
    ompi = _OPEN_MPI.search(text)
    if ompi:
        return "openmpi4" if int(ompi.group(1)) <= 4 else "openmpi5"
    if "HYDRA" in text or "MPICH" in text:
        return "mpich"
    if _SLURM.search(text):
        return "slurm"
    return None
