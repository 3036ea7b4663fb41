"""Running the app binaries under mpirun for the end-to-end tests (unbound: the test machine is oversubscribed)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("HYMPI_BIN_DIR", REPO / "build" / "bin"))
MPIRUN = shutil.which("mpirun")


def have(binary: str) -> bool:
    """Whether mpirun and build/bin/BINARY exist (tests skip otherwise)."""
    return MPIRUN is not None and (BIN / binary).exists()


def mpirun_command(ranks: int, threads: int) -> list[str]:
    """mpirun's words that start `ranks` processes of `threads` OpenMP threads each, unbound: Open MPI binds to a
    core by default at 2 ranks or fewer, which would put all of a rank's threads on one core."""
    assert MPIRUN is not None
    cmd = [MPIRUN, "--oversubscribe", "--bind-to", "none", "-np", str(ranks), "-x", f"OMP_NUM_THREADS={threads}"]
    if os.geteuid() == 0:
        cmd.insert(1, "--allow-run-as-root")
    return cmd


def run(binary: str, ranks: int, threads: int, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Runs `binary ARGS` on `ranks` x `threads` under mpirun."""
    cmd = [*mpirun_command(ranks, threads), str(BIN / binary), "--bind", "none", "--min-time", "0", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False, cwd=cwd)


def run_bench(binary: str, ranks: int, *args: str, cwd: Path | None = None,
              timeout: float = 300) -> subprocess.CompletedProcess:
    """Runs the benchmark `binary ARGS` (bench/: no --bind or --min-time) on `ranks` ranks of one thread."""
    cmd = [*mpirun_command(ranks, 1), str(BIN / binary), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False, cwd=cwd)


def run_single(binary: str, *args: str) -> subprocess.CompletedProcess:
    """Runs `binary ARGS` as a singleton (no mpirun, whose exit banner would add lines), one thread."""
    return subprocess.run(
        [str(BIN / binary), "--bind", "none", "--min-time", "0", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        check=False,
    )


def record(proc: subprocess.CompletedProcess) -> dict:
    """The one HYMPI_RESULT record of a successful run."""
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = [line for line in proc.stdout.splitlines() if line.startswith("HYMPI_RESULT ")]
    assert len(lines) == 1, proc.stdout
    return json.loads(lines[0][len("HYMPI_RESULT ") :])


def verified_record(proc: subprocess.CompletedProcess) -> dict:
    """The one HYMPI_RESULT record of a successful run that verified its result."""
    rec = record(proc)
    assert rec["verified"] is True, rec
    return rec


def one_error_line(proc: subprocess.CompletedProcess, code: int) -> str:
    """The single stderr line of a run that failed with exit `code`."""
    assert proc.returncode == code, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]
