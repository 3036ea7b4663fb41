"""hympi's start-up: every call builds the whole parser, so that must not import what only sweep, study, report
and tune need (numpy, matplotlib, scikit-learn, the sweeps, the report sections, the tuner); make test runs hundreds
of hympi processes."""

from __future__ import annotations

import json
import subprocess
import sys

# Modules (and their submodules) that building the parser and running run/affinity/info/layout/place/profile/config/
# export must not import.
HEAVY = ("numpy", "matplotlib", "sklearn", "hympi.report", "hympi.sweep", "hympi.study", "hympi.tune.search",
         "hympi.tune.predict", "hympi.tune.results", "hympi.tune.output", "hympi.tune.tuner", "hympi.cli.sweep_main",
         "hympi.cli.tune_main", "hympi.cli.tune_predict", "hympi.cli.place_main", "hympi.place.placement",
         "hympi.place.mapping")

# One fresh interpreter: the modules after building the parser, then after importing sweep's work (which must pull
# in numpy and hympi.sweep: proof that the first list would show them).
PROBE = """import json, sys
import hympi.cli
hympi.cli.build_parser()
before = sorted(sys.modules)
import hympi.cli.sweep_main
print(json.dumps([before, sorted(sys.modules)]))
"""


def _heavy(modules: list[str]) -> list[str]:
    """The modules in `modules` that are in HEAVY or below one of them."""
    return [m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY)]


def test_parser_imports_nothing_heavy() -> None:
    proc = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    before, after = json.loads(proc.stdout)
    assert "hympi.cli.sweep" in before and "hympi.cli.tune" in before  # every subcommand's parser was built
    assert _heavy(before) == []
    assert {"numpy", "hympi.sweep", "hympi.report.analysis"} <= set(_heavy(after))
