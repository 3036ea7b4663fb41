"""Where the compiled apps live."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from hympi.errors import HympiFatal
from hympi.settings import settings

# python/hympi/paths.py -> repository root is three levels up.
REPO_ROOT = Path(__file__).resolve().parents[2]


def bin_dir() -> Path:
    """Directory of the hympi-* binaries: $HYMPI_BIN_DIR, else the repository's build/bin."""
    env = settings().text("bin_dir")
    return Path(env) if env else REPO_ROOT / "build" / "bin"


def binary(name: str) -> Path:
    """Full path of binary `name` (e.g. 'hympi-rb3d'); raises HympiFatal if it was not built."""
    candidate = bin_dir() / name
    if candidate.is_file() and os.access(candidate, os.X_OK):
        return candidate
    found = shutil.which(name)
    if found:
        return Path(found)
    raise HympiFatal(f"{name} not found in {bin_dir()} or on PATH (run 'make' first)")
