"""The apps' files and streams under hostile input: an output that would replace a device, a FIFO, a link or one of
the run's own inputs is refused before anything runs (exit 2, one line, nothing touched); a result that cannot be
written to standard output fails the run (exit 1); what libgomp would only warn about and ignore (a bad
OMP_NUM_THREADS, OMP_PROC_BIND or OMP_PLACES) is refused; sizes past what any machine holds are refused."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import pytest

import skips
from conftest import REPO
from mpiapps import BIN, one_error_line, run_bench, run_single

pytestmark = skips.needs_apps("hympi-rb3d", "hympi-bt-mz", "hympi-is", "hympi-spmv3d", "hympi-info", "hympi-bench-spmv")

RB3D = ["--size", "8", "--iterations", "4"]


def check(name: str, *args: str, env: dict[str, str] | None = None,
          cwd: Path | None = None) -> subprocess.CompletedProcess:
    """`hympi-NAME --validate-ranks 1 ARGS`: the checks a launch makes first, without MPI."""
    return subprocess.run([str(BIN / f"hympi-{name}"), "--validate-ranks", "1", *args], capture_output=True,
                          text=True, timeout=60, env={**os.environ, "OMP_NUM_THREADS": "1", **(env or {})},
                          cwd=cwd, check=False)


def refused(proc: subprocess.CompletedProcess, *needles: str) -> None:
    """Exit 2 with the app's one error line (libgomp's own warning may stand before it) holding every needle."""
    assert proc.returncode == 2, proc.stdout + proc.stderr
    ours = [line for line in proc.stderr.splitlines() if line.startswith("hympi-")]
    assert len(ours) == 1, proc.stderr
    for needle in needles:
        assert needle in ours[0], ours[0]


# --- outputs that would replace what is not theirs ---------------------------------------------------------------

def test_a_checkpoint_named_after_a_device_is_refused() -> None:
    # /dev/null itself: only checked (--validate-ranks), so that a regression cannot replace it.
    refused(check("rb3d", *RB3D, "--checkpoint", "/dev/null", "--checkpoint-every", "1"),
            "--checkpoint /dev/null is a device")


def test_a_checkpoint_named_after_a_fifo_is_refused_and_the_fifo_kept(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    refused(run_single("hympi-rb3d", *RB3D, "--checkpoint", str(fifo), "--checkpoint-every", "1"),
            f"--checkpoint {fifo} is a FIFO")
    assert fifo.is_fifo()


def test_a_checkpoint_named_after_a_link_is_refused_and_the_link_kept(tmp_path: Path) -> None:
    target = tmp_path / "target.txt"
    target.write_text("mine\n")
    link = tmp_path / "link.h5"
    link.symlink_to(target)
    refused(run_single("hympi-rb3d", *RB3D, "--checkpoint", str(link), "--checkpoint-every", "1"),
            f"--checkpoint {link} is a symbolic link (to {target})")
    assert link.is_symlink() and target.read_text() == "mine\n"


def test_a_checkpoint_over_the_config_file_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "my.toml"
    config.write_text('bind = "none"\n')
    refused(run_single("hympi-rb3d", *RB3D, "--config", str(config), "--checkpoint", str(config),
                       "--checkpoint-every", "1"), f"--checkpoint would write over {config}, which this run reads")
    assert config.read_text() == 'bind = "none"\n'


def test_a_checkpoint_over_the_npb_data_file_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "verification.json"
    data.write_bytes((REPO / "data" / "npb-mz" / "verification.json").read_bytes())
    before = data.read_bytes()
    refused(check("bt-mz", "--class", "S", "--data", str(data), "--checkpoint", str(data), "--checkpoint-every", "30"),
            f"--checkpoint would write over {data}")
    assert data.read_bytes() == before


def test_a_restart_file_named_like_a_snapshot_is_refused(tmp_path: Path) -> None:
    checkpoint = tmp_path / "s-000004.h5"
    one = run_single("hympi-rb3d", *RB3D, "--checkpoint", str(checkpoint), "--checkpoint-every", "4")
    assert one.returncode == 0, one.stderr
    before = checkpoint.read_bytes()
    refused(run_single("hympi-rb3d", "--size", "8", "--iterations", "8", "--restart", str(checkpoint),
                       "--snapshot", str(tmp_path / "s"), "--snapshot-every", "2"),
            f"--restart {checkpoint} is one of the files --snapshot {tmp_path / 's'} writes")
    assert checkpoint.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s-000004.h5"]


def test_a_checkpoint_named_like_a_snapshot_is_refused(tmp_path: Path) -> None:
    refused(check("rb3d", *RB3D, "--checkpoint", str(tmp_path / "s-000002.h5"), "--checkpoint-every", "2",
                  "--snapshot", str(tmp_path / "s"), "--snapshot-every", "2"),
            "is one of the files --snapshot")


@pytest.mark.parametrize("prefix", ["{d}/", "{d}"])
def test_a_snapshot_prefix_that_names_a_directory_is_refused(prefix: str, tmp_path: Path) -> None:
    refused(check("rb3d", *RB3D, "--snapshot", prefix.format(d=tmp_path), "--snapshot-every", "2"),
            "names a directory; give the start of the files' names")
    assert list(tmp_path.iterdir()) == []


# --- standard output that cannot be written ----------------------------------------------------------------------

@pytest.mark.parametrize(("binary", "args"), [("hympi-rb3d", ["--bind", "none", "--min-time", "0", *RB3D]),
                                              ("hympi-info", ["--json"])])
def test_a_result_that_cannot_be_written_fails_the_run(binary: str, args: list[str]) -> None:
    with open("/dev/full", "w", encoding="ascii") as full:
        proc = subprocess.run([str(BIN / binary), *args], stdout=full, stderr=subprocess.PIPE, text=True, timeout=120,
                              env={**os.environ, "OMP_NUM_THREADS": "1"}, check=False)
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot write the output to standard output" in lines[0], proc.stderr


# --- OpenMP's variables ------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("variable", "value", "words"), [
    ("OMP_NUM_THREADS", "0", "OMP_NUM_THREADS must be a thread count >= 1"),
    ("OMP_NUM_THREADS", "abc", "OMP_NUM_THREADS must be a thread count >= 1"),
    ("OMP_NUM_THREADS", "2x", "got '2x'"),
    ("OMP_NUM_THREADS", "99999", "OMP_NUM_THREADS=99999 exceeds hympi's limit of 4096 threads on one node"),
    ("OMP_PROC_BIND", "garbage", "OMP_PROC_BIND must be true, false or"),
    ("OMP_PROC_BIND", "true,close", "got 'true,close'"),
    ("OMP_PLACES", "garbage", "OMP_PLACES='garbage' gives the OpenMP runtime no place"),
])
def test_an_openmp_variable_the_runtime_would_ignore_is_refused(variable: str, value: str, words: str) -> None:
    refused(check("rb3d", *RB3D, env={variable: value}), words)


@pytest.mark.parametrize(("variable", "value"), [("OMP_NUM_THREADS", " 1 , 2"), ("OMP_PROC_BIND", "Spread,close"),
                                                 ("OMP_PLACES", "cores"), ("OMP_PLACES", "{0}")])
def test_an_openmp_variable_the_runtime_reads_is_taken(variable: str, value: str) -> None:
    proc = check("rb3d", *RB3D, env={variable: value})
    assert proc.returncode == 0, proc.stderr


# --- sizes past any machine --------------------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "args", "env", "words"), [
    ("rb3d", ["--checkpoint", "{d}/c.h5", "--checkpoint-every", "1", "--h5-alignment", "99999999999999"], {},
     "--h5-alignment must be at most 4294967296 bytes"),
    ("bt-mz", ["--class", "S", "--split-table", "2147483647"], {},
     "--split-table entry 2147483647 exceeds the 3456 points of bt-mz class S"),
    ("bt-mz", ["--class", "S"], {"HYMPI_NUM_LOCS": "99999"}, "HYMPI_NUM_LOCS: number of locations 99999 exceeds"),
    ("spmv3d", ["--global", "8", "8", "8", "--triad-GBps", "1e-320"], {}, "--triad-GBps must be a bandwidth from"),
    ("spmv3d", ["--global", "8", "8", "8", "--triad-GBps", "1e308"], {}, "--triad-GBps must be a bandwidth from"),
])
def test_a_size_past_any_machine_is_refused(name: str, args: list[str], env: dict[str, str], words: str,
                                            tmp_path: Path) -> None:
    refused(check(name, *RB3D if name == "rb3d" else (), *(a.format(d=tmp_path) for a in args), env=env), words)


def test_a_synthetic_topology_past_the_node_limit_is_refused_at_once() -> None:
    proc = subprocess.run([str(BIN / "hympi-info"), "--topology", "synthetic:pack:100 core:100 pu:10"],
                          capture_output=True, text=True, timeout=30, check=False)
    line = one_error_line(proc, 2)
    assert "has 100000 PUs, more than hympi's limit of 4096" in line


def test_the_spmv_benchmark_refuses_a_matrix_past_the_memory() -> None:
    # 429^3 points is about the most 32-bit row starts address, ~51 GiB a rank: enough ranks that they cannot fit.
    ranks = int(psutil.virtual_memory().total // (50 * 2**30)) + 1
    proc = run_bench("hympi-bench-spmv", ranks, "--per-rank", "429", "--rounds", "1", timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert "--per-rank 429 (the CSR matrix's 328 B per point" in proc.stderr and "more than its" in proc.stderr


def test_a_restart_with_the_other_spmv_operator_is_refused(tmp_path: Path) -> None:
    checkpoint = tmp_path / "cg.h5"
    made = run_single("hympi-spmv3d", "--global", "8", "8", "8", "--cg-iterations", "4", "--verify", "none",
                      "--checkpoint", str(checkpoint), "--checkpoint-every", "2")
    assert made.returncode == 0, made.stderr
    refused(check("spmv3d", "--global", "8", "8", "8", "--cg-iterations", "6", "--restart", str(checkpoint),
                  "--operator", "csr"), '"operator":"stencil"', '"operator":"csr"')


# --- data files and variables that describe something else than what would run -----------------------------------

def _edited(tmp_path: Path, relative: str, edit: Callable[[dict[str, Any]], None]) -> Path:
    """A copy of data/RELATIVE with `edit` applied."""
    data = json.loads((REPO / "data" / relative).read_text())
    edit(data)
    path = tmp_path / Path(relative).name
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize(("value", "shown"), [(-5, "-5"), (12.5, "12.5")])
def test_an_npb_step_count_that_is_no_count_is_refused_naming_the_file(value: float, shown: str,
                                                                       tmp_path: Path) -> None:
    data = _edited(tmp_path, "npb-mz/verification.json", lambda d: d["bt-mz"]["S"].update(niter=value))
    refused(check("bt-mz", "--class", "S", "--data", str(data)),
            f"data file {data} (bt-mz class S): niter = {shown} is not a count of steps")


def test_an_is_size_that_is_no_integer_is_refused_not_truncated(tmp_path: Path) -> None:
    data = _edited(tmp_path, "npb-is/verification.json", lambda d: d["S"].update(total_keys_log2=16.5))
    refused(check("is", "--class", "S", "--data", str(data)), "total_keys_log2 = 16.5 is not an integer")


def test_more_virtual_nodes_than_ranks_is_refused() -> None:
    refused(check("rb3d", *RB3D, env={"HYMPI_VIRTUAL_NODES": "3"}),
            "HYMPI_VIRTUAL_NODES=3: this machine runs only 1 rank(s)")


@pytest.mark.parametrize("kind", ["directory", "FIFO", "broken link"])
def test_a_hympi_toml_here_that_is_no_file_is_refused_not_ignored(kind: str, tmp_path: Path) -> None:
    present = tmp_path / "hympi.toml"
    if kind == "directory":
        present.mkdir()
    elif kind == "FIFO":
        os.mkfifo(present)
    else:
        present.symlink_to(tmp_path / "gone.toml")
    words = {"directory": "is a directory", "FIFO": "is a FIFO",
             "broken link": "is a link to a file that does not exist"}[kind]
    refused(check("rb3d", *RB3D, cwd=tmp_path), f"config file hympi.toml (read when present) {words}")
