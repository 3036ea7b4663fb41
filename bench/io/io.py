#!/usr/bin/env python3
"""Checkpoint I/O (issue 17): hympi::h5 checkpoint write and read bandwidth per layout and option set, against dd
on the same file system with the same byte count in the same run (targets: write >= 0.7 and read >= 0.7 of dd at
1x2 and 2x1 for a 512 MiB field), and with --rb3d the checkpoint overhead of hympi-rb3d (target < 5 % of run time
with one checkpoint per 50 iterations at 256^3), judged both against runs without checkpoints and on the cost each
run with checkpoints measures within itself (IoRecord.checkpoint_cost_s, which leaves the machine's drift between
runs out).

Usage: .venv/bin/python bench/io/io.py [--mib 512 | --global X Y Z] [--dir DIR] [--layouts 1x2,2x1] [--repeat 3]
                                       [--sieve 0,fs,4M] [--alignment 0,fs] [--transfer collective,independent]
                                       [--hints none] [--slab 8M] [--split auto] [--rb3d] [--rb3d-size 256]
                                       [--rb3d-iterations 200] [--rb3d-every 50] [--output FILE]

Builds nothing: run `cmake --build build --target hympi-bench-io hympi-rb3d` first (HYMPI_BIN_DIR or build/bin).

Each round runs, per layout, the dd reference and then hympi-bench-io (every option set once, see its header for
what a write and a read include), so a ratio compares measurements minutes apart at most; the table shows medians
over the rounds of each round's ratio. The dd reference, byte count = the field's:
  write  dd if=/dev/zero of=F bs=4M count=N conv=fdatasync     (data on disk before dd ends, as the commit's sync)
  read   the faster of  dd if=F of=/dev/null bs=4M  after dropping F's pages (dd iflag=nocache count=0: clean
         pages leave the page cache without root)  and  dd if=F of=/dev/null bs=4M iflag=direct (O_DIRECT)
The benchmark drops its file's pages the same way (posix_fadvise DONTNEED) before each read and reports the share
mincore() still sees resident. Caches outside the VM (the host's) are out of reach of both alike.
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

from hympi.iorecord import io_record
from hympi.launch.mpirun import LaunchSpec, build_command, format_command
from hympi.stats.compare import MIN_SAMPLES, median_ci, slowdown_ci

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/, for the scripts' shared helpers
from common import options_of, parse_layouts, reject, require_positive

BENCH_LINE = re.compile(r"^HYMPI_BENCH (\{.*\})$", re.MULTILINE)
RESULT_LINE = re.compile(r"^HYMPI_RESULT (\{.*\})$", re.MULTILINE)
DD_LINE = re.compile(r"^(\d+) bytes .* copied, ([0-9.e+-]+) s", re.MULTILINE)
DD_BLOCK = 4 * 2**20
GB = 1e9
TARGET = 0.7
OVERHEAD_TARGET = 0.05


def dd(*args: str) -> float:
    """Runs dd (C locale) and returns its seconds; exits 1 with its stderr when it fails."""
    proc = subprocess.run(["dd", *args], capture_output=True, text=True, check=False,
                          env={**os.environ, "LC_ALL": "C"}, timeout=1800)
    match = DD_LINE.search(proc.stderr)
    if proc.returncode != 0 or (match is None and "count=0" not in args):
        sys.exit(f"io.py: dd {' '.join(args)}: exit {proc.returncode}\n{proc.stderr[-1000:]}")
    return float(match.group(2)) if match else 0.0


def dd_reference(directory: Path, nbytes: int) -> dict[str, float]:
    """dd's write (fdatasync) and read (cold page cache, and O_DIRECT) bandwidth in GB/s for `nbytes` in
    `directory`; the file is removed afterwards."""
    blocks = max(1, -(-nbytes // DD_BLOCK))
    target = directory / f"hympi-io-dd-{os.getpid()}.bin"
    size = blocks * DD_BLOCK
    try:
        write_s = dd("if=/dev/zero", f"of={target}", f"bs={DD_BLOCK}", f"count={blocks}", "conv=fdatasync")
        dd(f"if={target}", "iflag=nocache", "count=0")  # drops the (clean) pages of the whole file
        cold_s = dd(f"if={target}", "of=/dev/null", f"bs={DD_BLOCK}")
        direct_s = dd(f"if={target}", "of=/dev/null", f"bs={DD_BLOCK}", "iflag=direct")
    finally:
        target.unlink(missing_ok=True)
    cold, direct = size / cold_s / GB, size / direct_s / GB
    return {"bytes": float(size), "write_gbs": size / write_s / GB, "read_cold_gbs": cold, "read_direct_gbs": direct,
            "read_gbs": max(cold, direct)}


def launch(binary: str, ranks: int, threads: int, args: tuple[str, ...], pattern: re.Pattern[str],
           ) -> list[dict[str, Any]]:
    """Runs `binary` at ranks x threads (hympi binds, one thread per core) and returns its records."""
    spec = LaunchSpec(app_binary=binary, ranks=ranks, threads=threads, bind="core", app_args=args)
    cmd = build_command(spec)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=3600, check=False,
                          env={**os.environ, **spec.app_env()})
    records = [json.loads(m) for m in pattern.findall(proc.stdout)]
    if proc.returncode != 0 or not records:
        sys.exit(f"io.py: {format_command(cmd)}: exit {proc.returncode}\nstdout: {proc.stdout[-1500:]}\n"
                 f"stderr: {proc.stderr[-3000:]}")
    return records


def bench_args(args: argparse.Namespace) -> tuple[str, ...]:
    """hympi-bench-io's arguments."""
    size = ("--global", *map(str, args.global_)) if args.global_ else ("--mib", str(args.mib))
    return (*size, "--dir", str(args.dir), "--split", args.split, "--sieve", args.sieve, "--alignment",
            args.alignment, "--transfer", args.transfer, "--hints", args.hints, "--slab", args.slab)


