"""The argument parser every hympi (sub)command uses, and the type of the table subcommands register in."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import NoReturn, TypeAlias, TypeVar

from hympi.errors import UsageError
from hympi.limits import check_path

T = TypeVar("T")


class Parser(argparse.ArgumentParser):
    """argparse with exit code 2 and one line on bad input (its default prints usage too)."""

    def error(self, message: str) -> NoReturn:
        """Raises UsageError(message) instead of printing usage and exiting."""
        raise UsageError(message)


# What `add_subparsers(parser_class=Parser)` returns; a string because argparse's class is generic only in typeshed.
Subparsers: TypeAlias = "argparse._SubParsersAction[Parser]"


def argument_type(option: str, parse: Callable[[str, str], T]) -> Callable[[str], T]:
    """argparse type of `option` from a parser of (option, text): its UsageError refuses the value while parsing (one
    line, exit 2), worded without the option's name, which argparse puts before it."""
    def checked(text: str) -> T:
        try:
            return parse(option, text)
        except UsageError as exc:
            reason = str(exc).removeprefix(f"{option}: ").removeprefix(f"{option} ")
            raise argparse.ArgumentTypeError(reason) from None
    return checked


def path_argument(option: str) -> Callable[[str], str]:
    """argparse type of a path option: the path as given, refused while parsing when it is empty (no file has that
    name; it would read as the option not given) or the system could not even look it up (longer than PATH_MAX or a
    component longer than NAME_MAX)."""
    return argument_type(option, check_path)


def _nonempty(option: str, text: str) -> str:
    """`text`, or UsageError when it is empty or blank."""
    if not text.strip():
        raise UsageError(f"{option}: an empty value (give one, or leave the option out for its default)")
    return text


def nonempty_argument(option: str) -> Callable[[str], str]:
    """argparse type of an option whose empty value would read as the option not given."""
    return argument_type(option, _nonempty)
