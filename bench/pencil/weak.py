#!/usr/bin/env python3
"""hympi-pencil weak scaling: core time per degree of freedom and step (the Time/DoF of Sillero et al., "Hybrid
OpenMP-MPI turbulent boundary layer code over 32k cores", Tables 1 and 4) vs one rank.

Usage: .venv/bin/python bench/pencil/weak.py [--per-rank 64 64 64] [--ranks 1,2] [--threads 1] [--steps 100]
                                             [--repeat 5] [--stream-repeats 10]

Every rank owns the same block: the grid grows in x (nx = per-rank nx x ranks; x is what the planes split),
so each rank packs, sends and transforms the same bytes at every rank count. Runs alternate between rank
counts, `--repeat` times each, so slow phases of a noisy machine hit every count alike. The figure is the
ratio of median Time/DoF at R ranks to 1 rank with a bootstrap confidence interval (hympi's comparison
engine); the target is <= 1.3. Layouts with more ranks x threads than the machine has cores are run,
printed and marked oversubscribed, and are not counted against the target. Interrupted (Ctrl-C, SIGINT), it prints
the table of the rounds it completed (at least one); every launch's wall time goes to stderr as it ends.

The bound measured in the same run: STREAM triad at every rank count, interleaved with the solver runs. A
memory-bound code's Time/DoF grows as the bandwidth per rank falls, so the table also prints the per-rank
triad bandwidth relative to one rank and the Time/DoF ratio scaled by it (1.0: the loss is all bandwidth).
A second table says where each step's time goes as the rank count grows: compute per step, and per transpose its
pack, exchange and unpack (each the slowest rank's, medians over the rounds), with the bytes a rank sends.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from hympi.launch.mpirun import LaunchSpec, launch
from hympi.stats.compare import MIN_SAMPLES, ratio_ci
from hympi.topology import machine_summary

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/, for the scripts' shared helpers
from common import parse_counts

TARGET = 1.3


def verified_record(spec: LaunchSpec) -> dict:
    """The result record of one verified run; exits naming the app and layout when it fails or does not verify."""
    started = time.monotonic()
    outcome = launch(spec, timeout=600)
    if outcome.status != "ok" or outcome.record is None or not outcome.record["verified"]:
        sys.exit(f"weak: {spec.app_binary} {spec.ranks}x{spec.threads} {outcome.status}: {outcome.stderr_tail()}")
    took = time.monotonic() - started
    print(f"weak: {spec.app_binary} {spec.ranks}x{spec.threads} ok, {took:.1f} s", file=sys.stderr, flush=True)
    return outcome.record


STEP_KEYS = ("compute_ms", "pack_ms", "exchange_ms", "unpack_ms", "sent_kib")


def step_times(metrics: dict) -> dict[str, float]:
    """One run's compute ms per step and, per transpose, pack, exchange and unpack ms and KiB sent by a rank
    (hympi-pencil's slowest-rank sums divided by the steps and transposes it timed)."""
    transposes = metrics["transpose_steps"]
    count = max(int(transposes["count"]), 1)
    return {"compute_ms": 1e3 * float(metrics["compute_s"]) / max(int(metrics["timed_steps"]), 1),
            "pack_ms": 1e3 * float(transposes["pack_s"]) / count,
            "exchange_ms": 1e3 * float(transposes["exchange_s"]) / count,
            "unpack_ms": 1e3 * float(transposes["unpack_s"]) / count,
            "sent_kib": float(transposes["bytes_sent"]) / count / 1024}


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
    parser.add_argument("--stream-repeats", type=int, default=10, help="timed triads per STREAM run")
    args = parser.parse_args()
    counts = sorted({*parse_counts(args.ranks, "--ranks"), 1})
    cores = machine_summary().cores
    nx, ny, nz = args.per_rank
    specs = {r: LaunchSpec("hympi-pencil", r, args.threads, oversubscribe=r * args.threads > cores,
                           app_args=("--grid", str(nx * r), str(ny), str(nz), "--steps", str(args.steps),
                                     "--exchange", args.exchange, "--wire", args.wire))
             for r in counts}
    stream = {r: LaunchSpec("hympi-stream", r, args.threads, oversubscribe=specs[r].oversubscribe,
                            app_args=("--repeats", str(args.stream_repeats))) for r in counts}
    samples: dict[int, list[float]] = {r: [] for r in counts}
    steps: dict[int, list[dict[str, float]]] = {r: [] for r in counts}
    triad_per_rank: dict[int, list[float]] = {r: [] for r in counts}
    rounds = 0
    try:
        for _ in range(args.repeat):
            round_metrics = {r: verified_record(specs[r])["metrics"] for r in counts}
            round_triads = {r: float(verified_record(stream[r])["rate"]) / r for r in counts}
            for r in counts:  # whole rounds only, so every rank count has the same number of samples
                samples[r].append(float(round_metrics[r]["time_per_dof_s"]))
                steps[r].append(step_times(round_metrics[r]))
                triad_per_rank[r].append(round_triads[r])
            rounds += 1
    except KeyboardInterrupt:
        print(f"weak: interrupted after {rounds} of {args.repeat} rounds", file=sys.stderr)
        if rounds == 0:
            return 130
    print(f"weak scaling, {nx}x{ny}x{nz} points per rank, {args.threads} thread(s) per rank, {cores} cores, "
          f"{rounds} round(s)")
    print("| ranks | grid | Time/DoF us (median) | ratio to 1 rank [95% CI] | triad GB/s per rank | "
          "triad per rank vs 1 rank | Time/DoF ratio x triad ratio | counted |")
    print("|---|---|---|---|---|---|---|---|")
    for r in counts:
        if rounds >= MIN_SAMPLES:
            ratio, low, high = ratio_ci(samples[r], samples[1])
        else:  # one round: the ratio of the medians, no interval
            ratio = low = high = float(np.median(samples[r])) / float(np.median(samples[1]))
        bandwidth = float(np.median(triad_per_rank[r])) / float(np.median(triad_per_rank[1]))
        counted = not specs[r].oversubscribe
        versus = "reference" if r == 1 else (f"{ratio:.3f} [{low:.3f}, {high:.3f}]" if rounds >= MIN_SAMPLES
                                             else f"{ratio:.3f} (1 round, no interval)")
        print(f"| {r} | {nx * r}x{ny}x{nz} | {float(np.median(samples[r])) * 1e6:.4f} | {versus} | "
              f"{float(np.median(triad_per_rank[r])):.2f} | {bandwidth:.3f} | {ratio * bandwidth:.3f} | "
              f"{'yes' if counted else 'no (oversubscribed)'} |")
        print(json.dumps({"ranks": r, "threads": args.threads, "grid": [nx * r, ny, nz], "time_per_dof_s": samples[r],
                          "ratio": ratio, "ci": [low, high], "triad_gbs_per_rank": triad_per_rank[r],
                          "triad_ratio": bandwidth, "oversubscribed": not counted,
                          "target_met": (high <= TARGET) if counted and rounds >= MIN_SAMPLES else None,
                          "steps": steps[r]}))
    print("### where a step's time goes (slowest rank's, medians over the rounds)")
    print("| ranks | compute ms per step | pack ms per transpose | exchange ms per transpose | "
          "unpack ms per transpose | KiB sent per rank and transpose |")
    print("|---|---|---|---|---|---|")
    for r in counts:
        median = {key: float(np.median([run[key] for run in steps[r]])) for key in STEP_KEYS}
        print(f"| {r} | {median['compute_ms']:.3g} | {median['pack_ms']:.3g} | {median['exchange_ms']:.3g} | "
              f"{median['unpack_ms']:.3g} | {median['sent_kib']:.0f} |")
    return 0 if rounds == args.repeat else 130


if __name__ == "__main__":
    sys.exit(main())
