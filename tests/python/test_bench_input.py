"""The benchmark scripts reject bad input with one line that begins with the script's name and names the value, and
exit 2, before they build, launch or write anything: every place they would write (--output or --out, $WORK,
$BUILD) lies in the test's folder, which must stay empty."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from refusals import assert_refused, files

REPO = Path(__file__).resolve().parents[2]
# Per script: its command, the option naming its output (None: it writes under $WORK) and how its lines begin.
SCRIPTS = {
    "halo": ((sys.executable, str(REPO / "bench/halo/run.py")), "--output", "bench: "),
    "hpcg": (("bash", str(REPO / "bench/hpcg/run.sh")), None, "run.sh: "),
    "node": (("bash", str(REPO / "bench/node/run.sh")), "--out", "node: "),
    "npb-mz": (("bash", str(REPO / "bench/npb-mz/run.sh")), None, "run.sh: "),
    "osu": (("bash", str(REPO / "bench/osu/run.sh")), None, "run.sh: "),
    "store": ((sys.executable, str(REPO / "bench/store/large.py")), "--work", "large.py: "),
    "tune": ((sys.executable, str(REPO / "bench/tune/run.py")), "--work", "bench: "),
    "vm": ((sys.executable, str(REPO / "bench/vm/run.py")), None, "run.py: "),
}
# Set in the caller's environment, these would change what the scripts check.
SCRIPT_VARIABLES = ("RUN_TIMEOUT", "MARCH", "OSU_SRC", "OSU_GIT", "NPB_REF_BIN")


@pytest.mark.parametrize(
    ("script", "args", "env", "needle"),
    [
        ("halo", ["--repeat", "0"], {}, "--repeat: must be >= 1, got 0"),
        ("halo", ["--n", "-4"], {}, "--n: must be >= 1, got -4"),
        ("halo", ["--layouts", "1x2,3y"], {}, "'3y' is not RANKSxTHREADS"),
        ("halo", ["--layouts", "0x2"], {}, "'0x2' is not RANKSxTHREADS"),
        ("halo", ["--parts", "spmv3d,foo"], {}, "unknown value 'foo'"),
        ("hpcg", ["--n", "12"], {}, "--n must be a multiple of 8 and >= 16 (HPCG's multigrid), got '12'"),
        ("hpcg", ["--ranks", "0"], {}, "--ranks must be a positive integer, got '0'"),
        ("node", ["--parts", "study,foo"], {}, "--parts: unknown part 'foo'"),
        ("node", ["--parts", ","], {}, "--parts: no part given"),
        ("node", ["--budget", "-5"], {}, "--budget: must be a number of seconds > 0, got -5.0"),
        ("node", ["--budget", "nan"], {}, "--budget: must be a number of seconds > 0, got nan"),
        ("npb-mz", ["--repeat", "x"], {}, "--repeat must be a positive integer, got 'x'"),
        ("npb-mz", [], {"RUN_TIMEOUT": "10m"}, "RUN_TIMEOUT must be a positive number of seconds, got '10m'"),
        ("npb-mz", [], {"MARCH": "no-such-cpu"}, "MARCH='no-such-cpu' is not a CPU"),
        ("npb-mz", ["--bogus"], {}, "unknown argument '--bogus'"),
        ("osu", ["--repeat", "0"], {}, "--repeat must be a positive integer, got '0'"),
        ("osu", ["--repeat"], {}, "--repeat must be a positive integer, got ''"),
        ("osu", ["--tolerance", "10%"], {}, "--tolerance must be a fraction between 0 and 1 (e.g. 0.10), got '10%'"),
        ("osu", ["--tolerance", "0"], {}, "--tolerance must be a fraction between 0 and 1 (e.g. 0.10), got '0'"),
        ("osu", [], {"RUN_TIMEOUT": "-1"}, "RUN_TIMEOUT must be a positive number of seconds, got '-1'"),
        ("osu", [], {"OSU_GIT": "/nonexistent/osu.git"}, "OSU_GIT='/nonexistent/osu.git' is not a git directory"),
        ("osu", [], {"OSU_SRC": "/nonexistent/osu"},
         "OSU_SRC='/nonexistent/osu' is not an unpacked osu-micro-benchmarks"),
        ("osu", ["--bogus"], {}, "unknown argument '--bogus'"),
        ("store", ["--runs", "20000,0"], {}, "--runs: '0' is not a positive integer"),
        ("store", ["--runs", "2\u00b2"], {}, "--runs: '2\u00b2' is not a positive integer"),
        ("store", ["--runs", "20000000"], {}, "--runs: 20000000 runs is more than this benchmark makes"),
        ("tune", ["--npb-ref-bin", "/nonexistent/npb"], {}, "--npb-ref-bin: '/nonexistent/npb' is not a directory"),
        ("tune", ["--parts", "lopo,foo"], {}, "--parts: unknown part 'foo'"),
        ("tune", ["--lopo-repeat", "0"], {}, "--lopo-repeat: must be >= 1, got 0"),
        ("tune", ["--recheck-pairs", "-1"], {}, "--recheck-pairs: must be >= 0, got -1"),
        ("vm", [], {}, "--command: no command given"),
        ("vm", ["--command", "lu"], {}, "'lu' is not LABEL=COMMAND"),
        ("vm", ["--command", "a=OMP_NUM_THREADS=2"], {}, "'a=OMP_NUM_THREADS=2' has no program"),
        ("vm", ["--command", "a=no-such-program-here --x"], {}, "'no-such-program-here' is not a program"),
        ("vm", ["--command", "a=true", "--command", "a=false"], {}, "a label is given twice (a, a)"),
        ("vm", ["--command", "a=true", "--runs", "0"], {}, "--runs: must be >= 1, got 0"),
        ("vm", ["--command", "a=true", "--pus", "0,0"], {}, "'0,0' is not two different PU numbers A,B"),
        ("vm", ["--command", "a=true", "--pus", "0,4096"], {}, "PU 4096 is not one this process may run on"),
        ("vm", ["--command", "a=true", "--far-ns", "nan"], {}, "--far-ns: must be a number of ns > 0, got nan"),
        ("vm", ["--command", "a=true", "--time-pattern", "time("], {}, "'time(' is not a regular expression"),
        ("vm", ["--command", "a=true", "--time-pattern", "time_s"], {}, "'time_s' has no group to take the time"),
        ("vm", ["--command", "a=true", "--rate-pattern", "GFLOPs"], {}, "'GFLOPs' has no group to take the rate"),
        ("vm", ["--command", "a=true", "--rate-pattern", "(x)", "--time-pattern", "(y)"], {}, "not both"),
    ],
)
def test_bench_script_rejects_bad_values(tmp_path: Path, script: str, args: list[str], env: dict[str, str],
                                         needle: str):
    command, output_option, prefix = SCRIPTS[script]
    output = [output_option, str(tmp_path / "out")] if output_option else []
    base = {k: v for k, v in os.environ.items() if k not in SCRIPT_VARIABLES}
    proc = subprocess.run([*command, *args, *output], capture_output=True, text=True, timeout=60, check=False,
                          env={**base, "PYTHON": sys.executable, "WORK": str(tmp_path / "work"),
                               "BUILD": str(tmp_path / "build"), **env})
    assert_refused(proc, needle)
    assert proc.stderr.startswith(prefix), proc.stderr
    assert files(tmp_path) == []
