"""hympi tune predict / hympi tune evaluate: the predictor across programs (the ANN of Wang et al., "Research of MPI
programs optimization technology on multi-core clusters", §3.2) on the command line.

`predict --space FILE -- APP [ARGS]` profiles the program once (or reuses its stored profile), trains on every
other tuned program in the store, checks the network by leaving one of those programs out at a time, and prints the
configuration with the highest predicted speedup, or the constant pick where the network does not beat it;
`evaluate` prints the leave-one-program-out table (predicted vs best measured, and the constant baseline)."""

from __future__ import annotations

import argparse
import shlex
import sys

from rich.table import Table

from hympi.console import HympiConsole, add_plain_row
from hympi.errors import HympiError, HympiFatal, UsageError
from hympi.launch.mpirun import launcher_path, mpi_env_name, mpi_flavor
from hympi.params import disturbed_above_of, resolve, seconds_of
from hympi.paths import program_named
from hympi.program import ENV, STDIN, program_of, refuse_program_flags, refuse_redirected_stdin
from hympi.store import Store
from hympi.sweep import record_machine
from hympi.topology import machine_summary
from hympi.tune.features import BUSY_PROFILE_NAME, busy_profile_text, thread_limit, thread_limit_text
from hympi.tune.options import PROFILE_TIMEOUT
from hympi.tune.output import run_flags
from hympi.tune.predict import (
    BEAT_MARGIN,
    MIN_PROGRAMS,
    ProgramVerdict,
    SelfCheck,
    TunedProgram,
    busy_notes,
    constant_pick,
    evaluate,
    finished_programs,
    mean_ratio,
    narrowed_notes,
    predict_best,
    same_encoding,
    self_check,
    train,
    training_set,
    tuned_programs,
)
from hympi.tune.programs import (
    check_program,
    profile_launches,
    profile_program,
    program_text,
    stored_profile,
)
from hympi.tune.space import Configuration, library_space, listing_source, read_space


def _timeout(args: argparse.Namespace) -> float:
    """--timeout of a profiled run (PROFILE_TIMEOUT: the flag, else its default)."""
    timeout = seconds_of(args, PROFILE_TIMEOUT)
    assert timeout is not None  # the declaration has a default
    return timeout


def parameter_lines(config: Configuration, flavor: str) -> str:
    """The MPI parameters in the launcher's flavour (launch.mpirun.mpi_flavor): Open MPI mca-params.conf lines, or
    MPICH `export MPIR_CVAR_*` lines (a comment when every parameter keeps its default)."""
    mpich = flavor == "mpich"
    title = "MPICH environment:" if mpich else "Open MPI mca-params.conf:"
    if not config.mpi_params:
        return f"{title}\n# (every parameter at the library's default: set nothing)"
    lines = [f"export {mpi_env_name(n, 'mpich')}={shlex.quote(v)}" if mpich else f"{n} = {v}"
             for n, v in config.mpi_params]
    return "\n".join([title, *lines])


def check_line(check: SelfCheck) -> str:
    """The self-check's verdict in one line, with both mean ratios."""
    if check.predictor_wins is None:
        why = (f"leaving one out needs {MIN_PROGRAMS + 1} training programs, {check.programs} here"
               if check.programs < MIN_PROGRAMS + 1 else "no held-out program measured the picks")
        return f"self-check: not made ({why}): the prediction is unchecked"
    figures = (f"mean ratio to the best measured, leaving one of {check.programs} training programs out: "
               f"predictor {check.predictor:.3f}, constant pick {check.constant:.3f}")
    if check.predictor_wins:
        return f"self-check: the predictor beats the constant pick ({figures})"
    return (f"self-check: the predictor does not beat the constant pick by {BEAT_MARGIN:g} ({figures}): "
            f"recommending the constant pick")


