"""hympi-pingpong rejects bad input with one line naming the value as typed, exit 2, before MPI starts (the OSU
comparison bench's refusals are in test_bench_input.py with the other bench scripts')."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

import skips
from hympi.paths import bin_dir
from refusals import assert_refused


@pytest.fixture
def pingpong() -> Path:
    """The built hympi-pingpong ($HYMPI_BIN_DIR or build/bin); skips the test when it is not built (fails under
    CI)."""
    return skips.require_binary(bin_dir() / "hympi-pingpong")


@pytest.mark.parametrize(
    ("option", "value"),
    [("--max-bytes", "-1"), ("--max-bytes", "0"), ("--max-bytes", "4k"), ("--iterations", "-5"), ("--iterations", "0"),
     ("--large-iterations", "0"), ("--multi-bytes", "-1"), ("--multi-bytes", "000")],
)
def test_pingpong_rejects_bad_counts_as_typed(pingpong: Path, option: str, value: str):
    # No mpirun: the check runs while parsing, before MPI_Init, so a plain start must already fail.
    proc = subprocess.run([str(pingpong), option, value], capture_output=True, text=True, timeout=60, check=False)
    assert_refused(proc, f"{option}: must be a positive integer, got '{value}'")
    assert "18446744073709551615" not in proc.stderr
    assert "HYMPI_RESULT" not in proc.stdout


def test_pingpong_still_accepts_good_counts(pingpong: Path):
    # The validator must not reject what it should accept: --validate-ranks checks without MPI.
    proc = subprocess.run([str(pingpong), "--max-bytes", "1000", "--iterations", "7", "--large-iterations", "3",
                           "--multi-bytes", "512", "--validate-ranks", "2"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
