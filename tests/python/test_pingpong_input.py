"""hympi-pingpong and the OSU comparison bench reject bad input with one line naming the value as
typed, exit 2, before MPI starts or anything is built, launched or written."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

import skips
from hympi.paths import bin_dir

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def pingpong() -> Path:
    """The built hympi-pingpong ($HYMPI_BIN_DIR or build/bin); skips the test when it is not built (fails under
    CI)."""
    return skips.require_binary(bin_dir() / "hympi-pingpong")


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--max-bytes", "-1"], "--max-bytes: must be a positive integer, got '-1'"),
        (["--max-bytes", "0"], "--max-bytes: must be a positive integer, got '0'"),
        (["--max-bytes", "4k"], "--max-bytes: must be a positive integer, got '4k'"),
        (["--iterations", "-5"], "--iterations: must be a positive integer, got '-5'"),
        (["--iterations", "0"], "--iterations: must be a positive integer, got '0'"),
        (["--large-iterations", "0"], "--large-iterations: must be a positive integer, got '0'"),
        (["--multi-bytes", "-1"], "--multi-bytes: must be a positive integer, got '-1'"),
        (["--multi-bytes", "000"], "--multi-bytes: must be a positive integer, got '000'"),
    ],
)
def test_pingpong_rejects_bad_counts_as_typed(pingpong: Path, args: list[str], needle: str):
    # No mpirun: the check runs while parsing, before MPI_Init, so a plain start must already fail.
    proc = subprocess.run([str(pingpong), *args], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 2, proc.stderr
    assert needle in proc.stderr
    assert "18446744073709551615" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "HYMPI_RESULT" not in proc.stdout


def test_pingpong_still_accepts_good_counts(pingpong: Path):
    # The validator must not reject what it should accept: --validate-ranks checks without MPI.
    proc = subprocess.run([str(pingpong), "--max-bytes", "1000", "--iterations", "7", "--large-iterations", "3",
                           "--multi-bytes", "512", "--validate-ranks", "2"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""


@pytest.mark.parametrize(
    ("args", "env", "needle"),
    [
        (["--repeat", "0"], {}, "--repeat must be a positive integer, got '0'"),
        (["--repeat"], {}, "--repeat must be a positive integer, got ''"),
        (["--tolerance", "10%"], {}, "--tolerance must be a fraction between 0 and 1 (e.g. 0.10), got '10%'"),
        (["--tolerance", "0"], {}, "--tolerance must be a fraction between 0 and 1 (e.g. 0.10), got '0'"),
        ([], {"RUN_TIMEOUT": "-1"}, "RUN_TIMEOUT must be a positive number of seconds, got '-1'"),
        ([], {"OSU_GIT": "/nonexistent/osu.git"}, "OSU_GIT='/nonexistent/osu.git' is not a git directory"),
        ([], {"OSU_SRC": "/nonexistent/osu"}, "OSU_SRC='/nonexistent/osu' is not an unpacked osu-micro-benchmarks"),
        (["--bogus"], {}, "unknown argument '--bogus'"),
    ],
)
def test_osu_bench_rejects_bad_values(tmp_path: Path, args: list[str], env: dict[str, str], needle: str):
    work = tmp_path / "work"
    base = {k: v for k, v in os.environ.items() if k not in ("OSU_SRC", "OSU_GIT", "RUN_TIMEOUT")}
    proc = subprocess.run(["bash", str(REPO / "bench/osu/run.sh"), *args],
                          env={**base, "WORK": str(work), "BUILD": str(tmp_path / "build"), **env},
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 2, proc.stderr
    assert needle in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert not work.exists()
    assert not (tmp_path / "build").exists()
