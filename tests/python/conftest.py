"""Shared fixtures: run the hympi CLI in-process or as a subprocess, with this machine's MPI settings."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import forkcli
import scratch
import skips
import slurmcluster
from hympi.sweep import SweepParams
from hympi.tune.tuner import TuneParams

REPO = Path(__file__).resolve().parents[2]
os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
# Apps and sweeps take their minimum kernel time from here: 0 keeps the tests' runs as short as their arguments say.
os.environ.setdefault("HYMPI_MIN_TIME", "0")
# Tests run beside each other (pytest-xdist) and beside other work: no quiet check before their sweeps, and no run of
# theirs judged disturbed unless a test asks for it (test_busy.py builds its sweeps with the documented default).
os.environ.setdefault("HYMPI_IGNORE_LOAD", "1")
os.environ.setdefault("HYMPI_DISTURBED_ABOVE", "1000")
# The same for records built in code, which take contract.toml's default, not HYMPI_*: a test builds them with
# sweep_params and tune_params below (test_busy.py checks that every other test file does).
DISTURBED_ABOVE = float(os.environ["HYMPI_DISTURBED_ABOVE"])
# Open MPI keeps a job's session directory (8 MB of PMIx stores) under TMPDIR and removes it only when mpirun ends on
# its own: the tests that kill a job as a crashed node would (SIGKILL to every process) left one in /tmp each time
# (112 of them, 0.9 GB, on one development VM), and Chromium its singleton directory. So what this process launches
# writes its temporary files in a directory of this process's, removed when the run ends (pytest_unconfigure).
# A run killed before pytest_unconfigure (SIGKILL, a CI timeout) leaves its directory: the next run removes it.
scratch.remove_dead(Path(tempfile.gettempdir()))
SCRATCH = scratch.make_scratch(Path(tempfile.gettempdir()))
os.environ["TMPDIR"] = str(SCRATCH)


def sweep_params(*args: Any, **kwargs: Any) -> SweepParams:
    """SweepParams as a test builds it: no run judged disturbed by the tests running beside it, unless it says."""
    return SweepParams(*args, **{"disturbed_above": DISTURBED_ABOVE, **kwargs})


def tune_params(*args: Any, **kwargs: Any) -> TuneParams:
    """TuneParams as a test builds it (as sweep_params)."""
    return TuneParams(*args, **{"disturbed_above": DISTURBED_ABOVE, **kwargs})


def pytest_configure(config: pytest.Config) -> None:
    """Registers skips.needs' mark, so that a typo in its name is an error (--strict-markers), not a silent run."""
    config.addinivalue_line("markers", f"{skips.MARKER}(reason, present, detail): what the test needs (skips.py)")
    config.addinivalue_line("markers", "quiet_machine: true only while nothing else loads the machine (other "
                            "tests included): run alone, after the parallel pass (Makefile test-python)")
    # tempfile fixed its directory at /tmp before TMPDIR changed, so pytest's tmp_path directories (three runs kept
    # in /tmp/pytest-of-<user>, up to 130 MB) go into SCRATCH by name. Not by moving tempfile's directory: this
    # process's multiprocessing directory (the fork server's, forkcli) would follow it into SCRATCH, which
    # pytest_unconfigure removes before multiprocessing's own clean-up at exit looks for it.
    if config.option.basetemp is None:
        config.option.basetemp = str(SCRATCH / "pytest")


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Skips, or under CI fails, a test whose skips.needs mark is not met."""
    skips.apply_needs(item)


def _skip_message(report: pytest.TestReport | pytest.CollectReport) -> str:
    """The reason text of a skipped test's report ('Skipped: ' taken off)."""
    longrepr = report.longrepr
    text = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    return text.removeprefix("Skipped: ")


def pytest_unconfigure(config: pytest.Config) -> None:
    """Removes SCRATCH, and ends the run with one line counting its skips by reason (skips.summary_line), so that a
    skip is seen: here, after pytest's own summary (pytest_terminal_summary would print it before the short summary
    and the totals). xdist workers report to the controller, which prints the line once."""
    shutil.rmtree(SCRATCH, ignore_errors=True)
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None or hasattr(config, "workerinput"):
        return
    skipped = reporter.stats.get("skipped", [])
    reporter.write_line(skips.summary_line(_skip_message(report) for report in skipped))


def hympi(*args: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """Runs `hympi ARGS` as a user would, each call its own process (forkcli), returning the completed process."""
    return forkcli.run(args, {**os.environ, **(env or {})}, timeout)


def hympi_json(*args: str, env: dict[str, str] | None = None) -> tuple[int, dict]:
    """Runs `hympi ... --json` and parses its record."""
    proc = hympi(*args, env=env)
    return proc.returncode, json.loads(proc.stdout.strip().splitlines()[-1])


def assert_refused(args: list[str], needle: str, fake_launcher: tuple[dict[str, str], Path]) -> None:
    """`hympi ARGS` must exit 2 with one stderr line holding `needle`, and start no launcher."""
    env, marker = fake_launcher
    proc = hympi(*args, env=env)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert needle in lines[0]
    assert not marker.exists(), "a launcher was started for bad input"


@pytest.fixture
def fake_launcher(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """An MPI launcher that only records that it was called, to prove nothing was launched."""
    marker = tmp_path / "launched"
    script = tmp_path / "mpirun"
    script.write_text(f"#!/bin/sh\ntouch {marker}\nexit 0\n")
    script.chmod(0o755)
    return {"HYMPI_MPIRUN": str(script), "HYMPI_MPI_FLAVOR": "openmpi"}, marker


@pytest.fixture
def small_tmpfs(tmp_path: Path):  # type: ignore[no-untyped-def]
    """A 1 MiB tmpfs at tmp_path/full, unmounted after; skipped where mounting is not allowed (failed under CI:
    `make test` runs as root)."""
    mount = tmp_path / "full"
    mount.mkdir()
    tool = shutil.which("mount")
    if os.geteuid() != 0 or tool is None:
        skips.skip(skips.Reason.NOT_ROOT, "mounting a tmpfs needs root and mount(8)")
    proc = subprocess.run([tool, "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)],
                          capture_output=True, text=True, timeout=30, check=False)
    if proc.returncode != 0:
        skips.skip(skips.Reason.NOT_ROOT, f"cannot mount a tmpfs here: {proc.stderr.strip()}")
    try:
        yield mount
    finally:
        # Lazily: a process of a failed test may still hold a file there, and a plain umount would then leave the
        # mount behind, under pytest's temporary directory, which it can no longer remove.
        subprocess.run(["umount", "--lazy", str(mount)], capture_output=True, timeout=30, check=False)


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[slurmcluster.SlurmCluster]:
    """A single-node Slurm on localhost (munged, slurmctld, slurmd), started once per test process; the test is
    skipped (failed under CI), with the reason and the daemons' log tails, where it cannot run (not root, packages
    missing)."""
    try:
        cluster = slurmcluster.start(tmp_path_factory.mktemp("slurm"))
    except slurmcluster.ClusterUnavailable as exc:
        skips.skip(skips.Reason.SLURM, str(exc))
    yield cluster
    slurmcluster.stop(cluster)
