"""Which control variables an MPI library declares, asked of the library's own listing tool.

`hympi tune best --format mpich|mca` writes a tune's parameters for a library that may not be the one the tune ran
on: an Open MPI name spelled MPIR_CVAR_* is no MPICH variable, and MPICH ignores unknown MPIR_CVAR_* variables
without a word, so the snippet would change nothing while claiming a speed-up. Only the target library can say
what it declares: MPICH's `mpivars` (shipped with the mpich package) prints its MPI_T control variables, Open MPI's
`ompi_info --all --parsable` its MCA parameters.
"""

from __future__ import annotations

import re
import shutil
import subprocess

PARAMETER_LIST_TIMEOUT_S = 30.0
# The listing tool of each flavour (launch.mpirun.MPI_FLAVORS) and the library name messages use.
TOOLS = {"mpich": ("mpivars", "MPICH"), "openmpi": ("ompi_info", "Open MPI")}
# mpivars: a "<N> MPI Control Variables" header, then one tab-indented "NAME<padding>=value<TAB>..." line per
# variable; the performance variables and categories that follow are not settable.
_MPIVARS_HEADER = re.compile(r"^\d+ MPI Control Variables\s*$")
_MPIVARS_ROW = re.compile(r"^\t(MPIR_CVAR_[A-Z0-9_]+)\s*=")
# ompi_info --parsable: "mca:<framework>:<component>:param:<name>:value:<value>" once per parameter.
_OMPI_ROW = re.compile(r"^mca:[^:]*:[^:]*:param:([A-Za-z0-9_]+):value:")


def parse_mpivars(text: str) -> frozenset[str]:
    """The control variable names of one `mpivars` output (MPIR_CVAR_*; performance variables left out)."""
    names: set[str] = set()
    inside = False
    for line in text.splitlines():
        if _MPIVARS_HEADER.match(line):
            inside = True
            continue
        if inside and not line.startswith("\t"):
            break  # the first line after the indented rows ends the control variables
        row = _MPIVARS_ROW.match(line) if inside else None
        if row:
            names.add(row.group(1))
    return frozenset(names)


def parse_ompi_info(text: str) -> frozenset[str]:
    """The MCA parameter names of one `ompi_info --all --parsable` output."""
    return frozenset(m.group(1) for line in text.splitlines() if (m := _OMPI_ROW.match(line)))


def declared_names(flavor: str, timeout: float = PARAMETER_LIST_TIMEOUT_S) -> frozenset[str] | None:
    """The control variables the installed library of `flavor` declares (the names its own tool lists), or None when
    its tool is not installed, fails, or lists nothing (then nothing is known to be declared); ValueError for an
    unknown flavour."""
    if flavor not in TOOLS:
        raise ValueError(f"unknown MPI flavour {flavor!r} (expected {', '.join(TOOLS)})")
    tool = shutil.which(TOOLS[flavor][0])
    if tool is None:
        return None
    args = [tool] if flavor == "mpich" else [tool, "--all", "--parsable"]
    try:
        proc = subprocess.run(args, capture_output=True, text=True, errors="replace", timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    names = parse_mpivars(proc.stdout) if flavor == "mpich" else parse_ompi_info(proc.stdout)
    return names or None
