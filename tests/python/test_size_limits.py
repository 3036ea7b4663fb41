"""Issue 30 B.3: sizes have bounds. Node counts, ranks x threads, a matrix's ranks, a synthetic topology's PUs and
path names beyond hympi's declared limits (hympi.limits) are one line and exit 2 while the command line is read,
never a command that runs until killed, a MemoryError or an OSError / TimeoutExpired traceback."""

from __future__ import annotations

import argparse
import subprocess

import pytest

from conftest import hympi
from fakeapps import fake_bin_dir, launches
from hympi import topology
from hympi.errors import HympiFatal, UsageError
from hympi.launch.layout import LayoutSpec
from hympi.limits import (
    MAX_JOB_THREADS,
    MAX_NAME_BYTES,
    MAX_NODE_PUS,
    MAX_NODES,
    MAX_PATH_BYTES,
    check_path,
    count_argument,
)
from hympi.topology import synthetic_pus
from refusals import assert_refused, files

HUGE = "100000000000"
SMALL_NODE = "synthetic:pack:1 core:2 pu:1"
# Each of these ran until killed, or died in a traceback, before the limits: a hang now fails at this timeout.
TIMEOUT_S = 60


# --- the limits themselves ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("limit", [MAX_NODES, MAX_JOB_THREADS, MAX_NODE_PUS])
def test_a_count_at_its_limit_passes_and_one_more_is_refused_with_the_reason(limit):
    parse = count_argument(limit)
    assert parse(str(limit.value)) == limit.value
    with pytest.raises(argparse.ArgumentTypeError, match=f"{limit.value + 1} exceeds hympi's limit of {limit.value}"):
        parse(str(limit.value + 1))
    assert limit.reason in limit.exceeded(limit.value + 1)
    with pytest.raises(UsageError, match=r"^--x 5000000000000"):
        limit.check("--x", 5_000_000_000_000)


