#!/usr/bin/env python3
"""Ping-pong latency and bandwidth per level of the communication hierarchy, with fitted alpha/beta.

Usage: .venv/bin/python bench/pingpong/run.py [--ranks 2] [--virtual-nodes 1] [--iterations 1000]
                                              [--max-bytes 4194304] [--repeat 3]

Runs hympi-pingpong (core binding, compact) --repeat times and keeps, per level and message size, the
fastest one-way time (noise only ever adds time). Prints a markdown table per level and the multi-pair
table of the last run, then one JSON line per level. With --virtual-nodes N the "network" level is
shared memory between pretend nodes: it shows the probe works, not what a real network does.
"""

from __future__ import annotations

import argparse
import json
import sys

from hympi.launch.mpirun import LaunchSpec, launch

SHOW = (0, 8, 64, 1024, 8192, 65536, 1 << 20, 4 << 20)


def main() -> int:
    """Runs the probe and prints the tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--virtual-nodes", type=int, default=1)
    parser.add_argument("--iterations", type=int, default=1000)
    parser.add_argument("--max-bytes", type=int, default=4 << 20)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    spec = LaunchSpec("hympi-pingpong", args.ranks, 1, "core", "compact",
                      ("--iterations", str(args.iterations), "--max-bytes", str(args.max_bytes)),
                      oversubscribe=True, env=(("HYMPI_VIRTUAL_NODES", str(args.virtual_nodes)),))
    best: dict[str, dict] = {}
    record: dict = {}
    for _ in range(args.repeat):
        outcome = launch(spec, timeout=600)
        if outcome.status != "ok" or outcome.record is None:
            sys.exit(f"bench: hympi-pingpong {outcome.status}: {outcome.stderr_tail()}")
        record = outcome.record
        for name, level in record["metrics"]["levels"].items():
            if name not in best:
                best[name] = dict(level)
                continue
            b = best[name]
            b["latency_us"] = [min(x, y) for x, y in zip(b["latency_us"], level["latency_us"], strict=True)]
    for name, level in best.items():
        level["bandwidth_mbs"] = [s / t if t > 0 else 0.0
                                  for s, t in zip(level["bytes"], level["latency_us"], strict=True)]
        print(f"\n### level `{name}` (ranks {level['pair'][0]},{level['pair'][1]}; alpha {level['alpha_us']:.2f} us, "
              f"beta {level['beta_mbs']:.0f} MB/s in the last run's fit)\n")
        print("| bytes | one-way us | MB/s |")
        print("|---|---|---|")
        for s, t, bw in zip(level["bytes"], level["latency_us"], level["bandwidth_mbs"], strict=True):
            if s in SHOW or s == level["bytes"][-1]:
                print(f"| {s} | {t:.2f} | {bw:.0f} |")
    multi = record["metrics"]["multi"]
    if multi:
        print("\n| level | pairs | overhead us | per pair MB/s (min .. max) | aggregate MB/s |")
        print("|---|---|---|---|---|")
        for m in multi:
            print(f"| {m['level']} | {m['pairs']} | {m['overhead_us']:.2f} | {m['per_pair_min_mbs']:.0f} .. "
                  f"{m['per_pair_max_mbs']:.0f} | {m['aggregate_mbs']:.0f} |")
    for name, level in best.items():
        print(json.dumps({"level": name, **level}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
