"""bench/hpcg/summary.py, the verdict of bench/hpcg/run.sh: hympi / HPCG as a ratio of medians with its interval,
a lead stated only where the interval excludes 1, and refusals of a results file it cannot read."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "bench/hpcg/summary.py"
HEADER = "impl\trun\tgflops\tbound_fraction\n"


def summarise(tmp_path: Path, hpcg: list[float], hympi: list[float]) -> subprocess.CompletedProcess[str]:
    lines = [f"hpcg\t{i}\t{g}\n" for i, g in enumerate(hpcg, 1)] + \
        [f"hympi\t{i}\t{g}\t0.5\n" for i, g in enumerate(hympi, 1)]
    results = tmp_path / "results.tsv"
    results.write_text(HEADER + "".join(lines))
    return run(results)


def run(results: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), str(results)], capture_output=True, text=True, timeout=60,
                          check=False, env={**os.environ, "PYTHONPATH": str(REPO / "python")})


def ratio_line(proc: subprocess.CompletedProcess[str]) -> str:
    (line,) = [x for x in proc.stdout.splitlines() if x.startswith("ratio")]
    return line


def test_a_lower_median_inside_the_noise_is_no_verdict(tmp_path):
    # The quiet run of 2026-11-29: HPCG steady, hympi spread over 1.75-3.06; the medians' ratio 0.79 alone would
    # read as "HPCG is faster".
    proc = summarise(tmp_path, [2.7922, 2.74366, 2.84143, 2.2199, 2.79297], [1.813, 1.745, 3.060, 2.992, 2.217])
    assert proc.returncode == 0, proc.stderr
    assert "median GFLOP/s: HPCG reference SpMV 2.792, hympi CSR SpMV 2.217" in proc.stdout
    assert re.fullmatch(r"ratio hympi / HPCG: 0\.794; hympi and HPCG are indistinguishable here \(CI 0\.\d\d-1\.\d\d\)",
                        ratio_line(proc)), proc.stdout


def test_separated_ratios_are_hympi_over_hpcg_either_way(tmp_path):
    ahead = ratio_line(summarise(tmp_path, [2.0, 2.1, 2.05, 2.02], [2.6, 2.5, 2.55, 2.58]))
    match = re.fullmatch(r"ratio hympi / HPCG: 1\.260; hympi is 1\.26x HPCG \(95 % CI (\d\.\d\d)-(\d\.\d\d)\)", ahead)
    assert match and 1.0 < float(match[1]) <= 1.26 <= float(match[2]), ahead
    behind = ratio_line(summarise(tmp_path, [3.0, 3.1, 3.05, 3.02], [2.6, 2.5, 2.55, 2.58]))
    match = re.fullmatch(r"ratio hympi / HPCG: 0\.845; hympi is 0\.85x HPCG \(95 % CI (\d\.\d\d)-(\d\.\d\d)\)", behind)
    assert match and float(match[1]) <= 0.85 <= float(match[2]) < 1.0, behind


def test_three_runs_a_side_are_too_few_for_a_verdict(tmp_path):
    line = ratio_line(summarise(tmp_path, [2.0, 2.1, 2.05], [2.6, 2.5, 2.55]))
    assert "cannot be separated with 3 runs" in line and " is 1.2" not in line, line


def test_a_side_without_runs_and_a_broken_file(tmp_path):
    proc = summarise(tmp_path, [2.0, 2.1], [])
    assert proc.returncode == 1 and ratio_line(proc) == "ratio: missing runs (see the run directories)", proc.stdout
    broken = tmp_path / "broken.tsv"
    broken.write_text(HEADER + "hympi\t1\n")
    proc = run(broken)
    assert proc.returncode == 2 and proc.stdout == "", proc.stdout
    assert proc.stderr.startswith("summary.py: ") and "not a results line" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    broken.write_text(HEADER + "hpcg\t1\t2.0\nhympi\t1\t0\t0.5\n")  # a rate the interval cannot take
    proc = run(broken)
    assert proc.returncode == 2 and proc.stdout == "", proc.stdout
    assert proc.stderr.strip().endswith("not a rate > 0: '0'") and len(proc.stderr.strip().splitlines()) == 1


def pair_line(proc: subprocess.CompletedProcess[str]) -> str:
    (line,) = [x for x in proc.stdout.splitlines() if x.startswith("pair by pair")]
    return line


def test_pairs_see_a_lead_that_the_machine_s_drift_hides_from_the_medians(tmp_path):
    # Both sides slow by half after the fourth repeat; hympi is 5 % ahead in every pair.
    machine = [1.0, 1.02, 0.99, 1.01, 0.5, 0.51, 0.49, 0.5, 0.52, 0.5]
    wobble = [1.0, 1.003, 0.998, 1.002, 0.999, 1.001, 0.997, 1.0, 1.002, 0.998]
    hpcg = [4.0 * m for m in machine]
    hympi = [4.2 * m * w for m, w in zip(machine, wobble, strict=True)]
    proc = summarise(tmp_path, hpcg, hympi)
    assert "indistinguishable" in ratio_line(proc), proc.stdout
    match = re.fullmatch(r"pair by pair, hympi / HPCG: 1\.05x \(95 % CI (\d\.\d\d)-(\d\.\d\d), 10 pairs\)",
                         pair_line(proc))
    assert match and 1.0 < float(match[1]) <= 1.05 <= float(match[2]), pair_line(proc)
    # Pairs are runs of the same repeat: hympi's runs taken in another order lose the lead.
    shuffled = summarise(tmp_path, hpcg, hympi[5:] + hympi[:5])
    assert pair_line(shuffled).startswith("pair by pair, hympi / HPCG: indistinguishable, "), shuffled.stdout


def test_pairs_say_when_they_are_too_few_and_skip_a_repeat_one_side_lacks(tmp_path):
    results = tmp_path / "results.tsv"
    results.write_text(HEADER + "".join(f"hpcg\t{i}\t{2.0 + i / 100}\n" for i in range(1, 6))
                       + "".join(f"hympi\t{i}\t{2.5 + i / 100}\t0.5\n" for i in (1, 2, 4, 5)))  # repeat 3 failed
    line = pair_line(run(results))
    assert re.fullmatch(r"pair by pair, hympi / HPCG: 1\.2\dx \(95 % CI \d\.\d\d-\d\.\d\d, 4 pairs\), too few pairs "
                        r"for a verdict \(8 needed\)", line), line
    results.write_text(HEADER + "hpcg\tfirst\t2.0\n")
    proc = run(results)
    assert proc.returncode == 2 and "not a repeat number: 'first'" in proc.stderr, proc.stderr
    results.write_text(HEADER + "hpcg\t1\t2.0\nhympi\t1\t2.5\t0.5\nhympi\t1\t2.6\t0.5\n")
    proc = run(results)
    assert proc.returncode == 2 and "repeat 1 of hympi given twice" in proc.stderr, proc.stderr
