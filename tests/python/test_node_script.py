"""bench/node/run.sh, the many-core node script, end to end in its reduced mode on this machine (so it cannot rot
between the days a many-core node is lent), and its refusal to overwrite results (its refusals of bad options are
in test_bench_input.py with the other bench scripts')."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "bench/node/run.sh"
PARTS = ("study", "npb", "blades", "pencil", "transpose", "tune")
# The stand-in reference's Mop/s: every hympi / Fortran cell must be hympi's Mop/s divided by it.
FAKE_MOPS = 250.0


def fake_reference(folder: Path, unverified: str = "", sleep_s: float = 0.0) -> Path:
    """NPB_REF_BIN with a class S 'reference' per benchmark that prints NPB's result lines (it runs under mpirun
    like the real one) after `sleep_s`; `unverified`'s fails its verification."""
    folder.mkdir()
    for bench in ("bt-mz", "sp-mz", "lu-mz"):
        verdict = "UNSUCCESSFUL" if bench == unverified else "SUCCESSFUL"
        exe = folder / f"{bench}.S.x"
        exe.write_text(f"#!/bin/sh\nsleep {sleep_s}\necho ' Mop/s total     =   {FAKE_MOPS}'\n"
                       f"echo ' Verification    =   {verdict}'\n")
        exe.chmod(0o755)
    return folder


def run_script(*args: str, env: dict[str, str] | None = None, timeout: float = 600,
               cwd: Path | None = None) -> subprocess.CompletedProcess:
    """bench/node/run.sh with this test run's interpreter (the venv) and build."""
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout, check=False,
                          env={**os.environ, "PYTHON": sys.executable, **(env or {})}, cwd=cwd)


def rows(markdown: str) -> list[list[str]]:
    """The body rows of every Markdown table in `markdown`, split into cells."""
    out = []
    for line in markdown.splitlines():
        if line.startswith("|") and not line.startswith("|---"):
            out.append([cell.strip() for cell in line.strip("|").split("|")])
    return out


def test_quick_mode_runs_every_part_and_writes_its_tables(tmp_path):
    out = tmp_path / "out"
    ref = fake_reference(tmp_path / "ref", unverified="lu-mz")
    # A budget no part reaches on any machine: what the parts print must not depend on the machine's load.
    proc = run_script("--quick", "--out", str(out), "--budget", "3600", env={"NPB_REF_BIN": str(ref)})
    # The stand-in LU-MZ reference does not verify: the script must say so and fail.
    assert proc.returncode == 1, proc.stderr[-3000:]
    for part in PARTS:
        assert (out / f"{part}.md").is_file(), part
    node = (out / "node.md").read_text()
    heading = re.compile(r"## (study|npb|blades|pencil|transpose|tune|probe) \(\d+ s\)$")
    assert [line for line in node.splitlines() if line.startswith("## ")] == \
        [line for line in node.splitlines() if heading.match(line)]
    assert "cut by the time budget" not in node

    study_md = (out / "study.md").read_text()
    study = rows(study_md)
    layouts = {r[0] for r in study if r[0] != "layout"}
    assert {"1x1", "2x1", "1x2"} <= layouts, study
    # 4 rounds (--max-repeat 4): a verdict where the runs separate the fastest or the tie-break decides; else the
    # lead too few ok runs confirm (a layout left with fewer than 4: a run that failed).
    against = [r[4] for r in study]
    assert "recommended" in against or ("fastest median" in against and "; no verdict (" in study_md), study_md

    npb = [r for r in rows((out / "npb.md").read_text()) if r[0] != "benchmark"]
    assert {(r[0], r[1]) for r in npb} == {(b, lay) for b in ("bt-mz", "sp-mz", "lu-mz") for lay in ("2x1", "1x2")}
    for bench, _, fortran, hympi, ratio in npb:
        assert re.fullmatch(r"\d+", hympi), hympi  # verified hympi runs: a plain number
        assert fortran == ("250 (NOT verified)" if bench == "lu-mz" else "250")
        assert float(ratio) == pytest.approx(int(hympi) / FAKE_MOPS, abs=0.01)

    scaling_md, steps_md = (out / "pencil.md").read_text().split("### where a step's time goes")
    pencil = [r for r in rows(scaling_md) if r[0] != "ranks"]
    assert [r[0] for r in pencil] == ["1", "2"]
    assert pencil[0][3] == "reference" and re.match(r"\d+\.\d+ \[\d+\.\d+, \d+\.\d+\]", pencil[1][3])
    steps = [r for r in rows(steps_md) if r[0] != "ranks"]  # KiB a rank sends per transpose: none on one rank
    assert [(r[0], r[5] == "0") for r in steps] == [("1", True), ("2", False)], steps

    transpose = (out / "transpose.md").read_text()  # fenced text tables: one row per grid, FFTW's ms and 7 ratios
    assert re.search(r"^ +32x32x32 +2 +no( +\d+\.\d+){8}$", transpose, re.MULTILINE), transpose

    blades = (out / "blades.md").read_text()
    assert "MPI/hybrid" in blades and "identical across layouts and modes" in blades

    tune = rows((out / "tune.md").read_text())
    for program in ("lu-mz --class S", "is --class S"):  # LU-MZ first: a budget that runs short tunes it
        strategies = [r[1] for r in tune if r[0] == program]
        assert strategies[:2] == ["exhaustive", "guided"], tune
    assert [r[0] for r in tune if r[1] == "exhaustive"] == ["lu-mz --class S", "is --class S"], tune

    probe = [r for r in rows((out / "probe.md").read_text()) if r[0] != "layout"]
    assert [r[0] for r in probe] == ["1x2", "2x1"], probe
    assert all(re.fullmatch(r"\d+\.\d+ %, \d+\.\d+ %", r[5]) for r in probe), probe


