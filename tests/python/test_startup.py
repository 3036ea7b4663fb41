"""hympi's start-up: a call imports the module of the one subcommand it names (hympi.cli.COMMANDS), so `hympi
--help` and the light subcommands (run, affinity, info, layout, profile, config, export) must not import what only
sweep, study, report, place and tune need (numpy, matplotlib, scikit-learn, the sweeps, the report sections, the
tuner); make test runs hundreds of hympi processes."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

# Modules (and their submodules) that the light subcommands must not import.
HEAVY = ("numpy", "matplotlib", "sklearn", "hympi.report", "hympi.sweep", "hympi.study", "hympi.tune.search",
         "hympi.tune.predict", "hympi.tune.results", "hympi.tune.output", "hympi.tune.tuner", "hympi.cli.sweep",
         "hympi.cli.study", "hympi.cli.report", "hympi.cli.tune", "hympi.cli.tune_predict", "hympi.cli.place",
         "hympi.place.placement", "hympi.place.mapping")
LIGHT = ("run", "affinity", "info", "layout", "profile", "config", "export")

# One fresh interpreter: the modules after building the parser for COMMAND (none: `hympi --help`).
PROBE = """import json, sys
import hympi.cli
hympi.cli.build_parser({command!r})
print(json.dumps(sorted(sys.modules)))
"""


def _modules_after_parser(command: str | None) -> list[str]:
    proc = subprocess.run([sys.executable, "-c", PROBE.format(command=command)], capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    modules: list[str] = json.loads(proc.stdout)
    return modules


def _heavy(modules: list[str]) -> list[str]:
    """The modules in `modules` that are in HEAVY or below one of them."""
    return [m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY)]


def test_the_command_list_imports_no_subcommand() -> None:
    modules = _modules_after_parser(None)
    assert _heavy(modules) == []
    assert not [m for m in modules if m.startswith("hympi.cli.") and m != "hympi.cli.parser"]


@pytest.mark.parametrize("command", LIGHT)
def test_a_light_subcommand_imports_nothing_heavy(command: str) -> None:
    modules = _modules_after_parser(command)
    assert f"hympi.cli.{command}" in modules  # its own parser was built
    assert _heavy(modules) == []


def test_a_heavy_subcommand_imports_its_work() -> None:
    """Proof that the check above would see them: sweep's parser brings numpy, the sweep and the report."""
    assert {"numpy", "hympi.sweep", "hympi.report.analysis", "hympi.cli.sweep"} <= set(_heavy(_modules_after_parser(
        "sweep")))
