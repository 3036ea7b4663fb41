#!/usr/bin/env python3
"""hympi-pencil weak scaling: core time per degree of freedom and step (the seed's Time/DoF) vs one rank.

Usage: .venv/bin/python bench/pencil/weak.py [--per-rank 64 64 64] [--ranks 1,2] [--threads 1] [--steps 100]
                                             [--repeat 5]

Every rank owns the same block: the grid grows in x (nx = per-rank nx x ranks; x is what the planes split),
so each rank packs, sends and transforms the same bytes at every rank count. Runs alternate between rank
counts, `--repeat` times each, so slow phases of a noisy machine hit every count alike. The figure is the
ratio of median Time/DoF at R ranks to 1 rank with a bootstrap confidence interval (hympi's comparison
engine); the target is <= 1.3. Layouts with more ranks x threads than the machine has cores are run,
printed and marked oversubscribed, and are not counted against the target.

The bound measured in the same run: STREAM triad at every rank count, interleaved with the solver runs. A
memory-bound code's Time/DoF grows as the bandwidth per rank falls, so the table also prints the per-rank
triad bandwidth relative to one rank and the Time/DoF ratio scaled by it (1.0: the loss is all bandwidth).
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from hympi.launch.mpirun import LaunchSpec, launch
from hympi.report.compare import ratio_ci
from hympi.topology import machine_summary

TARGET = 1.3


def verified_record(spec: LaunchSpec) -> dict:
    """The result record of one verified run; exits naming the app and layout when it fails or does not verify."""
    outcome = launch(spec, timeout=600)
    if outcome.status != "ok" or outcome.record is None or not outcome.record["verified"]:
        sys.exit(f"weak: {spec.app_binary} {spec.ranks}x{spec.threads} {outcome.status}: {outcome.stderr_tail()}")
    return outcome.record


def main() -> int:
    """Runs the sweep, prints a markdown table and one JSON line per rank count."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-rank", type=int, nargs=3, default=[64, 64, 64], metavar=("NX", "NY", "NZ"))
    parser.add_argument("--ranks", default="1,2")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--exchange", default="alltoallv")
    parser.add_argument("--wire", default="double")
    args = parser.parse_args()
    counts = sorted({int(r) for r in args.ranks.split(",")} | {1})
    cores = machine_summary().cores
    nx, ny, nz = args.per_rank
    specs = {r: LaunchSpec("hympi-pencil", r, args.threads, oversubscribe=r * args.threads > cores,
                           app_args=("--grid", str(nx * r), str(ny), str(nz), "--steps", str(args.steps),
                                     "--exchange", args.exchange, "--wire", args.wire))
             for r in counts}
    stream = {r: LaunchSpec("hympi-stream", r, args.threads, oversubscribe=specs[r].oversubscribe,
                            app_args=("--repeats", "10")) for r in counts}
    samples: dict[int, list[float]] = {r: [] for r in counts}
    triad_per_rank: dict[int, list[float]] = {r: [] for r in counts}
    for _ in range(args.repeat):
        for r in counts:
            samples[r].append(float(verified_record(specs[r])["metrics"]["time_per_dof_s"]))
            triad_per_rank[r].append(float(verified_record(stream[r])["rate"]) / r)
    print(f"weak scaling, {nx}x{ny}x{nz} points per rank, {args.threads} thread(s) per rank, {cores} cores")
    print("| ranks | grid | Time/DoF us (median) | ratio to 1 rank [95% CI] | triad GB/s per rank | "
          "triad per rank vs 1 rank | Time/DoF ratio x triad ratio | counted |")
    print("|---|---|---|---|---|---|---|---|")
    for r in counts:
        ratio, low, high = ratio_ci(samples[r], samples[1])
        bandwidth = float(np.median(triad_per_rank[r])) / float(np.median(triad_per_rank[1]))
        counted = not specs[r].oversubscribe
        versus = "reference" if r == 1 else f"{ratio:.3f} [{low:.3f}, {high:.3f}]"
        print(f"| {r} | {nx * r}x{ny}x{nz} | {float(np.median(samples[r])) * 1e6:.4f} | {versus} | "
              f"{float(np.median(triad_per_rank[r])):.2f} | {bandwidth:.3f} | {ratio * bandwidth:.3f} | "
              f"{'yes' if counted else 'no (oversubscribed)'} |")
        print(json.dumps({"ranks": r, "threads": args.threads, "grid": [nx * r, ny, nz], "time_per_dof_s": samples[r],
                          "ratio": ratio, "ci": [low, high], "triad_gbs_per_rank": triad_per_rank[r],
                          "triad_ratio": bandwidth, "oversubscribed": not counted,
                          "target_met": (high <= TARGET) if counted else None}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
