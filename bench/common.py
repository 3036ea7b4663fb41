"""What the benchmark scripts under bench/ share: one-line rejection of bad options (exit 2), the parsers of their
list-valued options, the checks of their numeric ones, and how they find the hympi command.

The scripts run as `python3 bench/<name>/<script>.py`, so each puts bench/ on sys.path before importing this.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import shutil
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NoReturn

from hympi.launch.mpirun import LaunchSpec, format_command, launch

# The repository the scripts belong to.
REPO = Path(__file__).resolve().parents[1]
# The word that starts a script's error lines: its file name, as argparse's prog, unless the script sets another.
PROG = Path(sys.argv[0]).name
# Runs hympi's command line from the hympi package the interpreter imports (this tree's, via PYTHONPATH).
HYMPI_MAIN = "import sys; from hympi.cli import main; sys.exit(main())"


def reject(option: str, message: str) -> NoReturn:
    """Exits 2 with one line naming the option and what is wrong with its value."""
    print(f"{PROG}: {option}: {message}", file=sys.stderr)
    sys.exit(2)


def parse_shapes(text: str, option: str, dims: int, form: str, what: str) -> list[tuple[int, ...]]:
    """The `dims` positive sizes of each comma-separated AxB(xC...) in `text`; exits 2 saying a bad one is not
    `form`, or that no `what` was given."""
    pattern = re.compile("x".join(["([1-9][0-9]*)"] * dims))
    shapes = []
    for item in (part for part in text.split(",") if part):
        match = pattern.fullmatch(item)
        if match is None:
            reject(option, f"'{item}' is not {form}")
        shapes.append(tuple(int(size) for size in match.groups()))
    if not shapes:
        reject(option, f"no {what} given")
    return shapes


def parse_layouts(text: str, form: str = "RANKSxTHREADS (e.g. 2x1)") -> list[tuple[int, int]]:
    """The (first, second) counts of each comma-separated --layouts item, e.g. ranks x threads; exits 2 naming a
    bad one (not `form`) or an empty list."""
    return [(a, b) for a, b in parse_shapes(text, "--layouts", 2, form, "layout")]


def parse_counts(text: str, option: str, empty_ok: bool = False) -> list[int]:
    """The comma-separated positive integers of `text`; exits 2 naming a bad one (or the empty list, unless
    `empty_ok`)."""
    counts = []
    for item in (part for part in text.split(",") if part):
        if not (item.isascii() and item.isdigit()) or int(item) < 1:  # '²' is a digit to isdigit
            reject(option, f"'{item}' is not a positive integer")
        counts.append(int(item))
    if not counts and not empty_ok:
        reject(option, "nothing given")
    return counts


def parse_names(text: str, allowed: Iterable[str], option: str, noun: str = "value") -> list[str]:
    """The comma-separated names in `text`; exits 2 naming the first one not in `allowed`."""
    known = list(allowed)
    names = [name for name in text.split(",") if name]
    for name in names:
        if name not in known:
            reject(option, f"unknown {noun} '{name}' (choose from {', '.join(known)})")
    return names


def options_of(args: argparse.Namespace, *names: str) -> list[tuple[str, Any]]:
    """(--option-name, value) for the attributes `names` of parsed arguments."""
    return [("--" + name.replace("_", "-"), getattr(args, name)) for name in names]


def require_positive(checks: Iterable[tuple[str, int]]) -> None:
    """Exits 2 naming the first (option, value) whose value is below 1."""
    for option, value in checks:
        if value < 1:
            reject(option, f"must be >= 1, got {value}")


def require_seconds(checks: Iterable[tuple[str, float]], zero_ok: bool) -> None:
    """Exits 2 naming the first (option, value) that is not a finite number of seconds, > 0 (>= 0 if `zero_ok`)."""
    for option, value in checks:
        if not (math.isfinite(value) and (value >= 0 if zero_ok else value > 0)):
            reject(option, f"must be a number of seconds {'>=' if zero_ok else '>'} 0, got {value}")


def hympi_here(python: str = sys.executable) -> list[str]:
    """The hympi command of the hympi package `python` imports (this tree's, with the scripts' PYTHONPATH)."""
    return [python, "-c", HYMPI_MAIN]


def hympi_command() -> list[str]:
    """The hympi command: $HYMPI, else the script next to this Python, else hympi on PATH; exits 2 without one."""
    if os.environ.get("HYMPI"):
        return [os.environ["HYMPI"]]
    beside = Path(sys.executable).parent / "hympi"
    found = str(beside) if beside.exists() else shutil.which("hympi")
    if found is None:
        reject("HYMPI", "no hympi command next to this Python or on PATH (set HYMPI)")
    return [found]


def record_of(spec: LaunchSpec, timeout: float) -> dict[str, Any]:
    """The result record of one run of `spec` that ended ok; exits naming the command, its status and the end of
    its stderr otherwise."""
    outcome = launch(spec, timeout)
    if outcome.status != "ok" or outcome.record is None:
        sys.exit(f"{PROG}: {format_command(outcome.command)}: {outcome.status}\n{outcome.stderr_tail()}")
    record: dict[str, Any] = outcome.record
    return record
