"""hympi report: static HTML (index.html + PNG plots) from the results database."""

from __future__ import annotations

import argparse
import sys

from hympi.cli.common import add_db_option, ensure_out_dir
from hympi.cli.parser import Subparsers
from hympi.store import Store
from hympi.tune.cvars import load_listing


def add_parser(sub: Subparsers, name: str) -> None:
    """Registers `hympi report`."""
    p = sub.add_parser(name, help="HTML report of the results database",
                       description="Write DIR/index.html with plots, tables and a recommendation per app.")
    add_db_option(p)
    p.add_argument("--out", default="hympi-report", help="output directory (default ./hympi-report)")
    p.add_argument("--sweep", type=int, action="append", default=None, metavar="ID",
                   help="only this sweep (repeatable; default: every run)")
    p.add_argument("--study", type=int, default=None, metavar="ID",
                   help="only the sweeps of this study, with its notes")
    p.add_argument("--cvars", default=None, metavar="FILE",
                   help="rebuild tunes' spaces with a saved 'hympi tune params --json' listing (default: the library)")
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    """Writes the report and prints where it is; UsageError for a missing database or an unknown id."""
    from hympi.report.writer import write_report  # numpy, matplotlib and every section: only when a report is written

    # The database and the ids are checked first, so bad input leaves no empty output directory behind.
    with Store.open(args.db, create=False) as store:
        for stale in store.mark_stale_interrupted():  # its hympi died (SIGKILL): say so instead of 'running'
            print(f"hympi: sweep {stale} was left running by a process that no longer exists; marked interrupted "
                  f"(continue it with hympi sweep ... --resume {stale})", file=sys.stderr)
        sweep_ids = args.sweep
        notes: tuple[str, ...] = ()
        if sweep_ids:
            for sweep_id in sweep_ids:
                store.sweep(sweep_id)  # UsageError for an unknown id
        if args.study is not None:
            study = store.study(args.study)
            sweep_ids = (sweep_ids or []) + [s.id for s in store.study_sweeps(study.id)]
            notes = study.notes
        out = ensure_out_dir(args.out)
        cvars = args.cvars
        index = write_report(store, out, sweep_ids, notes, title="hympi report",
                             cvars=(lambda: load_listing(cvars).cvars) if cvars else None)
    print(f"report: {index.resolve()}")
    return 0
