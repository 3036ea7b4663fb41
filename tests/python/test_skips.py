"""Issue 30, A.2: under CI only missing hardware skips; everything the bootstrap installs or builds fails instead,
and every run ends with one line counting its skips by reason."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import skips

HERE = Path(__file__).resolve().parent
# pytest's own ways to skip; skips.py is the one module allowed to call them.
RAW_SKIP = re.compile(r"pytest\.skip\(|\.skipif\(|importorskip\(|pytest\.mark\.skip\b")


def test_no_test_skips_except_through_the_helper():
    offenders = [f"{path.name}:{number}: {line.strip()}"
                 for path in sorted(HERE.glob("*.py")) if path.name not in ("skips.py", "test_skips.py")
                 for number, line in enumerate(path.read_text().splitlines(), 1) if RAW_SKIP.search(line)]
    assert offenders == []


@pytest.mark.parametrize("reason", list(skips.Reason))
def test_under_ci_only_the_machine_s_hardware_or_load_skips(reason: skips.Reason, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("CI", "true")
    expected = pytest.skip.Exception if reason.of_machine else pytest.fail.Exception
    with pytest.raises(expected) as caught:
        skips.skip(reason, "detail")
    assert str(caught.value.msg).startswith(f"{reason.value}: detail")


@pytest.mark.parametrize("reason", list(skips.Reason))
def test_outside_ci_every_reason_skips(reason: skips.Reason, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception):
        skips.skip(reason, "detail")


def test_the_machine_reasons_are_the_ones_the_issue_allows():
    assert {r.value for r in skips.MACHINE} == {"no second NUMA domain", "no SMT", "fewer CPUs than the test needs",
                                                "no CPU cache", "the machine is busy"}
    assert not any(r.of_machine for r in (skips.Reason.SLURM, skips.Reason.MPICH, skips.Reason.CHROMIUM,
                                        skips.Reason.H5PY, skips.Reason.FORTRAN, skips.Reason.NOT_BUILT))


def test_an_empty_ci_variable_is_not_ci(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("CI", "")
    with pytest.raises(pytest.skip.Exception):
        skips.skip(skips.Reason.H5PY, "detail")


def test_a_module_that_is_not_installed_fails_under_ci(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("CI", "1")
    with pytest.raises(pytest.fail.Exception, match="no h5py: cannot import hympi_no_such_module"):
        skips.import_or_skip("hympi_no_such_module", skips.Reason.H5PY)
    assert skips.import_or_skip("json", skips.Reason.H5PY).__name__ == "json"


def test_the_summary_counts_by_reason_most_frequent_first():
    messages = ["no SMT: 1 PU per core", "no second NUMA domain: a", "no second NUMA domain: b", "something else"]
    assert skips.summary_line(messages) == "skipped: 4 (no second NUMA domain: 2, no SMT: 1, other: 1)"
    assert skips.summary_line([]) == "skipped: 0"


def _run_pytest(folder: Path, ci: bool) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "CI"} | ({"CI": "1"} if ci else {})
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(folder)],
                          capture_output=True, text=True, timeout=120, env=env, cwd=folder, check=False)


def test_a_run_ends_with_the_skip_count_and_fails_under_ci_for_a_missing_part(tmp_path: Path):
    """The real conftest.py hooks on a small suite: a hardware skip, a skip for a missing part (a mark and a call)
    and a test that passes."""
    for name in ("conftest.py", "forkcli.py", "scratch.py", "skips.py", "slurmcluster.py"):
        shutil.copy(HERE / name, tmp_path / name)
    (tmp_path / "test_small.py").write_text(
        "import skips\n\n"
        "def test_numa():\n    skips.skip(skips.Reason.NO_SECOND_NUMA, 'one NUMA node')\n\n"
        "@skips.needs(skips.Reason.NOT_BUILT, False, 'hympi-none')\n"
        "def test_built():\n    pass\n\n"
        "def test_fortran():\n    skips.skip(skips.Reason.FORTRAN, 'mpif90 is not installed')\n\n"
        "def test_fine():\n    assert 1 + 1 == 2\n")
    here = _run_pytest(tmp_path, ci=False)
    assert here.returncode == 0, here.stdout
    assert here.stdout.strip().splitlines()[-1] == "skipped: 3 (no Fortran: 1, no second NUMA domain: 1, not built: 1)"
    ci = _run_pytest(tmp_path, ci=True)
    assert ci.returncode == 1, ci.stdout
    assert ci.stdout.strip().splitlines()[-1] == "skipped: 1 (no second NUMA domain: 1)"
    assert "1 failed, 1 passed, 1 skipped, 1 error" in ci.stdout
