"""hympi's standard output on a full disk (redirected to /dev/full, whose every write fails with ENOSPC): one line
'hympi: error: cannot write standard output (No space left on device)', exit 1, and a sweep that stopped on it is
recorded as interrupted, its finished runs kept (was: an internal error naming OSError, and the sweep left
'running')."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from hympi.store import Run, Store

ENTRY = "import sys; from hympi.cli import main; sys.exit(main())"
LINE = "hympi: error: cannot write standard output (No space left on device)"


def hympi_to_full(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`hympi ARGS > /dev/full`, stderr captured (/dev/full is only opened as the target of the redirect)."""
    with open("/dev/full", "w") as full:
        return subprocess.run([sys.executable, "-c", ENTRY, *args], stdout=full, stderr=subprocess.PIPE, text=True,
                              cwd=cwd, env=os.environ.copy(), timeout=300, check=False)


def results_db(path: Path) -> Path:
    """A results database with one sweep of one run."""
    with Store.open(path) as store:
        machine = store.ensure_machine("h", "t", "m", "c", {})
        sweep = store.create_sweep(machine.id, "rb3d", {"app": "rb3d"}, 1)
        store.add_run(Run(sweep_id=sweep.id, app="rb3d", ranks=1, threads=1, bind="core", dist="compact", repeat=1,
                          app_args=(), env=(), command=("rb3d",), status="ok", returncode=0, wall_s=1.0,
                          record={"rate": 1.0}))
        store.set_sweep_status(sweep.id, "finished")
    return path


@pytest.mark.parametrize("command", [["export", "--db", "r.db"], ["config", "--json"], ["layout"],
                                     ["place", "--matrix", "m.txt", "--topology", "synthetic:pack:1 core:2 pu:1"],
                                     ["tune", "params", "--json", "--cvars", "cvars.json"]])
def test_a_full_stdout_is_one_line_and_exit_1(command, tmp_path):
    results_db(tmp_path / "r.db")
    (tmp_path / "m.txt").write_text("0 1\n1 0\n")
    (tmp_path / "cvars.json").write_text(subprocess.run(
        [sys.executable, "-c", ENTRY, "tune", "params", "--json"], capture_output=True, text=True, timeout=300,
        check=True).stdout)
    proc = hympi_to_full(*command, cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.strip() == LINE


def test_a_sweep_whose_stdout_fills_is_recorded_interrupted_and_resumes(tmp_path):
    program = tmp_path / "solver"
    program.write_text("#!/bin/sh\necho done\n")
    program.chmod(0o755)
    proc = hympi_to_full("sweep", str(program), "--ranks", "1", "--db", "r.db", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.strip() == LINE
    with Store.read(tmp_path / "r.db") as store:
        assert [s.status for s in store.sweeps()] == ["interrupted"]
    done = subprocess.run([sys.executable, "-c", ENTRY, "sweep", str(program), "--ranks", "1", "--db", "r.db",
                           "--resume"], capture_output=True, text=True, cwd=tmp_path, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    with Store.read(tmp_path / "r.db") as store:
        assert [s.status for s in store.sweeps()] == ["finished"]
        assert all(r.status == "ok" for r in store.runs())
