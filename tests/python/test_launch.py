"""Launch commands are argument lists with this machine's flags; hung jobs are killed."""

from __future__ import annotations

import json
import os
import time

import pytest

from hympi.errors import UsageError
from hympi.launch.mpirun import LaunchSpec, build_command, check_layout, run_command
from records import full_record


def test_openmpi_command_binds_nothing_and_exports_layout():
    spec = LaunchSpec("hympi-rb3d", 4, 2, "numa", "scatter", ("--size", "32"), True)
    cmd = build_command(spec, launcher="/usr/bin/mpirun", flavor="openmpi")
    assert cmd[0] == "/usr/bin/mpirun"
    assert cmd[cmd.index("-np") + 1] == "4"
    assert cmd[cmd.index("--bind-to") + 1] == "none"
    assert "--oversubscribe" in cmd
    assert "OMP_NUM_THREADS=2" in cmd and "HYMPI_BIND=numa" in cmd and "HYMPI_DIST=scatter" in cmd
    assert cmd[-3].endswith("hympi-rb3d") and cmd[-2:] == ["--size", "32"]
    assert ("--allow-run-as-root" in cmd) == (os.geteuid() == 0)


def test_openmpi_rankfile_replaces_binding_flag():
    spec = LaunchSpec("hympi-rb3d", 2, 1, rankfile="/tmp/ranks.txt")
    cmd = build_command(spec, launcher="mpirun", flavor="openmpi")
    assert cmd[cmd.index("--rankfile") + 1] == "/tmp/ranks.txt"
    assert "--bind-to" not in cmd


def test_mpich_command_uses_hydra_flags():
    spec = LaunchSpec("hympi-rb3d", 3, 1, "core")
    cmd = build_command(spec, launcher="mpiexec", flavor="mpich")
    assert cmd[:5] == ["mpiexec", "-n", "3", "-bind-to", "none"]
    i = cmd.index("-genv")
    assert cmd[i + 1:i + 3] == ["OMP_NUM_THREADS", "1"]


def test_layout_check_counts_pus():
    check_layout(LaunchSpec("x", 2, 2), pus=4)
    with pytest.raises(UsageError, match="exceeds the 4 PUs"):
        check_layout(LaunchSpec("x", 3, 2), pus=4)
    check_layout(LaunchSpec("x", 3, 2, oversubscribe=True), pus=4)


def test_hung_run_is_killed_and_reported_as_timeout():
    start = time.monotonic()
    outcome = run_command(["sh", "-c", "echo partial; sleep 60 & wait"], timeout=1.0)
    assert outcome.status == "timeout"
    assert outcome.returncode is None
    assert "partial" in outcome.stdout  # what was printed before the kill is kept
    assert time.monotonic() - start < 20


def test_failed_run_without_result_is_failed():
    outcome = run_command(["sh", "-c", "echo boom >&2; exit 3"], timeout=10)
    assert outcome.status == "failed" and outcome.returncode == 3
    assert outcome.stderr_tail() == "boom"


def test_result_line_decides_ok_or_unverified():
    good = json.dumps(full_record(verified=True))
    ok = run_command(["sh", "-c", f"echo 'HYMPI_RESULT {good}'"], timeout=10)
    assert ok.status == "ok" and ok.record == full_record(verified=True) and ok.result is not None
    unverified = json.dumps(full_record(verified=False))
    bad = run_command(["sh", "-c", f"echo 'HYMPI_RESULT {unverified}'; exit 1"], timeout=10)
    assert bad.status == "unverified"
