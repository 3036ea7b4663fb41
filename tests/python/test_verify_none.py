"""A run that asks for no verification (`--verify none`, rb3d and spmv3d) is reported unverified, not failed: exit 0,
its output says SKIPPED, no "verification FAILED" line, and its result says "verified": false, so that sweeps record
it as unverified and no comparison uses it. A verification asked for and failed still exits 1 (test_npb_mz.py,
test_userprograms.py)."""

from __future__ import annotations

import pytest

import mpiapps
import skips
from conftest import hympi

pytestmark = skips.needs_apps("hympi-rb3d", "hympi-spmv3d")

SMALL = {
    "rb3d": ("--size", "16", "--iterations", "20"),
    "spmv3d": ("--global", "12", "12", "12", "--cg-iterations", "5", "--reps", "1"),
}


@pytest.mark.parametrize("app", sorted(SMALL))
def test_verify_none_is_unverified_not_failed(app: str) -> None:
    proc = mpiapps.run(f"hympi-{app}", 2, 1, *SMALL[app], "--verify", "none")
    assert "verification FAILED" not in proc.stderr, proc.stderr
    assert "verification (none): SKIPPED" in proc.stdout, proc.stdout
    assert mpiapps.record(proc)["verified"] is False  # exit 0, one result line


def test_hympi_run_says_unverified_not_failed() -> None:
    proc = hympi("run", "rb3d", "--ranks", "2", "--threads", "1", "--", *SMALL["rb3d"], "--min-time", "0",
                 "--verify", "none", env={"HYMPI_BIN_DIR": str(mpiapps.BIN)}, timeout=120)
    # hympi's own verdict stays "not ok" (exit 1): an unverified result is not one it can vouch for.
    assert proc.returncode == 1, proc.stderr
    assert "run unverified: the app exited 0 without requiring verification (e.g. --verify none)" in proc.stderr
    assert "failed verification" not in proc.stderr, proc.stderr
