"""Running a tune: each configuration the strategy proposes is measured as one sweep attached to the tune.

The sweeps go through the sweep machinery (warm-up, repeats, timeouts, one transaction per run), so a failure or
timeout is recorded and nothing measured is lost. A tune killed at any point resumes (`--resume`) with the
configurations not yet measured; the interrupted configuration's sweep continues where it stopped, and every earlier
measurement steers the model as if the tune had never stopped.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rich.console import Console
from rich.markup import escape

from hympi.apps import get_app
from hympi.console import HympiConsole
from hympi.errors import UsageError, unknown_name
from hympi.inputs import check_inputs_since
from hympi.jsontypes import JsonObject
from hympi.launch.mpirun import LaunchSpec, RunOutcome, validate_with_app
from hympi.params import (
    AUTO,
    DEFAULT_CONFIDENCE,
    DEFAULT_DISTURBED_ABOVE,
    DEFAULT_MAX_REPEAT,
    DEFAULT_TIMEOUT_S,
    MIN_SEPARATE,
    as_record,
    check_fields,
    closest,
    declared_default,
    differing_params,
    from_record,
)
from hympi.program import Program
from hympi.stats.compare import Sample
from hympi.store import MachineRecord, Store, TuneRecord
from hympi.store.owner import owner_alive
from hympi.sweep import SweepParams, plan, program_from_fields, run_sweep
from hympi.tune.options import DEFAULT_EI_STOP, STRATEGIES, TUNE_RUN
from hympi.tune.results import Measured, best, sweep_configuration, tune_results
from hympi.tune.search import Proposal, Search, Stop
from hympi.tune.space import Configuration, SearchSpace

Runner = Callable[[list[str], float], RunOutcome]
# TuneParams' fields stored only when not at their default (as_dict).
OPTIONAL = ("subject", "auto", "max_repeat", "confidence", "disturbed_above")


@dataclass(frozen=True)
class TuneParams:
    """Everything that defines a tune besides its space; equal parameters (except the seed) and an equal space
    identify the tune to resume. `repeat`, `auto`, `max_repeat` and `confidence` mean what they mean in a sweep
    (hympi.sweep.SweepParams): with `auto`, each configuration's sweep adds rounds until it is separated from the
    best configuration measured before it, or `max_repeat` rounds are spent."""

    app: str
    app_args: tuple[str, ...]
    strategy: str
    max_runs: int
    repeat: int = 1
    seed: int = 0
    timeout: float = DEFAULT_TIMEOUT_S
    min_time: float = declared_default("min_time")
    ei_stop: float = DEFAULT_EI_STOP
    oversubscribe: bool = False
    # A program of the user's own: its sweep fields (hympi.sweep.program_fields) as sorted pairs; () for an app.
    subject: tuple[tuple[str, str], ...] = ()
    auto: bool = False
    max_repeat: int = DEFAULT_MAX_REPEAT
    confidence: float = DEFAULT_CONFIDENCE
    # A run that other work disturbed above this many cores (hympi.busy) is left out of its configuration's score.
    disturbed_above: float = DEFAULT_DISTURBED_ABOVE

    @property
    def program(self) -> str:
        """The program tuned, as text: the app and its problem arguments ('is --class A')."""
        return " ".join([self.app, *self.app_args])

    def program_spec(self) -> Program | None:
        """The program of the user's own tuned (from its subject), None for one of hympi's apps."""
        return program_from_fields(dict(self.subject))

    @property
    def command(self) -> str:
        """What launches the subject: a program of the user's own by its path (its name alone would be taken for
        one of hympi's apps), or the app's name."""
        program = self.program_spec()
        return program.path if program is not None else self.app

    @property
    def repeat_text(self) -> str:
        """How many measured runs each configuration gets: '3' or 'auto: 4 to 10'."""
        return f"{AUTO}: {self.repeat} to {self.max_repeat}" if self.auto else str(self.repeat)

    def as_dict(self) -> JsonObject:
        """JSON-ready form, stored with the tune (the subject only for a program, --repeat auto's fields only with
        it, so a tune keeps the identity it had before programs could be tuned or repeats chosen by the noise)."""
        return as_record(self, OPTIONAL)

    @classmethod
    def from_dict(cls, data: JsonObject) -> TuneParams:
        """The inverse of as_dict."""
        return from_record(cls, data)

    def identity(self, space: SearchSpace) -> JsonObject:
        """What --resume matches on: every parameter but the seed, and the space as written."""
        return self.identity_of(space.source)

    def identity_of(self, source: object) -> JsonObject:
        """identity() for a space as written (`source`; a stored tune's space_json 'source')."""
        data = self.as_dict()
        del data["seed"]
        data["space"] = source
        return data

    def check(self) -> None:
        """Rejects bad values (UsageError naming the value) before anything runs: each field with the check its
        declaration (hympi.tune.options) gives the flag."""
        if not self.subject:
            get_app(self.app)
        if self.strategy not in STRATEGIES:  # the default too: a record read back may name one no longer known
            raise UsageError(unknown_name('strategy', STRATEGIES, self.strategy))
        check_fields(self, TUNE_RUN)

    def sweep_params(self, config: Configuration, space: SearchSpace) -> SweepParams:
        """The one-layout sweep that measures `config` (warm-up, then `repeat` measured runs, and with `auto` the
        rounds its sweep adds); every parameter of the space is read back, set or not, so every configuration (the
        default too) pays the same MPI_T cost (about 3 MiB per rank with Open MPI 4.1) and records the library's
        values."""
        # A program reads nothing back (it does not call hympi's MPI_T read-back).
        read_back = () if self.subject else tuple(p.name for p in space.parameters)
        return from_record(SweepParams, {
            "app": self.app, "layouts": ((config.ranks, config.threads),), "binds": (config.bind,),
            "repeat": self.repeat, "auto": self.auto, "max_repeat": self.max_repeat, "confidence": self.confidence,
            "app_args": self.app_args, "timeout": self.timeout,
            "oversubscribe": self.oversubscribe, "min_time": self.min_time, "seed": self.seed, "warmup": True,
            "mpi_params": config.mpi_params, "mpit_read": read_back, "disturbed_above": self.disturbed_above,
            **dict(self.subject)})


def check_fit(layouts: Sequence[tuple[int, int, str]], pus: int, oversubscribe: bool) -> None:
    """Rejects a layout of the space that needs more PUs than the machine has (without --oversubscribe); UsageError
    naming it."""
    for ranks, threads, _ in layouts:
        if ranks * threads > pus and not oversubscribe:
            raise UsageError(f"layout {ranks}x{threads} of the space needs {ranks * threads} PUs, this machine has "
                             f"{pus} (pass --oversubscribe, or add a [[constraint]] max_cpus = {pus})")


def check_layouts(params: TuneParams, space: SearchSpace, pus: int) -> None:
    """Rejects, before anything runs, a layout that needs more PUs than the machine has (without --oversubscribe)
    or that the app refuses for its arguments (the app's --validate-ranks); raises UsageError naming it."""
    layouts = space.layouts()
    check_fit(layouts, pus, params.oversubscribe)
    for ranks, threads, bind in layouts:
        if params.subject:  # a program has no --validate-ranks: its sweep's own checks (bindings, file unchanged)
            params.sweep_params(Configuration(ranks=ranks, threads=threads, bind=bind), space).check()
            continue
        binary = get_app(params.app).binary
        validate_with_app(LaunchSpec(binary, ranks, threads, bind, "compact", params.app_args,
                                     params.oversubscribe))


def open_tune(store: Store, machine: MachineRecord, params: TuneParams, space: SearchSpace,
              resume: bool) -> tuple[TuneRecord, bool]:
    """The tune to run: with `resume`, the latest unfinished one of equal identity (refused with UsageError while
    its owner process still runs, or when an input its program's arguments name changed since its last run), else a
    new one."""
    if resume:
        found = store.latest_unfinished_tune(params.identity(space))
        if found is not None:
            if found.status == "running" and owner_alive(found.owner_host, found.owner_pid, found.owner_start):
                raise UsageError(f"tune {found.id} is still running (pid {found.owner_pid} on {found.owner_host}); "
                                 "wait for it or stop it first")
            program = TuneParams.from_dict(found.params).program_spec()
            if program is not None:
                check_inputs_since(program, store.iter_runs([s.id for s in store.tune_sweeps(found.id)]),
                                   f"tune {found.id}")
            return found, True
    return store.create_tune(machine.id, params.app, params.program, params.strategy,
                             space.as_stored(),
                             params.as_dict(), params.identity(space)), False


# How the user spells each parameter that tells tunes apart (the declared flags, and what has no flag of its own).
_SPELLED = {**{p.name: p.flag for p in TUNE_RUN}, "app_args": "the app arguments", "space": "--space",
            "subject": "the program's settings", "auto": "--repeat"}


def tune_resume_missed(store: Store, params: TuneParams, space: SearchSpace, started: TuneRecord) -> str:
    """What to tell a user whose --resume found no unfinished tune like this one (and so `started` a new one): the
    unfinished tune of the same app before it that differs in the fewest parameters (the newest of those), and each
    parameter it differs in, or that there is none."""
    here = params.identity(space)
    found = closest(((tune, TuneParams.from_dict(tune.params).identity_of(tune.space.get("source")))
                     for tune in store.unfinished_tunes_of(params.app, started.id)), here)
    if found is None:
        return f"--resume: no unfinished tune of {params.app} to continue"
    tune, there = found
    return (f"--resume: no unfinished tune of {params.app} has these parameters; the closest, tune {tune.id} "
            f"({tune.status}), differs in {differing_params(there, here, _SPELLED)}")


@dataclass(frozen=True)
class TuneOutcome:
    """What run_tune did: the tune, every configuration measured, why it stopped and the launches it made."""

    tune: TuneRecord
    results: list[Measured]
    stop: str
    launched: int


def _measure(store: Store, machine: MachineRecord, tune: TuneRecord, params: TuneParams, space: SearchSpace,
             config: Configuration, console: Console, runner: Runner | None, why: str) -> int:
    """Measures one configuration as a sweep attached to the tune (continuing its interrupted sweep if there is
    one); returns the launches made."""
    sweep_params = params.sweep_params(config, space)
    reference = _reference(store, tune, config)
    if params.auto and not reference:
        # Nothing to separate it from (the default, measured first): it gets the rounds a separation needs, so that
        # the configurations after it can be separated from it.
        sweep_params = dataclasses.replace(sweep_params, repeat=min(params.max_repeat, max(params.repeat,
                                                                                            MIN_SEPARATE)))
    items = plan(sweep_params, None).items
    pending = [s for s in store.tune_sweeps(tune.id)
               if s.status != "finished" and sweep_configuration(s) == config]
    if pending:
        sweep = pending[-1]
        sweep_params = SweepParams.from_dict(sweep.params)
    else:
        sweep = store.create_sweep(machine.id, params.app, sweep_params.as_dict(), len(items),
                                   identity=sweep_params.identity(), tune_id=tune.id)
    console.print(f"[bold]{escape(config.label())}[/bold] ({escape(why)}; sweep {sweep.id})", highlight=False)
    result = run_sweep(store, sweep, sweep_params, items, console, runner, reference)
    return result.ran


def _reference(store: Store, tune: TuneRecord, config: Configuration) -> tuple[Sample, ...]:
    """What --repeat auto separates a configuration from: the best other configuration measured so far (none for
    the first), its rates as they are (its sweep is finished and not run again)."""
    top = best([m for m in tune_results(store, tune.id) if m.config != config])
    if top is None:
        return ()
    cores = top.config.ranks * top.config.threads
    return (Sample(f"best so far: {top.config.label()}", top.rates, top.config.threads, cores),)


def _why(proposal: Proposal) -> str:
    """How the strategy chose a configuration, for the progress line."""
    if proposal.reason == "model" and proposal.expected_improvement is not None:
        return f"model: expected improvement {proposal.expected_improvement * 100:.2g} %"
    return {"default": "the default, every speedup's reference", "seed": "random start of the model",
            "order": "next in the space", "random": "random draw"}.get(proposal.reason, proposal.reason)


def _score_line(measured: Measured) -> str:
    """'  -> score 12.3 GFLOP/s (3 measured runs)' or '  -> score failed (1 measured run)', with the parameters the
    library ignored."""
    what = measured.score_text() if measured.score is not None else measured.status
    ignored = f"; ignored by the library: {', '.join(measured.ignored)}" if measured.ignored else ""
    return f"  -> score {what} ({measured.runs} measured run{'s' if measured.runs != 1 else ''}){ignored}"


def run_tune(store: Store, machine: MachineRecord, tune: TuneRecord, space: SearchSpace,
             console: Console | None = None, runner: Runner | None = None) -> TuneOutcome:
    """Measures what the tune's strategy proposes until it stops (space exhausted, budget spent, expected
    improvement below --ei-stop); marks the tune interrupted and re-raises on any exception (Ctrl-C, SIGTERM)."""
    console = console or HympiConsole()
    params = TuneParams.from_dict(tune.params)
    search = Search(space, params.strategy, params.seed, params.max_runs, params.ei_stop)
    store.claim_tune(tune.id)
    launched = 0
    try:
        while True:
            results = tune_results(store, tune.id)
            decision = search.propose({m.config: m.score for m in results})
            if isinstance(decision, Stop):
                break
            launched += _measure(store, machine, tune, params, space, decision.config, console, runner,
                                 _why(decision))
            done = next(m for m in tune_results(store, tune.id) if m.config == decision.config)
            console.print(_score_line(done), highlight=False, markup=False)  # it names the space's parameters
    except BaseException:
        store.set_tune_status(tune.id, "interrupted")
        raise
    store.set_tune_note(tune.id, decision.reason)
    store.set_tune_status(tune.id, "finished")
    return TuneOutcome(store.tune(tune.id), tune_results(store, tune.id), decision.reason, launched)
