#!/usr/bin/env python3
"""The summary of bench/hpcg/run.sh from its results.tsv: each side's GFLOP/s per run, hympi's fraction of its
triad bound per run, the medians and hympi / HPCG as a ratio of medians with its bootstrap interval
(hympi.stats.compare, the engine behind hympi's own verdicts): "hympi is 1.12x HPCG (95 % CI ...)" only when the
interval excludes 1 on enough runs, else the two are indistinguishable here. HPCG's runs spread little and
hympi's a lot on a shared VM, so a ratio of medians alone reads as a verdict it is not. Then the same pair by pair
(each repeat's two runs, back to back: the machine's drift between repeats drops out;
hympi.stats.compare.paired_ratio_text, a verdict from 8 pairs on).

Usage: python3 bench/hpcg/summary.py RESULTS_TSV   (lines: impl, run, gflops[, bound_fraction] after a header)
"""

from __future__ import annotations

import sys
from pathlib import Path

from hympi.stats.compare import Comparison, Sample, compare, is_finite_positive, paired_ratio_text

SIDES = ("hpcg", "hympi")
LABELS = {"hpcg": "HPCG", "hympi": "hympi"}


def read_results(path: Path) -> tuple[dict[str, dict[int, float]], list[str]]:
    """Each side's GFLOP/s by repeat, in run order, and hympi's bound fractions as written."""
    by_repeat: dict[str, dict[int, float]] = {side: {} for side in SIDES}
    fractions: list[str] = []
    for line in path.read_text().splitlines()[1:]:
        cells = line.split("\t")
        if len(cells) < 3 or cells[0] not in by_repeat:
            raise ValueError(f"{path}: not a results line: {line!r}")
        rate = float(cells[2])
        if not is_finite_positive(rate):
            raise ValueError(f"{path}: not a rate > 0: {cells[2]!r}")
        if not cells[1].isdigit():
            raise ValueError(f"{path}: not a repeat number: {cells[1]!r}")
        if int(cells[1]) in by_repeat[cells[0]]:
            raise ValueError(f"{path}: repeat {cells[1]} of {cells[0]} given twice")
        by_repeat[cells[0]][int(cells[1])] = rate
        if cells[0] == "hympi" and len(cells) > 3:
            fractions.append(cells[3])
    return by_repeat, fractions


def summary(by_repeat: dict[str, dict[int, float]], fractions: list[str]) -> list[str]:
    """The summary's lines (after run.sh's own header lines)."""
    rates = {side: list(by_repeat[side].values()) for side in SIDES}  # in run order
    lines = [f"{side:<6} GFLOP/s per run: {' '.join(f'{r:g}' for r in rates[side])}" for side in SIDES]
    lines.append(f"hympi fraction of its triad bound per run: {' '.join(fractions)}")
    if not rates["hpcg"] or not rates["hympi"]:
        return [*lines, "ratio: missing runs (see the run directories)"]
    samples = {side: Sample(LABELS[side], tuple(rates[side]), 1, 1) for side in SIDES}
    lines.append(f"median GFLOP/s: HPCG reference SpMV {samples['hpcg'].median:.3f}, hympi CSR SpMV "
                 f"{samples['hympi'].median:.3f}")
    ratio = samples["hympi"].median / samples["hpcg"].median
    verdict = compare(samples["hympi"], samples["hpcg"])
    # Named hympi first whichever way it went, so the interval is that of hympi / HPCG, as the ratio.
    said = verdict.seen_from(LABELS["hympi"]).sentence(choose=False) if isinstance(verdict, Comparison) \
        else verdict.sentence()
    lines.append(f"ratio hympi / HPCG: {ratio:.3f}; {said}")
    repeats = sorted(set(by_repeat["hpcg"]) | set(by_repeat["hympi"]))
    pairs = paired_ratio_text([by_repeat["hympi"].get(r) for r in repeats], [by_repeat["hpcg"].get(r) for r in repeats])
    lines.append(f"pair by pair, hympi / HPCG: {pairs}")
    return lines


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("summary.py: usage: summary.py RESULTS_TSV", file=sys.stderr)
        return 2
    try:
        by_repeat, fractions = read_results(Path(argv[1]))
    except (OSError, ValueError) as err:
        print(f"summary.py: {err}", file=sys.stderr)
        return 2
    lines = summary(by_repeat, fractions)
    print("\n".join(lines))
    return 1 if lines[-1].startswith("ratio: missing") else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
