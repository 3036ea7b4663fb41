"""hympi tune's parameters, declared once (hympi.params), and the option values the command line shows before any
tune runs; apart from the search and the predictor (numpy, scikit-learn) so that building hympi's parser stays
cheap."""

from __future__ import annotations

import math

from hympi.errors import UsageError
from hympi.params import (
    AUTO_MIN_REPEAT,
    CONFIDENCE,
    DEFAULT_DISTURBED_ABOVE,
    DEFAULT_TIMEOUT_S,
    DISTURBED_ABOVE,
    MAX_REPEAT,
    MIN_TIME,
    OVERSUBSCRIBE,
    REPEAT,
    SEED,
    TIMEOUT,
    Param,
    choice,
    count_of_runs,
    parse_number,
)

STRATEGIES = ("exhaustive", "random", "guided")
DEFAULT_EI_STOP = 0.005
FORMATS = ("mca", "mpich", "flags")


def parse_fraction(option: str, text: str) -> float:
    """A finite fraction >= 0 (0.005 = 0.5 %)."""
    value = parse_number(option, text, "a fraction (0.005 = 0.5 %)")
    if not (math.isfinite(value) and value >= 0):
        raise UsageError(f"{option} must be a finite fraction >= 0, got {text}")
    return value


STRATEGY = Param("strategy", "--strategy", f"{', '.join(STRATEGIES)} (default exhaustive)",
                 choice(STRATEGIES, "strategy"), "exhaustive", metavar="NAME")
MAX_RUNS = Param("max_runs", "--max-runs", "configurations to measure at most (default: all for exhaustive and "
                 "random, a quarter of the space for guided)", count_of_runs("a number of configurations"),
                 metavar="N")
# tune predict and evaluate: a profiled run's limit (the sweep's default: a profile is one run of a tuned program).
PROFILE_TIMEOUT = TIMEOUT.described(f"kill a profiled run after S seconds (default {DEFAULT_TIMEOUT_S:g})")
# Profiled runs at most, while other work disturbs them (hympi.tune.programs.profile_program): three take a few
# seconds more where a neighbour's burst passes, and say so where the machine stays busy.
PROFILE_TRIES = 3
PROFILE_DISTURBED_ABOVE = DISTURBED_ABOVE.described(
    f"a profiled run beside more than this many cores of other work (on average) is repeated, up to {PROFILE_TRIES} "
    f"runs, the least disturbed kept (default $HYMPI_DISTURBED_ABOVE or {DEFAULT_DISTURBED_ABOVE:g})")


EI_STOP = Param("ei_stop", "--ei-stop", f"guided: stop when the best expected relative improvement is below F "
                f"(default {DEFAULT_EI_STOP:g} = {DEFAULT_EI_STOP * 100:g} %%)", parse_fraction, DEFAULT_EI_STOP,
                metavar="F")

# Every parameter of `hympi tune run` that defines the tune (TuneParams' fields).
TUNE_RUN = (STRATEGY, MAX_RUNS, EI_STOP,
            REPEAT.described("measured runs per configuration (default 1; >= 2 gives speedup intervals), or auto: "
                             f"{AUTO_MIN_REPEAT}, then more rounds until the configuration is separated from the best "
                             "one measured before it or --max-repeat is spent", 1),
            MAX_REPEAT, CONFIDENCE,
            SEED.described("seed of random and guided (default: drawn; recorded with the tune)"),
            TIMEOUT, MIN_TIME, OVERSUBSCRIBE, DISTURBED_ABOVE)
