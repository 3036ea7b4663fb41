"""hympi-blades (issue 19): one state bit for bit over every N1 x N2 layout in both modes, the manufactured-solution
check (and that it can fail), and bad input refused with one line and exit 2, before and under mpirun."""

from __future__ import annotations

import json

import pytest

import skips
from conftest import assert_refused
from mpiapps import have, record, run, run_single

BINARY = "hympi-blades"
# Small and odd: 5 blades split 3:2 over 2 groups and 2:1:1:1 over 4; J = 9 split 5:4 over 2 ranks or threads.
PROBLEM = ("--blades", "5", "--grid", "20", "9", "6", "--iterations", "8")
LAYOUTS = [(1, 1), (1, 2), (2, 1), (2, 2), (4, 1)]  # N1 x N2

needs_app = skips.needs(skips.Reason.NOT_BUILT, have(BINARY), f"mpirun and {BINARY}")


@needs_app
def test_every_layout_and_both_modes_give_one_state_bit_for_bit():
    checksums: dict[tuple[str, int, int], str] = {}
    for n1, n2 in LAYOUTS:
        for inner in ("openmp", "mpi"):
            if inner == "openmp":
                proc = run(BINARY, n1, n2, *PROBLEM, "--inner", "openmp")
            else:
                proc = run(BINARY, n1 * n2, 1, *PROBLEM, "--inner", "mpi", "--n2", str(n2))
            rec = record(proc)
            m = rec["metrics"]
            assert rec["verified"] is True
            assert (m["inner"], m["n1"], m["n2"]) == (inner, n1, n2)
            assert m["manufactured_error"] <= m["manufactured_bound"]
            assert len(m["state_checksum"]) == 16
            # Messages only where the layout has them: the group halo needs N2 ranks, the blade exchange N1 groups.
            assert (m["group_halo_bytes_per_iteration"] > 0) == (inner == "mpi" and n2 > 1)
            assert (m["blade_exchange_bytes_per_iteration"] > 0) == (n1 > 1)
            checksums[(inner, n1, n2)] = m["state_checksum"]
    assert len(set(checksums.values())) == 1, checksums


@needs_app
def test_the_record_has_the_keys_the_sweep_reads():
    rec = record(run_single(BINARY, *PROBLEM))
    m = rec["metrics"]
    for key in (
        "blades",
        "grid",
        "inner",
        "n1",
        "n2",
        "iterations",
        "iteration_s",
        "comp_iteration_s",
        "group_halo_iteration_s",
        "blade_exchange_iteration_s",
        "cells",
        "group_halo_bytes_per_iteration",
        "blade_exchange_bytes_per_iteration",
        "state_checksum",
        "manufactured_error",
    ):
        assert key in m, key
    assert rec["problem"] == "5 blades 20x9x6" and rec["rate_unit"] == "Mcell/s"
    assert m["cells"] == 5 * 20 * 9 * 6 and m["grid"] == [20, 9, 6] and m["iterations"] == 8
    assert set(rec["phases"]) == {"comp", "group_halo", "blade_exchange"}


@needs_app
def test_a_tolerance_too_small_reports_unverified():
    proc = run_single(BINARY, *PROBLEM, "--tolerance-scale", "0.01")
    assert proc.returncode == 1, proc.stderr
    line = next(x for x in proc.stdout.splitlines() if x.startswith("HYMPI_RESULT "))
    rec = json.loads(line[len("HYMPI_RESULT ") :])
    assert rec["verified"] is False
    assert rec["metrics"]["manufactured_error"] > rec["metrics"]["manufactured_bound"]


# (hympi run arguments, app arguments, text the one error line must hold)
BAD = [
    (["--ranks", "3", "--oversubscribe"], ["--blades", "2"], "N1 = 3 groups is larger than the number of blades"),
    (
        ["--ranks", "4", "--oversubscribe"],
        ["--inner", "mpi", "--n2", "4", "--grid", "8", "3", "4"],
        "--n2 4 is larger than J = 3",
    ),
    (
        ["--ranks", "1", "--threads", "4", "--oversubscribe"],
        ["--grid", "8", "3", "4"],
        "N2 = 4 OpenMP threads is larger than J = 3",
    ),
    (["--ranks", "3", "--oversubscribe"], ["--inner", "mpi", "--n2", "2"], "total ranks 3 is not N1 x N2"),
    (["--ranks", "1"], ["--inner", "hybrid"], "unknown --inner 'hybrid'"),
    (["--ranks", "1"], ["--grid", "2", "8", "8"], "--grid I must be >= 3"),
    (["--ranks", "1"], ["--blades", "0"], "--blades must be within [1, 16383], got 0"),
    (["--ranks", "1"], ["--iterations", "0"], "--iterations must be >= 1, got 0"),
    (["--ranks", "1"], ["--offset", "1.5"], "--offset must be within [0, 1]"),
]


@needs_app
@pytest.mark.parametrize(("run_args", "app_args", "needle"), BAD)
def test_bad_input_is_refused_before_launch(run_args, app_args, needle, fake_launcher):
    assert_refused(["run", "blades", *run_args, "--", *app_args], needle, fake_launcher)


# Under mpirun the issue's own cases (each mpirun that fails costs ~2.5 s here; the size checks are the same
# validate() call, covered above).
@needs_app
@pytest.mark.parametrize(("run_args", "app_args", "needle"), BAD[:5])
def test_bad_input_under_mpirun_stops_every_rank_with_one_line(run_args, app_args, needle):
    ranks = int(run_args[1])
    threads = int(run_args[run_args.index("--threads") + 1]) if "--threads" in run_args else 1
    proc = run(BINARY, ranks, threads, *app_args)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "HYMPI_RESULT" not in proc.stdout  # nothing ran
    ours = [x for x in proc.stderr.splitlines() if x.startswith(f"{BINARY}: error:")]
    assert len(ours) == 1, proc.stderr
    assert needle in ours[0]
