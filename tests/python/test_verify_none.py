"""A run that asks for no verification (`--verify none`, rb3d and spmv3d) is reported unverified, not failed: exit 0,
its output says SKIPPED, no "verification FAILED" line, and its result says "verified": false, so that sweeps record
it as unverified and no comparison uses it. A verification asked for and failed still exits 1 (test_npb_mz.py,
test_userprograms.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

import skips
from conftest import hympi

REPO = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("HYMPI_BIN_DIR", REPO / "build" / "bin"))
MPIRUN = shutil.which("mpirun")

pytestmark = skips.needs_apps("hympi-rb3d", "hympi-spmv3d")

SMALL = {
    "rb3d": ("--size", "16", "--iterations", "20", "--min-time", "0"),
    "spmv3d": ("--global", "12", "12", "12", "--cg-iterations", "5", "--reps", "1", "--min-time", "0"),
}


@pytest.mark.parametrize("app", sorted(SMALL))
def test_verify_none_is_unverified_not_failed(app: str) -> None:
    assert MPIRUN is not None
    cmd = [MPIRUN, *(["--allow-run-as-root"] if os.geteuid() == 0 else []), "--oversubscribe", "--bind-to", "none",
           "-np", "2", "-x", "OMP_NUM_THREADS=1", str(BIN / f"hympi-{app}"), "--bind", "none", *SMALL[app],
           "--verify", "none"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, (proc.returncode, proc.stderr)
    assert "verification FAILED" not in proc.stderr, proc.stderr
    assert "verification (none): SKIPPED" in proc.stdout, proc.stdout
    line = next(text for text in proc.stdout.splitlines() if text.startswith("HYMPI_RESULT "))
    assert json.loads(line.split(" ", 1)[1])["verified"] is False


def test_hympi_run_says_unverified_not_failed() -> None:
    proc = hympi("run", "rb3d", "--ranks", "2", "--threads", "1", "--", *SMALL["rb3d"], "--verify", "none",
                 env={"HYMPI_BIN_DIR": str(BIN)}, timeout=120)
    # hympi's own verdict stays "not ok" (exit 1): an unverified result is not one it can vouch for.
    assert proc.returncode == 1, proc.stderr
    assert "run unverified: the app exited 0 without requiring verification (e.g. --verify none)" in proc.stderr
    assert "failed verification" not in proc.stderr, proc.stderr
