"""hympi config: every HYMPI_* option's effective value and where it came from."""

from __future__ import annotations

import argparse
import json

from rich.table import Table

from hympi.cli.parser import Subparsers
from hympi.console import HympiConsole, add_plain_row
from hympi.contract import contract
from hympi.settings import load_settings


def add_parser(sub: Subparsers, name: str, summary: str) -> None:
    """Registers `hympi config`."""
    p = sub.add_parser(name, help=summary,
                       description="Every option of the options layer (defaults < hympi.toml or --config < HYMPI_* "
                                   "environment < command line) with its value and source")
    p.add_argument("--json", action="store_true", help="print {key: {value, source, env}} as JSON")
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    """Prints the resolved options; a bad config file or value is a UsageError (exit 2)."""
    resolved = load_settings(getattr(args, "config", None))
    if args.json:
        out = {s.key: {"value": s.value, "source": s.source, "env": _env(s.key)} for s in resolved.values}
        print(json.dumps(out, indent=2))
        return 0
    table = Table(title="hympi options (defaults < config file < HYMPI_* < command line)")
    for column in ("key", "variable", "value", "source"):
        table.add_column(column, overflow="fold")
    for s in resolved.values:
        add_plain_row(table, s.key, _env(s.key), json.dumps(s.value), s.source)  # a value may be a path
    HympiConsole().print(table)
    return 0


def _env(key: str) -> str:
    """The HYMPI_* variable of option `key`."""
    option = contract().option(key)
    return option.env if option else ""
