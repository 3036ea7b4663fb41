#!/usr/bin/env python3
"""hympi on a large results database: how long opening it, `hympi export` and `hympi report` take as it grows.

Usage: .venv/bin/python bench/store/large.py [--runs 20000,100000] [--work DIR]

A real sweep (hympi-is class S at 1x1 and 2x1, a warm-up and 2 repeats each: 6 runs with their full records, some
13 KB of JSON each) is copied in SQL, each copy a new repeat of the same items, until the database holds each count
of runs; each command then runs once on it, timed by its wall clock, its peak resident memory by the kernel (wait4).
Opening is Store.open as every command does it: SQLite's quick_check and the scan of the JSON columns that refuse a
damaged file (hympi.store.db). The report's time includes its statistics over every layout's runs. One run per
count: the figures say where the time and memory go (docs/performance.md), not which of two things is faster.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hympi.store import Store

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/, for the scripts' shared helpers
from common import hympi_here, parse_counts, reject

TIMEOUT_S = 3600.0
# Some 13 GB of database: more runs than any study here has made, and a typo's extra digits are caught.
MAX_RUNS = 1_000_000


def sweep(db: Path) -> None:
    """The real sweep every copy is made of."""
    subprocess.run([*hympi_here(), "sweep", "is", "--ranks", "1,2", "--threads", "1", "--repeat", "2", "--db",
                    str(db), "--ignore-load", "--", "--class", "S"], check=True, timeout=TIMEOUT_S,
                   stdout=subprocess.DEVNULL)


def grow(db: Path, runs: int) -> None:
    """Copies the sweep's first runs as new repeats until `db` holds `runs` runs."""
    conn = sqlite3.connect(db)
    try:
        columns = [row[1] for row in conn.execute("PRAGMA table_info(runs)") if row[1] != "id"]
        picked = ", ".join("repeat + ?" if c == "repeat" else c for c in columns)
        first = [row[0] for row in conn.execute("SELECT id FROM runs ORDER BY id")]
        top = conn.execute("SELECT max(repeat) FROM runs").fetchone()[0]
        have, copy = len(first), 1
        while have < runs:
            take = first[:runs - have]
            conn.execute(f"INSERT INTO runs ({', '.join(columns)}) SELECT {picked} FROM runs WHERE id IN "
                         f"({', '.join('?' * len(take))})", (copy * (top + 1), *take))
            have, copy = have + len(take), copy + 1
        conn.commit()
    finally:
        conn.close()


def timed(command: list[str]) -> tuple[float, float]:
    """(wall s, peak resident MB) of one run of `command`, which must succeed."""
    start = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL)
    try:
        _, status, usage = os.wait4(proc.pid, 0)
    except BaseException:
        proc.kill()
        raise
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise subprocess.CalledProcessError(proc.returncode, command)
    return time.perf_counter() - start, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(prog="large.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", default="20000,100000", help="the database sizes, in runs (comma-separated)")
    parser.add_argument("--work", type=Path, help="where the databases are made (default: a temporary directory)")
    args = parser.parse_args()
    sizes = sorted(parse_counts(args.runs, "--runs"))
    if sizes[-1] > MAX_RUNS:
        reject("--runs", f"{sizes[-1]} runs is more than this benchmark makes ({MAX_RUNS}, some 13 GB)")
    if args.work is not None and not args.work.is_dir():
        reject("--work", f"'{args.work}' is not a directory")
    with tempfile.TemporaryDirectory(prefix="hympi-large-db-", dir=args.work) as directory:
        db = Path(directory) / "large.db"
        sweep(db)
        print("| runs | file MB | open (damage check) s | hympi export s (peak MB) | hympi report s (peak MB) |")
        print("| --- | --- | --- | --- | --- |")
        for runs in sizes:
            grow(db, runs)
            start = time.perf_counter()
            Store.open(db, create=False).close()
            opened = time.perf_counter() - start
            export = timed([*hympi_here(), "export", "--db", str(db), "-o", str(Path(directory) / "runs.csv")])
            report = timed([*hympi_here(), "report", "--db", str(db), "--out", str(Path(directory) / f"r{runs}")])
            print(f"| {runs} | {db.stat().st_size / 1e6:.0f} | {opened:.2f} | {export[0]:.1f} ({export[1]:.0f}) | "
                  f"{report[0]:.1f} ({report[1]:.0f}) |", flush=True)


if __name__ == "__main__":
    main()
