"""Programs as the predictor knows them: an app plus its problem arguments, profiled once at its space's default
layout (library-default MPI parameters) under libhympi-profile and run once more under the probe at the space's
layout with the most threads per rank (the thread check: how many of them it computes with), its profile, features
and thread check kept in the store."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from hympi.apps import get_app
from hympi.busy.accounting import Interference
from hympi.busy.sampler import Sampler
from hympi.errors import HympiError, HympiFatal, UsageError
from hympi.launch.mpirun import LaunchSpec, RunOutcome, build_command, run_command, validate_with_app
from hympi.params import DEFAULT_DISTURBED_ABOVE, DEFAULT_TIMEOUT_S
from hympi.paths import binary, program_named
from hympi.probe import Env, launch_probed, working_threads
from hympi.profile import Profile, plan_profile, run_profile
from hympi.program import Program, last_words, launch_stdin, locate, prepare_launch
from hympi.store import MachineRecord, ProfileRecord, Store
from hympi.topology import MachineSummary
from hympi.tune.features import BUSY_PROFILE_NAME, STORED_NAMES, StaticFeatures, program_features, thread_check
from hympi.tune.options import PROFILE_TRIES
from hympi.tune.space import Configuration, SearchSpace


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


def profile_spec(app: str, app_args: Sequence[str], layout: Configuration, summary: MachineSummary,
                 env: Env = ()) -> LaunchSpec:
    """The launch of `app` at `layout` with the library's default MPI parameters (and a program's own `env`),
    checked without MPI: UsageError (nothing launched) for an unknown app, an app that was not built, or arguments
    the app refuses (a program of your own has no --validate-ranks to ask)."""
    # One node, as a tune's runs have: the profile describes the program where it was tuned.
    launch = LaunchSpec(check_program(app), layout.ranks, layout.threads, layout.bind, app_args=tuple(app_args),
                        oversubscribe=layout.ranks * layout.threads > summary.pus,
                        env=(("HYMPI_VIRTUAL_NODES", "1"), *env))
    if not program_named(app):
        validate_with_app(launch)
    return launch


def thread_check_layout(space: SearchSpace) -> Configuration | None:
    """The layout of the thread check: of the space's configurations with the most threads per rank (more than
    one), the one with the fewest ranks, with the library's default MPI parameters; None when no configuration has
    more than one thread per rank."""
    most = max(space.configurations(), key=lambda c: (c.threads, -c.ranks))
    return Configuration(most.ranks, most.threads, most.bind) if most.threads > 1 else None


@dataclass(frozen=True)
class ProfileLaunches:
    """How a program is profiled for the predictor: the profiled run at the space's default layout, and the thread
    check (None: the space has no layout with more than one thread per rank to check); both read `stdin` (a
    program's --stdin file, else /dev/null: hympi.program.launch_stdin) and run in `workdir` (a programs file's
    directory, where the program's inputs are, as in its tune's runs; "": hympi's working directory)."""

    profile: LaunchSpec
    thread_check: LaunchSpec | None
    stdin: Path | int = subprocess.DEVNULL
    workdir: str = ""
    # The program of the user's own profiled (None: an app), who makes each launch's directory where its arguments
    # name one (hympi.program.RUN_DIRS).
    program: Program | None = None

    def launched(self, launch: LaunchSpec, timeout: float) -> LaunchSpec:
        """`launch` as it starts: with a new directory of its own when its arguments name the program's {run}, after
        the program's preparation (hympi.program.prepare_launch, within `timeout`; HympiError saying why it
        failed)."""
        if self.program is None:
            return launch
        run_dir = self.program.launch_dir(launch.app_args, launch.ranks, launch.threads)
        _, unprepared = prepare_launch(self.program, launch.ranks, launch.threads, run_dir, timeout)
        if unprepared is not None:
            raise HympiError(f"{self.program.name} at {launch.ranks}x{launch.threads}: {unprepared}")
        return dataclasses.replace(launch, run_dir=run_dir)

    def ended(self, launched: LaunchSpec, ok: bool) -> None:
        """After `launched` (as `launched()` made it) ended, `ok` or not: its directory removed when the program keeps
        only failed launches' (hympi.program.Program.after_launch)."""
        if self.program is not None:
            self.program.after_launch(launched.run_dir, ok)


def profile_launches(app: str, app_args: Sequence[str], space: SearchSpace, summary: MachineSummary,
                     program: Program | None = None) -> ProfileLaunches:
    """Both launches (with a program's own variables and standard input), checked without MPI (profile_spec's
    UsageError, nothing launched)."""
    check = thread_check_layout(space)
    env = program.environment() if program is not None else ()
    if program is not None:
        program.check_run_dirs(app_args)
    return ProfileLaunches(profile=profile_spec(app, app_args, space.default, summary, env),
                           thread_check=profile_spec(app, app_args, check, summary, env) if check else None,
                           stdin=launch_stdin(program), workdir=program.workdir if program is not None else "",
                           program=program)


def stored_profile(store: Store, program: str) -> ProfileRecord | None:
    """The program's newest stored profile when it has every current feature and the thread check (else None:
    profile again)."""
    record = store.latest_profile(program)
    if record is None or any(name not in record.features for name in STORED_NAMES):
        return None
    return record


def _ran(launch: LaunchSpec, outcome: RunOutcome) -> bool:
    """Whether a launch ran to its end: a program of your own prints no hympi record for a status to be read from,
    its exit status says it ran."""
    return outcome.returncode == 0 if program_named(launch.app_binary) else outcome.status == "ok"


def _failure(program: str, what: str, outcome: RunOutcome, missing: str = "") -> HympiError:
    """'profiling P failed (status, exit code N, missing): its last lines' (hympi.program.last_words: what it said,
    not the launcher's notice that a rank exited non-zero)."""
    tail = last_words(outcome)
    return HympiError(f"{what} {program} failed ({outcome.status}, exit code {outcome.returncode}"
                      f"{', ' + missing if missing else ''}): {tail}")


def checked_threads(program: str, launch: LaunchSpec | None, timeout: float,
                    stdin: Path | int = subprocess.DEVNULL, workdir: str = "") -> dict[str, float]:
    """The thread check's values: one run at `launch` under the probe, reading `stdin`, in `workdir` ("": hympi's)
    (nothing run without a launch: one thread checked, one working); HympiError when that run fails."""
    if launch is None:
        return thread_check(1, 1)
    outcome, processes = launch_probed(lambda env: run_command(
        build_command(dataclasses.replace(launch, env=(*launch.env, *env))), timeout, stdin=stdin,
        cwd=workdir or None))
    if not _ran(launch, outcome):
        raise _failure(program, f"the thread check at {launch.ranks}x{launch.threads} of", outcome)
    return thread_check(launch.threads, working_threads(processes, launch.threads))


def profile_program(store: Store, machine: MachineRecord, summary: MachineSummary, launches: ProfileLaunches,
                    app: str, timeout: float = DEFAULT_TIMEOUT_S,
                    disturbed_above: float = DEFAULT_DISTURBED_ABOVE, reuse: bool = True) -> ProfileRecord:
    """The program's stored profile (with `reuse`), or a profiled run and the thread check, stored with its
    features; raises HympiError when either run fails or the profiled run writes no profile. Beside other work
    (more than `disturbed_above` cores of it, hympi.busy) the ranks wait for descheduled peers inside MPI, and the
    MPI share, the network's first feature and the thread limit's input, reads high (IS class W: 0.22 alone,
    0.78 beside two busy loops): such a run is repeated, up to PROFILE_TRIES runs, and the least disturbed
    kept, with the other work's cores stored beside the features (BUSY_PROFILE_NAME)."""
    launch = launches.profile
    program = program_text(app, launch.app_args)
    stored = stored_profile(store, program) if reuse else None
    if stored is not None:
        return stored
    with tempfile.TemporaryDirectory(prefix="hympi-tune-profile-") as tmp:
        kept: tuple[RunOutcome, Profile, Interference] | None = None
        for attempt in range(PROFILE_TRIES):
            launched = launches.launched(launch, timeout)
            plan = plan_profile(build_command(launched), Path(tmp) / f"profile-{attempt}.json")
            with Sampler() as sampler:
                outcome, profile = run_profile(plan, timeout, launches.stdin, cwd=launches.workdir or None)
            ran = _ran(launch, outcome) and profile is not None
            launches.ended(launched, ran)
            if not ran or profile is None:
                raise _failure(program, "profiling", outcome, "no profile written" if profile is None else "")
            busy = sampler.interference(None)
            if kept is None or busy.outside_cores < kept[2].outside_cores:
                kept = (outcome, profile, busy)
            if not busy.disturbed(disturbed_above):
                break
        assert kept is not None  # PROFILE_TRIES >= 1
        outcome, profile, busy = kept
        raw = json.loads(profile.path.read_text())
    nodes = outcome.record.get("nodes") if outcome.record else None
    static = StaticFeatures(launch.ranks, launch.threads, int(nodes) if isinstance(nodes, int) else 1, summary)
    checked = launches.thread_check and launches.launched(launches.thread_check, timeout)
    features = {**program_features(profile, static),
                **checked_threads(program, checked, timeout, launches.stdin, launches.workdir),
                BUSY_PROFILE_NAME: busy.outside_cores}
    if checked is not None:  # checked_threads raised for a failed one: its directory is kept
        launches.ended(checked, True)
    return store.add_profile(machine.id, program, app, launch.ranks, launch.threads, features, raw)
