"""Programs as the predictor knows them: an app plus its problem arguments, profiled once at its space's default
layout (library-default MPI parameters) under libhympi-profile, its profile and features kept in the store."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Sequence
from pathlib import Path

from hympi.apps import get_app
from hympi.errors import HympiError, HympiFatal, UsageError
from hympi.launch.mpirun import LaunchSpec, build_command, validate_with_app
from hympi.params import DEFAULT_TIMEOUT_S
from hympi.paths import binary
from hympi.profile import plan_profile, run_profile
from hympi.program import locate, program_named
from hympi.store import MachineRecord, ProfileRecord, Store
from hympi.topology import MachineSummary
from hympi.tune.features import FEATURE_NAMES, StaticFeatures, program_features
from hympi.tune.space import Configuration


def program_text(app: str, app_args: Sequence[str]) -> str:
    """The program's name in the store, as a tune names it: 'is --class A' (the app and its arguments; a program of
    your own by its file's name, as `hympi tune run PATH` names it: 'lmp -in in.melt')."""
    return " ".join([Path(app).name if program_named(app) else app, *app_args])


def check_program(app: str) -> str:
    """The binary name of app `app`, or the absolute path of a program of your own named by its path; UsageError for
    an unknown app, one that was not built, or a path that is no executable file."""
    if program_named(app):
        return str(locate(app))
    spec = get_app(app)
    try:
        binary(spec.binary)
    except HympiFatal as exc:
        raise UsageError(f"program '{app}' not found: {exc}") from None
    return spec.binary


def profile_spec(app: str, app_args: Sequence[str], default: Configuration, summary: MachineSummary) -> LaunchSpec:
    """The launch of the profiling run, checked without MPI: UsageError (nothing launched) for an unknown app, an
    app that was not built, or arguments the app refuses (a program of your own has no --validate-ranks to ask)."""
    # One node, as a tune's runs have: the profile describes the program where it was tuned.
    launch = LaunchSpec(check_program(app), default.ranks, default.threads, default.bind, app_args=tuple(app_args),
                        oversubscribe=default.ranks * default.threads > summary.pus,
                        env=(("HYMPI_VIRTUAL_NODES", "1"),))
    if not program_named(app):
        validate_with_app(launch)
    return launch


def stored_profile(store: Store, program: str) -> ProfileRecord | None:
    """The program's newest stored profile when it has every current feature (else None: profile again)."""
    record = store.latest_profile(program)
    if record is None or any(name not in record.features for name in FEATURE_NAMES):
        return None
    return record


def profile_program(store: Store, machine: MachineRecord, summary: MachineSummary, launch: LaunchSpec, app: str,
                    timeout: float = DEFAULT_TIMEOUT_S) -> ProfileRecord:
    """The program's stored profile, or (when it has none) one profiled run at `launch`, stored with its features;
    raises HympiError when the run fails or writes no profile."""
    program = program_text(app, launch.app_args)
    stored = stored_profile(store, program)
    if stored is not None:
        return stored
    with tempfile.TemporaryDirectory(prefix="hympi-tune-profile-") as tmp:
        plan = plan_profile(build_command(launch), Path(tmp) / "profile.json")
        outcome, profile = run_profile(plan, timeout)
        # A program of your own prints no hympi record for a status to be read from: its exit status says it ran.
        ran = outcome.returncode == 0 if program_named(launch.app_binary) else outcome.status == "ok"
        if not ran or profile is None:
            tail = outcome.stderr_tail(3).strip().replace("\n", " | ")
            raise HympiError(f"profiling {program} failed ({outcome.status}, exit code {outcome.returncode}"
                             f"{', no profile written' if profile is None else ''}){': ' + tail if tail else ''}")
        raw = json.loads(profile.path.read_text())
    nodes = outcome.record.get("nodes") if outcome.record else None
    static = StaticFeatures(launch.ranks, launch.threads, int(nodes) if isinstance(nodes, int) else 1, summary)
    features = program_features(profile, static)
    return store.add_profile(machine.id, program, app, launch.ranks, launch.threads, features, raw)
