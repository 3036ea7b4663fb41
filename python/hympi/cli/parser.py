"""The argument parser every hympi (sub)command uses, and the type of the table subcommands register in."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any, NoReturn, TypeAlias, TypeVar

from hympi.errors import UsageError
from hympi.limits import check_path

T = TypeVar("T")


class StoreOnce(argparse.Action):
    """argparse's plain store, refusing an option given twice: argparse keeps the last value silently
    (`export --db a.db --db b.db` read b.db); a repeatable option says so (action="append")."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        given = parser.given if isinstance(parser, Parser) else set()
        if self.dest in given:
            name = next((o for o in self.option_strings if o.startswith("--")), option_string)
            raise UsageError(f"{name} is given twice (give it once)")
        given.add(self.dest)
        setattr(namespace, self.dest, values)


class Parser(argparse.ArgumentParser):
    """argparse with exit code 2 and one line on bad input (its default prints usage too), every option that stores
    one value refusing a second (StoreOnce), and no abbreviated option: argparse took `--time 5` for `--timeout 5`
    and `--rep 2` for `--repeat 2`, so an app's own option that begins like one of hympi's (`hympi run APP
    --time ...` passes options hympi does not know to the app) was hympi's, and a script's meaning could change
    with the next option hympi adds."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Before argparse's own __init__, which adds --help through add_argument.
        self.long_options: set[str] = set()  # every --option added, --help included
        self.subcommands: Subparsers | None = None  # what add_subcommands returned, None before
        super().__init__(*args, **{"allow_abbrev": False, **kwargs})
        self.given: set[str] = set()  # the destinations StoreOnce set in the parse under way

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        """argparse's add_argument; an option (not a positional) that stores its value gets StoreOnce. Its long
        options are noted (long_options)."""
        if args and str(args[0]).startswith("-") and kwargs.get("action", "store") == "store":
            kwargs["action"] = StoreOnce
        action = super().add_argument(*args, **kwargs)
        self.long_options.update(o for o in action.option_strings if o.startswith("--"))
        return action

    def add_subcommands(self, dest: str) -> Subparsers:
        """argparse's add_subparsers, required, of Parsers, into `dest`; noted (subcommands), so that the parser a
        command line chose can be found."""
        self.subcommands = self.add_subparsers(dest=dest, required=True, parser_class=Parser)
        return self.subcommands

    def chosen(self, args: argparse.Namespace) -> Parser:
        """The (sub)parser that parsed `args`' own options: `hympi tune run`'s, not tune's."""
        parser = self
        while parser.subcommands is not None:
            parser = parser.subcommands.choices[getattr(args, parser.subcommands.dest)]
        return parser

    def parse_known_args(self, *args: Any, **kwargs: Any) -> Any:
        """argparse's, counting the options given afresh."""
        self.given = set()
        return super().parse_known_args(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        """Raises UsageError(message) instead of printing usage and exiting."""
        raise UsageError(message)


def show_trailer(parser: argparse.ArgumentParser, trailer: str) -> None:
    """Appends what follows `--` (e.g. '[-- APP-ARGS]') to `parser`'s usage line, after its options are registered:
    argparse cannot show arguments it does not parse."""
    parser.usage = parser.format_usage().removeprefix("usage: ").rstrip() + " " + trailer


# What `add_subparsers(parser_class=Parser)` (Parser.add_subcommands) returns; a string because argparse's class is
# generic only in typeshed.
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
