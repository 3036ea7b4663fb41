"""A sweep's options that the command line needs before any sweep runs: defaults, list parsers, the order seed.
Kept apart from hympi.sweep (numpy, the store, the statistics) so that building hympi's parser stays cheap."""

from __future__ import annotations

import secrets

from hympi.contract import contract
from hympi.errors import UsageError
from hympi.settings import DEFAULT, settings

# mpirun: the default MPI launcher (HYMPI_MPIRUN or the first on PATH); the others are the layout spec's targets,
# each checked against its --version banner (hympi.launch.detect).
LAUNCHERS = ("mpirun", "openmpi4", "openmpi5", "mpich", "slurm")
DEFAULT_TIMEOUT_S = 600.0
DEFAULT_MIN_TIME_S = float(contract().option("min_time").default)  # type: ignore[union-attr]
# --repeat auto: the measured rounds every layout gets before the first decision, and the default budget.
AUTO_MIN_REPEAT = 3
DEFAULT_MAX_REPEAT = 10
SEED_LIMIT = 2**32
# Probes time many round trips inside one run with their own arguments: no warm-up run, no minimum time.
PROBES = ("pingpong",)
# --checkpoint-dir without --checkpoint-every: one checkpoint per this many steps (the cadence).
DEFAULT_CHECKPOINT_EVERY = 50


def parse_int_list(option: str, text: str) -> tuple[int, ...]:
    """'1,2,4' -> (1, 2, 4); raises UsageError naming `option` for empty, non-integer or < 1 entries."""
    parts = [p.strip() for p in text.split(",")]
    if not text.strip() or any(p == "" for p in parts):
        raise UsageError(f"{option} needs a comma-separated list of positive integers, got '{text}'")
    values: list[int] = []
    for part in parts:
        try:
            value = int(part)
        except ValueError:
            raise UsageError(f"{option}: '{part}' is not an integer") from None
        if value < 1:
            raise UsageError(f"{option}: {value} must be >= 1")
        if value not in values:
            values.append(value)
    return tuple(values)


def parse_choice_list(option: str, text: str, choices: tuple[str, ...]) -> tuple[str, ...]:
    """'core,none' -> ('core', 'none'); raises UsageError for empty lists or values not in `choices`."""
    parts = [p.strip() for p in text.split(",")]
    if not text.strip() or any(p == "" for p in parts):
        raise UsageError(f"{option} needs a comma-separated list from {', '.join(choices)}, got '{text}'")
    values: list[str] = []
    for part in parts:
        if part not in choices:
            raise UsageError(f"{option}: unknown value '{part}' (expected {', '.join(choices)})")
        if part not in values:
            values.append(part)
    return tuple(values)


def cross_layouts(ranks: tuple[int, ...], threads: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
    """Every (ranks, threads) pair, ranks-major."""
    return tuple((r, t) for r in ranks for t in threads)


def default_min_time() -> float:
    """The --min-time default from the options layer (hympi.toml's min_time, $HYMPI_MIN_TIME, else 1 s, as the apps
    resolve it); UsageError if the value is not a number >= 0."""
    return float(settings().value("min_time"))


def min_time_is_set() -> bool:
    """Whether a config file or HYMPI_MIN_TIME sets the minimum time (else a command may pick its own default)."""
    return settings().get("min_time").source != DEFAULT


def random_seed() -> int:
    """A fresh seed for the run order (recorded with the sweep, so a resumed sweep keeps its order)."""
    return secrets.randbelow(SEED_LIMIT)


def checkpoint_apps() -> tuple[str, ...]:
    """The apps contract.toml declares with checkpoints = true."""
    return tuple(a.name for a in contract().apps if a.checkpoints)
