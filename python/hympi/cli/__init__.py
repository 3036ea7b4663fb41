"""The hympi command line: subcommands dispatched from a table, one module under hympi.cli per subcommand.

Only the module of the subcommand named on the command line is imported (importlib, by the table's name): each
module imports its work at its top, and a `hympi` call pays for the one subcommand it runs, not for all of them
(tests/python/test_startup.py)."""

from __future__ import annotations

import argparse
import importlib
import os
import select
import signal
import sys
import traceback
from collections.abc import Callable
from typing import Protocol

from hympi import __version__
from hympi.cli.parser import Parser, Subparsers, path_argument, show_trailer
from hympi.console import guard_stdout, say_on_stderr
from hympi.errors import HympiError, StdoutLost, StoppedBySignal, UsageError
from hympi.launch.stop import stop_signals
from hympi.paths import program_named
from hympi.settings import load_settings, settings


class Command(Protocol):
    """What a subcommand module (hympi.cli.NAME) provides."""

    def add_parser(self, sub: Subparsers, name: str, summary: str) -> None:
        """Registers the subcommand's parser under `name` with the one-line `summary`, `handler` set to its main."""

    def main(self, args: argparse.Namespace) -> int:
        """Runs the subcommand; returns the exit code."""


# Every subcommand: its module hympi.cli.NAME and the line `hympi --help` shows for it.
COMMANDS: dict[str, str] = {
    "run": "run one app or program of your own",
    "affinity": "where each rank and thread of a layout runs (hympi-affinity or your program)",
    "info": "topology summary",
    "profile": "record who sends how much to whom in any MPI program",
    "place": "map ranks to cores from a communication matrix",
    "sweep": "sweep layouts of one app or program into the results database",
    "study": "characterise this machine (and your programs) and write the report",
    "report": "HTML report of the results database",
    "export": "raw runs as CSV or JSON",
    "config": "show the effective options and where each came from",
    "tune": "search MPI parameters and layout for the fastest configuration",
    "layout": "spell one layout for a launcher (dry run)",
}

# The positionals that name what a command launches: `hympi run APP`, `hympi affinity [PROGRAM]`.
SUBJECTS = ("app", "program")

# What follows `--` for the subcommands that take it, shown in their usage line; the others refuse it. APP_ARGS go
# to the app or program the command launches; profile runs what follows as a command line of its own.
APP_ARGS = "[-- APP-ARGS]"
TRAILERS: dict[str, str] = {"run": APP_ARGS, "affinity": APP_ARGS, "sweep": APP_ARGS,
                            "profile": "-- COMMAND [ARG ...]", "tune": APP_ARGS}


def command_module(name: str) -> Command:
    """The module of subcommand `name` (a key of COMMANDS), imported now."""
    module: Command = importlib.import_module(f"{__name__}.{name}")
    return module


def build_parser(command: str | None = None) -> Parser:
    """The top-level parser: every subcommand listed, and `command`'s own options registered (its module imported);
    the others take none, so a command line naming one of them gets that one's parser from a second call."""
    parser = Parser(prog="hympi", description="Hybrid MPI + OpenMP layouts, measured and explained.")
    parser.add_argument("--version", action="version", version=f"hympi {__version__}")
    parser.add_argument("--config", default=None, metavar="PATH", type=path_argument("--config"),
                        help="config file (default ./hympi.toml when present; HYMPI_CONFIG); the apps read it too")
    sub = parser.add_subcommands("command")
    for name, summary in COMMANDS.items():
        if name != command:
            sub.add_parser(name, help=summary, add_help=False)
            continue
        command_module(name).add_parser(sub, name, summary)
        if name in TRAILERS:
            show_trailer(sub.choices[name], TRAILERS[name])
    return parser


def named_command(argv: list[str]) -> str | None:
    """The subcommand an argument list names: its first word that is not an option or --config's value."""
    after_config = False
    for arg in argv:
        if after_config:
            after_config = False
        elif arg == "--config":
            after_config = True
        elif not arg.startswith("-"):
            return arg if arg in COMMANDS else None
    return None


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `hympi` script; returns the exit code. Every outcome is one line at most on stderr: bad
    input exit 2, a failed run 1, a closed stdout pipe 141 quietly, and any other error 1 as an internal error."""
    guard_stdout()
    try:
        code = _dispatch(argv)
        # A reader that closed the pipe early (`hympi layout ... | head -1`) shows here, not at interpreter exit
        # where Python prints "Exception ignored ... BrokenPipeError" after main has returned.
        sys.stdout.flush()
        return code
    except BrokenPipeError as exc:
        if _stdout_reader_gone():
            return _stdout_closed()
        return _internal_error(exc)  # a pipe of our own (a child's stdin) broke: that is not the user's doing
    except StdoutLost as exc:
        print(f"hympi: error: {one_line(exc)}", file=sys.stderr)
        _stdout_closed()  # what is still buffered is dropped, not written again (and failed) at exit
        return 1
    except Exception as exc:  # noqa: BLE001 - the one place an error nobody expected becomes a line, not a traceback
        return _internal_error(exc)


def one_line(exc: BaseException) -> str:
    """An error's message on one line whatever text of the user's it quotes: a program named './a<newline>b' made
    'program ./a' and 'b: no such file' two lines of stderr; a line break or carriage return is shown escaped."""
    return str(exc).replace("\r", "\\r").replace("\n", "\\n")


def _stdout_reader_gone() -> bool:
    """Whether stdout is a pipe whose reading end is closed (poll reports POLLERR on such a write end)."""
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (OSError, ValueError):  # stdout closed or not a file (io.UnsupportedOperation is both)
        return False


def _stdout_closed() -> int:
    """Exit code of a process whose stdout reader went away (128 + SIGPIPE, as the shell reports `yes | head`).

    Python's documented recipe (library/signal.html, "Note on SIGPIPE"): point stdout at /dev/null, so that the
    flush at interpreter exit finds nothing to fail on, instead of restoring SIGPIPE's default action, which would
    also kill a sweep mid-write of its database.
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 128 + signal.SIGPIPE


