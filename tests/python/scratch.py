"""The tests' scratch directory: one per pytest process, named with its owner so that a later run removes what a
killed run (SIGKILL, a CI timeout: pytest_unconfigure never ran) left behind."""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
from pathlib import Path

from hympi.store.owner import owner_alive, process_start

PREFIX = "hympi-tests-"
# In each scratch directory: the host, pid and start time of the process it belongs to.
OWNER_FILE = ".owner"


def make_scratch(parent: Path) -> Path:
    """A new scratch directory under `parent`, owned by this process."""
    path = Path(tempfile.mkdtemp(prefix=PREFIX, dir=parent))
    (path / OWNER_FILE).write_text(f"{socket.gethostname()} {os.getpid()} {process_start(os.getpid())}\n")
    return path


def remove_dead(parent: Path) -> list[Path]:
    """Removes the scratch directories under `parent` whose owner no longer runs; returns them. One without an
    owner file (being made, or not ours) is left alone."""
    removed = []
    for path in sorted(parent.glob(f"{PREFIX}*")):
        try:
            host, pid, start = (path / OWNER_FILE).read_text().split()
            alive = owner_alive(host, int(pid), start)
        except (OSError, ValueError):
            continue
        if not alive:
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed
