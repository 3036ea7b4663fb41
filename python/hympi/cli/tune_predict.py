"""hympi tune predict / hympi tune evaluate: the predictor across programs (seed 002 §3.2's ANN) on the command line.

`predict --space FILE -- APP [ARGS]` profiles the program once (or reuses its stored profile), trains on every
other tuned program in the store and prints the configuration with the highest predicted speedup; `evaluate`
prints the leave-one-program-out table (predicted vs best measured, and the constant baseline)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from functools import cache

from rich.console import Console
from rich.table import Table

from hympi.cli.common import add_db_option, seconds
from hympi.cli.parser import Subparsers
from hympi.errors import UsageError
from hympi.launch.mpirun import launcher_path
from hympi.store import Store
from hympi.sweep import record_machine
from hympi.topology import machine_summary
from hympi.tune.cvars import Cvar, read_listing
from hympi.tune.predict import (
    MIN_PROGRAMS,
    ProgramVerdict,
    TunedProgram,
    evaluate,
    mean_ratio,
    predict_best,
    same_encoding,
    train,
    training_set,
    tuned_programs,
)
from hympi.tune.programs import (
    DEFAULT_PROFILE_TIMEOUT_S,
    check_program,
    parse_program,
    profile_program,
    profile_spec,
    program_text,
    stored_profile,
)
from hympi.tune.space import Configuration, SearchSpace, load_space


def add_predict_parser(sub: Subparsers, name: str) -> None:
    """Registers `hympi tune predict`."""
    p = sub.add_parser(name, help="predict the best layout and MPI parameters of a program from its profile",
                       description="Profile the program once at the space's default layout (or reuse its stored "
                                   "profile), train the network on the other tuned programs in the database and "
                                   "print the configuration with the highest predicted speedup over the default.")
    p.add_argument("--space", required=True, metavar="FILE", help="search space (TOML) to choose from")
    add_db_option(p)
    p.add_argument("--virtual-nodes", type=int, default=1, metavar="N", help="pretend nodes of the profiled run")
    p.add_argument("--timeout", type=seconds, default=DEFAULT_PROFILE_TIMEOUT_S, metavar="S",
                   help=f"kill the profiled run after S seconds (default {DEFAULT_PROFILE_TIMEOUT_S:g})")
    p.set_defaults(handler=predict_main)


def add_evaluate_parser(sub: Subparsers, name: str) -> None:
    """Registers `hympi tune evaluate`."""
    p = sub.add_parser(name, help="leave-one-program-out evaluation of the predictor",
                       description="For every tuned program: train on the others, predict its best configuration "
                                   "and divide the speedup its own tune measured for that configuration by the best "
                                   "measured one. Programs without a stored profile are profiled once.")
    add_db_option(p)
    p.add_argument("--no-profile", action="store_true", help="leave out programs without a stored profile")
    p.add_argument("--timeout", type=seconds, default=DEFAULT_PROFILE_TIMEOUT_S, metavar="S",
                   help=f"kill a profiled run after S seconds (default {DEFAULT_PROFILE_TIMEOUT_S:g})")
    p.set_defaults(handler=evaluate_main)


def _cvar_source() -> Callable[[], dict[str, Cvar]]:
    """The installed library's cvars, read (one hympi-mpit launch) only when a stored space needs them."""
    return cache(lambda: read_listing().cvars)


def _finished_programs(store: Store) -> set[str]:
    """Names of the programs with a finished tune (read without launching anything)."""
    return {t.program for t in store.tunes() if t.status == "finished"}


def layout_flags(config: Configuration) -> str:
    """The `hympi run` flags of a configuration's layout and MPI parameters."""
    params = "".join(f" --mpi-param {n}={v}" for n, v in config.mpi_params)
    return f"--ranks {config.ranks} --threads {config.threads} --bind {config.bind}{params}"


def mca_params(config: Configuration) -> str:
    """The MPI parameters as Open MPI mca-params.conf lines (a comment when every parameter keeps its default)."""
    if not config.mpi_params:
        return "# every MPI parameter at the library's default"
    return "\n".join(f"{n} = {v}" for n, v in config.mpi_params)


