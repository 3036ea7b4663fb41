#!/usr/bin/env python3
"""Plane <-> pencil transpose: hympi (every exchange x wire) against FFTW-MPI's transpose, and the local blocked
transpose against a STREAM copy (issue 16's targets: <= 1.0x FFTW in double, <= 0.7x with a single-precision
wire, local transpose >= 0.5 of copy bandwidth).

Usage: .venv/bin/python bench/pencil/transpose.py [--grids 64x64x64,128x128x128,256x256x128] [--ranks 1,2]
                                                  [--reps 20] [--repeat 3] [--threads 1] [--output FILE]
                                                  [--fftw-planner measure|patient]

Builds nothing: run `cmake --build build --target hympi-bench-transpose` first (HYMPI_BIN_DIR or build/bin).
Each (grid, ranks) is run --repeat times; every run times all implementations alternately on the same global
array (medians of --reps round trips planes -> pencils -> planes, max over ranks) and verifies every result
against the global array. The table shows the median over the runs of each run's ratio hympi / FFTW (round trip)
and of the local transpose / copy bandwidth ratio, then each hympi variant's time per transpose in its three steps
(pack, exchange, unpack: medians over the runs of rank 0's means). A layout with more ranks x threads than cores is
marked oversubscribed: its figures are not counted against the targets.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from hympi.launch.mpirun import LaunchSpec, build_command, format_command

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/, for the scripts' shared helpers
from common import options_of, parse_counts, parse_shapes, require_positive

IMPLEMENTATIONS = ("alltoallv/double", "alltoall/double", "pairwise/double", "alltoallv/single", "alltoall/single",
                   "pairwise/single")
BENCH_LINE = re.compile(r"^HYMPI_BENCH (\{.*\})$", re.MULTILINE)


def run_once(grid: tuple[int, ...], ranks: int, args: argparse.Namespace) -> dict[str, Any]:
    """One verified benchmark run's HYMPI_BENCH record (exits 1 with the command and stderr on a failure)."""
    bench_args = ("--grid", *(str(n) for n in grid), "--reps", str(args.reps), "--fftw-planner", args.fftw_planner)
    spec = LaunchSpec(app_binary="hympi-bench-transpose", ranks=ranks, threads=args.threads, bind="none",
                      app_args=bench_args, oversubscribe=True)
    cmd = build_command(spec)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, check=False,
                          env={**os.environ, **spec.app_env()})
    match = BENCH_LINE.search(proc.stdout)
    if proc.returncode != 0 or match is None:
        sys.exit(f"transpose.py: {format_command(cmd)}: exit {proc.returncode}\n{proc.stderr[-2000:]}")
    record: dict[str, Any] = json.loads(match.group(1))
    if not record["verified"]:
        sys.exit(f"transpose.py: {format_command(cmd)}: a result was wrong\n{proc.stdout}")
    return record


def summarise(records: list[dict[str, Any]]) -> dict[str, float]:
    """Median over the runs of each implementation's ratio to FFTW, FFTW's round trip and the local/copy ratio."""
    out: dict[str, float] = {}
    by_name: dict[str, list[float]] = {}
    for record in records:
        for result in record["results"]:
            by_name.setdefault(result["name"], []).append(result["ratio_to_fftw"])
            if result["name"] == "fftw":
                by_name.setdefault("fftw_ms", []).append(1e3 * result["round_trip_s"])
        by_name.setdefault("local", []).append(record["local"]["ratio"])
    for name, values in by_name.items():
        out[name] = statistics.median(values)
    return out


def steps(records: list[dict[str, Any]]) -> dict[str, tuple[float, float, float]]:
    """Per hympi variant: ms per transpose (either direction) in pack, exchange and unpack, medians over the runs.
    Forward, pack is the realignment and unpack the local transpose; backward, the other way round."""
    per_run: dict[str, list[tuple[float, float, float]]] = {}
    for record in records:
        for result in record["results"]:
            times = result["detail"].get("times")
            if times:
                pack, exchange, unpack = (1e3 * times[step] / times["count"]
                                          for step in ("pack_s", "exchange_s", "unpack_s"))
                per_run.setdefault(result["name"], []).append((pack, exchange, unpack))
    return {name: (statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs),
                   statistics.median(r[2] for r in runs)) for name, runs in per_run.items()}


def main(argv: list[str] | None = None) -> int:
    """Runs every grid x rank count, prints the table (and writes every record with --output)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--grids", default="64x64x64,128x128x128,256x256x128")
    parser.add_argument("--ranks", default="1,2")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1, help="OpenMP threads per rank (FFTW runs 1 per rank)")
    parser.add_argument("--fftw-planner", choices=("measure", "patient"), default="measure")
    parser.add_argument("--output", help="write every run's record as JSON to this file")
    args = parser.parse_args(argv)
    grids = parse_shapes(args.grids, "--grids", 3, "NXxNYxNZ with positive sizes (e.g. 128x128x128)", "grid")
    rank_counts = parse_counts(args.ranks, "--ranks")
    require_positive(options_of(args, "reps", "repeat", "threads"))
    cores = os.cpu_count() or 1
    header = (f"{'grid':>13} {'ranks':>5} {'over':>4} {'FFTW ms':>8} "
              + " ".join(f"{name:>16}" for name in IMPLEMENTATIONS) + f" {'local/copy':>10}")
    print("ratios hympi / FFTW-MPI (round trip planes -> pencils -> planes, medians); local blocked transpose / "
          f"STREAM copy bandwidth; {args.threads} thread(s) per rank, {cores} cores")
    print(header)
    everything = []
    step_rows = []
    for grid in grids:
        for ranks in rank_counts:
            records = [run_once(grid, ranks, args) for _ in range(args.repeat)]
            everything += records
            s = summarise(records)
            over = "yes" if ranks * args.threads > cores else "no"
            print(f"{'x'.join(map(str, grid)):>13} {ranks:>5} {over:>4} {s['fftw_ms']:>8.2f} "
                  + " ".join(f"{s[name]:>16.3f}" for name in IMPLEMENTATIONS) + f" {s['local']:>10.3f}", flush=True)
            step_rows.append((grid, ranks, steps(records)))
    print("\nms per transpose, pack + exchange + unpack (rank 0, medians over the runs)")
    print(f"{'grid':>13} {'ranks':>5} " + " ".join(f"{name:>22}" for name in IMPLEMENTATIONS))
    for grid, ranks, by_name in step_rows:
        print(f"{'x'.join(map(str, grid)):>13} {ranks:>5} "
              + " ".join(f"{'{:.2f}+{:.2f}+{:.2f}'.format(*by_name[name]):>22}" for name in IMPLEMENTATIONS))
    if args.output:
        with open(args.output, "w", encoding="utf-8") as out:
            json.dump(everything, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