def io_table(rounds: list[dict[str, Any]], layouts: list[tuple[int, int]]) -> list[dict[str, Any]]:
    """Per layout and case: medians over the rounds of bandwidth and of the per-round ratio to dd."""
    rows = []
    for ranks, threads in layouts:
        label = f"{ranks}x{threads}"
        mine = [r for r in rounds if r["layout"] == label]
        cases = dict.fromkeys(c["case"] for r in mine for c in r["cases"])
        for case in cases:
            samples = [(r["dd"], c) for r in mine for c in r["cases"] if c["case"] == case]
            rows.append({
                "layout": label, "case": case, "rounds": len(samples),
                "write_gbs": statistics.median(c["write_gbs"] for _, c in samples),
                "read_gbs": statistics.median(c["read_gbs"] for _, c in samples),
                "write_ratio": statistics.median(c["write_gbs"] / d["write_gbs"] for d, c in samples),
                "read_ratio": statistics.median(c["read_gbs"] / d["read_gbs"] for d, c in samples),
                "commit_share": statistics.median(c["commit_s"] / c["write_s"] for _, c in samples),
                "resident": max(c["resident_before_read"] for _, c in samples),
                "verified": all(c["verified"] for _, c in samples)})
    return rows


def run_rb3d(args: argparse.Namespace, ranks: int, threads: int) -> list[dict[str, Any]]:
    """hympi-rb3d at --rb3d-size^3 with and without a checkpoint per --rb3d-every iterations, alternating, --repeat
    times; one record per run (its time_s, io totals, checkpoint phase, the checkpoints' cost measured within it)."""
    base = ("--size", str(args.rb3d_size), "--iterations", str(args.rb3d_iterations), "--min-time", "0",
            "--verify", "none", "--allow-unverified")  # timing only: the restart tests verify
    ckpt = str(Path(args.dir) / f"hympi-io-rb3d-{os.getpid()}.h5")
    runs = []
    try:
        for _ in range(args.repeat):
            for every in (0, args.rb3d_every):
                extra = ("--checkpoint", ckpt, "--checkpoint-every", str(every)) if every else ()
                (record,) = launch("hympi-rb3d", ranks, threads, (*base, *extra), RESULT_LINE)
                io = record.get("io") or {}
                typed = io_record(record)
                runs.append({"layout": f"{ranks}x{threads}", "every": every, "time_s": record["time_s"],
                             "checkpoints": io.get("checkpoints", 0), "checkpoint_s": io.get("checkpoint_s", 0.0),
                             "checkpoint_bytes": io.get("checkpoint_bytes", 0.0),
                             "checkpoint_background_s": io.get("checkpoint_background_s", 0.0),
                             "checkpoint_cost_s": typed.checkpoint_cost_s if typed is not None else None,
                             "steps_writing": io.get("steps_writing", 0),
                             "verified": record["verified"]})
    finally:
        Path(ckpt).unlink(missing_ok=True)
    return runs


