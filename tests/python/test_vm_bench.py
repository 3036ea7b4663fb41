"""bench/vm/run.py end to end: two short commands in alternating order beside the round-trip probe. The table has
every run in the order it ran, with its status, and each run's samples are the probe's samples taken during it."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_vm_bench_tables_every_run_with_the_samples_taken_during_it() -> None:
    proc = subprocess.run([sys.executable, str(REPO / "bench/vm/run.py"), "--runs", "2",
                           "--command", "slow=sleep 0.6", "--command", "fails=false"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    rows = [[cell.strip() for cell in line.split("|")[1:-1]] for line in proc.stdout.splitlines()
            if line.startswith(("| slow", "| fails"))]
    # The order alternates: slow, fails, then fails, slow.
    assert [row[:3] for row in rows] == [["slow", "1", "ok"], ["fails", "1", "failed (exit 1)"],
                                         ["fails", "2", "failed (exit 1)"], ["slow", "2", "ok"]]
    for label, _, _, wall, samples, share, round_trip in rows:
        if label == "slow":
            # The probe's samples are on ticks 100 ms apart, so a run has at most one per tick of its wall time (more
            # would be samples of other runs); it writes none for a tick whose round trips its partner thread did not
            # answer, which on a loaded machine is most of them (3 of 6 in a fresh clone's `make test`): at least one.
            assert float(wall) >= 0.6
            assert 1 <= int(samples) <= math.floor(float(wall) / 0.1) + 1, (wall, samples)
            assert 0.0 <= float(share) <= 1.0
            assert float(round_trip) > 0.0
    # Two runs cannot be two near and two far ones: no ratio without runs on both sides.
    assert "slow: far / near: not compared (" in proc.stdout
    assert "fails: far / near: not compared (0 near, 0 far runs" in proc.stdout
    # No round has both runs ok: no ratio round by round either.
    assert "round by round: fails / slow, time: too few pairs for a ratio (0 with both runs counted)" in proc.stdout


def test_vm_bench_compares_each_command_with_the_first_within_one_state() -> None:
    # With the threshold out of reach every sample is near, so every run is a near one whatever the host does.
    proc = subprocess.run([sys.executable, str(REPO / "bench/vm/run.py"), "--runs", "2", "--far-ns", "1e9",
                           "--command", "short=sleep 0.3", "--command", "long=sleep 0.9"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "short: far / near: not compared (2 near, 0 far runs" in proc.stdout
    (line,) = [line for line in proc.stdout.splitlines() if line.startswith("near runs: long / short: ")]
    # Three times the sleep: the ratio reads "how much longer", not its inverse.
    ratio = float(line.split(": ")[2].split("x as long")[0])
    assert 1.8 < ratio < 3.5, line
    # Every run is near, so all runs give the same ratio.
    assert f"all runs: long / short: {line.split(': ')[2]}" in proc.stdout
    assert "far runs: long / short: not compared (0 short, 0 long runs" in proc.stdout
    # Round by round, each round's long run over its short one: the same threefold, on too few rounds to judge.
    (pairs,) = [line for line in proc.stdout.splitlines() if line.startswith("round by round: long / short, time: ")]
    assert 1.8 < float(pairs.split(": ")[2].split("x (")[0]) < 3.5, pairs
    assert pairs.endswith(", 2 pairs), too few pairs for a verdict (8 needed)"), pairs


def test_vm_bench_takes_each_time_from_the_output_when_told_how() -> None:
    proc = subprocess.run([sys.executable, str(REPO / "bench/vm/run.py"), "--runs", "1",
                           "--time-pattern", r"took ([0-9.]+) s",
                           "--command", "timed=echo took 1.25 s", "--command", "silent=echo nothing"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    rows = [[cell.strip() for cell in line.split("|")[1:-1]] for line in proc.stdout.splitlines()
            if line.startswith(("| timed", "| silent"))]
    assert [row[:4] for row in rows] == [["timed", "1", "ok", "1.25"], ["silent", "1", "no time in its output", "nan"]]
    assert "| command | run | status | time s |" in proc.stdout


def test_vm_bench_takes_a_rate_as_the_time_per_unit_of_work() -> None:
    proc = subprocess.run([sys.executable, str(REPO / "bench/vm/run.py"), "--runs", "1",
                           "--rate-pattern", r"(?:GFLOP/s=|\"GFLOPps\":)([0-9.]+)",
                           "--command", "report=echo GFLOP/s=4", "--command", "json=echo '{\"GFLOPps\":0.5}'",
                           "--command", "silent=echo nothing"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    rows = [[cell.strip() for cell in line.split("|")[1:-1]] for line in proc.stdout.splitlines()
            if line.startswith(("| report", "| json", "| silent"))]
    assert [row[:4] for row in rows] == [["report", "1", "ok", "0.25"], ["json", "1", "ok", "2"],
                                         ["silent", "1", "no rate in its output", "nan"]]
    assert "| command | run | status | 1 / rate |" in proc.stdout
