"""tests/python/scratch.py: a killed test run's scratch directory is removed by the next run, a live one's kept;
and every CTest entry that launches MPI has a TMPDIR of its own (cmake/HympiTesting.cmake's hympi_own_tmpdir)."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

import scratch
import skips

BUILDS = [(Path(__file__).resolve().parents[2] / name).resolve() for name in ("build", "build-asan")]


def test_a_dead_runs_directory_is_removed_a_live_ones_kept(tmp_path: Path):
    mine = scratch.make_scratch(tmp_path)
    (mine / "job").mkdir()
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait(timeout=30)
    dead = tmp_path / f"{scratch.PREFIX}killed"
    (dead / "session").mkdir(parents=True)
    (dead / scratch.OWNER_FILE).write_text(f"{socket.gethostname()} {child.pid} 1.00\n")
    unowned = tmp_path / f"{scratch.PREFIX}unowned"
    unowned.mkdir()
    other = tmp_path / "not-ours"
    other.mkdir()
    (other / scratch.OWNER_FILE).write_text(f"{socket.gethostname()} {child.pid} 1.00\n")

    assert scratch.remove_dead(tmp_path) == [dead]
    assert not dead.exists()
    assert (mine / "job").is_dir() and unowned.is_dir() and other.is_dir()


@pytest.mark.parametrize("build", BUILDS, ids=lambda path: path.name)
def test_every_ctest_entry_that_launches_mpi_has_a_tmpdir_of_its_own(build: Path):
    """Two mpiruns that CTest started at the same instant made one session directory under a shared TMPDIR, and one
    failed ('A call to mkdir was unable to create the desired directory'): an MPI entry without a TMPDIR of its own
    fails here, not one CI run in many. An entry launches MPI when mpiexec or mpirun is in its command (the app and
    bench checks' CMake script is given its mpiexec line, the install test its MPIEXEC)."""
    if not (build / "CTestTestfile.cmake").is_file():  # make test configures both before the suite runs
        skips.skip(skips.Reason.NOT_BUILT, f"{build.name} is not configured")
    ctest = shutil.which("ctest")
    assert ctest is not None
    listing = subprocess.run([ctest, "--test-dir", str(build), "--show-only=json-v1"], capture_output=True,
                             text=True, timeout=120, check=True)
    tmpdirs: dict[str, str] = {}
    launching = 0
    for test in json.loads(listing.stdout)["tests"]:
        command = " ".join(test.get("command") or [])
        if not any(word in command for word in ("mpiexec", "mpirun")):
            continue
        launching += 1
        env = next((p["value"] for p in test.get("properties", []) if p["name"] == "ENVIRONMENT"), [])
        given = [text.partition("=")[2] for text in env if text.startswith("TMPDIR=")]
        assert given, f"{test['name']} launches MPI with the shared TMPDIR"
        assert Path(given[-1]).is_dir() and Path(given[-1]).is_relative_to(build), (test["name"], given)
        tmpdirs[test["name"]] = given[-1]
    assert launching > 0 and len(set(tmpdirs.values())) == len(tmpdirs), tmpdirs
