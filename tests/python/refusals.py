"""What the bad-input tests check of a refused command: exit 2, one stderr line naming the bad values, and nothing
written (the files under a folder, a file's content hash, before and after)."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path


def assert_refused(proc: subprocess.CompletedProcess, *needles: str) -> None:
    """Exit 2 and one stderr line naming every needle."""
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


def files(path: Path) -> list[str]:
    """Every path under `path` (to prove that nothing was written)."""
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


def digest(path: Path) -> str:
    """The file's content hash."""
    return hashlib.sha256(path.read_bytes()).hexdigest()
