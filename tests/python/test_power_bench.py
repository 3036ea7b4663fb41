"""bench/stats/power.py: one row per case with a cell per round count, and bad options refused in one line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "bench/stats/power.py"


def test_power_bench_tables_each_case_by_round_count() -> None:
    proc = subprocess.run([sys.executable, str(SCRIPT), "--trials", "40", "--rounds", "4,12"], capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    rows = [[cell.strip() for cell in line.split("|")[1:-1]] for line in proc.stdout.splitlines()
            if line.startswith("| 1")]
    assert [row[:3] for row in rows] == [["1x", "+-40 %", "+-0 %"], ["1.15x", "+-10 %", "+-0 %"],
                                         ["1.15x", "+-10 %", "+-30 %"]]
    shares = [[tuple(float(x) for x in cell.split(" / ")) for cell in row[3:]] for row in rows]
    # A 1.15x lead at 12 rounds on a steady machine: both comparisons find it nearly always; under the drift only
    # the rounds' does.
    assert min(shares[1][1]) >= 0.9
    assert shares[2][1][1] >= 0.9 and shares[2][1][0] <= 0.3


def test_power_bench_refuses_bad_options_in_one_line() -> None:
    for args, said in ((["--trials", "0"], "--trials: must be >= 1, got 0"),
                       (["--rounds", "1,4"], "--rounds: a comparison needs at least 2 rounds, got 1")):
        proc = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60,
                              check=False)
        assert proc.returncode == 2 and proc.stderr.strip() == f"power.py: {said}", proc.stderr
        assert proc.stdout == ""
