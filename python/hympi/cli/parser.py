"""The argument parser every hympi (sub)command uses, and the type of the table subcommands register in."""

from __future__ import annotations

import argparse
from typing import NoReturn, TypeAlias

from hympi.errors import UsageError


class Parser(argparse.ArgumentParser):
    """argparse with exit code 2 and one line on bad input (its default prints usage too)."""

    def error(self, message: str) -> NoReturn:
        """Raises UsageError(message) instead of printing usage and exiting."""
        raise UsageError(message)


# What `add_subparsers(parser_class=Parser)` returns; a string because argparse's class is generic only in typeshed.
Subparsers: TypeAlias = "argparse._SubParsersAction[Parser]"
