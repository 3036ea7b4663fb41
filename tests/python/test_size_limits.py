"""Issue 30 B.3: sizes have bounds. Node counts, ranks x threads, a matrix's ranks, a synthetic topology's PUs,
path names, durations, run counts and database ids beyond hympi's declared limits (hympi.limits, contract.toml
[seconds]) are one line and exit 2 while the command line is read, never a command that runs until killed, a
MemoryError or an OSError / OverflowError / TimeoutExpired traceback."""

from __future__ import annotations

import argparse
import subprocess

import pytest

from conftest import assert_refused as refused_without_launch
from conftest import hympi
from fakeapps import fake_bin_dir, launches
from hympi import topology
from hympi.contract import contract
from hympi.errors import HympiFatal, UsageError
from hympi.launch.layout import LayoutSpec
from hympi.limits import (
    MAX_JOB_THREADS,
    MAX_NAME_BYTES,
    MAX_NODE_PUS,
    MAX_NODES,
    MAX_PATH_BYTES,
    MAX_ROW_ID,
    MAX_RUN_COUNT,
    check_path,
    count_argument,
)
from hympi.params import count_of_runs, parse_row_id, seconds_above_zero, seconds_from_zero
from hympi.settings import load_settings
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
    ("pack:2 numa:2 core:4096 pu:2", 32768),
    ("Package:2(memory=1GB) L3Cache:1 Core:4096 PU:2", 16384),  # attributes add no PU
    ("pack:2 [numa] core:3000 pu:1", 6000),  # attached memory adds no PU
    ("2 4 4096", 32768),  # hwloc's older syntax, arities only: once counted as 1 PU and built for minutes
    ("pack:1000 core:1000 pu:1000", 10**9),
])
def test_a_synthetic_node_past_the_limit_is_refused_with_its_pus_counted(description: str, pus: int):
    # hympi-info counts them (Topology::from_synthetic) and the CLI passes its line on: one count, in C++.
    spec = f"synthetic:{description}"
    proc = hympi("info", "--topology", spec, timeout=TIMEOUT_S)
    assert_refused(proc, f"topology '{spec}' has {pus} PUs, more than hympi's limit of {MAX_NODE_PUS.value}")


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


# A sweep checked no layout's size: its app refused a rank count in its own words ('--validate-ranks: ... out of
# range'), a program of the user's own was launched with -np 10^20, and --threads named OMP_NUM_THREADS.
@pytest.mark.parametrize(("command", "option", "needle"), [
    (["run", "rb3d"], "--ranks", "ranks x threads in one job"),
    (["sweep", "rb3d"], "--ranks", "ranks x threads in one job"),
    (["sweep", "/bin/true"], "--ranks", "ranks x threads in one job"),
    (["sweep", "rb3d"], "--threads", "PUs (or ranks x threads) on one node"),
])
def test_a_layout_larger_than_any_job_launches_nothing(command, option, needle, tmp_path):
    env = fake_bin_dir(tmp_path)
    db = ["--db", str(tmp_path / "r.db")] if command[0] == "sweep" else []  # `run` records nothing
    proc = hympi(*command, option, HUGE, "--oversubscribe", *db, env=env, timeout=TIMEOUT_S)
    assert_refused(proc, f"{option} {HUGE}", needle)
    assert launches(env) == [] and not (tmp_path / "r.db").exists()


def test_info_all_nodes_with_more_ranks_than_any_job_launches_nothing(tmp_path):
    env = fake_bin_dir(tmp_path)
    proc = hympi("info", "--all-nodes", "--ranks", HUGE, env=env, timeout=TIMEOUT_S)
    assert_refused(proc, "--ranks", HUGE, "ranks x threads in one job")
    assert launches(env) == []


# --- durations, run counts, database ids ----------------------------------------------------------------------------
# Before their limits: --timeout 1e20 died in an OverflowError of Python's timers, --repeat 1e20 planned runs until
# killed, --resume 1e20 died in SQLite's OverflowError, --wait-quiet 1e20 waited for ever.
HUGE_INT = "99999999999999999999"


