"""hympi's command tree as argparse holds it: every subcommand's words and parser, for the tests that walk them."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

from hympi.cli import COMMANDS, build_parser


def subcommands() -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """(the words that name it, its parser) for every subcommand, nested ones (tune run, tune best, ...) included."""
    for name in COMMANDS:
        chosen = _subparsers(build_parser(name)).choices[name]
        nested = [a for a in chosen._actions if isinstance(a, argparse._SubParsersAction)]
        if nested:
            for inner, parser in nested[0].choices.items():
                yield f"{name} {inner}", parser
        else:
            yield name, chosen


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction:
    (action,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return action
