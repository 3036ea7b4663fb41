"""Options and checks shared by the subcommands that launch apps."""

from __future__ import annotations

import argparse
import dataclasses
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from hympi.apps import APPS
from hympi.cli.parser import argument_type, path_argument
from hympi.console import say_on_stderr
from hympi.errors import HympiFatal, StoppedBySignal, UsageError
from hympi.filemark import resolve_in
from hympi.launch.command import launch_command
from hympi.launch.cvars import check_params, load_listing, parse_assignment
from hympi.launch.layout import LAYOUT_BINDS
from hympi.launch.mpirun import LaunchSpec, RunOutcome, check_layout, configured_flavor, run_command, validate_with_app
from hympi.layout_options import BINDS, LAUNCH, MEMBINDS, RANKS, THREADS, LaunchParams, one_value
from hympi.limits import check_path
from hympi.outputs import Inputs, check_not_input, write_problem
from hympi.params import from_record, parse_row_id, refuse_repeated, resolve
from hympi.paths import binary
from hympi.place.rankfile import check_rankfile_fits
from hympi.probe import ProbeProcess
from hympi.profile import command_inputs
from hympi.program import Program, probed_program_run
from hympi.store import is_sqlite_file
from hympi.textfile import replace_problem
from hympi.topology import machine_summary

HELP_FLAGS = ("-h", "--help")


@dataclass(frozen=True)
class Launch:
    """One checked layout to launch, with the launcher to launch it, its time limit (None: none) and the pretend
    nodes it splits this machine into (spec.env's HYMPI_VIRTUAL_NODES)."""

    spec: LaunchSpec
    launcher: str
    timeout: float | None
    virtual_nodes: int


def launch_of(args: argparse.Namespace, command: str, app_binary: str, app_args: list[str],
              program: bool = False) -> Launch:
    """The layout `hympi command` launches, checked; raises UsageError before anything is launched. Each parameter
    is resolved from its flag, hympi.toml or HYMPI_*, or its default (hympi.params.resolve); a list of several values
    is refused (one_value). A `program` of the user's own (hympi.program) never calls hympi's binding:
    the launcher binds it (or nothing, with --bind none), and it has no --validate-ranks to ask."""
    values = from_record(LaunchParams, resolve(args, LAUNCH))
    ranks, threads = one_value(values.ranks, RANKS, command), one_value(values.threads, THREADS, command)
    bind, membind = one_value(values.binds, BINDS, command), one_value(values.membinds, MEMBINDS, command)
    configured_flavor()  # a bad HYMPI_MPI_FLAVOR is refused here, not when the launch command is built
    if ranks < values.virtual_nodes:
        # Each pretend node needs a rank; fewer ranks would silently give fewer nodes than asked for.
        raise UsageError(f"--virtual-nodes {values.virtual_nodes} needs at least {values.virtual_nodes} ranks, got "
                         f"--ranks {ranks}")
    env = (("HYMPI_VIRTUAL_NODES", str(values.virtual_nodes)),)
    binder = values.binder or ("launcher" if program else "hympi")
    if program and binder != "launcher":
        raise UsageError(f"--binder {binder}: a program of your own does not call hympi's binding; the launcher binds "
                         "it (--binder launcher)")
    rankfile = values.rankfile or None
    if binder == "launcher" and not rankfile and bind not in LAYOUT_BINDS and not (program and bind == "none"):
        raise UsageError(f"--binder launcher needs --bind {' or '.join(LAYOUT_BINDS)}, got '{bind}'")
    if rankfile:
        # mpirun binds every rank where the rankfile says; the app must not rebind it (HYMPI_BIND=none).
        # Every slot and host is checked here, because mpirun reports a bad one only as ORTE noise.
        check_rankfile_fits(rankfile, ranks)
        bind = "none"
    spec = LaunchSpec(app_binary, ranks, threads, bind, values.dist, tuple(app_args), values.oversubscribe, env,
                      rankfile, membind=membind, binder=binder)
    check_layout(spec, machine_summary().pus)
    if not program:
        validate_with_app(spec)
    return Launch(spec=spec, launcher=values.launcher, timeout=values.timeout, virtual_nodes=values.virtual_nodes)


