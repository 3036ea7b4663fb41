"""The one way a test skips: hardware this machine lacks, or other work keeping it busy, may skip anywhere; a part
the bootstrap installs or builds (Slurm, MPICH, Chromium, h5py, Fortran, LAMMPS, HPC Challenge, mpi4py, Open MPI,
the apps) skips on a developer's machine but fails when CI is set, so that CI is never green because what it should
have tested did not start (issue 30, A.2).

Every skip message starts with its reason's text (`Reason.value`), which is what the summary line at the end of the
run counts by (conftest.py's pytest_terminal_summary).
"""

from __future__ import annotations

import importlib
import os
import shutil
from collections import Counter
from collections.abc import Iterable
from enum import Enum
from pathlib import Path
from types import ModuleType
from typing import NoReturn

import pytest

REPO = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("HYMPI_BIN_DIR") or REPO / "build" / "bin")
MARKER = "hympi_needs"


class Reason(Enum):
    """Why a test cannot run here; the value starts its skip message."""

    # Hardware: no bootstrap can add it, so these skip even under CI (MACHINE).
    NO_SECOND_NUMA = "no second NUMA domain"
    NO_SMT = "no SMT"
    FEW_CPUS = "fewer CPUs than the test needs"
    NO_CACHE = "no CPU cache"
    # Parts `make test` installs (scripts/bootstrap-system.sh, .venv) or builds (build/, build-asan/).
    SLURM = "no Slurm"
    MPICH = "no MPICH"
    OPEN_MPI = "no Open MPI"
    CHROMIUM = "no Chromium"
    H5PY = "no h5py"
    FORTRAN = "no Fortran"
    LAMMPS = "no LAMMPS"
    HPCC = "no HPC Challenge"
    MPI4PY = "no mpi4py"
    NOT_BUILT = "not built"
    # The file systems the tests write to: the checkpoint writer's O_DIRECT path needs one that reports its alignment
    # under tmp_path (ext4, xfs) and its fallback a tmpfs at /dev/shm, as the machines `make test` runs on have.
    NO_DIRECT_IO = "no direct I/O or tmpfs file system"
    # The machine's state: other work on the cores a test that measures other work needs quiet (test_busy.py); no
    # bootstrap can stop someone else's work either, so it skips even under CI (MACHINE).
    BUSY = "the machine is busy"
    # Privileges `make test` runs with (root, as its README says) that a developer's shell may lack.
    NOT_ROOT = "not root"

    @property
    def of_machine(self) -> bool:
        """Whether it is the machine itself, its hardware or its load (the only reasons that may skip under CI)."""
        return self in MACHINE


HARDWARE = frozenset({Reason.NO_SECOND_NUMA, Reason.NO_SMT, Reason.FEW_CPUS, Reason.NO_CACHE})
MACHINE = HARDWARE | {Reason.BUSY}


def in_ci() -> bool:
    """Whether this is a CI run (the CI variable set and not empty, as CI services set it)."""
    return bool(os.environ.get("CI"))


def skip(reason: Reason, detail: str, *, module_level: bool = False) -> NoReturn:
    """Skips the test for `reason`; under CI a reason that is not the machine's fails it instead, naming what is
    missing. `module_level`: called while a test module is imported (the whole module skips or fails)."""
    message = f"{reason.value}: {detail}"
    if in_ci() and not reason.of_machine:
        pytest.fail(f"{message} (CI is set: a part `make test` installs or builds must not be skipped)",
                    pytrace=False)
    pytest.skip(message, allow_module_level=module_level)


def needs(reason: Reason, present: bool, detail: str) -> pytest.MarkDecorator:
    """A mark for a test that needs something (skipif's replacement): when `present` is false, conftest.py's
    pytest_runtest_setup calls skip(reason, detail) for each test it marks."""
    return getattr(pytest.mark, MARKER)(reason=reason, present=present, detail=detail)


def apply_needs(item: pytest.Item) -> None:
    """Skips (or under CI fails) `item` for the first unmet `needs` mark it carries."""
    for mark in item.iter_markers(MARKER):
        if not mark.kwargs["present"]:
            skip(mark.kwargs["reason"], mark.kwargs["detail"])


def import_or_skip(module: str, reason: Reason) -> ModuleType:
    """`import module` for a test module (pytest.importorskip's replacement): skips the module for `reason` when
    it is not installed, and under CI fails instead."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        skip(reason, f"cannot import {module} ({exc})", module_level=True)


def have_mpirun() -> bool:
    """Whether an mpirun is on PATH (Open MPI's, as the bootstrap installs it)."""
    return shutil.which("mpirun") is not None


def missing_binaries(*names: str) -> list[str]:
    """The hympi-* binaries among `names` that are not built in BIN ($HYMPI_BIN_DIR or build/bin)."""
    return [name for name in names if not (BIN / name).is_file()]


def needs_apps(*names: str) -> pytest.MarkDecorator:
    """The mark of a test that runs the built `names` under mpirun: Open MPI installed, each binary built."""
    if not have_mpirun():
        return needs(Reason.OPEN_MPI, False, "mpirun is not on PATH")
    missing = missing_binaries(*names)
    return needs(Reason.NOT_BUILT, not missing, f"{', '.join(missing)} in {BIN}")


def require_apps(*names: str) -> None:
    """Inside a test: skip (fail under CI) unless mpirun is installed and each of `names` is built."""
    if not have_mpirun():
        skip(Reason.OPEN_MPI, "mpirun is not on PATH")
    missing = missing_binaries(*names)
    if missing:
        skip(Reason.NOT_BUILT, f"{', '.join(missing)} in {BIN}")


def require_binary(path: Path) -> Path:
    """`path` when it is a built file; skips the test otherwise (fails under CI)."""
    if not path.is_file():
        skip(Reason.NOT_BUILT, str(path))
    return path


def reason_of(message: str) -> str:
    """The reason text a skip message starts with ('other' for a skip that did not come through skip())."""
    for reason in Reason:
        if message.startswith(f"{reason.value}: "):
            return reason.value
    return "other"


def summary_line(messages: Iterable[str]) -> str:
    """'skipped: N (reason: n, ...)', most frequent reason first, from the skip messages of a run."""
    counts = Counter(reason_of(message) for message in messages)
    total = sum(counts.values())
    if not total:
        return "skipped: 0"
    by_reason = ", ".join(f"{reason}: {n}" for reason, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    return f"skipped: {total} ({by_reason})"