def test_a_job_is_bounded_as_a_whole_not_only_per_option():
    at_limit = LayoutSpec(MAX_JOB_THREADS.value // 8, 4, 2, oversubscribe=True)
    at_limit.check_size()  # 2^23 threads: the largest job accepted
    with pytest.raises(UsageError, match=r"--nodes 1048576 x --ranks-per-node 16 x --threads 1 = 16777216 exceeds"):
        LayoutSpec(MAX_NODES.value, 16, 1, oversubscribe=True).check_size()
    with pytest.raises(UsageError, match=r"--ranks-per-node 64 x --threads 128 = 8192 exceeds"):
        LayoutSpec(1, 64, 128, oversubscribe=True).check_size()


def test_path_names_beyond_linux_limits_are_refused_without_repeating_them():
    check_path("--db", "a/" * 100 + "b" * MAX_NAME_BYTES.value)  # long, but every part fits
    with pytest.raises(UsageError, match=r"^--db: a path of 5000 bytes exceeds 4095") as long_path:
        check_path("--db", "x" * 5000)
    assert "x" * 100 not in str(long_path.value)
    with pytest.raises(UsageError, match=r"^--db: a path component of 256 bytes"):
        check_path("--db", "dir/" + "y" * 256)
    assert MAX_PATH_BYTES.value == 4095


@pytest.mark.parametrize(("description", "pus"), [
    ("pack:2 numa:2 core:4 pu:2", 32),
    ("Package:2(memory=1GB) L3Cache:1 Core:4 PU:2", 16),  # attributes add no PU
    ("pack:2 [numa] core:3 pu:1", 6),  # attached memory adds no PU
    ("2 4 2", 16),  # hwloc's older syntax: arities only
    ("pack:1000 core:1000 pu:1000", 10**9),
])
def test_synthetic_pus_multiplies_the_arities(description, pus):
    assert synthetic_pus(description) == pus


# --- the commands -----------------------------------------------------------------------------------------------------
def test_layout_huge_node_count_is_refused_at_once():
    proc = hympi("layout", "--nodes", HUGE, "--for", "openmpi4", "--topology", SMALL_NODE, timeout=TIMEOUT_S)
    assert_refused(proc, "--nodes", HUGE, "158,976")


def test_layout_huge_job_is_refused_before_the_topology_is_loaded():
    proc = hympi("layout", "--nodes", "1000000", "--ranks-per-node", "64", "--threads", "2", "--oversubscribe",
                 "--for", "openmpi4", "--topology", "synthetic:pack:1000 core:1000 pu:1000", timeout=TIMEOUT_S)
    assert_refused(proc, "128000000", "ranks x threads in one job")


@pytest.mark.parametrize("option", ["--ranks-per-node", "--threads"])
def test_layout_per_node_counts_are_bounded(option):
    proc = hympi("layout", option, HUGE, "--oversubscribe", "--for", "openmpi4", "--topology", SMALL_NODE,
                 timeout=TIMEOUT_S)
    assert_refused(proc, option, HUGE, "on one node")


def test_layout_within_the_limits_still_prints_every_cpuset():
    proc = hympi("layout", "--nodes", "3", "--ranks-per-node", "2", "--threads", "1", "--for", "openmpi4",
                 "--topology", SMALL_NODE, timeout=TIMEOUT_S)
    assert proc.returncode == 0, proc.stderr
    assert len([line for line in proc.stdout.splitlines() if line.split()[:1] in (["0"], ["1"], ["2"])]) == 6


def test_place_huge_node_count_is_refused(tmp_path):
    matrix = tmp_path / "m.txt"
    matrix.write_text("0 1\n1 0\n")
    before = files(tmp_path)
    proc = hympi("place", "--matrix", str(matrix), "--nodes", HUGE, "--out", str(tmp_path / "r.txt"),
                 timeout=TIMEOUT_S)
    assert_refused(proc, "--nodes", HUGE)
    assert files(tmp_path) == before


def test_place_cluster_larger_than_a_job_is_refused_before_its_arrays_exist(tmp_path):
    matrix = tmp_path / "m.txt"
    matrix.write_text("0 1\n1 0\n")
    proc = hympi("place", "--matrix", str(matrix), "--nodes", str(MAX_NODES.value), "--topology",
                 "synthetic:pack:2 core:8 pu:1", timeout=TIMEOUT_S)
    assert_refused(proc, "1048576 node(s)", "16777216")


def test_place_matrix_with_more_ranks_than_a_job_is_refused(tmp_path):
    matrix = tmp_path / "m.txt"
    matrix.write_text(f"ranks {HUGE}\n0 1 5\n")
    proc = hympi("place", "--matrix", str(matrix), timeout=TIMEOUT_S)
    assert_refused(proc, f"{matrix}:1", HUGE)


@pytest.mark.parametrize("command", [["info"], ["layout", "--for", "openmpi4"], ["place", "--matrix", "M"]])
def test_huge_synthetic_topology_is_refused_before_hwloc_builds_it(command, tmp_path):
    matrix = tmp_path / "m.txt"
    matrix.write_text("0 1\n1 0\n")
    spec = "synthetic:pack:1000 core:1000 pu:1000"
    args = [str(matrix) if a == "M" else a for a in command]
    proc = hympi(*args, "--topology", spec, timeout=TIMEOUT_S)
    assert_refused(proc, spec, "1000000000", "PUs")


def test_a_hung_hympi_info_is_one_line_not_a_traceback(monkeypatch):
    def hang(cmd, **kwargs):
        raise subprocess.TimeoutExpired(cmd, kwargs["timeout"])
    monkeypatch.setattr(topology.subprocess, "run", hang)
    with pytest.raises(HympiFatal, match=r"^hympi-info did not load topology 'x.xml' within 60 s$"):
        topology.run_hympi_info("x.xml", "json")


@pytest.mark.parametrize("command", [["export"], ["report"], ["tune", "best"], ["sweep", "rb3d", "--dry-run"]])
@pytest.mark.parametrize("name", ["x" * 5000, "d/" + "y" * 300])
def test_db_name_too_long_is_refused_while_parsing(command, name, tmp_path):
    proc = hympi(*command, "--db", str(tmp_path / name), timeout=TIMEOUT_S)
    assert_refused(proc, "--db", "bytes")
    assert files(tmp_path) == []


def test_output_name_too_long_is_refused(tmp_path):
    proc = hympi("export", "--db", str(tmp_path / "none.db"), "-o", str(tmp_path / ("z" * 300)), timeout=TIMEOUT_S)
    assert_refused(proc, "--output", "300 bytes")


def test_run_with_more_ranks_than_any_job_launches_nothing(tmp_path):
    env = fake_bin_dir(tmp_path)
    proc = hympi("run", "rb3d", "--ranks", HUGE, "--oversubscribe", env=env, timeout=TIMEOUT_S)
    assert_refused(proc, f"--ranks {HUGE}", "ranks x threads in one job")
    assert launches(env) == []


def test_info_all_nodes_with_more_ranks_than_any_job_launches_nothing(tmp_path):
    env = fake_bin_dir(tmp_path)
    proc = hympi("info", "--all-nodes", "--ranks", HUGE, env=env, timeout=TIMEOUT_S)
    assert_refused(proc, "--ranks", HUGE, "ranks x threads in one job")
    assert launches(env) == []
