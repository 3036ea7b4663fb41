"""hympi export: the raw runs of the results database as CSV or JSON (or its attempts: --attempts)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Mapping
from typing import IO

from hympi.cli.common import add_db_option, check_output_file, row_id_argument
from hympi.cli.parser import Subparsers
from hympi.errors import UsageError
from hympi.export import ATTEMPT_COLUMNS, COLUMNS, attempt_rows, rows, write_csv, write_json
from hympi.outputs import output_stream
from hympi.store import Store


def add_parser(sub: Subparsers, name: str, summary: str) -> None:
    """Registers `hympi export`."""
    p = sub.add_parser(name, help=summary, description="Export every stored run as CSV or JSON.")
    p.add_argument("--format", default="csv", help="csv or json (default csv)")
    add_db_option(p)
    p.add_argument("--sweep", type=row_id_argument("--sweep", "a sweep id"), action="append", default=None,
                   metavar="ID", help="only this sweep (repeatable)")
    p.add_argument("--output", "-o", default=None, metavar="FILE", help="write here instead of standard output")
    p.add_argument("--attempts", action="store_true",
                   help="the launches that are no runs instead: those a restart from a checkpoint replaced, and "
                        "those the batch system or hympi's stop (Ctrl-C, SIGTERM) cancelled")
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    """Writes the export to standard output or --output."""
    if args.format not in ("csv", "json"):
        raise UsageError(f"--format must be csv or json, got '{args.format}'")
    if args.output is not None:
        check_output_file(args.output, "--output", {"--db": args.db})
    columns, what = (ATTEMPT_COLUMNS, "attempts") if args.attempts else (COLUMNS, "runs")
    source = attempt_rows if args.attempts else rows

    def write(data: Iterable[Mapping[str, object]], out: IO[str]) -> int:
        return write_csv(data, out, columns) if args.format == "csv" else write_json(data, out)

    with Store.read(args.db) as store:
        if args.sweep:
            for sweep_id in args.sweep:
                store.sweep(sweep_id)  # UsageError for an unknown id
        if args.output is None:
            write(source(store, args.sweep), sys.stdout)
            return 0
        try:
            with output_stream(args.output) as out:  # renamed over --output only once every run is in
                count = write(source(store, args.sweep), out)
        except OSError as exc:
            raise UsageError(f"cannot write {args.output} ({exc.strerror or exc})") from None
    print(f"wrote {count} {what} to {args.output}", file=sys.stderr)
    return 0
