"""The reference applications hympi knows how to launch."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass

from hympi.contract import contract
from hympi.errors import UsageError


@dataclass(frozen=True)
class AppSpec:
    """One app: its CLI name, binary, what it does and whether it writes checkpoints (and restarts from them)."""

    name: str
    binary: str
    description: str
    checkpoints: bool = False


# Declared in contract.toml, which the apps are built from (tests/python/test_contract.py checks both agree).
APPS: dict[str, AppSpec] = {a.name: AppSpec(a.name, a.binary, a.description, a.checkpoints) for a in contract().apps}


def own_program_example(name: str) -> str:
    """How to name `name` as a program of one's own: by the path of the executable PATH finds for it (hympi never
    looks a bare name up, and './nwchem' would name a file that is not there), else as ./name."""
    found = shutil.which(name)
    return f"e.g. {os.path.abspath(found)} (found on PATH)" if found else f"e.g. ./{name}"


def get_app(name: str) -> AppSpec:
    """The app called `name`; raises UsageError listing the known ones otherwise."""
    try:
        return APPS[name]
    except KeyError:
        raise UsageError(f"unknown app '{name}' (known: {', '.join(sorted(APPS))}); a program of your own is named by "
                         f"its path, {own_program_example(name)}") from None

