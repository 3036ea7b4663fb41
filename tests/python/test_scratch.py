"""tests/python/scratch.py: a killed test run's scratch directory is removed by the next run, a live one's kept."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import scratch


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