def run_program_probed(program: Program, launch: Launch, app_args: list[str],
                       echo: Callable[[bytes], None] | None = None,
                       echo_err: Callable[[bytes], None] | None = None
                       ) -> tuple[RunOutcome, tuple[ProbeProcess, ...], str | None]:
    """Launches a program of the user's own with the probe preloaded and judges its output with what the probe saw
    (hympi.probe); returns the judged outcome, the probed processes and the launch's directory ({run}; None: none
    made). `echo`, `echo_err`: run_command's. One run:
    without --stdin it reads hympi's own standard input, as under plain mpirun (`hympi run lmp < in.melt`)."""
    spec = launch.spec
    program.check_run_dirs(app_args)
    return probed_program_run(program, lambda env, run_dir: run_command(
        launch_command(dataclasses.replace(spec, env=(*spec.env, *program.environment(), *env), run_dir=run_dir),
                       launch.launcher),
        launch.timeout, echo=echo, stdin=program.stdin_path(), echo_err=echo_err), spec.ranks, spec.threads,
        tuple(app_args), launch.timeout, shown=echo_err is not None)


def launch_ended(program: Program, run_dir: str | None, ok: bool) -> None:
    """After the one launch of `hympi run` or `hympi affinity`: its directory ({run}; None: none made) removed where
    the program keeps only failed launches' (Program.after_launch), else named on stderr (stdout may be JSON)."""
    program.after_launch(run_dir, ok)
    if run_dir is not None and Path(run_dir).is_dir():
        print(f"hympi: the run's directory: {run_dir}", file=sys.stderr)


def write_through(data: bytes, stream: TextIO | None = None) -> None:
    """Writes a launched program's output to hympi's `stream` (default: stdout) as it comes (run_command's echo),
    after what hympi printed there before."""
    stream = stream or sys.stdout
    stream.flush()
    binary = getattr(stream, "buffer", None)  # None: a text stream put in its place (hympi called in-process)
    if binary is None:
        stream.write(data.decode(errors="replace"))
        return
    binary.write(data)
    binary.flush()


def write_through_err(data: bytes) -> None:
    """A launched program's error output to hympi's stderr as it comes (run_command's echo_err), as under plain
    mpirun: its warnings and progress show while it runs, and on success too."""
    write_through(data, sys.stderr)


def asks_for_help(app_args: list[str]) -> bool:
    """True when the app's arguments ask for its help text (-h or --help)."""
    return any(arg in HELP_FLAGS for arg in app_args)


def print_app_help(app_binary: str) -> int:
    """Prints the app's own --help (run directly, no MPI launch); returns hympi's exit code (0, or 1 on failure)."""
    proc = subprocess.run([str(binary(app_binary)), "--help"], capture_output=True, text=True, errors="replace",
                          timeout=60,
                          check=False, env={**os.environ, "OMP_NUM_THREADS": "1"})
    sys.stdout.write(proc.stdout)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        return 1
    return 0


def check_output_file(path: str, option: str, inputs: Inputs | None = None) -> Path:
    """An output file hympi may create or replace (through hympi.outputs.write_output: a temporary file in its
    directory, renamed over it): no device, FIFO, socket or directory (textfile.replace_problem), no SQLite
    database; raises UsageError (nothing written) otherwise, and when it is one of the command's `inputs` (option ->
    path: writing it would destroy what the command reads)."""
    check_path(option, path)
    out = Path(path)
    if (problem := replace_problem(out)) is not None:
        raise UsageError(f"{option} {path} {problem}")
    parent = out.resolve().parent
    if not parent.is_dir():
        raise UsageError(f"{option} {path}: directory {parent} does not exist")
    if (why := write_problem(parent)) is not None:
        raise UsageError(f"{option} {path} is not writable ({why})")
    if out.exists() and not os.access(out, os.W_OK):
        raise UsageError(f"{option} {path} is not writable")
    check_not_input(option, out, inputs or {})
    if is_sqlite_file(out):  # another sweep's results, say: no output of hympi's is a database
        raise UsageError(f"{option} {path} is an SQLite database: hympi never overwrites one (write the output "
                         "elsewhere)")
    return out


def subject_inputs(program: Program | None, app: str, app_args: Sequence[str], cvars: str | None) -> Inputs:
    """The files a command that launches `program` (None: hympi's `app`) reads, which none of its outputs (its
    database, an sbatch script) may replace: the program or app binary, every argument naming an existing file, a
    program's --stdin and --output-file, and the control variable listing --cvars."""
    inputs: dict[str, str | None] = {"--cvars": cvars}
    if program is None:
        try:
            built = str(binary(APPS[app].binary))
        except (KeyError, HympiFatal):  # not built: the launch says so, where it did before
            built = ""
        inputs.update(command_inputs([built, *app_args]))
        return inputs
    # The program runs in its workdir (a programs file's directory): its arguments name files there.
    inputs.update({"program": program.path, **{f"argument {i}": str(path) for i, arg in enumerate(app_args, 1)
                                              if (path := resolve_in(program.workdir, arg)).is_file()}})
    inputs.update({"--stdin": str(program.stdin_path() or "") or None,
                   "--output-file": str(program.output_path()) if program.output_file else None})
    return inputs