def predict_main(args: argparse.Namespace) -> int:
    """Profiles (once), trains and prints the predicted configuration; UsageError (exit 2, nothing launched) for an
    unknown program or too few tuned programs."""
    timeout, disturbed_above = _timeout(args), disturbed_above_of(args)
    words = ([args.app] if args.app else []) + list(args.app_args)
    if not words:
        raise UsageError("no program given (usage: hympi tune predict APP --space FILE [-- APP-ARGS])")
    app, app_args = words[0], tuple(words[1:])
    program = program_text(app, app_args)
    # What the user typed first (the app, the space file), then what the store holds: an unknown app or a missing
    # space is named as such, not hidden behind "no results database" or "needs finished tunes".
    check_program(app)
    # A program of your own: with its variables and standard input (predict's one run would read hympi's own).
    given = resolve(args, (STDIN, ENV))
    own = program_of(app, given) if program_named(app) else None
    if own is None:
        refuse_program_flags(app, given)
    else:
        refuse_redirected_stdin(own)
    space_table = read_space(args.space)
    with Store.open(args.db, create=False) as store:
        others = finished_programs(store) - {program}
        if len(others) < MIN_PROGRAMS:
            raise UsageError(f"predicting needs finished tunes of at least {MIN_PROGRAMS} other programs in "
                             f"{args.db}, found {len(others)} (run hympi tune run on more programs first)")
        cvars = listing_source(args.cvars)  # asked once, for this space and the stored ones alike
        space = library_space(space_table, cvars)
        summary = machine_summary()
        launches = profile_launches(app, app_args, space, summary, own)
        tuned = [t for t in tuned_programs(store, cvars) if t.program != program]
        data, notes = training_set(store, tuned)
        data, more = same_encoding(data, space.feature_names())
        if len(data) < MIN_PROGRAMS:
            raise UsageError(f"only {len(data)} tuned program(s) have a stored profile, a measured default and this "
                             f"space's axes; predicting needs {MIN_PROGRAMS} ({'; '.join(notes + more) or 'none'})")
        reused = not args.profile_again and stored_profile(store, program) is not None
        machine = record_machine(store, summary, launcher_path())
        record = profile_program(store, machine, summary, launches, app, timeout, disturbed_above,
                                 reuse=not args.profile_again)
        predictor = train(data)
        config, speedup = predict_best(predictor, record.features, space)
        check = self_check(data)
        limit = thread_limit(record.features)
        constant = constant_pick(data, space, limit)
    how = "its stored profile" if reused else "profiled now"
    print(f"program: {program} ({how}, at {space.default.label()})")
    busy = busy_profile_text(program, record.features.get(BUSY_PROFILE_NAME), disturbed_above)
    if busy is not None:
        print(busy)
    print(f"trained on {len(data)} programs ({predictor.rows} measured configurations): "
          f"{', '.join(p.program for p in data)}")
    for note in notes + more:
        print(f"left out: {note}")
    print(f"predicted best: {config.label()}")
    if limit is not None:
        print(f"({thread_limit_text(limit)})")
    print(f"expected speedup over the default ({space.default.label()}): {speedup:.3f}x")
    print("constant pick (best on average over the training programs): "
          + (constant.label() if constant else "none (no training program measured this space's configurations)"))
    print(check_line(check))
    # Without a check there is no evidence against the network, and none for the constant either: the prediction
    # stands, marked unchecked.
    chosen = constant if check.predictor_wins is False and constant is not None else config
    print(f"recommended: {chosen.label()} ({'the prediction' if chosen is config else 'the constant pick'})")
    print(f"run it: {shlex.join(run_flags(chosen, app, app_args, own.flags() if own is not None else []))}")
    print(parameter_lines(chosen, mpi_flavor(launcher_path())))
    return 0


def _ratio_cell(value: float | None) -> str:
    """A ratio or speedup for the table ('not measured' when absent)."""
    return "not measured" if value is None else f"{value:.3f}"


def verdict_table(verdicts: list[ProgramVerdict]) -> Table:
    """One row per held-out program."""
    table = Table(title="leave-one-program-out: predicted vs best measured speedup over the default")
    for col in ("program", "predicted", "expected", "measured", "best", "ratio", "baseline pick", "baseline ratio"):
        table.add_column(col, justify="left" if col in ("program", "predicted", "baseline pick") else "right")
    for v in verdicts:
        add_plain_row(table, v.program, v.predicted, f"{v.predicted_speedup:.3f}", _ratio_cell(v.measured),
                      f"{v.best_speedup:.3f}", _ratio_cell(v.ratio), v.baseline or "-", _ratio_cell(v.baseline_ratio))
    return table


def _profile_missing(store: Store, programs: list[TunedProgram], timeout: float, disturbed_above: float) -> None:
    """Profiles, once each, the tuned programs that have no stored profile, at their space's default layout (and
    their thread check); a program whose profiling fails is said so on stderr and left out, the others evaluated."""
    missing = [t for t in programs if stored_profile(store, t.program) is None]
    if not missing:
        return
    summary = machine_summary()
    machine = record_machine(store, summary, launcher_path())
    for tuned in missing:
        print(f"profiling {tuned.program} at {tuned.space.default.label()} ...", file=sys.stderr)
        launches = profile_launches(tuned.command, tuned.app_args, tuned.space, summary, tuned.subject)
        try:
            profile_program(store, machine, summary, launches, tuned.app, timeout, disturbed_above)
        except HympiFatal:
            raise  # the launcher or the build is broken: no other program would profile either
        except HympiError as exc:
            print(f"hympi: {exc}: {tuned.program} left out", file=sys.stderr)


def evaluate_main(args: argparse.Namespace) -> int:
    """Prints the leave-one-program-out table and the mean ratios; UsageError (exit 2) with too few programs."""
    timeout, disturbed_above = _timeout(args), disturbed_above_of(args)
    with Store.open(args.db, create=False) as store:
        found = finished_programs(store)
        if len(found) < MIN_PROGRAMS + 1:
            raise UsageError(f"leave-one-program-out needs finished tunes of at least {MIN_PROGRAMS + 1} programs in "
                             f"{args.db}, found {len(found)}")
        cvars = listing_source(args.cvars)
        if not args.no_profile:
            _profile_missing(store, tuned_programs(store, cvars), timeout, disturbed_above)
        verdicts, notes = evaluate(store, cvars)
    HympiConsole(width=200).print(verdict_table(verdicts))
    for note in [*narrowed_notes(verdicts), *busy_notes(verdicts, disturbed_above)]:
        print(note)
    for note in notes:
        print(f"left out: {note}")
    mean, base = mean_ratio(verdicts), mean_ratio(verdicts, baseline=True)
    unmeasured = sum(1 for v in verdicts if v.measured is None)
    print(f"mean ratio predicted/best: {_ratio_cell(mean)} over {len(verdicts) - unmeasured} programs"
          + (f" ({unmeasured} predicted configuration(s) not measured)" if unmeasured else ""))
    print(f"mean ratio of the baseline (the configuration best on average over the training programs): "
          f"{_ratio_cell(base)}")
    return 0
