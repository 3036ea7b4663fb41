#!/usr/bin/env python3
"""Compares the runs of bench/layout/affinity_sweep.sh with the cpusets the layout spec intends on the node they
ran on (its hwloc XML, saved beside them): one line per run, PASSED or the threads bound elsewhere.

Usage: .venv/bin/python bench/layout/check.py DIR      (exit 1 when any run failed or mismatched)
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from hympi.launch.layout import LayoutSpec
from hympi.launch.layout_check import layout_mismatches
from hympi.place.tree import parse_topology_xml
from hympi.result import ResultError, parse_result

RUN_NAME = re.compile(r"^(core|numa|package)-(\d+)x(\d+)-(launcher|hympi)$")


def check(folder: Path) -> int:
    """Prints one verdict per run in `folder`; returns 1 when a run is missing its record or mismatches, else 0."""
    tree = parse_topology_xml((folder / "node.xml").read_text(), str(folder / "node.xml"))
    failed = 0
    for out in sorted(folder.glob("*.out")):
        match = RUN_NAME.match(out.stem)
        if match is None:
            continue
        bind, ranks, threads = match[1], int(match[2]), int(match[3])
        try:
            record = parse_result(out.read_text())
        except ResultError as exc:
            record, note = None, str(exc)
        else:
            note = "no HYMPI_RESULT (see the .err file)"
        if record is None:
            print(f"{out.stem:28s} FAILED: {note}")
            failed = 1
            continue
        places = LayoutSpec(1, ranks, threads, bind).placements(tree)
        problems = layout_mismatches(places, list(record.binding))
        print(f"{out.stem:28s} {'FAILED' if problems else 'PASSED'} ({len(places)} threads)")
        for problem in problems[:8]:
            print(f"    {problem}")
        failed |= 1 if problems else 0
    return failed


if __name__ == "__main__":
    if len(sys.argv) != 2 or not (Path(sys.argv[1]) / "node.xml").is_file():
        print("usage: bench/layout/check.py DIR (a folder bench/layout/affinity_sweep.sh wrote)", file=sys.stderr)
        sys.exit(2)
    sys.exit(check(Path(sys.argv[1])))
