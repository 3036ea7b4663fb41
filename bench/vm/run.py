#!/usr/bin/env python3
"""Where the host put two virtual CPUs while each run went on: commands run one after another, their order
alternating, while bench/vm/round_trip.c samples how long a cache line takes from one PU to the other and back.

Usage: .venv/bin/python bench/vm/run.py --command 'hympi=OMP_NUM_THREADS=2 mpirun -np 1 build/bin/hympi-lu-mz
       --class A' [--command 'LABEL=COMMAND' ...] [--runs 8] [--pus 0,1] [--far-ns 150] [--interval-ms 100]
       [--time-pattern REGEX | --rate-pattern REGEX]

A command's leading NAME=VALUE words set its environment, as in a shell; the rest is its argument list (no shell).
On bare metal the round trip between two cores stays put. On a VM the host may run the two virtual CPUs on cores
that share a cache (a round trip of ~55 ns on the Zen 4 VM) or on different dies (260-320 ns), and switch between
the two within seconds. A run's time is its wall time, or with --time-pattern the number the pattern's first group
matches in its output (e.g. '"time_s":([0-9.eE+-]+)' for a hympi app's own time), or with --rate-pattern the
inverse of the rate it matches (the time per unit of work, for programs that print a rate: HPCG's 'GFLOP/s
Summary::Raw SpMV=([0-9.eE+-]+)'; one pattern serves two programs by alternation). Printed: each run's time beside
the share of its samples that were far (a round trip above --far-ns); then per command the runs that were near
throughout (share <= 0.05) against those far for a quarter of their time or more, as far / near; and every command
against the first in all runs, in near runs only and in far runs only, each with a 95 % bootstrap interval of the
ratio of medians (hympi.stats.compare.ratio_ci); last, every command against the first round by round (the trimmed
geometric mean of the rounds' time ratios with its interval, hympi.stats.compare.paired_ratio_text).
docs/performance.md, "LU-MZ's slow mode", has what it found.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from hympi.stats.compare import MIN_SAMPLES, paired_ratio_text, ratio_ci

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/, for the scripts' shared helpers
from common import reject, require_positive, require_seconds

SOURCE = Path(__file__).resolve().parent / "round_trip.c"
# A run is "near" when at most this share of its samples were far, "far" when at least FAR_RUN were.
NEAR_RUN = 0.05
FAR_RUN = 0.25


@dataclass(frozen=True)
class Command:
    label: str
    env: dict[str, str]
    argv: list[str]


@dataclass(frozen=True)
class Run:
    label: str
    start: float  # time.monotonic(), the clock round_trip prints
    end: float
    time_s: float  # the wall time, or what --time-pattern or --rate-pattern found in the output (nan without)
    status: str  # "ok", "failed (exit N)", "timed out", "no time in its output" or "no rate in its output"


def parse_command(text: str) -> Command:
    """LABEL=COMMAND with leading NAME=VALUE words as the environment; exits 2 naming what is wrong."""
    label, sep, rest = text.partition("=")
    if not sep or not label or not label.replace("-", "").replace("_", "").isalnum():
        reject("--command", f"'{text}' is not LABEL=COMMAND (a label of letters, digits, - and _)")
    try:
        words = shlex.split(rest)
    except ValueError as error:
        reject("--command", f"'{rest}': {error}")
    env = {}
    while words and "=" in words[0] and words[0].split("=", 1)[0].isidentifier():
        name, value = words.pop(0).split("=", 1)
        env[name] = value
    if not words:
        reject("--command", f"'{text}' has no program")
    if shutil.which(words[0]) is None:
        reject("--command", f"'{words[0]}' is not a program found on PATH or at that path")
    return Command(label=label, env=env, argv=words)


def parse_pus(text: str | None) -> tuple[int, int]:
    """Two different PUs this process may run on (without `text`, the first two); exits 2 naming a bad one."""
    allowed = sorted(psutil.Process().cpu_affinity() or [])
    if text is None:
        if len(allowed) < 2:
            reject("--pus", f"needs two PUs, this process may run on {len(allowed)}")
        return allowed[0], allowed[1]
    parts = text.split(",")
    if len(parts) != 2 or not all(part.isdigit() for part in parts) or parts[0] == parts[1]:
        reject("--pus", f"'{text}' is not two different PU numbers A,B")
    pus = (int(parts[0]), int(parts[1]))
    for pu in pus:
        if pu not in allowed:
            reject("--pus", f"PU {pu} is not one this process may run on ({', '.join(map(str, allowed))})")
    return pus


def build_probe(directory: Path) -> Path:
    """round_trip.c compiled with hwloc; exits naming the compiler's complaint."""
    binary = directory / "round_trip"
    compiler = os.environ.get("CC", "cc")
    done = subprocess.run([compiler, "-O2", "-pthread", str(SOURCE), "-o", str(binary), "-lhwloc"],
                          capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0:
        sys.exit(f"run.py: building {SOURCE.name} failed:\n{done.stderr.strip()}")
    return binary


def run_once(command: Command, timeout: float, pattern: re.Pattern[str] | None, rate: bool) -> Run:
    """Runs `command`; its time is the wall time, or the number `pattern` finds in its output (its inverse when
    `rate`)."""
    start = time.monotonic()
    output = ""
    try:
        done = subprocess.run(command.argv, env={**os.environ, **command.env},
                              stdout=subprocess.PIPE if pattern else subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              text=True, errors="replace", timeout=timeout, check=False)
        status = "ok" if done.returncode == 0 else f"failed (exit {done.returncode})"
        output = done.stdout or ""
    except subprocess.TimeoutExpired:
        status = "timed out"
    end = time.monotonic()
    seconds = end - start
    if pattern is not None:
        match = pattern.search(output)
        seconds = float(match.group(1)) if match else math.nan
        if status == "ok" and not (match and math.isfinite(seconds) and seconds > 0):
            status = f"no {'rate' if rate else 'time'} in its output"
        elif rate:
            seconds = 1.0 / seconds
    return Run(label=command.label, start=start, end=end, time_s=seconds, status=status)


def read_samples(path: Path) -> list[tuple[float, float]]:
    samples = []
    for line in path.read_text().splitlines():
        fields = line.split()
        if len(fields) == 2:
            samples.append((float(fields[0]), float(fields[1])))
    return samples


def wait_for_sample(path: Path, after: float, timeout: float = 30.0) -> None:
    """Returns once the probe has written a sample taken after `after` (so that a run starts only when the probe
    samples, and no sample of the last run is lost when the probe stops); exits after `timeout` s without one."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(t > after for t, _ in read_samples(path)):
            return
        time.sleep(0.05)
    sys.exit(f"run.py: the round-trip probe wrote no sample after {after:.1f} s in {timeout:g} s")


def far_share(run: Run, samples: list[tuple[float, float]], far_ns: float) -> tuple[int, float, float]:
    """(samples during the run, share of them above far_ns, their median round trip in ns)."""
    during = [ns for t, ns in samples if run.start <= t <= run.end]
    if not during:
        return 0, math.nan, math.nan
    return len(during), sum(ns > far_ns for ns in during) / len(during), statistics.median(during)


def as_long(base: list[float], other: list[float], names: tuple[str, str]) -> str:
    """How much longer the runs `other` took than the runs `base` (seconds), with the interval; or why not."""
    if len(base) < MIN_SAMPLES or len(other) < MIN_SAMPLES:
        return (f"not compared ({len(base)} {names[0]}, {len(other)} {names[1]} runs; {MIN_SAMPLES} of each "
                f"needed)")
    # ratio_ci compares rates; a time's inverse keeps the ratio reading as "how much longer".
    ratio, low, high = ratio_ci([1.0 / t for t in base], [1.0 / t for t in other])
    return f"{ratio:.2f}x as long [95 % CI {low:.2f}, {high:.2f}]"


def main() -> int:
    parser = argparse.ArgumentParser(prog="run.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--command", action="append", default=[], metavar="LABEL=COMMAND",
                        help="a command to run (repeat for more); leading NAME=VALUE words are its environment")
    parser.add_argument("--runs", type=int, default=8, help="runs of each command (default 8)")
    parser.add_argument("--pus", default=None, help="the two PUs to sample, by OS index (default: the first two)")
    parser.add_argument("--far-ns", type=float, default=150.0, help="a round trip above this is far (default 150)")
    parser.add_argument("--interval-ms", type=int, default=100, help="between samples (default 100)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds a run may take (default 600)")
    parser.add_argument("--time-pattern", default=None, metavar="REGEX",
                        help="take a run's time from its output: the first group of the first match (default: wall)")
    parser.add_argument("--rate-pattern", default=None, metavar="REGEX",
                        help="take a run's time as the inverse of a rate in its output, found as --time-pattern")
    args = parser.parse_args()
    if not args.command:
        reject("--command", "no command given")
    commands = [parse_command(text) for text in args.command]
    labels = [command.label for command in commands]
    if len(set(labels)) != len(labels):
        reject("--command", f"a label is given twice ({', '.join(labels)})")
    require_positive([("--runs", args.runs), ("--interval-ms", args.interval_ms)])
    require_seconds([("--timeout", args.timeout)], zero_ok=False)
    if not (math.isfinite(args.far_ns) and args.far_ns > 0):
        reject("--far-ns", f"must be a number of ns > 0, got {args.far_ns}")
    pus = parse_pus(args.pus)
    pattern = None
    rate = args.rate_pattern is not None
    if rate and args.time_pattern is not None:
        reject("--rate-pattern", "give it or --time-pattern, not both")
    option, text = ("--rate-pattern", args.rate_pattern) if rate else ("--time-pattern", args.time_pattern)
    if text is not None:
        try:
            pattern = re.compile(text)
        except re.error as error:
            reject(option, f"'{text}' is not a regular expression: {error}")
        if pattern.groups < 1:
            reject(option, f"'{text}' has no group to take the {'rate' if rate else 'time'} from")

    with tempfile.TemporaryDirectory(prefix="hympi-vm-bench-") as work:
        probe = build_probe(Path(work))
        samples_path = Path(work) / "samples.txt"
        budget = args.runs * len(commands) * args.timeout + 10
        with samples_path.open("w") as out:
            monitor = subprocess.Popen([str(probe), str(budget), str(pus[0]), str(pus[1]), str(args.interval_ms)],
                                       stdout=out)
            try:
                wait_for_sample(samples_path, after=-math.inf)
                runs = []
                for round_no in range(args.runs):
                    for command in (commands if round_no % 2 == 0 else commands[::-1]):
                        runs.append(run_once(command, args.timeout, pattern, rate))
                wait_for_sample(samples_path, after=runs[-1].end)
            finally:
                monitor.terminate()
                monitor.wait(timeout=10)
        samples = read_samples(samples_path)

    print(f"PUs {pus[0]} and {pus[1]}, a sample every {args.interval_ms} ms, far above {args.far_ns:g} ns")
    print()
    column = "1 / rate" if rate else "time s" if pattern else "wall s"
    print(f"| command | run | status | {column} | samples | far share | "
          "median round trip ns |")
    print("|---|---|---|---|---|---|---|")
    shares = {}
    for index, run in enumerate(runs):
        count, share, median = far_share(run, samples, args.far_ns)
        shares[index] = share
        print(f"| {run.label} | {index // len(commands) + 1} | {run.status} | {run.time_s:.4g} | {count} | "
              f"{share:.2f} | {median:.0f} |")
    print()
    # The times of each command's ok runs in each state, and of all its ok runs.
    times: dict[tuple[str, str], list[float]] = {}
    for index, run in enumerate(runs):
        if run.status == "ok":
            state = "near" if shares[index] <= NEAR_RUN else "far" if shares[index] >= FAR_RUN else "mixed"
            times.setdefault((run.label, state), []).append(run.time_s)
            times.setdefault((run.label, "all"), []).append(run.time_s)
    for label in labels:
        print(f"{label}: far / near: "
              f"{as_long(times.get((label, 'near'), []), times.get((label, 'far'), []), ('near', 'far'))}")
    # Each command against the first, in all runs (as a benchmark without the probe would see them), then in runs
    # of one state only: the host's placement is then the same on both sides of the ratio.
    for state in ("all", "near", "far"):
        for label in labels[1:]:
            print(f"{state} runs: {label} / {labels[0]}: "
                  f"{as_long(times.get((labels[0], state), []), times.get((label, state), []), (labels[0], label))}")
    # Then round by round: a round's runs are back to back, so the machine's drift between rounds drops out.
    by_round = {(index // len(commands), run.label): run.time_s if run.status == "ok" else None
                for index, run in enumerate(runs)}
    for label in labels[1:]:
        pairs = paired_ratio_text([by_round[(r, label)] for r in range(args.runs)],
                                  [by_round[(r, labels[0])] for r in range(args.runs)])
        print(f"round by round: {label} / {labels[0]}, time: {pairs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
