"""The type hints of the hympi package hold: mypy over python/hympi (configured in pyproject.toml) finds nothing."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def test_mypy_finds_no_type_errors():
    mypy = Path(sys.executable).parent / "mypy"
    if not mypy.is_file() and shutil.which("mypy") is None:
        pytest.fail("mypy is not installed in the venv (it is in the project's [test] extras)")
    cmd = [str(mypy) if mypy.is_file() else "mypy", "--config-file", str(REPO / "pyproject.toml")]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
