"""Closing the loop: the cpusets a layout spec intends against the ones hympi-affinity reports."""

from __future__ import annotations

from collections.abc import Sequence

from hympi.jsontypes import JsonObject
from hympi.launch.layout import ThreadPlace, cpu_list
from hympi.place.tree import parse_cpu_list


def layout_mismatches(places: Sequence[ThreadPlace], rows: Sequence[JsonObject]) -> list[str]:
    """One line per thread that is bound elsewhere than intended, runs outside its set, is missing or was not
    planned (rows are HYMPI_RESULT 'binding' rows: rank, thread, bound, pu); [] when everything matches."""
    intended = {(p.rank, p.thread): p.cpus for p in places}
    seen = set()
    out = []
    for row in rows:
        key = (int(row["rank"]), int(row["thread"]))
        seen.add(key)
        who = f"rank {key[0]} thread {key[1]}"
        want = intended.get(key)
        if want is None:
            out.append(f"{who}: not in the layout (bound to {row.get('bound')})")
            continue
        bound = parse_cpu_list(str(row.get("bound", "")))
        pu = int(row.get("pu", -1))
        if bound != want or pu not in want:
            out.append(f"{who}: intended {cpu_list(want)}, bound to {cpu_list(bound) or '?'}, ran on PU {pu}")
    out += [f"rank {r} thread {t}: intended {cpu_list(intended[(r, t)])}, not reported"
            for r, t in sorted(set(intended) - seen)]
    return out