def test_a_part_cut_by_the_budget_says_so_and_keeps_its_table(tmp_path):
    out = tmp_path / "out"
    # The first reference run outlasts the whole budget, so the cut lands in it whatever the machine's speed.
    ref = fake_reference(tmp_path / "ref", sleep_s=30)
    proc = run_script("--quick", "--parts", "npb", "--budget", "2", "--out", str(out), env={"NPB_REF_BIN": str(ref)},
                      timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    npb = [r for r in rows((out / "npb.md").read_text()) if r[0] != "benchmark"]
    assert npb[0][:3] == ["bt-mz", "2x1", "cut (budget)"], npb
    assert all(r[2] == "not run (budget)" for r in npb[1:]), npb
    assert len(npb) == 6
    assert (out / "node.md").read_text().count("| not run (budget) |") == 5


def test_an_output_folder_with_files_is_not_overwritten(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "node.md").write_text("earlier results")
    proc = run_script("--quick", "--out", str(out), timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert "exists and is not empty" in proc.stderr
    assert (out / "node.md").read_text() == "earlier results"


def test_a_pack_runs_from_relative_paths_with_the_probe_it_carries(tmp_path):
    """What a lent node gets: pack.sh's folder (apps, profiling library, reference, libraries), named relative to
    the working folder as a carried checkout names it. The probe part preloads the packed profiling library."""
    fake_reference(tmp_path / "ref")
    pack = subprocess.run(["bash", str(REPO / "bench/node/pack.sh"), str(REPO / "build/bin"), "ref", "pack"],
                          capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path)
    assert pack.returncode == 0, pack.stderr
    assert (tmp_path / "pack/lib/libhympi-profile.so").is_file()
    assert (tmp_path / "pack/libs/libhwloc.so.15").is_file() or any((tmp_path / "pack/libs").glob("libhwloc.so.*"))
    proc = run_script("--quick", "--parts", "probe", "--budget", "600", "--out", "out", cwd=tmp_path, timeout=300,
                      env={"HYMPI_BIN_DIR": "pack/bin", "NODE_LIBS": "pack/libs", "NPB_REF_BIN": "pack/ref"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "lacks" not in proc.stderr
    probe = [r for r in rows((tmp_path / "out/probe.md").read_text()) if r[0] != "layout"]
    assert [r[0] for r in probe] == ["1x2", "2x1"], probe


def test_pack_refuses_a_build_without_the_profiling_library(tmp_path):
    bin_dir = tmp_path / "build/bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "hympi-info").symlink_to(REPO / "build/bin/hympi-info")
    fake_reference(tmp_path / "ref")
    proc = subprocess.run(["bash", str(REPO / "bench/node/pack.sh"), str(bin_dir), str(tmp_path / "ref"),
                           str(tmp_path / "pack")], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip() == \
        f"pack.sh: {bin_dir}/../lib/libhympi-profile.so not found (build the hympi-profile target)"
    assert not (tmp_path / "pack").exists()


def test_pack_refuses_a_build_without_the_transpose_benchmark(tmp_path):
    # The transpose part runs it on the node, where nothing can be built.
    bin_dir = tmp_path / "build/bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "hympi-info").symlink_to(REPO / "build/bin/hympi-info")
    (tmp_path / "build/lib").mkdir()
    (tmp_path / "build/lib/libhympi-profile.so").symlink_to(REPO / "build/lib/libhympi-profile.so")
    ref = fake_reference(tmp_path / "ref")
    proc = subprocess.run(["bash", str(REPO / "bench/node/pack.sh"), str(bin_dir), str(ref), str(tmp_path / "pack")],
                          capture_output=True, text=True, timeout=60, check=False)
    assert (proc.returncode, proc.stderr.strip()) == (
        2, f"pack.sh: {bin_dir} holds no hympi-bench-transpose (build that target)")
    assert not (tmp_path / "pack").exists()
