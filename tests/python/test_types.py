"""The quality gates of the Python code: `mypy --strict` over python/hympi and `ruff check` over every Python file
(both configured in pyproject.toml) find nothing."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LINTED = ("python", "tests/python", "bench")


def _run_tool(module: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`python -m module args` in the repository root; fails the test when the tool is not installed."""
    if importlib.util.find_spec(module) is None:
        pytest.fail(f"{module} is not installed in the venv (it is in the project's [test] extras)")
    return subprocess.run([sys.executable, "-m", module, *args], cwd=REPO, capture_output=True, text=True,
                          timeout=600, check=False)


def test_mypy_strict_finds_no_type_errors():
    proc = _run_tool("mypy", "--strict", "--config-file", str(REPO / "pyproject.toml"))
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ruff_finds_nothing():
    proc = _run_tool("ruff", "check", "--no-cache", *LINTED)
    assert proc.returncode == 0, proc.stdout + proc.stderr
