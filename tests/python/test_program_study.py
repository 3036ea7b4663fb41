"""`hympi study --programs FILE` on programs nobody here wrote the launch code for: Debian's LAMMPS (its melt input)
and hybrid.c, an MPI + OpenMP program compiled by the test with mpicc: every layout run and judged, a recommendation
with its reason for each, and the report's section per program."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from conftest import hympi
from hympi.store import Store
from userprograms import hybrid, hybrid_binary, lammps, shell_program


def _toml_list(items: tuple[str, ...]) -> str:
    return "[" + ", ".join(f"'{item}'" for item in items) + "]"


def _entry(name: str, invocation) -> str:
    return (f"[[program]]\nname = '{name}'\ncommand = {_toml_list(invocation.command)}\n"
            f"metric = '{invocation.metric}'\nmetric_unit = '{invocation.metric_unit}'\n"
            f"better = '{invocation.better}'\nverify = '{invocation.verify}'\n\n")


def _text(page: Path) -> str:
    body = re.sub(r"<(script|style).*?</\1>", "", page.read_text(), flags=re.S)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", body)).split())


def test_a_study_of_lammps_and_a_hybrid_program_recommends_a_layout_for_each(tmp_path: Path,
                                                                             tmp_path_factory: pytest.TempPathFactory):
    programs = tmp_path / "hympi-programs.toml"
    programs.write_text(_entry("melt", lammps(cells=6, steps=200)) +
                        _entry("heat", hybrid(hybrid_binary(tmp_path_factory), 1_000_000, 30)))
    db, out = tmp_path / "r.db", tmp_path / "report"
    proc = hympi("study", "--quick", "--programs", str(programs), "--db", str(db), "--out", str(out), timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with Store.open(db, create=False) as store:
        sweeps = {s.app: s for s in store.sweeps()}
        assert set(sweeps) == {"melt", "heat"}  # the programs only: no reference app without --apps
        for name, sweep in sweeps.items():
            runs = store.runs([sweep.id])
            layouts = {(r.ranks, r.threads) for r in runs if r.status == "ok" and r.repeat >= 1}
            assert layouts == {(1, 1), (2, 1), (1, 2)}, (name, [(r.ranks, r.threads, r.status) for r in runs])
            assert all(r.record is not None and r.record["metrics"]["verification"].startswith("matched")
                       for r in runs if r.status == "ok")
    text = _text(out / "index.html")
    for name in ("melt", "heat"):
        summary = re.search(rf"{name} [^:]*: (.*?)(?= melt | heat | Machine )", text)
        assert summary is not None and ("recommended" in summary.group(1) or "fastest" in summary.group(1)), text[:3000]
    assert "timesteps/s" in text and "Mupdates/s" in text
    # The probe saw inside the runs: Debian's LAMMPS has no OpenMP threads.
    assert "1x2 (probe): each rank ran 1 of the 2 threads asked for (OMP_NUM_THREADS=2): this program does not use " \
           "OpenMP threads here" in text


def test_a_study_stops_a_program_whose_every_launch_fails_and_its_report_says_why_once(tmp_path: Path):
    """A programs file's entry whose check never matches: each layout's warm-up fails, nothing more is launched, and
    the report names the planned runs it ended short of, with the reason, once."""
    shell_program(tmp_path, "solver", 'echo "residual 1e-3"\n')
    programs = tmp_path / "hympi-programs.toml"
    programs.write_text("[[program]]\nname = 'solver'\ncommand = ['./solver']\nverify = 'converged'\n")
    db, out = tmp_path / "r.db", tmp_path / "report"
    proc = hympi("study", "--quick", "--programs", str(programs), "--db", str(db), "--out", str(out), timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    with Store.open(db, create=False) as store:
        (sweep,) = store.sweeps()
        assert sorted((r.ranks, r.threads, r.status) for r in store.runs()) == [
            (1, 1, "failed"), (1, 2, "failed"), (2, 1, "failed")]
    said = (f"sweep 1 (solver) ended with 3 of its {sweep.total} planned runs: every launch failed (1x1 core: failed; "
            "1x2 core: failed; 2x1 core: failed) and no run of sweep 1 was ever ok")
    assert sweep.total > 3 and _text(out / "index.html").count(said) == 1
