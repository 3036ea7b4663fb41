"""hympi report: static HTML (index.html + PNG plots) from the results database."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hympi.cli.common import add_cvars_option, add_db_option, ensure_out_dir, row_id_argument
from hympi.cli.parser import Subparsers, path_argument
from hympi.outputs import check_not_input
from hympi.params import disturbed_above_of
from hympi.report.writer import write_report
from hympi.store import Store
from hympi.tune.space import listing_source


def add_parser(sub: Subparsers, name: str, summary: str) -> None:
    """Registers `hympi report`."""
    p = sub.add_parser(name, help=summary,
                       description="Write DIR/index.html with plots, tables and a recommendation per app.")
    add_db_option(p)
    p.add_argument("--out", default="hympi-report", type=path_argument("--out"),
                   help="output directory (default ./hympi-report)")
    p.add_argument("--sweep", type=row_id_argument("--sweep", "a sweep id"), action="append", default=None,
                   metavar="ID", help="only this sweep (repeatable; default: every run)")
    p.add_argument("--study", type=row_id_argument("--study", "a study id"), default=None, metavar="ID",
                   help="only the sweeps of this study, with its notes")
    add_cvars_option(p, "rebuild tunes' spaces with a saved 'hympi tune params --json' listing (default: the library)")
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    """Writes the report and prints its recommendations and where it is; UsageError for a missing database or an
    unknown id."""
    # The database and the ids are checked first, so bad input leaves no empty output directory behind.
    check_not_input("--out", Path(args.out) / "index.html", {"--db": args.db, "--cvars": args.cvars})
    with Store.read(args.db) as store:  # read-only: a report never changes the database
        sweep_ids = args.sweep
        notes: tuple[str, ...] = ()
        if sweep_ids:
            for sweep_id in sweep_ids:
                store.sweep(sweep_id)  # UsageError for an unknown id
        if args.study is not None:
            study = store.study(args.study)
            sweep_ids = (sweep_ids or []) + [s.id for s in store.study_sweeps(study.id)]
            notes = study.notes
        # Read before the output directory is made: a bad --cvars file or $HYMPI_DISTURBED_ABOVE leaves nothing.
        cvars = listing_source(args.cvars)
        disturbed_above = disturbed_above_of(args)
        out = ensure_out_dir(args.out)
        # Said once the input has passed its checks (bad input is one line): its hympi died (SIGKILL), so the
        # report shows it as stopped, not 'running'.
        for stale in store.stale_sweeps():
            print(f"hympi: sweep {stale} was left running by a process that no longer exists "
                  f"(continue it with hympi sweep ... --resume {stale})", file=sys.stderr)
        # The recommendations on the terminal too: on a cluster's login node the page is a copy away.
        index = write_report(store, out, sweep_ids, notes, title="hympi report", cvars=cvars,
                             disturbed_above=disturbed_above, say=print)
    print(f"report: {index.resolve()}")
    return 0
