"""NPB-MZ apps end to end through `hympi run`: verified classes, the NPB report, bad input, and a
perturbed run that must fail verification."""

from __future__ import annotations

import pytest

from conftest import assert_refused, hympi, hympi_json


# Class S: the Release CTest entries app.<bench>.W.* already verify class W at four layouts; this checks what
# `hympi run --json` records of a run.
@pytest.mark.parametrize("bench", ["bt-mz", "sp-mz", "lu-mz"])
def test_hympi_run_records_the_verification_and_the_partition(bench):
    code, rec = hympi_json("run", bench, "--ranks", "2", "--threads", "1", "--oversubscribe", "--json",
                           "--", "--class", "S")
    assert code == 0, rec
    assert rec["verified"] is True
    assert rec["problem"] == "class S"
    assert rec["rate_unit"] == "Mop/s" and rec["rate"] > 0
    ver = rec["metrics"]["verification"]
    assert ver["passed"] and ver["dt_ok"] and ver["niter_ok"]
    assert max(ver["xcr_diff"] + ver["xce_diff"]) <= rec["metrics"]["class"]["epsilon"]
    ranks = rec["metrics"]["partition"]["ranks"]
    zones = rec["metrics"]["class"]["x_zones"] * rec["metrics"]["class"]["y_zones"]
    assert zones >= 2 and sorted(z for r in ranks for z in r["zones"]) == list(range(zones))


def test_npb_report_on_stdout():
    proc = hympi("run", "sp-mz", "--ranks", "1", "--threads", "2", "--oversubscribe", "--", "--class", "S")
    assert proc.returncode == 0, proc.stderr
    for needle in ("SP-MZ Benchmark Completed.", "Class           =                        S",
                   "Iterations      =", "Time in seconds =", "Mop/s total     =", "Mop/s/process   =",
                   "Verification    =               SUCCESSFUL", "Verification Successful"):
        assert needle in proc.stdout, needle


@pytest.mark.parametrize("bench", ["bt-mz", "lu-mz"])
def test_perturbed_final_state_fails_verification(bench):
    code, rec = hympi_json("run", bench, "--ranks", "2", "--oversubscribe", "--json",
                           "--", "--class", "S", "--perturb", "0.1")
    assert code != 0
    assert rec.get("verified") is False or rec.get("status") == "unverified"


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["run", "bt-mz", "--", "--class", "Z"], "'Z'"),
        (["run", "lu-mz", "--ranks", "17", "--oversubscribe", "--", "--class", "S"], "17"),
        (["run", "sp-mz", "--ranks", "5", "--oversubscribe", "--", "--class", "S"], "5 ranks"),
        (["run", "sp-mz", "--threads", "0", "--", "--class", "S"], "0"),
        (["run", "bt-mz", "--", "--class", "S", "--packing", "random"], "random"),
    ],
)
def test_bad_input_exits_2_with_one_line(args, needle, fake_launcher):
    assert_refused(args, needle, fake_launcher)
