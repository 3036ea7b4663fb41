#!/usr/bin/env python3
"""hympi-pencil weak scaling: core time per degree of freedom and step (the seed's Time/DoF) vs one rank.

Usage: .venv/bin/python bench/pencil/weak.py [--per-rank 32 64 64] [--ranks 1,2] [--threads 1] [--steps 20]
                                             [--repeat 5]

Every rank owns the same block: the grid grows in x (nx = per-rank nx x ranks; x is what the planes split),
so each rank packs, sends and transforms the same bytes at every rank count. Runs alternate between rank
counts, `--repeat` times each, so slow phases of a noisy machine hit every count alike. The figure is the
ratio of median Time/DoF at R ranks to 1 rank with a bootstrap confidence interval (hympi's comparison
engine); the target is <= 1.3. Layouts with more ranks x threads than the machine has cores are run,
printed and marked oversubscribed, and are not counted against the target.
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


def per_dof(spec: LaunchSpec) -> float:
    """Time/DoF of one verified run; exits naming the layout when the run fails or does not verify."""
    outcome = launch(spec, timeout=600)
    if outcome.status != "ok" or outcome.record is None or not outcome.record["verified"]:
        sys.exit(f"weak: {spec.ranks}x{spec.threads} {outcome.status}: {outcome.stderr_tail()}")
    return float(outcome.record["metrics"]["time_per_dof_s"])


def main() -> int:
    """Runs the sweep, prints a markdown table and one JSON line per rank count."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-rank", type=int, nargs=3, default=[32, 64, 64], metavar=("NX", "NY", "NZ"))
    parser.add_argument("--ranks", default="1,2")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--steps", type=int, default=20)
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
    samples: dict[int, list[float]] = {r: [] for r in counts}
    for _ in range(args.repeat):
        for r in counts:
            samples[r].append(per_dof(specs[r]))
    print(f"weak scaling, {nx}x{ny}x{nz} points per rank, {args.threads} thread(s) per rank, {cores} cores")
    print("| ranks | grid | Time/DoF us (median) | ratio to 1 rank [95% CI] | counted |")
    print("|---|---|---|---|---|")
    for r in counts:
        ratio, low, high = ratio_ci(samples[r], samples[1])
        counted = not specs[r].oversubscribe
        median = float(np.median(samples[r]))
        versus = "reference" if r == 1 else f"{ratio:.3f} [{low:.3f}, {high:.3f}]"
        print(f"| {r} | {nx * r}x{ny}x{nz} | {median * 1e6:.4f} | {versus} | "
              f"{'yes' if counted else 'no (oversubscribed)'} |")
        print(json.dumps({"ranks": r, "threads": args.threads, "grid": [nx * r, ny, nz], "time_per_dof_s": samples[r],
                          "ratio": ratio, "ci": [low, high], "oversubscribed": not counted,
                          "target_met": (high <= TARGET) if counted else None}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
