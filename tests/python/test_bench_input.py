"""The benchmark scripts reject bad input with one line naming the value and exit 2, before they
build, launch or write anything."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--repeat", "0"], "--repeat: must be >= 1, got 0"),
        (["--n", "-4"], "--n: must be >= 1, got -4"),
        (["--layouts", "1x2,3y"], "'3y' is not RANKSxTHREADS"),
        (["--layouts", "0x2"], "'0x2' is not RANKSxTHREADS"),
        (["--parts", "spmv3d,foo"], "unknown value 'foo'"),
    ],
)
def test_halo_bench_rejects_bad_values(tmp_path, args, needle):
    output = tmp_path / "rows.jsonl"
    proc = subprocess.run([sys.executable, str(REPO / "bench/halo/run.py"), *args, "--output", str(output)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 2, proc.stderr
    assert needle in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert not output.exists()


@pytest.mark.parametrize(
    ("args", "env", "needle"),
    [
        (["--repeat", "x"], {}, "--repeat must be a positive integer, got 'x'"),
        ([], {"RUN_TIMEOUT": "10m"}, "RUN_TIMEOUT must be a positive number of seconds, got '10m'"),
        ([], {"MARCH": "no-such-cpu"}, "MARCH='no-such-cpu' is not a CPU"),
        (["--bogus"], {}, "unknown argument '--bogus'"),
    ],
)
def test_npb_bench_rejects_bad_values(tmp_path, args, env, needle):
    work = tmp_path / "work"
    proc = subprocess.run(["bash", str(REPO / "bench/npb-mz/run.sh"), *args],
                          env={**os.environ, "WORK": str(work), **env}, capture_output=True, text=True, timeout=60,
                          check=False)
    assert proc.returncode == 2, proc.stderr
    assert needle in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert not work.exists()
