"""`hympi run`, `hympi affinity`, `hympi info` end to end, bad input included."""

from __future__ import annotations

import itertools
import json

import pytest
from rich.console import Console

import hympi.cli.run as run_cli
from conftest import assert_refused, hympi, hympi_json
from fakebusy import samplers
from hympi.cli import main
from hympi.cli.run import result_table
from hympi.result import parse_record
from records import full_record

RESULT_FIELDS = {"app", "problem", "ranks", "threads", "bind", "time_s", "rate", "rate_unit", "verified", "comm_s",
                 "comp_s", "imbalance", "max_rss_mib", "node_rss_mib", "hosts", "mpi_library", "threads_level",
                 "timestamp", "binding"}


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["run", "nosuchapp"], "nosuchapp"),
        (["run", "rb3d", "--bind", "socket"], "socket"),
        (["run", "rb3d", "--dist", "spread"], "spread"),
        (["run", "rb3d", "--ranks", "0"], "0"),
        (["run", "rb3d", "--threads", "-2"], "-2"),
        (["run", "rb3d", "--threads", "64"], "64"),
        (["run", "rb3d", "--ranks", "9", "--oversubscribe", "--", "--size", "2"], "9 ranks"),
        (["run", "rb3d", "--", "--size", "0"], "0"),
        (["run", "rb3d", "--", "--size", "8", "--omega", "2.5"], "2.5"),
        (["run", "rb3d", "--", "--verify", "maybe"], "maybe"),
        (["run", "stream", "--", "--repeats", "1"], "1"),
        (["run", "rb3d", "--virtual-nodes", "0"], "0"),
        (["info", "--topology", "synthetic:pack:zero"], "pack:zero"),
        (["run", "rb3d", "--rank", "2"], "--rank"),
        (["info", "--ranks", "2"], "--ranks"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_nothing_launched(args, needle, fake_launcher):
    assert_refused(args, needle, fake_launcher)


def test_rb3d_residuals_identical_across_layouts():
    histories = {}
    for ranks, threads in ((1, 1), (1, 2), (2, 1), (4, 1)):
        code, rec = hympi_json("run", "rb3d", "--ranks", str(ranks), "--threads", str(threads), "--oversubscribe",
                               "--json", "--", "--size", "20", "--iterations", "10", "--residual-every", "2")
        assert code == 0
        assert rec.keys() >= RESULT_FIELDS
        assert rec["verified"] is True
        assert rec["ranks"] == ranks and rec["threads"] == threads
        assert len(rec["binding"]) == ranks * threads
        histories[(ranks, threads)] = rec["metrics"]["residuals"]
    reference = histories[(1, 1)]
    assert len(reference) == 6
    for layout, history in histories.items():
        assert history == reference, f"layout {layout} differs from one rank"


def test_rb3d_exact_verification_fails_when_not_converged():
    code, rec = hympi_json("run", "rb3d", "--json", "--", "--size", "16", "--iterations", "3", "--verify", "exact")
    assert code == 1
    assert rec["verified"] is False


def test_rb3d_exact_verification_passes_when_converged():
    code, rec = hympi_json("run", "rb3d", "--ranks", "2", "--json", "--", "--size", "15", "--omega", "1.7",
                           "--iterations", "400", "--tolerance", "1e-11", "--verify", "exact")
    assert code == 0 and rec["verified"] is True
    assert rec["metrics"]["max_error"] == pytest.approx(rec["metrics"]["discretisation_error"], rel=0.01)


def test_affinity_check_core_binding_gives_each_rank_its_core():
    code, rec = hympi_json("affinity", "--ranks", "2", "--bind", "core", "--check", "--json")
    assert code == 0 and rec["verified"] is True
    cores = sorted(row["core"] for row in rec["binding"])
    assert cores == [0, 1]
    assert all(row["bound"] == row["intended"] for row in rec["binding"])


def test_affinity_table_is_printed():
    proc = hympi("affinity", "--ranks", "2", "--bind", "none")
    assert proc.returncode == 0, proc.stderr
    assert "rank" in proc.stdout and "package" in proc.stdout
    assert "binding check: PASSED" in proc.stdout


def test_virtual_nodes_split_the_machine():
    code, rec = hympi_json("affinity", "--ranks", "4", "--oversubscribe", "--virtual-nodes", "2", "--json")
    assert code == 0
    assert rec["nodes"] == 2
    assert len(rec["hosts"]) == 2
    assert rec["hosts"][0].endswith("/vn0") and rec["hosts"][1].endswith("/vn1")


def test_stream_reports_verified_bandwidth():
    code, rec = hympi_json("run", "stream", "--threads", "2", "--json", "--", "--elements", "300000",
                           "--repeats", "3")
    assert code == 0 and rec["verified"] is True
    assert rec["rate_unit"] == "GB/s" and rec["rate"] > 0
    # The rate covers every timed triad (time_s); the best pass (STREAM's rule) is in metrics.
    assert rec["metrics"]["triad_mean_GBps"] == rec["rate"]
    assert rec["metrics"]["triad_GBps"] >= rec["rate"]


def test_info_json_matches_hwloc_counts():
    proc = hympi("info", "--json", "--topology", "synthetic:pack:2 numa:2 core:4 pu:2")
    assert proc.returncode == 0
    data = json.loads(proc.stdout)
    assert (data["packages"], data["numa_nodes"], data["cores"], data["pus"]) == (2, 4, 16, 32)


def test_run_prints_table_and_app_report():
    proc = hympi("run", "rb3d", "--", "--size", "12", "--iterations", "4")
    assert proc.returncode == 0, proc.stderr
    assert "verification (reference): PASSED" in proc.stdout
    assert "GFLOP/s" in proc.stdout


def test_app_options_pass_through_without_double_dash():
    # hympi -n is --ranks (as for mpirun); the app sees only options hympi does not know.
    code, rec = hympi_json("run", "rb3d", "--json", "--size", "10", "--iterations", "3")
    assert code == 0
    assert rec["problem"] == "10^3" and rec["metrics"]["iterations"] == 3


def test_the_result_table_shows_the_bound_fraction_of_a_record_that_has_one():
    def shown(record: dict) -> str:
        console = Console(width=200, record=True)
        console.print(result_table(parse_record(record)))
        return console.export_text()

    bounded = full_record(bytes_moved=3e9, kernel_gbs=3.0, triad_gbs=6.0, triad_source="given", bound_gbs=8.0,
                          bound_fraction=0.375)
    assert "3 GB/s, 0.38 of the bound 8 GB/s (triad, given)" in shown(bounded)
    assert "of the bound" not in shown(full_record(bytes_moved=3e9, kernel_gbs=3.0))


@pytest.mark.parametrize(("cores", "limit", "warned"), [(1.5, "0.25", True), (0.1, "0.25", False), (1.5, "2", False)])
def test_hympi_run_says_when_other_work_disturbed_it(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture,
                                                     cores: float, limit: str, warned: bool):
    """What hympi.busy says of the run is faked (test_busy measures the sampler itself): beyond --disturbed-above
    hympi run says so in one line, as a sweep marks such a run (the suite's own limit is 1000: conftest)."""
    monkeypatch.setattr(run_cli, "Sampler", samplers(itertools.repeat(cores)))
    assert main(["run", "rb3d", "--disturbed-above", limit, "--", "--size", "16", "--iterations", "5"]) == 0
    said = "hympi: warning: other work used 1.50 cores of this run's PUs while it ran (more than --disturbed-above " \
        "0.25): its figures are not the layout's alone"
    assert (said in capsys.readouterr().err) == warned