def _internal_error(exc: Exception) -> int:
    """Reports an uncaught error as hympi's bug in one line (the traceback too under HYMPI_DEBUG); exit code 1."""
    if _debug():
        traceback.print_exception(exc, file=sys.stderr)
    text = " ".join(str(exc).split())  # one line, whatever the message holds
    print(f"hympi: internal error (bug): {type(exc).__name__}: {text}"
          f"{'' if _debug() else ' (HYMPI_DEBUG=1 shows the traceback)'}", file=sys.stderr)
    return 1


def _debug() -> bool:
    """Whether HYMPI_DEBUG (or debug = true in the config file) asks for tracebacks of internal errors."""
    try:
        return bool(settings().value("debug"))
    except Exception:  # noqa: BLE001 - the settings may be what failed; the one line is printed regardless
        return False


def parse_command_line(argv: list[str]) -> argparse.Namespace:
    """The parsed command line (`app_args`: what follows --, after the options a command forwards to its app);
    UsageError for what no command takes."""
    app_args: list[str] = []
    if "--" in argv:  # everything after -- belongs to the app
        split = argv.index("--")
        argv, app_args = argv[:split], argv[split + 1:]
    _refuse_dash_dash_values(argv)
    parser = build_parser(named_command(argv))
    parsed: tuple[argparse.Namespace, list[str]] = parser.parse_known_args(argv)
    args, unknown = parsed
    if unknown and not getattr(args, "forwards_unknown", False):
        raise UsageError(f"unrecognized arguments: {' '.join(unknown)}")
    # `hympi run bt-mz --class W`: options hympi does not know are the app's (the app validates them).
    args.app_args = unknown + app_args
    args.unknown_args = unknown
    if app_args and args.command not in TRAILERS:
        raise UsageError(f"hympi {args.command} takes no arguments after --, got '{' '.join(app_args)}'")
    subject = next((value for name in SUBJECTS if isinstance(value := getattr(args, name, None), str)), "")
    own = _long_options(parser.chosen(args)) \
        if TRAILERS.get(args.command) == APP_ARGS and program_named(subject) else set()
    args.own_options_after = list(dict.fromkeys(flag for arg in app_args if (flag := arg.partition("=")[0]) in own))
    return args


def _long_options(parser: Parser) -> set[str]:
    """`parser`'s long options but --help, which an app or program has too (`hympi run rb3d -- --help`)."""
    return parser.long_options - {"--help"}


def _dispatch(argv: list[str] | None) -> int:
    """Parses the command line and runs the subcommand; bad input and failed runs are one line each. A program's
    arguments that hold one of the command's own options are noted once the command has run: `hympi sweep ./tree
    -- -s x --resume` handed --resume to IQ-TREE in every run ('Invalid "--resume" option') of a new sweep, and
    hympi never saw it; said, not refused, since a program may have an option of that name."""
    notes: list[str] = []
    try:
        args = parse_command_line(list(sys.argv[1:] if argv is None else argv))
        # A bad config file or HYMPI_* value stops every command before it does anything; given --config, so that
        # its errors name --config and not the variable it is exported as below.
        load_settings(args.config)
        if args.config is not None:
            # The apps hympi launches read the same file: they resolve HYMPI_CONFIG like --config.
            os.environ["HYMPI_CONFIG"] = args.config
        notes = [f"hympi: note: {flag} after '--' went to the program, not to hympi (hympi's options go before '--')"
                 for flag in args.own_options_after]
        handler: Callable[[argparse.Namespace], int] = args.handler
        with stop_signals():
            code = handler(args)
        if code != 2:  # bad input stays one line
            say_on_stderr(*notes)
        return code
    except UsageError as exc:
        print(f"hympi: error: {one_line(exc)}", file=sys.stderr)
        return 2
    except HympiError as exc:
        print(f"hympi: error: {one_line(exc)}", file=sys.stderr)
        say_on_stderr(*notes)
        return 1
    except StoppedBySignal as exc:
        say_on_stderr(f"hympi: stopped by {exc.name}; nothing it launched is left running")
        return exc.exit_code
    except KeyboardInterrupt:
        print("hympi: interrupted", file=sys.stderr)
        return 130



def _refuse_dash_dash_values(argv: list[str]) -> None:
    """UsageError for `--flag=--`: Python 3.11's argparse (Debian 12's) drops an explicit value of '--' and hands the
    command an empty list instead (CPython issue gh-109475, fixed in later releases), and no hympi option takes '--',
    which separates the app's arguments, as its value."""
    for token in argv:
        flag, equals, value = token.partition("=")
        if flag.startswith("-") and equals and value == "--":
            raise UsageError(f"{flag}: '--' is not a value (it separates the app's arguments from hympi's)")


if __name__ == "__main__":
    sys.exit(main())
