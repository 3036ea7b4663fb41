"""bench/vm/run.py end to end: two short commands in alternating order beside the round-trip probe. The table has
every run in the order it ran, with its status, and each run's samples are the probe's samples taken during it."""

from __future__ import annotations

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
            # 0.6 s and more at a sample every 100 ms: five samples at least, each a positive round trip.
            assert float(wall) >= 0.6
            assert int(samples) >= 5
            assert 0.0 <= float(share) <= 1.0
            assert float(round_trip) > 0.0
    # Two runs cannot be two near and two far ones: no ratio without runs on both sides.
    assert "slow: far / near: not compared (" in proc.stdout
    assert "fails: far / near: not compared (0 near, 0 far runs" in proc.stdout