def ensure_out_dir(path: str | os.PathLike[str]) -> Path:
    """Creates `path` if needed (in a directory that exists, as every output file's: a typo in a parent is not made
    a tree of directories) and proves it is writable; raises UsageError (nothing else touched) otherwise."""
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise UsageError(f"output directory {out} exists and is not a directory")
    parent = out.resolve().parent
    if not parent.is_dir():
        raise UsageError(f"output directory {out}: directory {parent} does not exist")
    try:
        out.mkdir(exist_ok=True)
    except OSError as exc:
        raise UsageError(f"output directory {out} is not writable ({exc.strerror or exc})") from None
    if (why := write_problem(out)) is not None:
        raise UsageError(f"output directory {out} is not writable ({why})")
    return out


def row_id_argument(option: str, what: str) -> Callable[[str], int]:
    """argparse type of an id of the results database (--sweep ID, `what`: 'a sweep id'): >= 1 and within SQLite's
    integers."""
    return argument_type(option, lambda flag, text: parse_row_id(flag, text, what))


def add_db_option(parser: argparse.ArgumentParser) -> None:
    """--db PATH: the SQLite results database (default ./hympi-results.db)."""
    parser.add_argument("--db", default="hympi-results.db", type=path_argument("--db"),
                        help="results database (default ./hympi-results.db)")


def add_mpi_param_options(parser: argparse.ArgumentParser) -> None:
    """--mpi-param NAME=VALUE (repeatable) and --cvars FILE (the control variables to check them against)."""
    parser.add_argument("--mpi-param", action="append", default=[], metavar="NAME=VALUE",
                        help="set MPI control variable NAME (repeatable; 'hympi tune params' lists them); passed "
                             "as OMPI_MCA_NAME / MPIR_CVAR_NAME and read back by the app")
    add_cvars_option(parser, "check MPI parameters against this saved 'hympi tune params --json' listing instead "
                             "of asking the installed library")


def add_cvars_option(parser: argparse.ArgumentParser, help: str) -> None:
    """--cvars FILE: a saved control variable listing ('hympi tune params --json') read instead of the installed
    library's; `help` says what the command checks against it."""
    parser.add_argument("--cvars", default=None, metavar="FILE", type=path_argument("--cvars"), help=help)


def mpi_params_from_args(args: argparse.Namespace) -> tuple[tuple[str, str], ...]:
    """The --mpi-param assignments, canonical and sorted; UsageError for a name that is not a control variable of
    the library or a value outside its type (the library is asked only when there are parameters). A bad
    HYMPI_MPI_FLAVOR is refused here too: the flavour names the variables that set the parameters."""
    configured_flavor()
    if not args.mpi_param:
        if args.cvars is not None:
            raise UsageError(f"--cvars {args.cvars} applies only with --mpi-param (what it checks them against)")
        return ()
    assignments = [parse_assignment(text) for text in args.mpi_param]
    refuse_repeated("--mpi-param", [name for name, _ in assignments])
    listing = load_listing(args.cvars)
    return check_params(assignments, listing.cvars, listing.library)


def refuse_unknown_for_program(args: argparse.Namespace, command: str) -> None:
    """UsageError for options hympi does not know given to a program of the user's own before `--`: an app checks
    what it is handed (`hympi run bt-mz --class W`), a program may not, so a typo (`--threds 2`) would reach it as
    its arguments unseen."""
    if args.unknown_args:
        raise UsageError(f"unrecognized arguments: {' '.join(args.unknown_args)} (a program's own arguments follow "
                         f"--: hympi {command} {args.app} [options] -- ARGS)")


def report_interrupt(what: str, db: str, exc: KeyboardInterrupt) -> int:
    """Says that a `what` ('sweep', 'tune') stopped, where its finished runs are and how to continue; returns the exit
    code of a process killed by the signal for SIGTERM or SIGHUP (StoppedBySignal) and re-raises Ctrl-C for main()."""
    if isinstance(exc, StoppedBySignal):
        say_on_stderr(f"hympi: {what} stopped by signal {exc.signum} ({exc.name}); finished runs are in {db}; "
                      "continue with --resume")
        return exc.exit_code
    print(f"hympi: {what} interrupted; finished runs are in {db}; continue with --resume", file=sys.stderr)
    raise exc