def predict_main(args: argparse.Namespace) -> int:
    """Profiles (once), trains and prints the predicted configuration; UsageError (exit 2, nothing launched) for an
    unknown program or too few tuned programs."""
    if not args.app_args:
        raise UsageError("no program given (usage: hympi tune predict --space FILE -- APP [APP-ARGS])")
    app, app_args = args.app_args[0], list(args.app_args[1:])
    program = program_text(app, app_args)
    with Store.open(args.db, create=False) as store:
        others = _finished_programs(store) - {program}
        if len(others) < MIN_PROGRAMS:
            raise UsageError(f"predicting needs finished tunes of at least {MIN_PROGRAMS} other programs in "
                             f"{args.db}, found {len(others)} (run hympi tune run on more programs first)")
        check_program(app)
        summary = machine_summary()
        listing = read_listing()
        space = load_space(args.space, listing.cvars, listing.mpi_library)
        launch = profile_spec(app, app_args, space.default, summary, args.virtual_nodes)
        tuned = [t for t in tuned_programs(store, lambda: listing.cvars) if t.program != program]
        data, notes = training_set(store, tuned)
        data, more = same_encoding(data, space.feature_names())
        if len(data) < MIN_PROGRAMS:
            raise UsageError(f"only {len(data)} tuned program(s) have a stored profile, a measured default and this "
                             f"space's axes; predicting needs {MIN_PROGRAMS} ({'; '.join(notes + more) or 'none'})")
        reused = stored_profile(store, program) is not None
        machine = record_machine(store, summary, launcher_path())
        record = profile_program(store, machine, summary, launch, app, args.timeout)
        predictor = train(data)
        config, speedup = predict_best(predictor, record.features, space)
    _print_prediction(program, reused, space, config, speedup, [p.program for p in data], notes + more)
    return 0


def _print_prediction(program: str, reused: bool, space: SearchSpace, config: Configuration, speedup: float,
                      trained_on: list[str], notes: list[str]) -> None:
    """The prediction as a person reads it, and what to paste where."""
    how = "stored profile" if reused else "profiled once now"
    print(f"program: {program} ({how}, at {space.default.label()})")
    print(f"trained on {len(trained_on)} programs: {', '.join(trained_on)}")
    for note in notes:
        print(f"  left out: {note}")
    print(f"predicted best: {config.label()}")
    print(f"expected speedup over the default ({space.default.label()}): {speedup:.3f}x")
    print(f"hympi run {layout_flags(config)} -- {program}")
    print("Open MPI mca-params.conf:")
    print(mca_params(config))


def _ratio_cell(value: float | None) -> str:
    """A ratio or speedup for the table ('not measured' when absent)."""
    return "not measured" if value is None else f"{value:.3f}"


def verdict_table(verdicts: list[ProgramVerdict]) -> Table:
    """One row per held-out program."""
    table = Table(title="leave-one-program-out: predicted vs best measured speedup over the default")
    for col in ("program", "predicted", "expected", "measured", "best", "ratio", "baseline pick", "baseline ratio"):
        table.add_column(col, justify="left" if col in ("program", "predicted", "baseline pick") else "right")
    for v in verdicts:
        table.add_row(v.program, v.predicted, f"{v.predicted_speedup:.3f}", _ratio_cell(v.measured),
                      f"{v.best_speedup:.3f}", _ratio_cell(v.ratio), v.baseline or "-", _ratio_cell(v.baseline_ratio))
    return table


def _profile_missing(store: Store, programs: list[TunedProgram], timeout: float) -> None:
    """Profiles, once each, the tuned programs that have no stored profile, at their space's default layout."""
    missing = [t for t in programs if stored_profile(store, t.program) is None]
    if not missing:
        return
    summary = machine_summary()
    machine = record_machine(store, summary, launcher_path())
    for tuned in missing:
        app, app_args = parse_program(tuned.program)
        print(f"profiling {tuned.program} at {tuned.space.default.label()} ...", file=sys.stderr)
        launch = profile_spec(app, app_args, tuned.space.default, summary)
        profile_program(store, machine, summary, launch, app, timeout)


def evaluate_main(args: argparse.Namespace) -> int:
    """Prints the leave-one-program-out table and the mean ratios; UsageError (exit 2) with too few programs."""
    with Store.open(args.db, create=False) as store:
        found = _finished_programs(store)
        if len(found) < MIN_PROGRAMS + 1:
            raise UsageError(f"leave-one-program-out needs finished tunes of at least {MIN_PROGRAMS + 1} programs in "
                             f"{args.db}, found {len(found)}")
        cvars = _cvar_source()
        if not args.no_profile:
            _profile_missing(store, tuned_programs(store, cvars), args.timeout)
        verdicts, notes = evaluate(store, cvars)
    Console(width=200).print(verdict_table(verdicts))
    for note in notes:
        print(f"left out: {note}")
    mean, base = mean_ratio(verdicts), mean_ratio(verdicts, baseline=True)
    unmeasured = sum(1 for v in verdicts if v.measured is None)
    print(f"mean ratio predicted/best: {_ratio_cell(mean)} over {len(verdicts) - unmeasured} programs"
          + (f" ({unmeasured} predicted configuration(s) not measured)" if unmeasured else ""))
    print(f"mean ratio of the baseline (the configuration best on average over the training programs): "
          f"{_ratio_cell(base)}")
    return 0
