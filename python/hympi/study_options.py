"""The study's apps, modes and their defaults: what `hympi study`'s options need before a study runs, apart from
hympi.study (numpy, the sweeps, the report) so that building hympi's parser stays cheap."""

from __future__ import annotations

from dataclasses import dataclass

from hympi.apps import get_app
from hympi.contract import contract
from hympi.errors import UsageError
from hympi.params import (
    AUTO,
    AUTO_MIN_REPEAT,
    CONFIDENCE,
    DISTURBED_ABOVE,
    MAX_REPEAT,
    MIN_TIME,
    QUIET_CHECK,
    REPEAT,
    SEED,
    TIMEOUT,
    WARMUP,
    Param,
    choice_list,
)


@dataclass(frozen=True)
class StudyApp:
    """An app the study sweeps, with its problem size in quick and full mode."""

    name: str
    quick_args: tuple[str, ...]
    full_args: tuple[str, ...]


# Problem sizes only: no iteration counts, so every app scales its iterations to the study's minimum kernel time
# (HYMPI_MIN_TIME); a fixed count would switch that off (repetitions_fixed in the record).
# Declared per app in contract.toml (study_quick, study_full); apps without them are not swept.
STUDY_APPS: tuple[StudyApp, ...] = tuple(StudyApp(a.name, a.study_quick, a.study_full) for a in contract().apps
                                         if a.study_quick is not None and a.study_full is not None)

# Measurement protocol per mode: minimum seconds of each run's timed region, and the --repeat auto budget (rounds).
# Quick: 6 apps x 3 layouts on a 2-core machine = 18 warm-ups + 72 measured runs of ~0.5 s kernel time (plus
# start-up) in the 4 rounds a verdict needs, at most 1 more round: measured 3-4 minutes on a busy 2-core VM, under
# the 5 minutes promised (docs/study.md).
QUICK_MIN_TIME_S = 0.5
FULL_MIN_TIME_S = 1.0
QUICK_MAX_REPEAT = 5
FULL_MAX_REPEAT = 10
QUICK_TIMEOUT_S = 120.0
FULL_TIMEOUT_S = 1800.0

# The ping-pong hierarchy probe: latency and bandwidth per level (shared cache .. network), not a layout sweep.
PINGPONG = "pingpong"
# The data-layout experiment (hympi.study): BT-MZ with its zone arrays placed four ways.
DATA_LAYOUT = "data-layout"


def default_apps() -> tuple[str, ...]:
    """Every app the study knows, STREAM first, then the data-layout experiment, the ping-pong probe last."""
    return (*(a.name for a in STUDY_APPS), DATA_LAYOUT, PINGPONG)


def check_apps(names: tuple[str, ...]) -> None:
    """Rejects app names the study does not know (UsageError)."""
    known = default_apps()
    for name in names:
        if name == DATA_LAYOUT:
            continue
        get_app(name)
        if name not in known:
            raise UsageError(f"the study does not sweep '{name}' (it sweeps {', '.join(known)})")


QUICK = Param("quick", "--quick", "small problems, finishes in minutes on a small machine")
APPS = Param("apps", "--apps", "comma-separated subset of the apps to sweep (and data-layout, the Fig. 9 experiment; "
             "pingpong, the hierarchy probe)", choice_list(default_apps(), "app"), default_apps(),
             metavar="APP,...")

# Every parameter of `hympi study` that shapes its measurements; the defaults follow --quick.
STUDY = (QUICK, APPS,
         REPEAT.described(f"measured runs per layout, or auto (the default): {AUTO_MIN_REPEAT} rounds, then more "
                          "rounds of the layouts still in the noise of the best, up to --max-repeat (default "
                          f"{QUICK_MAX_REPEAT} quick, {FULL_MAX_REPEAT} full)", AUTO),
         MAX_REPEAT.described(f"--repeat auto: at most N measured rounds (default {QUICK_MAX_REPEAT} quick, "
                              f"{FULL_MAX_REPEAT} full)", lambda values: None if values[REPEAT.name] != AUTO else
                              QUICK_MAX_REPEAT if values[QUICK.name] else FULL_MAX_REPEAT),
         CONFIDENCE,
         MIN_TIME.described(f"minimum seconds of each run's timed region (default $HYMPI_MIN_TIME, else "
                            f"{QUICK_MIN_TIME_S:g} quick, {FULL_MIN_TIME_S:g} full; 0 = off)",
                            lambda values: QUICK_MIN_TIME_S if values[QUICK.name] else FULL_MIN_TIME_S),
         SEED, WARMUP,
         TIMEOUT.described(f"seconds per run (default {QUICK_TIMEOUT_S:g} quick, {FULL_TIMEOUT_S:g} full)",
                           lambda values: QUICK_TIMEOUT_S if values[QUICK.name] else FULL_TIMEOUT_S),
         DISTURBED_ABOVE, *QUIET_CHECK)
