#!/usr/bin/env python3
"""The cost of measuring other work during a run (hympi.busy): the same runs with and without the sampler.

Usage: .venv/bin/python bench/interference/run.py [--app stream] [--layout 1x2] [--pairs 15] [--min-time 0.5]
       [--samples 200]

Runs the app --pairs times with the sampler around the launch (as a sweep does) and --pairs times without,
interleaved and alternating which goes first, and states the ratio of median wall times with its 95 % bootstrap
interval (hympi.stats.compare). The wall-time ratio bounds what a noisy machine lets a few runs show; the cost of
one sample, timed --samples times here, and the samples a run takes give the overhead directly.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import psutil

from hympi.apps import get_app
from hympi.busy.sample import take_sample
from hympi.busy.sampler import SAMPLE_INTERVAL_S, Sampler
from hympi.launch.mpirun import LaunchSpec, launch
from hympi.stats.compare import Comparison, compare
from hympi.stats.compare import Sample as Rates

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/, for the scripts' shared helpers
from common import parse_layouts, require_positive, require_seconds


def wall(spec: LaunchSpec, sampled: bool) -> float:
    """Seconds of one verified run of `spec`, with or without the sampler around it (exits naming a failed one)."""
    start = time.monotonic()
    if sampled:
        with Sampler():
            outcome = launch(spec, timeout=600)
    else:
        outcome = launch(spec, timeout=600)
    seconds = time.monotonic() - start
    if outcome.status != "ok":
        sys.exit(f"bench: {spec.app_binary} {spec.ranks}x{spec.threads} {outcome.status}: {outcome.stderr_tail()}")
    return seconds


def main() -> int:
    """Runs the pairs and prints a markdown summary plus one JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--app", default="stream")
    parser.add_argument("--layout", default="1x2")
    parser.add_argument("--pairs", type=int, default=15)
    parser.add_argument("--min-time", type=float, default=0.5)
    parser.add_argument("--samples", type=int, default=200)
    args = parser.parse_args()
    require_positive([("--pairs", args.pairs), ("--samples", args.samples)])
    require_seconds([("--min-time", args.min_time)], zero_ok=True)
    (ranks, threads), = parse_layouts(args.layout)
    spec = LaunchSpec(get_app(args.app).binary, ranks, threads,
                      env=(("HYMPI_MIN_TIME", f"{args.min_time:g}"),))
    root = psutil.Process()
    start = time.perf_counter()
    for _ in range(args.samples):
        take_sample(root)
    per_sample = (time.perf_counter() - start) / args.samples
    with_sampler: list[float] = []
    without: list[float] = []
    for pair in range(args.pairs):
        for sampled in ((True, False) if pair % 2 == 0 else (False, True)):
            (with_sampler if sampled else without).append(wall(spec, sampled))
    # Rates as 1/wall: the comparison's ratio is then wall with the sampler over wall without.
    verdict = compare(Rates("without", tuple(1 / w for w in without), threads, ranks * threads),
                      Rates("with", tuple(1 / w for w in with_sampler), threads, ranks * threads), 0.95)
    if not isinstance(verdict, Comparison):
        sys.exit(f"bench: {verdict.sentence()}")
    run_s = statistics.median(without)
    samples_per_run = run_s / SAMPLE_INTERVAL_S + 2
    direct = samples_per_run * per_sample / run_s
    seen = verdict.seen_from("without")
    ratio, low, high = seen.ratio, seen.low, seen.high
    print(f"| {args.app} {args.layout} | median run {run_s:.3f} s | with/without sampler {ratio:.4f} "
          f"(95 % CI {low:.4f}-{high:.4f}) | one sample {1000 * per_sample:.2f} ms, {samples_per_run:.1f} per run: "
          f"{100 * direct:.3f} % of the run |")
    print(json.dumps({"app": args.app, "layout": args.layout, "pairs": args.pairs, "run_s": run_s,
                      "ratio": ratio, "low": low, "high": high, "sample_s": per_sample, "overhead": direct}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
