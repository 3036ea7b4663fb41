#!/usr/bin/env python3
"""Halo exchange and overlap: spmv3d and rb3d per strategy against the STREAM-triad roofline.

Usage: .venv/bin/python bench/halo/run.py [--n 256] [--layouts 1x2,2x1] [--repeat 3] [--output FILE]
                                          [--parts spmv3d,rb3d,csr,seed] [--strategies bulk,split,commthread]

For every layout R x T: STREAM triad with that layout, then
  * hympi-spmv3d (27-point stencil, n^3, repeated SpMV) with --strategy bulk, split, commthread,
    and the assembled CSR operator with bulk (on csr-n^3); ratio = achieved GB/s / triad GB/s, where the
    achieved bytes are spmv3d's spmv_GBps, counted as moved (x read over the points it reaches, y written
    and, unless streamed, read for ownership: 16-24 B per point for the stencil; CSR adds 12 B per nonzero
    and 4 B per row) against the triad as STREAM counts it (24 B, its own write-allocate not counted),
    so up to 4/3 of the like-for-like figure: the record's bound_fraction is that one;
  * hympi-rb3d (n^3) with the same strategies, its colour sweeps counted at 24 B per point
    (u and f read, u written) and 3.5 flops per point;
  * the model of Kaiser and Baden, "Overlapping communication and computation with OpenMP and MPI" (§4.2): the
    bulk run's C = t_comm / (t_comm + t_comp) gives the predicted commthread time P (1 - C) / (P - 1) x t_bulk,
    printed next to the measured commthread time;
  * part `seed`: the SpMV problems of Chow, "How to use hybrid MPI-OpenMP on IBM SP systems", 40x40x3 and
    120x120x3 per node (one node here), t_comm and t_comp per SpMV in the bulk strategy.
commthread needs 2 threads per rank: at T = 1 the app must reject it (exit 2), which is checked.
The VM this was written on changes its memory bandwidth by 3x from one run to the next (other
tenants), so every application run is paired with a STREAM run of the same layout just before
it, the ratio is taken per pair, and the median over --repeat pairs is reported (with the median
triad and the median GB/s). Every run verifies its result (exact product, rb3d residuals equal to
a one-rank solve).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

from hympi.errors import UsageError
from hympi.launch.mpirun import LaunchSpec, format_command, validate_with_app

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/, for the scripts' shared helpers
import common
from common import options_of, parse_layouts, parse_names, record_of, require_positive

common.PROG = "bench"  # what this script's error lines have always begun with

STRATEGIES = ("bulk", "split", "commthread")
PARTS = ("spmv3d", "rb3d", "csr", "seed")
RUN_TIMEOUT_S = 900.0


def paired(spec: LaunchSpec, repeat: int, gbps: Callable[[dict], float]) -> dict:
    """Median over `repeat` (STREAM, app) pairs of the app's GB/s / triad GB/s, plus the median run."""
    stream_spec = LaunchSpec("hympi-stream", spec.ranks, spec.threads, app_args=("--repeats", "5"))
    pairs = []
    for _ in range(repeat):
        triad = record_of(stream_spec, RUN_TIMEOUT_S)["rate"]
        record = record_of(spec, RUN_TIMEOUT_S)
        pairs.append((gbps(record) / triad, triad, record))
    pairs.sort(key=lambda p: p[0])
    ratio, _, record = pairs[len(pairs) // 2]
    return {
        "ratio": ratio,
        "ratio_min": pairs[0][0],
        "ratio_max": pairs[-1][0],
        "triad_GBps": statistics.median(p[1] for p in pairs),
        "pair_ratios": [p[0] for p in pairs],
        "record": record,
        "command": format_command([spec.app_binary, *spec.app_args]),
    }


def rejected(spec: LaunchSpec) -> bool:
    """Whether the app refuses `spec` as bad input (exit 2) before launching."""
    try:
        validate_with_app(spec)
    except UsageError:
        return True
    return False


def main() -> int:
    """Runs the benchmark; one JSON line per measurement on stderr (and --output) as it completes, then markdown
    tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=256, help="grid points per axis for spmv3d and rb3d")
    parser.add_argument("--csr-n", type=int, default=128, help="grid points per axis for CSR (27 nonzeros per row)")
    parser.add_argument("--reps", type=int, default=20, help="SpMV repetitions per run")
    parser.add_argument("--iterations", type=int, default=20, help="rb3d iterations per run")
    parser.add_argument("--layouts", default="1x2,2x1")
    parser.add_argument("--repeat", type=int, default=3, help="(STREAM, app) pairs per configuration")
    parser.add_argument("--output", type=Path, help="also write the JSON lines here, each as soon as it is measured")
    parser.add_argument("--parts", default=",".join(PARTS), help="which measurements, of " + ",".join(PARTS))
    parser.add_argument("--strategies", default=",".join(STRATEGIES), help="strategies for spmv3d and rb3d")
    args = parser.parse_args()
    require_positive(options_of(args, "n", "csr_n", "reps", "iterations", "repeat"))
    layouts = [(f"{r}x{t}", r, t)
               for r, t in parse_layouts(args.layouts, "RANKSxTHREADS with positive counts (e.g. 1x2)")]
    parts = parse_names(args.parts, PARTS, "--parts")
    strategies = parse_names(args.strategies, STRATEGIES, "--strategies")
    points = float(args.n) ** 3
    common = ("--reps", str(args.reps), "--cg-iterations", "0", "--verify", "exact")
    n = str(args.n)
    csr_n = str(args.csr_n)

    def spmv_gbps(rec: dict) -> float:
        return float(rec["metrics"]["spmv_GBps"])

    def rb3d_gbps(rec: dict) -> float:
        return 24.0 * points / rec["metrics"]["sweep_per_s"] * 1e-9

    configs: list[tuple[str, str, str, tuple[str, ...], Callable[[dict], float]]] = []
    for strategy in strategies if "spmv3d" in parts else ():
        configs.append(("spmv3d", "stencil", strategy, ("--global", n, n, n, *common), spmv_gbps))
    for strategy in strategies if "rb3d" in parts else ():
        rb3d_args = ("--size", n, "--iterations", str(args.iterations), "--residual-every", str(args.iterations))
        configs.append(("rb3d", "7-point", strategy, rb3d_args, rb3d_gbps))
    if "csr" in parts:
        configs.append(
            (
                "spmv3d",
                f"csr ({csr_n}^3)",
                "bulk",
                ("--global", csr_n, csr_n, csr_n, *common, "--operator", "csr"),
                spmv_gbps,
            )
        )
    rows: list[dict] = []
    seed_rows: list[dict] = []
    if args.output:
        args.output.write_text("")

    def record_row(row: dict, into: list[dict]) -> None:
        """Keep `row` and append it to --output at once, so a run cut short keeps what it measured."""
        into.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
        if args.output:
            with args.output.open("a") as out:
                out.write(json.dumps(row) + "\n")

    for layout, ranks, threads in layouts:
        bulk_model: dict[str, dict] = {}
        for app, operator, strategy, app_args, gbps in configs:
            binary = f"hympi-{app}"
            spec = LaunchSpec(binary, ranks, threads, app_args=(*app_args, "--strategy", strategy))
            row: dict = {"layout": layout, "app": app, "operator": operator, "strategy": strategy}
            if threads < 2 and strategy == "commthread":
                row["result"] = "rejected (exit 2)" if rejected(spec) else "NOT REJECTED"
                record_row(row, rows)
                continue
            p = paired(spec, args.repeat, gbps)
            rec = p.pop("record")
            m = rec["metrics"]
            per_s = m["spmv_per_apply_s"] if app == "spmv3d" else m["sweep_per_s"]
            flops_per_s = rec["rate"] if app == "spmv3d" else m["flops_per_point_iteration"] / 2 * points / per_s * 1e-9
            row.update(p)
            row.update(
                {
                    "GFLOPs": flops_per_s,
                    "GBps": gbps(rec),
                    "per_s": per_s,
                    "t_comm_s": m["t_comm_s"],
                    "t_comp_s": m["t_comp_s"],
                }
            )
            if strategy == "bulk" and m.get("commthread_model") and operator != f"csr ({csr_n}^3)":
                bulk_model[app] = m["commthread_model"]
            if strategy == "commthread" and app in bulk_model:
                row["model_predicted_s"] = bulk_model[app]["predicted_s"]
                row["model_C"] = bulk_model[app]["C"]
            record_row(row, rows)
        for size in ((40, 40, 3), (120, 120, 3)) if "seed" in parts else ():
            seed_args = ("--global", *map(str, size), "--reps", "500", "--cg-iterations", "0", "--verify", "exact")
            rec = record_of(LaunchSpec("hympi-spmv3d", ranks, threads, app_args=seed_args), RUN_TIMEOUT_S)
            reps = rec["metrics"]["spmv_reps"]
            record_row(
                {
                    "layout": layout,
                    "problem": "x".join(map(str, size)),
                    "t_comm_ms": rec["metrics"]["t_comm_s"] / reps * 1e3,
                    "t_comp_ms": rec["metrics"]["t_comp_s"] / reps * 1e3,
                    "total_ms": rec["metrics"]["spmv_per_apply_s"] * 1e3,
                    "GFLOPs": rec["rate"],
                },
                seed_rows,
            )

    print(
        "| layout | app | operator | strategy | GFLOP/s | GB/s | triad GB/s | ratio (min..max) | t per apply/sweep "
        "| t_comm | t_comp | commthread: modelled vs measured |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if "result" in r:
            print(f"| {r['layout']} | {r['app']} | {r['operator']} | {r['strategy']} | {r['result']} | | | | | | | |")
            continue
        model_text = ""
        if "model_predicted_s" in r:
            model_text = f"C = {r['model_C']:.3f}: {r['model_predicted_s'] * 1e3:.2f} ms vs {r['per_s'] * 1e3:.2f} ms"
        print(
            f"| {r['layout']} | {r['app']} | {r['operator']} | {r['strategy']} | {r['GFLOPs']:.2f} | "
            f"{r['GBps']:.2f} | {r['triad_GBps']:.2f} | {r['ratio']:.2f} ({r['ratio_min']:.2f}..{r['ratio_max']:.2f}) "
            f"| {r['per_s'] * 1e3:.2f} ms | {r['t_comm_s']:.4f} s | {r['t_comp_s']:.4f} s | {model_text} |"
        )
    print()
    print("| layout | problem (per node) | t_comm ms | t_comp ms | total ms | GFLOP/s |")
    print("|---|---|---|---|---|---|")
    for r in seed_rows:
        print(
            f"| {r['layout']} | {r['problem']} | {r['t_comm_ms']:.4f} | {r['t_comp_ms']:.4f} | "
            f"{r['total_ms']:.4f} | {r['GFLOPs']:.2f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
