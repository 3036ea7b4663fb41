"""The hympi command line: subcommands dispatched from a table."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import Protocol

from hympi import __version__
from hympi.cli import affinity, config, export, info, layout, place, profile, report, run, study, sweep, tune
from hympi.cli.parser import Parser, Subparsers
from hympi.errors import HympiError, UsageError
from hympi.settings import load_settings


class Command(Protocol):
    """What a subcommand module provides."""

    def add_parser(self, sub: Subparsers, name: str) -> None:
        """Registers the subcommand's parser under `name`, with `handler` set to its main."""

    def main(self, args: argparse.Namespace) -> int:
        """Runs the subcommand; returns the exit code."""


# One module per subcommand.
COMMANDS: dict[str, Command] = {"run": run, "affinity": affinity, "info": info, "profile": profile, "place": place,
                                "sweep": sweep, "study": study, "report": report, "export": export,
                                "config": config, "tune": tune, "layout": layout}

# What follows `--` for the subcommands that take it, shown in their usage line; the others refuse it.
TRAILERS: dict[str, str] = {"run": "[-- APP-ARGS]", "affinity": "[-- APP-ARGS]", "sweep": "[-- APP-ARGS]",
                            "profile": "-- COMMAND [ARG ...]", "tune": "[-- APP-ARGS]"}


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every subcommand registered."""
    parser = Parser(prog="hympi", description="Hybrid MPI + OpenMP layouts, measured and explained.")
    parser.add_argument("--version", action="version", version=f"hympi {__version__}")
    parser.add_argument("--config", default=None, metavar="PATH",
                        help="config file (default ./hympi.toml when present; HYMPI_CONFIG); the apps read it too")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for name, module in COMMANDS.items():
        module.add_parser(sub, name)
        if name in TRAILERS:
            command = sub.choices[name]
            # argparse cannot show arguments it does not parse; append the `--` part to its own usage line.
            command.usage = command.format_usage().removeprefix("usage: ").rstrip() + " " + TRAILERS[name]
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `hympi` script; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    app_args: list[str] = []
    if "--" in argv:  # everything after -- belongs to the app
        split = argv.index("--")
        argv, app_args = argv[:split], argv[split + 1:]
    try:
        args, unknown = build_parser().parse_known_args(argv)
        if unknown and not getattr(args, "forwards_unknown", False):
            raise UsageError(f"unrecognized arguments: {' '.join(unknown)}")
        # `hympi run bt-mz --class W`: options hympi does not know are the app's (the app validates them).
        args.app_args = unknown + app_args
        if app_args and args.command not in TRAILERS:
            raise UsageError(f"hympi {args.command} takes no arguments after --, got '{' '.join(app_args)}'")
        if args.config is not None:
            # The apps hympi launches read the same file: they resolve HYMPI_CONFIG like --config.
            os.environ["HYMPI_CONFIG"] = args.config
        load_settings()  # a bad config file or HYMPI_* value stops every command before it does anything
        handler: Callable[[argparse.Namespace], int] = args.handler
        return handler(args)
    except UsageError as exc:
        print(f"hympi: error: {exc}", file=sys.stderr)
        return 2
    except HympiError as exc:
        print(f"hympi: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("hympi: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
