"""What a program's runs are recorded and reported as, found with real programs (pw.x < si.scf.in, gmx_mpi, cp2k):
sweeps of one program name and arguments that read another standard input, set other variables or measure another
figure of merit are other measurements, never pooled into one layout's statistics; a run's problem names the file it
read as its standard input; messages show a regular expression as it was typed, not as Python's repr spells it."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path

from conftest import hympi
from hympi.launch.mpirun import RunOutcome
from hympi.program import Program, judge, quoted
from hympi.store import Store
from userprograms import shell_program


def _outcome(stdout: str) -> RunOutcome:
    return RunOutcome("failed", 0, 1.0, ["mpirun", "./p"], stdout, "")


def test_a_report_keeps_apart_sweeps_of_one_program_with_other_inputs_variables_or_figures(tmp_path: Path,
                                                                                           monkeypatch):
    """pw.x takes its whole input on standard input: two sweeps of `pw.x < a.in` and `pw.x < b.in` were one report
    group '(no arguments)', their rates (one problem 7x the other's) pooled into one layout's min/median/max; so
    were sweeps under other --env values and sweeps measuring another --metric in another unit. Each is now its own
    group, named by what it read and what it measured, with its own plots."""
    monkeypatch.chdir(tmp_path)
    shell_program(tmp_path, "solver", 'read size\necho "rate: $((size * ${SCALE:-1})) cells/s"\necho "time: 0.5 s"\n')
    (tmp_path / "a.in").write_text("10\n")
    (tmp_path / "b.in").write_text("70\n")
    db = str(tmp_path / "r.db")
    base = ["sweep", "./solver", "--ranks", "1", "--repeat", "2", "--no-warmup", "--ignore-load", "--db", db]
    rate = ["--metric", r"rate:\s+([0-9]+) cells/s", "--metric-unit", "cells/s"]
    for extra in (["--stdin", "a.in", *rate], ["--stdin", "b.in", *rate],
                  ["--stdin", "a.in", "--env", "SCALE=3", *rate],
                  ["--stdin", "a.in", "--metric", r"time: ([0-9.]+) s", "--metric-unit", "s", "--better", "lower"]):
        proc = hympi(*base, *extra)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    header = proc.stdout + proc.stderr
    assert "figure of merit 'time: ([0-9.]+) s' (s, lower is better)" in " ".join(header.split()), header
    proc = hympi("report", "--db", db, "--out", str(tmp_path / "rep"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    page = (tmp_path / "rep" / "index.html").read_text()
    meta = json.loads(unescape(re.search(r"data-report='([^']*)'", page).group(1)))  # type: ignore[union-attr]
    assert meta == {"runs": 8, "groups": 4}
    text = unescape(re.sub(r"<[^>]+>", " ", page))
    # Each group's rates are its own: 10, 70 and 30 cells/s, and 0.5 s for the time, never one row of them all.
    rows = re.findall(r"1x1 core none 1 2 2 (\S+) (\S+) (\S+)", " ".join(text.split()))
    assert sorted(rows) == sorted([("10", "10", "10"), ("70", "70", "70"), ("30", "30", "30"), ("0.5", "0.5", "0.5")])
    assert text.count("solver < a.in") >= 3 and "solver < b.in" in text
    assert "with SCALE=3" in text and "reading b.in as its standard input" in text
    assert r"figure of merit 'rate:\s+([0-9]+) cells/s' (cells/s, higher is better)" in text
    assert len(list((tmp_path / "rep").glob("*-rate.png"))) == 4


def test_a_run_reading_its_input_on_stdin_names_that_file_as_its_problem(tmp_path: Path):
    program = Program(name="pw.x", path="/usr/bin/pw.x", sha256="0" * 64, workdir=str(tmp_path), stdin="si.in")
    out = judge(program, _outcome("JOB DONE\n"), 2, 1, ())
    assert out.record is not None and out.record["problem"] == "< si.in"
    assert out.record["metrics"]["stdin"] == str(tmp_path / "si.in")
    with_args = judge(program, _outcome("JOB DONE\n"), 2, 1, ("-nk", "2"))
    assert with_args.record is not None and with_args.record["problem"] == "-nk 2 < si.in"
    plain = judge(Program(name="p", path="/x/p", sha256="0" * 64), _outcome("done\n"), 1, 1, ())
    assert plain.record is not None and plain.record["problem"] == "(no arguments)"
    assert "stdin" not in plain.record["metrics"]


def test_messages_show_a_regular_expression_as_it_was_typed():
    """The sweep's header and a failed run's reason showed '(?m)^ CP2K\\\\s+1\\\\s+...' (repr doubles every
    backslash), an expression that matches a backslash: copied back into --metric it never matches."""
    metric, verify = r"(?m)^ CP2K\s+1\s+([0-9.]+)", r"PROGRAM\s+ENDED"
    program = Program(name="cp2k", path="/usr/bin/cp2k.psmp", sha256="0" * 64, metric=metric, verify=verify)
    summary = program.summary()
    assert f"figure of merit '{metric}' (no unit, higher is better)" in summary and f"verified by '{verify}'" in summary
    assert "\\\\" not in summary
    missing = judge(program, _outcome("nothing\n"), 1, 1, ())
    assert missing.status == "failed" and f"verification '{verify}' not found" in missing.stderr
    unmeasured = judge(program, _outcome("PROGRAM   ENDED\n"), 1, 1, ())
    assert f"metric '{metric}' not found" in unmeasured.stderr
    ok = judge(program, _outcome("PROGRAM ENDED\n CP2K  1  3.25\n"), 1, 1, ())
    assert ok.record is not None and ok.record["metrics"]["verification"] == f"matched '{verify}'"
    assert quoted("it's") == "'it'\"'\"'s'"


def test_a_tune_of_a_program_says_why_its_mpi_parameters_were_not_checked(tmp_path: Path, monkeypatch):
    """pw.x tuned over an Open MPI parameter ended with 'the app reported no MPI_T read-back', as if pw.x were one of
    hympi's apps that failed to: a program of the user's own never reports one, which the line now says."""
    monkeypatch.chdir(tmp_path)
    shell_program(tmp_path, "solver", 'echo "rate: 5 cells/s"\n')
    (tmp_path / "space.toml").write_text("[layout]\nranks = [1]\ndefault = { ranks = 1 }\n"
                                         "[mpi.btl_vader_single_copy_mechanism]\nvalues = [\"cma\", \"none\"]\n")
    proc = hympi("tune", "run", "./solver", "--space", "space.toml", "--db", "t.db", "--repeat", "1",
                 "--metric", r"rate: ([0-9]+) cells/s")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    said = " ".join(proc.stdout.split())
    assert "could not be checked: a program of your own reports no MPI_T read-back, so whether the library took " \
        "the parameters is not known" in said, said
    assert "the app reported" not in said


def test_a_tune_shows_a_lower_is_better_figure_as_the_figure_not_its_inverse(tmp_path: Path, monkeypatch):
    """LIGGGHTS's loop time (1.86 s) was said as 'score 0.5379' (its inverse, the rate hympi ranks by) in tune's
    progress lines and table; it is now said in seconds, as sweep says it, the shortest first."""
    monkeypatch.chdir(tmp_path)
    shell_program(tmp_path, "solver", 'echo "Loop time of $((4 / OMPI_COMM_WORLD_SIZE)) on some procs"\n')
    (tmp_path / "space.toml").write_text("[layout]\nranks = [1, 2]\ndefault = { ranks = 1 }\n")
    proc = hympi("tune", "run", "./solver", "--space", "space.toml", "--db", "t.db", "--repeat", "1",
                 "--ignore-load", "--metric", r"Loop time of ([0-9.]+) on", "--metric-unit", "s",
                 env={"COLUMNS": "200"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "-> score 4 s (1 measured run)" in proc.stdout and "-> score 2 s (1 measured run)" in proc.stdout
    rows = re.findall(r"│ (\dx1) core \(MPI defaults\) │ ([^│]*) │", proc.stdout)
    assert rows == [("2x1", "2 s  "), ("1x1", "4 s  ")], proc.stdout
    assert "0.25" not in proc.stdout and "0.5" not in proc.stdout  # 1 / 4 s, 1 / 2 s


def test_an_edited_stdin_file_is_a_new_sweep_never_resumed_into_the_old_ones_runs(tmp_path: Path, monkeypatch):
    """`--resume` matched a sweep by --stdin's name only: a sweep of `solver < in.txt` resumed after in.txt was
    edited (pw.x's ecutwfc raised) put the new problem's runs beside the old ones, one median over both (505 of
    10, 10, 1000, 1000). The file's digest is now part of the sweep, as the program's own is: the same command line
    with --resume starts a new sweep, --resume ID of the old one is refused, and the report keeps the two apart."""
    monkeypatch.chdir(tmp_path)
    shell_program(tmp_path, "solver", 'read n\necho "rate: $n cells/s"\n')
    (tmp_path / "in.txt").write_text("10\n")
    db = str(tmp_path / "r.db")
    sweep = ["sweep", "./solver", "--ranks", "1", "--repeat", "1", "--no-warmup", "--ignore-load", "--db", db,
             "--stdin", "in.txt", "--metric", r"rate: ([0-9]+) cells/s"]
    first = hympi(*sweep)
    assert first.returncode == 0, first.stdout + first.stderr
    with Store.open(Path(db), create=False) as store:
        store.set_sweep_status(1, "interrupted")  # as a sweep stopped before its last run is left
    (tmp_path / "in.txt").write_text("1000\n")
    resumed = hympi(*sweep, "--resume")
    assert resumed.returncode == 0 and "starting sweep 2" in resumed.stdout, resumed.stdout + resumed.stderr
    refused = hympi(*sweep, "--resume", "1")
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert f"--stdin {tmp_path / 'in.txt'} has changed since this sweep was recorded" in refused.stderr
    with Store.open(Path(db), create=False) as store:
        assert [(r.sweep_id, r.value("rate")) for r in store.runs()] == [(1, 10.0), (2, 1000.0)]
    assert hympi("report", "--db", db, "--out", str(tmp_path / "rep")).returncode == 0
    page = (tmp_path / "rep" / "index.html").read_text()
    assert json.loads(unescape(re.search(r"data-report='([^']*)'", page).group(1)))["groups"] == 2  # type: ignore[union-attr]
