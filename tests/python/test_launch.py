"""Launch commands are argument lists with this machine's flags; hung jobs are killed."""

from __future__ import annotations

import errno
import io
import json
import os
import re
import subprocess
import sys
import time

import pytest

from hympi.capture import read_bounded
from hympi.errors import UsageError
from hympi.launch.mpirun import LaunchSpec, build_command, check_layout, run_command
from records import full_record


def test_openmpi_command_binds_nothing_and_exports_layout():
    spec = LaunchSpec("hympi-rb3d", 4, 2, "numa", "scatter", ("--size", "32"), True)
    cmd = build_command(spec, launcher="/usr/bin/mpirun", flavor="openmpi")
    assert cmd[0] == "/usr/bin/mpirun"
    assert cmd[cmd.index("-np") + 1] == "4"
    assert cmd[cmd.index("--bind-to") + 1] == "none"
    assert "--oversubscribe" in cmd
    assert "OMP_NUM_THREADS=2" in cmd and "HYMPI_BIND=numa" in cmd and "HYMPI_DIST=scatter" in cmd
    assert cmd[-3].endswith("hympi-rb3d") and cmd[-2:] == ["--size", "32"]
    assert ("--allow-run-as-root" in cmd) == (os.geteuid() == 0)


def test_openmpi_rankfile_replaces_binding_flag():
    spec = LaunchSpec("hympi-rb3d", 2, 1, rankfile="/tmp/ranks.txt")
    cmd = build_command(spec, launcher="mpirun", flavor="openmpi")
    assert cmd[cmd.index("--rankfile") + 1] == "/tmp/ranks.txt"
    assert "--bind-to" not in cmd


def test_mpich_command_uses_hydra_flags():
    spec = LaunchSpec("hympi-rb3d", 3, 1, "core")
    cmd = build_command(spec, launcher="mpiexec", flavor="mpich")
    assert cmd[:5] == ["mpiexec", "-n", "3", "-bind-to", "none"]
    i = cmd.index("-genv")
    assert cmd[i + 1:i + 3] == ["OMP_NUM_THREADS", "1"]


def test_layout_check_counts_pus():
    check_layout(LaunchSpec("x", 2, 2), pus=4)
    with pytest.raises(UsageError, match="exceeds the 4 PUs"):
        check_layout(LaunchSpec("x", 3, 2), pus=4)
    check_layout(LaunchSpec("x", 3, 2, oversubscribe=True), pus=4)


def test_hung_run_is_killed_and_reported_as_timeout():
    start = time.monotonic()
    outcome = run_command(["sh", "-c", "echo partial; sleep 60 & wait"], timeout=1.0)
    assert outcome.status == "timeout"
    assert outcome.returncode is None
    assert "partial" in outcome.stdout  # what was printed before the kill is kept
    assert time.monotonic() - start < 20


def test_failed_run_without_result_is_failed():
    outcome = run_command(["sh", "-c", "echo boom >&2; exit 3"], timeout=10)
    assert outcome.status == "failed" and outcome.returncode == 3
    assert outcome.stderr_tail() == "boom"


def test_result_line_decides_ok_or_unverified():
    good = json.dumps(full_record(verified=True))
    ok = run_command(["sh", "-c", f"echo 'HYMPI_RESULT {good}'"], timeout=10)
    assert ok.status == "ok" and ok.record == full_record(verified=True) and ok.result is not None
    unverified = json.dumps(full_record(verified=False))
    bad = run_command(["sh", "-c", f"echo 'HYMPI_RESULT {unverified}'; exit 1"], timeout=10)
    assert bad.status == "unverified"


# Run in a fresh interpreter so its peak memory is the capture's: 200 MB of short lines, then a result line.
_LOUD_RUN = """
import json, resource, sys
from hympi.launch.mpirun import run_command
record = sys.argv[1]
script = f"echo first; yes 'step done' | head -c 200000000; echo; echo 'HYMPI_RESULT {record}'"
outcome = run_command(["sh", "-c", script], timeout=120)
print(json.dumps({"status": outcome.status, "stdout": outcome.stdout,
                  "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def test_a_run_printing_hundreds_of_mib_is_kept_head_and_tail_in_bounded_memory():
    record = json.dumps(full_record(verified=True))
    proc = subprocess.run([sys.executable, "-c", _LOUD_RUN, record], capture_output=True, text=True, timeout=180,
                          check=True)
    seen = json.loads(proc.stdout)
    # Holding all of it took 2.7 GiB for 400 MB (bytes, text and its lines at once).
    assert seen["peak_mib"] < 512, seen["peak_mib"]
    assert seen["status"] == "ok"  # the result line, in the kept tail, was found
    out = seen["stdout"]
    assert out.startswith("first\nstep done\n")
    assert out.endswith(f"\nstep done\n\nHYMPI_RESULT {record}\n")
    cut = re.search(r"\n\[hympi: (\d+) bytes of this output left out here\]\nstep done\n", out)
    assert cut is not None
    kept = out[:cut.start() + 1] + out[cut.end() - len("step done\n"):]
    # Whole lines on both sides, and every byte printed is either kept or counted as left out.
    assert len(kept.encode()) + int(cut.group(1)) == len("first\n") + 200_000_000 + 1 + len(f"HYMPI_RESULT {record}\n")
    assert kept.count("step done") * len("step done\n") < 64 << 20


def test_an_echo_that_fails_never_blocks_the_program_and_a_bug_in_it_is_raised():
    def closed(_: bytes) -> None:
        raise BrokenPipeError  # hympi's stdout piped into `head`, gone

    def buggy(_: bytes) -> None:
        raise ValueError("a bug in the echo")

    # 588 KB, nine times a pipe's buffer: a reader that stopped at the echo's failure would leave seq blocked.
    outcome = run_command(["sh", "-c", "seq 1 100000; echo end"], timeout=60, echo=closed)
    assert outcome.returncode == 0 and outcome.stdout.endswith("\n99999\n100000\nend\n")
    with pytest.raises(ValueError, match="a bug in the echo"):
        run_command(["sh", "-c", "seq 1 100000"], timeout=60, echo=buggy)


def test_a_stream_that_fails_mid_read_raises_for_its_reader_not_a_silent_cut():
    """An output file whose read fails half-way (EIO) is an error its reader reports (text_written_since: 'cannot
    be read'), not a text that silently ends where the read failed."""
    class Failing(io.RawIOBase):
        reads = 0

        def readable(self) -> bool:
            return True

        def readinto(self, buffer) -> int:  # type: ignore[no-untyped-def]
            self.reads += 1
            if self.reads > 1:
                raise OSError(errno.EIO, "Input/output error")
            buffer[:6] = b"first\n"
            return 6

    with pytest.raises(OSError, match="Input/output error"):
        read_bounded(io.BufferedReader(Failing()))
