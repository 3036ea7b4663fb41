#!/usr/bin/env python3
"""How often hympi's two comparisons separate two layouts, on seeded synthetic rates: the two samples' bootstrap
interval of the ratio of medians (stats.compare.ratio_ci) against the rounds' trimmed interval
(stats.compare.paired_ratio_ci), for equal layouts and for a lead, on a machine whose pace stays put or drifts
between rounds. The figures behind MIN_PAIRS (docs/performance.md, "Verdicts round by round").

Usage: .venv/bin/python bench/stats/power.py [--trials 600] [--rounds 4,5,6,8,12]

Each trial draws, per round, the machine's pace (1 + uniform +-drift) and each layout's own noise (1 + uniform
+-noise); layout a's rate is lead x b's. A trial counts as separated when the 95 % interval excludes 1 with a ahead
(the lead's rows) or on either side (the equal rows: false separations).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from hympi.stats.compare import MIN_SAMPLES, paired_ratio_ci, ratio_ci

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/, for the scripts' shared helpers
from common import parse_counts, reject, require_positive

# (lead, noise per run, drift between rounds): equal layouts with the tests' +-40 % noise, then a 1.15x lead with
# +-10 % noise on a steady machine and on one whose pace moves +-30 % from round to round.
CASES = ((1.0, 0.4, 0.0), (1.15, 0.1, 0.0), (1.15, 0.1, 0.3))


def separated(lead: float, noise: float, drift: float, rounds: int, trials: int) -> tuple[float, float]:
    """(share of `trials` the two samples separate, share the rounds separate), seeded by the case."""
    rng = np.random.default_rng([round(lead * 100), round(noise * 100), round(drift * 100), rounds])
    by_samples = by_rounds = 0
    for _ in range(trials):
        pace = 1.0 + rng.uniform(-drift, drift, rounds)
        a = lead * pace * (1.0 + rng.uniform(-noise, noise, rounds))
        b = pace * (1.0 + rng.uniform(-noise, noise, rounds))
        for paired, (_, low, high) in ((False, ratio_ci(list(a), list(b))), (True, paired_ratio_ci(list(a), list(b)))):
            hit = low > 1.0 or (lead == 1.0 and high < 1.0)
            by_rounds += paired and hit
            by_samples += (not paired) and hit
    return by_samples / trials, by_rounds / trials


def main() -> int:
    parser = argparse.ArgumentParser(prog="power.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=600, help="seeded trials per case and round count (600)")
    parser.add_argument("--rounds", default="4,5,6,8,12", help="round counts, comma-separated (4,5,6,8,12)")
    args = parser.parse_args()
    require_positive([("--trials", args.trials)])
    counts = parse_counts(args.rounds, "--rounds")
    if min(counts) < MIN_SAMPLES:
        reject("--rounds", f"a comparison needs at least {MIN_SAMPLES} rounds, got {min(counts)}")
    print(f"{args.trials} seeded trials per cell; share separated: two samples / round by round\n")
    print("| lead | noise per run | drift between rounds | " + " | ".join(f"{n} rounds" for n in counts) + " |")
    print("|---|---|---|" + "---|" * len(counts))
    for lead, noise, drift in CASES:
        cells = [separated(lead, noise, drift, n, args.trials) for n in counts]
        print(f"| {lead:g}x | +-{noise * 100:g} % | +-{drift * 100:g} % | "
              + " | ".join(f"{s:.2f} / {r:.2f}" for s, r in cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