def test_a_duration_at_the_contracts_limit_passes_and_above_it_is_refused_with_the_reason():
    most = contract().max_seconds
    assert most == 30 * 24 * 3600
    for parse in (seconds_above_zero, seconds_from_zero):
        assert parse("--timeout", f"{most:.0f}") == most
        with pytest.raises(UsageError, match=r"^--timeout 2592001 exceeds hympi's limit of 2592000 seconds \(30 days"):
            parse("--timeout", f"{most + 1:.0f}")
    assert load_settings(None, {"HYMPI_MIN_TIME": "2592000"}).value("min_time") == most
    with pytest.raises(UsageError, match=r"^HYMPI_MIN_TIME 1e\+20 exceeds hympi's limit of 2592000 seconds"):
        load_settings(None, {"HYMPI_MIN_TIME": "1e20"})


def test_run_counts_and_ids_at_their_limits_pass_and_beyond_are_refused():
    runs = count_of_runs()
    assert runs("--repeat", str(MAX_RUN_COUNT.value)) == MAX_RUN_COUNT.value
    with pytest.raises(UsageError, match=r"^--repeat 10001 exceeds hympi's limit of 10000 runs"):
        runs("--repeat", "10001")
    assert parse_row_id("--resume", str(MAX_ROW_ID.value), "a sweep id") == 2**63 - 1
    with pytest.raises(UsageError, match=r"^--resume 9223372036854775808 exceeds .* \(SQLite's largest integer\)"):
        parse_row_id("--resume", str(2**63), "a sweep id")


@pytest.mark.parametrize(("args", "needle"), [
    (["run", "rb3d", "--timeout", HUGE_INT], "--timeout"),
    (["affinity", "--timeout", HUGE_INT], "--timeout"),
    (["sweep", "rb3d", "--timeout", HUGE_INT, "--db", "D"], "--timeout"),
    (["sweep", "rb3d", "--wait-quiet", "1e12", "--db", "D"], "--wait-quiet 1e+12 exceeds"),
    (["sweep", "rb3d", "--min-time", HUGE_INT, "--db", "D"], "--min-time"),
    (["study", "--timeout", HUGE_INT, "--db", "D"], "--timeout"),
    (["tune", "run", "rb3d", "--space", "S", "--timeout", HUGE_INT, "--db", "D"], "--timeout"),
])
def test_a_duration_beyond_30_days_launches_nothing(args, needle, fake_launcher, tmp_path):
    refused_without_launch(_in(tmp_path, args), needle, fake_launcher)
    assert not (tmp_path / "r.db").exists()


def _in(tmp_path, args):
    """`args` with S a search space file and D a results database (not created) under `tmp_path`."""
    (tmp_path / "space.toml").write_text("[layout]\nranks = [1]\nthreads = [1]\n")
    places = {"S": str(tmp_path / "space.toml"), "D": str(tmp_path / "r.db")}
    return [places.get(a, a) for a in args]


@pytest.mark.parametrize(("args", "needle"), [
    (["sweep", "rb3d", "--repeat", HUGE_INT], f"--repeat {HUGE_INT} exceeds hympi's limit of 10000 runs"),
    (["sweep", "rb3d", "--repeat", "auto", "--max-repeat", "10001"], "--max-repeat 10001 exceeds"),
    (["study", "--repeat", HUGE_INT], "--repeat"),
    (["tune", "run", "rb3d", "--space", "S", "--max-runs", HUGE_INT], "--max-runs"),
    (["sweep", "rb3d", "--resume", HUGE_INT], "SQLite's largest integer"),
])
def test_a_run_count_or_id_beyond_its_limit_launches_nothing(args, needle, fake_launcher, tmp_path):
    refused_without_launch(_in(tmp_path, [*args, "--db", "D"]), needle, fake_launcher)
    assert not (tmp_path / "r.db").exists()


@pytest.mark.parametrize("command", [["report", "--sweep"], ["report", "--study"], ["export", "--sweep"],
                                     ["tune", "best", "--tune"]])
def test_an_id_beyond_sqlites_integers_is_refused_while_parsing(command, tmp_path):
    proc = hympi(*command, HUGE_INT, "--db", str(tmp_path / "none.db"), timeout=TIMEOUT_S)
    assert_refused(proc, command[-1], HUGE_INT, "SQLite's largest integer")
    assert files(tmp_path) == []


@pytest.mark.parametrize("command", [["study"], ["report"]])
def test_a_report_directory_name_too_long_is_refused_while_parsing(command, tmp_path):
    proc = hympi(*command, "--out", str(tmp_path / ("r" * 300)), "--db", str(tmp_path / "none.db"), timeout=TIMEOUT_S)
    assert_refused(proc, "--out", "300 bytes")
    assert files(tmp_path) == []