def rb3d_table(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per layout: median run time without and with checkpoints, the checkpoint seconds and both overhead shares, the
    slowdown's 95 % interval (None with fewer than MIN_SAMPLES runs a side) and its verdict against the target; and
    the cost each run with checkpoints measured within itself (IoRecord.checkpoint_cost_s over its time), the median
    of those with its interval and verdict."""
    rows = []
    for label in dict.fromkeys(r["layout"] for r in runs):
        plain = [r["time_s"] for r in runs if r["layout"] == label and not r["every"]]
        with_ckpt = [r for r in runs if r["layout"] == label and r["every"]]
        t_plain = statistics.median(plain)
        t_ckpt = statistics.median(r["time_s"] for r in with_ckpt)
        ckpt_s = statistics.median(r["checkpoint_s"] for r in with_ckpt)
        rows.append({"layout": label, "time_plain_s": t_plain, "time_checkpoint_s": t_ckpt,
                     "checkpoints": with_ckpt[0]["checkpoints"], "checkpoint_s": ckpt_s,
                     "background_s": statistics.median(r["checkpoint_background_s"] for r in with_ckpt),
                     "checkpoint_gbs": statistics.median(r["checkpoint_bytes"] / r["checkpoint_s"] / GB
                                                         for r in with_ckpt if r["checkpoint_s"] > 0),
                     "share": statistics.median(r["checkpoint_s"] / r["time_s"] for r in with_ckpt),
                     "slowdown": (t_ckpt - t_plain) / t_ckpt,
                     **slowdown_verdict(plain, [r["time_s"] for r in with_ckpt]),
                     **in_run_verdict([r["checkpoint_cost_s"] / r["time_s"] for r in with_ckpt
                                       if r.get("checkpoint_cost_s") is not None])})
    return rows


def judged(ci: tuple[float, float]) -> str:
    """The target judged on an interval of the slowdown: 'met' only when all of it is under OVERHEAD_TARGET,
    'MISSED' when all of it is at or above, else not shown."""
    if ci[1] < OVERHEAD_TARGET:
        return "met"
    if ci[0] >= OVERHEAD_TARGET:
        return "MISSED"
    return f"not shown (95 % CI {100 * ci[0]:.1f}-{100 * ci[1]:.1f} %)"


def slowdown_verdict(plain: list[float], with_ckpt: list[float]) -> dict[str, Any]:
    """The slowdown 1 - without / with (run times, medians) as an interval from the comparison engine, and the
    target judged on it. (Judged on the solver thread's own share instead, the writer's cost to the solver's
    threads went unseen: 4 % share beside an 8.5 % slowdown at 30 pairs, docs/performance.md.)"""
    if min(len(plain), len(with_ckpt)) < MIN_SAMPLES:
        return {"slowdown_ci": None, "verdict": f"not judged (fewer than {MIN_SAMPLES} runs a side)"}
    _, low, high = slowdown_ci(plain, with_ckpt)
    return {"slowdown_ci": (low, high), "verdict": judged((low, high))}


def in_run_verdict(fractions: list[float]) -> dict[str, Any]:
    """The runs' own cost over their time (each a difference within one run, so the runs' spread from minute to
    minute is not in it): the median, its interval (median_ci) and the target judged on it."""
    if len(fractions) < MIN_SAMPLES:
        return {"in_run": None, "in_run_ci": None, "in_run_verdict": f"not judged (fewer than {MIN_SAMPLES} runs)"}
    median, low, high = median_ci(fractions)
    return {"in_run": median, "in_run_ci": (low, high), "in_run_verdict": judged((low, high))}


def file_system(directory: Path) -> str:
    """'ext4 /dev/vda on /' for the directory (df), or 'unknown'."""
    proc = subprocess.run(["df", "--output=fstype,source,target", str(directory)], capture_output=True, text=True,
                          check=False)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or len(lines) < 2:
        return "unknown"
    fstype, source, target = [*lines[1].split(), "?", "?", "?"][:3]
    return f"{fstype} {source} on {target}"


def main(argv: list[str] | None = None) -> int:
    """Runs the rounds, prints the tables (and writes every record with --output); exit 1 on a wrong read-back."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mib", type=int, default=512, help="field size in MiB (even; 512 x 512 x MIB/2 doubles)")
    parser.add_argument("--global", dest="global_", type=int, nargs=3, metavar=("X", "Y", "Z"),
                        help="the field's points instead of --mib (tests use tiny ones)")
    parser.add_argument("--dir", default=".", help="where the files go (the file system measured)")
    parser.add_argument("--layouts", default="1x2,2x1")
    parser.add_argument("--repeat", type=int, default=3, help="rounds (dd + every case per layout)")
    parser.add_argument("--sieve", default="0,fs,4M")
    parser.add_argument("--alignment", default="0,fs")
    parser.add_argument("--transfer", default="collective,independent")
    parser.add_argument("--hints", default="none")
    parser.add_argument("--slab", default="8M", help="bytes h5 packs per transfer, or full (one full-size copy)")
    parser.add_argument("--split", default="auto", choices=("auto", "x", "y", "z"))
    parser.add_argument("--rb3d", action="store_true", help="also the checkpoint overhead of hympi-rb3d")
    parser.add_argument("--rb3d-size", type=int, default=256)
    parser.add_argument("--rb3d-iterations", type=int, default=200)
    parser.add_argument("--rb3d-every", type=int, default=50)
    parser.add_argument("--output", help="write every record as JSON to this file")
    args = parser.parse_args(argv)
    layouts = parse_layouts(args.layouts)
    require_positive(options_of(args, "mib", "repeat", "rb3d_size", "rb3d_iterations", "rb3d_every"))
    if args.global_ and min(args.global_) < 1:
        reject("--global", f"sizes must be >= 1, got {args.global_}")
    if not args.global_ and args.mib % 2:
        reject("--mib", f"{args.mib} is odd (512 x 512 doubles are 2 MiB per plane)")
    args.dir = Path(args.dir).resolve()
    if not args.dir.is_dir():
        reject("--dir", f"{args.dir} is not a directory")
    cores = os.cpu_count() or 1
    print(f"file system: {file_system(args.dir)}; {cores} cores; rounds: {args.repeat}", flush=True)

    points = args.global_[0] * args.global_[1] * args.global_[2] if args.global_ else 512 * 512 * (args.mib // 2)
    field_bytes = 8 * points
    rounds: list[dict[str, Any]] = []
    for number in range(args.repeat):
        for ranks, threads in layouts:
            reference = dd_reference(args.dir, field_bytes)
            records = launch("hympi-bench-io", ranks, threads, bench_args(args), BENCH_LINE)
            cases = [r for r in records if r["bench"] == "io"]
            memory = next((r for r in records if r["bench"] == "io-memory"), None)
            rounds.append({"round": number, "layout": f"{ranks}x{threads}", "dd": reference, "cases": cases,
                           "memory": memory})
            print(f"round {number + 1} {ranks}x{threads}: dd write {reference['write_gbs']:.3f} GB/s, read "
                  f"{reference['read_cold_gbs']:.3f} (cold) / {reference['read_direct_gbs']:.3f} (O_DIRECT) GB/s",
                  flush=True)
    first = rounds[0]["cases"][0]
    print(f"\nfield {'x'.join(map(str, first['global']))} doubles = {first['field_bytes'] / 2**20:.0f} MiB, file "
          f"{first['file_bytes'] / 2**20:.1f} MiB, fs block {first['fs_block']} B; ratio = hympi / dd (same round), "
          "medians over the rounds")
    for label in dict.fromkeys(r["layout"] for r in rounds):
        mine = [r for r in rounds if r["layout"] == label]
        phases = {k: statistics.median(c[k] for r in mine for c in r["cases"])
                  for k in ("data_s", "commit_s", "read_data_s", "checksum_s")}
        touch = [r["memory"]["first_touch_s"] for r in mine if r.get("memory")]
        print(f"{label} phases (medians over every case): write data {phases['data_s']:.2f} s + commit "
              f"{phases['commit_s']:.2f} s, read data {phases['read_data_s']:.2f} s; one checksum pass "
              f"{phases['checksum_s']:.2f} s; first touch of a fresh block-sized buffer "
              + (f"{statistics.median(touch):.2f} s" if touch else "-"))
    print(f"{'layout':>6} {'case':<56} {'write GB/s':>10} {'read GB/s':>9} {'write/dd':>8} {'read/dd':>7} "
          f"{'commit':>6} {'cached':>6} {'ok':>3}")
    table = io_table(rounds, layouts)
    for row in table:
        print(f"{row['layout']:>6} {row['case']:<56} {row['write_gbs']:>10.3f} {row['read_gbs']:>9.3f} "
              f"{row['write_ratio']:>8.2f} {row['read_ratio']:>7.2f} {100 * row['commit_share']:>5.0f}% "
              f"{100 * max(row['resident'], 0):>5.0f}% {'yes' if row['verified'] else 'NO':>3}")
    for label in dict.fromkeys(r["layout"] for r in table):
        mine = [r for r in table if r["layout"] == label]
        w, r = max(mine, key=lambda x: x["write_ratio"]), max(mine, key=lambda x: x["read_ratio"])
        met = "met" if min(w["write_ratio"], r["read_ratio"]) >= TARGET else "MISSED"
        print(f"{label}: best write {w['write_ratio']:.2f} of dd ({w['case']}), best read {r['read_ratio']:.2f} of dd "
              f"({r['case']}); target {TARGET}: {met}")
    out: dict[str, Any] = {"file_system": file_system(args.dir), "rounds": rounds, "table": table}
    if args.rb3d:
        runs = [run for ranks, threads in layouts for run in run_rb3d(args, ranks, threads)]
        out["rb3d"] = {"runs": runs, "table": rb3d_table(runs)}
        print(f"\nhympi-rb3d {args.rb3d_size}^3, {args.rb3d_iterations} iterations, a checkpoint every "
              f"{args.rb3d_every} (medians of {args.repeat}): share = checkpoint s (the solver thread's) / run "
              "time s, writer s = the background writer's, slowdown = (with - without) / with")
        print(f"{'layout':>6} {'without s':>9} {'with s':>8} {'ckpts':>5} {'ckpt s':>7} {'writer s':>8} "
              f"{'ckpt GB/s':>9} {'share':>6} {'slowdown':>8}")
        for row in out["rb3d"]["table"]:
            print(f"{row['layout']:>6} {row['time_plain_s']:>9.2f} {row['time_checkpoint_s']:>8.2f} "
                  f"{row['checkpoints']:>5} {row['checkpoint_s']:>7.2f} {row['background_s']:>8.2f} "
                  f"{row['checkpoint_gbs']:>9.3f} "
                  f"{100 * row['share']:>5.1f}% {100 * row['slowdown']:>7.1f}%  slowdown target < "
                  f"{100 * OVERHEAD_TARGET:.0f} %: {row['verdict']}")
        print("measured within each run (the solver's checkpoint seconds + its steps beside the writer beyond the "
              "median quiet step, over the run's time):")
        for row in out["rb3d"]["table"]:
            cost = "-" if row["in_run"] is None else f"{100 * row['in_run']:.1f} %"
            print(f"{row['layout']:>6} cost {cost}; target < {100 * OVERHEAD_TARGET:.0f} %: {row['in_run_verdict']}")
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            json.dump(out, f, indent=1)
    return 0 if all(row["verified"] for row in table) else 1


if __name__ == "__main__":
    sys.exit(main())
