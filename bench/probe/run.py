#!/usr/bin/env python3
"""The probe's cost: hympi-rb3d with and without the probe preloaded (libhympi-profile, HYMPI_PROBE_DIR), in
interleaved pairs, per layout.

Usage: .venv/bin/python bench/probe/run.py [--layouts 1x2,2x1] [--pairs 8] [--size 128] [--iterations 200]

Each pair runs the plain and the probed launch in an order that alternates, so drift hits both alike. Reported per
layout: the launch's wall time and rb3d's own rate, each as probed / plain with a 95 % bootstrap interval of the
ratio of medians (hympi.stats.compare.ratio_ci). The target (issue 32) is a wall-time cost under 2 %.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import tempfile
from pathlib import Path

from hympi.launch.mpirun import LaunchSpec, launch
from hympi.probe import probe_env, read_probe
from hympi.stats.compare import MIN_SAMPLES, ratio_ci

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/, for the scripts' shared helpers
from common import parse_counts, parse_layouts, reject


def measure(spec: LaunchSpec, probed: bool) -> tuple[float, float, float]:
    """(wall s, rate, probe share) of one verified launch, with the probe preloaded when `probed` (its files are
    checked). The probe share is the CPU time the probe itself used (its start and its sampler thread, in every
    process), as a share of the core-seconds the layout had (ranks x threads x wall): what the probe takes from a
    run whose cores are all busy."""
    with tempfile.TemporaryDirectory(prefix="hympi-probe-bench-") as directory:
        env = probe_env(Path(directory)) if probed else ()
        outcome = launch(dataclasses.replace(spec, env=(*spec.env, *env)), timeout=600)
        if outcome.status != "ok" or outcome.record is None:
            sys.exit(f"bench: {spec.ranks}x{spec.threads} {'probed' if probed else 'plain'} {outcome.status}: "
                     f"{outcome.stderr_tail()}")
        processes = read_probe(Path(directory)) if probed else ()
        if probed and len(processes) != spec.ranks:
            sys.exit(f"bench: the probe wrote no file for every rank of {spec.ranks}x{spec.threads}")
    probe_s = sum(p.probe_cpu_s for p in processes)
    return outcome.seconds, float(outcome.record["rate"]), probe_s / (spec.ranks * spec.threads * outcome.seconds)


def main() -> int:
    """Runs the pairs and prints a markdown table plus one JSON line per layout."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layouts", default="1x2,2x1")
    parser.add_argument("--pairs", default="8")
    parser.add_argument("--size", default="128")
    parser.add_argument("--iterations", default="200")
    args = parser.parse_args()
    layouts = parse_layouts(args.layouts)
    (pairs,) = parse_counts(args.pairs, "--pairs")
    if pairs < MIN_SAMPLES:
        reject("--pairs", f"{pairs} gives no interval: at least {MIN_SAMPLES} pairs")
    (size,) = parse_counts(args.size, "--size")
    (iterations,) = parse_counts(args.iterations, "--iterations")
    print("| layout | pairs | wall s plain (median) | wall probed / plain (95 % CI) | rate probed / plain (95 % CI) "
          "| probe's own CPU, % of the layout's core-seconds (median, max) |")
    print("|---|---|---|---|---|---|")
    for ranks, threads in layouts:
        spec = LaunchSpec("hympi-rb3d", ranks, threads, app_args=("--size", str(size), "--iterations",
                                                                   str(iterations), "--min-time", "0"))
        plain: list[tuple[float, float, float]] = []
        probed: list[tuple[float, float, float]] = []
        for pair in range(pairs):
            for with_probe in ((False, True) if pair % 2 == 0 else (True, False)):
                (probed if with_probe else plain).append(measure(spec, with_probe))
        # Wall time: lower is better, so the ratio of rates 1/t gives probed/plain time as its inverse.
        wall, wall_low, wall_high = ratio_ci([1 / w for w, _, _ in plain], [1 / w for w, _, _ in probed])
        rate, rate_low, rate_high = ratio_ci([r for _, r, _ in probed], [r for _, r, _ in plain])
        plain_wall = statistics.median(w for w, _, _ in plain)
        shares = [100 * share for _, _, share in probed]
        print(f"| {ranks}x{threads} | {pairs} | {plain_wall:.3f} | {wall:.3f} ({wall_low:.3f}-{wall_high:.3f}) | "
              f"{rate:.3f} ({rate_low:.3f}-{rate_high:.3f}) | {statistics.median(shares):.3f} %, "
              f"{max(shares):.3f} % |")
        print(json.dumps({"layout": f"{ranks}x{threads}", "pairs": pairs, "wall_ratio": [wall, wall_low, wall_high],
                          "rate_ratio": [rate, rate_low, rate_high], "probe_share_pct": shares}),
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
