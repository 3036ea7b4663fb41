"""A program of the user's own (hympi.program): how its output becomes a run's status and figure of merit, the
programs file, bad input refused before anything starts, and sweeps of small scripts under the real launcher."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import shlex
import signal
import subprocess
import time
from pathlib import Path

import pytest
from rich.text import Text

import forkcli
from conftest import assert_refused, hympi, hympi_json
from hympi.errors import UsageError
from hympi.launch.mpirun import RunOutcome, run_command
from hympi.program import (
    WALL_TIME_UNIT,
    Program,
    judge,
    load_programs,
    program_of,
    quoted,
    watch_file,
)
from hympi.result import shown_rate
from hympi.store import Run, Store
from hympi.sweep import WHY_CHARS, SweepItem, SweepParams, clipped, progress_line
from userprograms import hybrid, hybrid_binary, lammps, shell_program


def _outcome(stdout: str, returncode: int | None = 0, status: str = "failed", seconds: float = 2.0) -> RunOutcome:
    """What run_command gives for a program's launch: no HYMPI_RESULT line, so 'failed' until judged."""
    return RunOutcome(status, returncode, seconds, ["mpirun", "./p"], stdout, "launcher noise\n")


def _program(**fields: str) -> Program:
    return Program(**{"name": "p", "path": "/x/p", "sha256": "0" * 64, **fields})


def test_the_wall_time_is_the_default_figure_of_merit():
    out = judge(_program(), _outcome("anything\n", seconds=4.0), 2, 1, ("-in", "a"))
    assert out.status == "ok" and out.record is not None
    assert out.record["rate"] == pytest.approx(1 / 4.0) and out.record["rate_unit"] == "1/(s)" == WALL_TIME_UNIT
    assert shown_rate(out.record["rate"], out.record["rate_unit"]) == "4 s"
    assert out.record["time_s"] == 4.0 and out.record["problem"] == "-in a"
    assert out.record["metrics"]["merit"] == {"value": 4.0, "unit": "s", "better": "lower"}
    assert out.record["metrics"]["verification"] == "exit status 0"


@pytest.mark.parametrize(("better", "rate"), [("higher", 250.0), ("lower", 1 / 250.0)])
def test_a_captured_metric_becomes_a_rate_that_grows_with_quality(better: str, rate: float):
    program = _program(metric=r"Performance: ([0-9.]+) steps/s", metric_unit="steps/s", better=better)
    out = judge(program, _outcome("Loop\nPerformance: 250 steps/s\n"), 1, 2, ())
    assert out.status == "ok" and out.record is not None and out.record["rate"] == pytest.approx(rate)
    assert out.record["rate_unit"] == ("steps/s" if better == "higher" else "1/(steps/s)")
    assert out.record["metrics"]["merit"]["value"] == 250.0
    assert shown_rate(out.record["rate"], out.record["rate_unit"]) == "250 steps/s"  # as printed, either way


def test_a_failed_script_that_starts_a_launcher_itself_says_so(tmp_path: Path):
    """Debian's /usr/bin/mb-mpi (MrBayes) is `exec mpirun $MPI_OPTIONS /usr/lib/mrbayes-mpi/mb-mpi "$@"`: under
    hympi's launcher each rank started an mpirun of its own, and the run failed with Open MPI's 'mpirun does not
    support recursive calls' among a page of notices. Its failure names the script's line."""
    wrapper = shell_program(tmp_path, "mb-mpi", '# mpirun in a comment is no call\necho "starting"\n'
                                                'exec mpirun $MPI_OPTIONS /usr/lib/mrbayes-mpi/mb-mpi "$@"\n')
    plain = shell_program(tmp_path, "plain", '# a comment naming mpirun, srun and mpiexec\nexec ./solver "$@"\n')
    hint = ("(it is a script that starts an MPI launcher itself, line 4: exec mpirun $MPI_OPTIONS "
            "/usr/lib/mrbayes-mpi/mb-mpi \"$@\": under hympi's launch each rank started a job of its own; give hympi "
            "the program the script runs)")
    failed = judge(_program(path=str(wrapper)), _outcome("", returncode=1), 2, 1, ())
    assert f"p ended with exit code 1 {hint}; its last lines: " in failed.stderr, failed.stderr
    assert "MPI launcher" not in judge(_program(path=str(plain)), _outcome("", returncode=1), 2, 1, ()).stderr
    assert judge(_program(path=str(wrapper)), _outcome("ok\n"), 2, 1, ()).status == "ok"  # said only of a failure


@pytest.mark.parametrize(("stdout", "returncode", "reason"), [
    ("Performance: 3 steps/s\nok\n", 3, "p ended with exit code 3"),
    ("Performance: 3 steps/s\n", 0, "verification 'RESULT OK' not found in the output; its last lines: Performance"),
    ("RESULT OK\nno figure here\n", 0, "metric 'Performance: ([0-9.]+|nan) steps/s' not found in the output; its "
                                       "last lines: RESULT OK | no figure here"),
    ("RESULT OK\nPerformance: . steps/s\n", 0, "captured '.', not a number"),
    ("RESULT OK\nPerformance: nan steps/s\n", 0, "captured nan: a figure of merit must be a positive number"),
    ("RESULT OK\nPerformance: 0 steps/s\n", 0, "captured 0: a figure of merit must be a positive number"),
])
def test_a_run_without_its_exit_status_verification_or_metric_failed_with_the_reason(stdout: str, returncode: int,
                                                                                      reason: str):
    program = _program(metric=r"Performance: ([0-9.]+|nan) steps/s", metric_unit="steps/s", verify="RESULT OK")
    out = judge(program, _outcome(stdout, returncode), 1, 1, ())
    assert out.status == "failed" and out.record is None
    assert out.stderr.splitlines()[-1] == f"hympi: {reason}" or reason in out.stderr.splitlines()[-1], out.stderr
    assert out.stderr.startswith("launcher noise")  # the launcher's own words are kept


def test_a_metric_beginning_with_a_greedy_any_takes_the_last_match_as_the_readme_says():
    output = "step 1: rate: 10 steps/s\nstep 2: rate: 30 steps/s\n"
    for metric, value in ((r"rate: ([0-9.]+)", 10.0), (r"(?s).*rate: ([0-9.]+)", 30.0)):
        out = judge(_program(metric=metric), _outcome(output), 1, 1, ())
        assert out.record is not None and out.record["metrics"]["merit"]["value"] == value


# Quantum ESPRESSO's clock line (its clocks_handler's formats) after a run of seconds, minutes, hours and days.
QE_WALL = r"PWSCF\s*:.*CPU\s+(?:(?P<d>\d+)d\s*)?(?:(?P<h>\d+)h\s*)?(?:(?P<m>\d+)m\s*)?(?:(?P<s>[0-9.]+)s)?\s*WALL"


@pytest.mark.parametrize(("line", "seconds"), [
    ("     PWSCF        :      0.35s CPU      0.54s WALL", 0.54),
    ("     PWSCF        :  1m 2.35s CPU  1m12.34s WALL", 72.34),
    ("     PWSCF        :  1h 2m CPU  2h 5m WALL", 7500.0),
    ("     PWSCF        :  1d 2h 3m CPU  1d 3h15m WALL", 98100.0),
])
def test_a_time_printed_in_parts_is_added_up_in_seconds(tmp_path: Path, line: str, seconds: float):
    program = program_of(str(shell_program(tmp_path, "pw", "true\n")), {"metric": QE_WALL})
    assert (program.metric_unit, program.better) == ("s", "lower")  # a time, unless said otherwise
    out = judge(program, _outcome(f"     electrons    :      0.30s CPU      0.41s WALL\n{line}\n"), 1, 1, ())
    assert out.status == "ok" and out.record is not None, out.stderr
    assert out.record["metrics"]["merit"] == {"value": pytest.approx(seconds), "unit": "s", "better": "lower"}
    assert out.record["rate"] == pytest.approx(1 / seconds) and out.record["rate_unit"] == "1/(s)"
    assert shown_rate(out.record["rate"], out.record["rate_unit"]) == f"{seconds:.4g} s"
    assert "--better lower" in shlex.join(program.flags())  # what a resume or a report spells out again


def test_a_time_in_parts_takes_seconds_only_and_keeps_a_direction_given(tmp_path: Path):
    path = str(shell_program(tmp_path, "pw", "true\n"))
    with pytest.raises(UsageError) as refused:
        program_of(path, {"metric": QE_WALL, "metric_unit": "min"})
    assert str(refused.value) == (f"--metric-unit 'min': --metric '{QE_WALL}' captures a time in parts (groups d, h, "
                                  "m, s), which hympi adds up in seconds: give s or no unit")
    assert program_of(path, {"metric": QE_WALL, "better": "higher", "metric_unit": "s"}).better == "higher"
    assert program_of(path, {"metric": r"took ([0-9.]+)"}).better == "higher"  # a number: as before


NWCHEM_WALL = r"Total times\s+cpu:\s+[0-9.]+s\s+wall:\s+([0-9.]+)s"


@pytest.mark.parametrize("unit", ["s", "ms", "min", "seconds"])
def test_a_metric_in_a_time_unit_is_better_shorter_unless_said_otherwise(tmp_path: Path, unit: str):
    """NWChem's 'Total times  cpu: 2.6s  wall: 2.7s' swept with --metric-unit s and no --better: the default for a
    number, higher, took 4.4 s for better than 2.7 s and recommended the slowest layout."""
    path = str(shell_program(tmp_path, "nwchem", "true\n"))
    program = program_of(path, {"metric": NWCHEM_WALL, "metric_unit": unit})
    assert (program.better, program.unit) == ("lower", f"1/({unit})")
    fast, slow = (judge(program, _outcome(f" Total times  cpu: {t}s     wall: {t}s\n"), 1, 1, ()).record
                  for t in ("2.7", "4.4"))
    assert fast is not None and slow is not None and fast["rate"] > slow["rate"]
    assert "--better lower" in shlex.join(program.flags())  # what a resume or a report spells out again
    assert program_of(path, {"metric": NWCHEM_WALL, "metric_unit": unit, "better": "higher"}).better == "higher"
    assert program_of(path, {"metric": NWCHEM_WALL, "metric_unit": "timesteps/s"}).better == "higher"  # a rate
    assert program_of(path, {"metric": NWCHEM_WALL}).better == "higher"  # no unit: a number, as before


@pytest.mark.parametrize(("metric", "stdout", "reason"), [
    (QE_WALL, "PWSCF : 1.0s CPU WALL\n", "matched 'PWSCF : 1.0s CPU WALL' but captured nothing in its groups d, h, "
                                         "m, s"),
    (r"(?P<m>\w+)m(?P<s>[0-9.]+)s", "took xm5s\n", "captured 'x' in group m, not a number"),
    (r"rate: ([0-9]+)?", "rate: none\n", "matched 'rate: ' but captured nothing in its first group"),
    (r"rate: (\S+)", "rate: 1,5\n", "captured '1,5', not a number"),
])
def test_a_metric_that_captures_no_number_fails_the_run_saying_what_it_captured(metric: str, stdout: str,
                                                                                reason: str):
    out = judge(_program(metric=metric), _outcome(stdout), 1, 1, ())
    assert out.status == "failed" and out.stderr.splitlines()[-1] == f"hympi: metric {quoted(metric)} {reason}"


@pytest.mark.parametrize(("printed", "value"), [("1,234.5", 1234.5), ("0.15D+02", 15.0), ("  7.25", 7.25)])
def test_a_metric_reads_numbers_as_programs_print_them(printed: str, value: float):
    out = judge(_program(metric=r"(?m)Mop/s total\s*=(.*)$"), _outcome(f"Mop/s total ={printed}\n"), 1, 1, ())
    assert out.record is not None and out.record["metrics"]["merit"]["value"] == value, out.stderr


def test_a_long_output_is_judged_on_its_kept_head_and_tail_and_a_miss_says_what_was_left_out():
    # A verdict printed 5 MB in (past the kept head), 40 MB more, then the figure of merit.
    script = ("yes . | head -c 5000000; echo 'RESULT OK'; yes . | head -c 40000000; echo 'Performance: 42 steps/s'")
    outcome = run_command(["sh", "-c", script], timeout=60)
    metric = _program(metric=r"Performance: ([0-9.]+) steps/s")
    found = judge(metric, outcome, 1, 1, ())
    assert found.status == "ok" and found.record is not None and found.record["metrics"]["merit"]["value"] == 42
    missed = judge(dataclasses.replace(metric, verify="RESULT OK"), outcome, 1, 1, ())
    assert missed.status == "failed"
    reason = missed.stderr.splitlines()[-1]
    assert re.match(r"hympi: verification 'RESULT OK' not found in the output \(\d+ bytes in the middle of it were "
                    r"not kept: hympi keeps the first 4 and the last 28 MiB of each output stream\); its last lines: "
                    r"\. \| .* \| Performance: 42 steps/s$", reason), reason


def test_an_expression_that_backtracks_without_end_is_stopped_and_the_run_failed_with_the_reason(
        monkeypatch: pytest.MonkeyPatch):
    # '(a+)+b' over 40 'a' tries 2^40 ways to split them: days without the limit.
    monkeypatch.setattr("hympi.program.SEARCH_SECONDS", 0.5)
    handler = signal.getsignal(signal.SIGALRM)
    for fields, kind in (({"verify": "(a+)+b"}, "verification"), ({"verify": "a", "metric": "(a+)+b"}, "metric")):
        start = time.monotonic()
        out = judge(_program(**fields), _outcome("a" * 40 + "\n"), 1, 1, ())
        assert time.monotonic() - start < 30
        assert out.status == "failed" and out.record is None
        assert out.stderr.splitlines()[-1].startswith(f"hympi: {kind} '(a+)+b' was still searching the output ("
                                                      "57 characters) after 0.5 s and was stopped"), out.stderr
    # The timer and the handler are the caller's again, and a search that ends in time is not stopped.
    assert signal.getsignal(signal.SIGALRM) is handler and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    out = judge(_program(metric=r"rate ([0-9]+)"), _outcome("rate 5\n"), 1, 1, ())
    assert out.status == "ok" and out.record is not None and out.record["metrics"]["merit"]["value"] == 5


def test_a_timeout_stays_a_timeout_whatever_was_printed():
    out = judge(_program(), _outcome("RESULT OK\n", None, status="timeout"), 1, 1, ())
    assert out.status == "timeout" and out.record is None


def test_program_of_names_the_file_and_its_digest(tmp_path: Path):
    path = shell_program(tmp_path, "solver", "echo hi\n")
    program = program_of(str(path))
    assert program.name == "solver" and program.path == str(path)
    assert program.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    (tmp_path / "plain").write_text("data")
    for text, needle in ((str(tmp_path / "absent"), "no such file"), (str(tmp_path), "is not a file"),
                         (str(tmp_path / "plain"), "is not executable")):
        with pytest.raises(UsageError, match=needle):
            program_of(text)
    with pytest.raises(UsageError, match="--metric-unit needs --metric"):
        program_of(str(path), {"metric_unit": "s"})


PROGRAMS = """
[[program]]
name = "first"
command = ["./solver", "-in", "in.txt"]
inputs = ["in.txt"]
metric = 'rate ([0-9.]+)'
metric_unit = "Mupd/s"
verify = "OK"
stdin = "in.txt"
env = { OMP_STACKSIZE = "64M", GREETING = "hello world" }

[[program]]
name = "second"
command = ["sh", "-c", "true"]
"""


def test_a_programs_file_names_each_program_its_arguments_and_where_it_runs(tmp_path: Path):
    shell_program(tmp_path, "solver", "echo rate 5\n")
    (tmp_path / "in.txt").write_text("input")
    (tmp_path / "p.toml").write_text(PROGRAMS)
    first, second = load_programs(str(tmp_path / "p.toml"))
    assert first.program.name == "first" and first.args == ("-in", "in.txt")
    assert first.program.path == str(tmp_path / "solver") and first.program.workdir == str(tmp_path)
    assert first.program.metric == "rate ([0-9.]+)" and first.program.verify == "OK"
    assert first.program.env == ("OMP_STACKSIZE=64M", "GREETING=hello world")
    assert first.program.stdin_path() == tmp_path / "in.txt" and second.program.stdin_path() is None
    assert second.program.path.endswith("/sh") and second.args == ("-c", "true") and second.program.env == ()


@pytest.mark.parametrize(("change", "needle"), [
    (lambda t: t.replace('inputs = ["in.txt"]', 'inputs = ["gone.txt"]'), "input gone.txt does not exist"),
    # A value the file gave is named by the file, the entry and its key, never by a flag the user did not type.
    (lambda t: t.replace('stdin = "in.txt"', 'stdin = "gone.txt"'), "p.toml: program 'first': 'stdin' /"),
    (lambda t: t.replace('stdin = "in.txt"', 'stdin = "/"'), "p.toml: program 'first': 'stdin' / is a directory"),
    (lambda t: t.replace('verify = "OK"', 'verify = "OK"\nbetter = "sideways"'),
     "p.toml: program 'first': 'better': unknown direction 'sideways'"),
    (lambda t: t.replace("metric = 'rate ([0-9.]+)'\n", ""), "p.toml: program 'first': 'metric_unit' needs 'metric'"),
    (lambda t: t.replace('name = "second"', 'name = "rb3d"'), "'rb3d' is one of hympi's apps"),
    (lambda t: t.replace('name = "second"', 'name = "first"'), "program name 'first' is used twice"),
    (lambda t: t.replace("metric = 'rate ([0-9.]+)'", "metric = 'rate ('"),
     "p.toml: program 'first': 'metric' 'rate (' is not a regular"),
    (lambda t: t.replace("metric = 'rate ([0-9.]+)'", "metric = 'rate'"),
     "program 'first': 'metric' 'rate' has no group"),
    (lambda t: t.replace('verify = "OK"', "verify = 3"), "'verify' must be a string"),
    (lambda t: t.replace('verify = "OK"', 'verify = "OK"\nkeep_run_dirs = "some"'),
     "p.toml: program 'first': 'keep_run_dirs': unknown choice 'some'"),
    (lambda t: t.replace('verify = "OK"', 'verify = "OK"\nkeep_run_dirs = "failed"'),
     "p.toml: program 'first': 'keep_run_dirs' failed: neither the arguments, 'output_file' nor 'prepare' name {run}"),
    (lambda t: t.replace('verify = "OK"', 'verfy = "OK"'), "unknown key 'verfy'"),
    (lambda t: t.replace('GREETING = "hello world"', 'OMP_PLACES = "cores"'),
     "program 'first': 'env' OMP_PLACES: hympi sets it for every launch"),
    (lambda t: t.replace('GREETING = "hello world"', '"1A" = "x"'), "'env' needs NAME=VALUE, NAME a letter or _"),
    (lambda t: t.replace('env = { OMP_STACKSIZE = "64M", GREETING = "hello world" }', 'env = "A=1"'),
     "'env' must be a table of NAME = \"VALUE\" strings"),
    (lambda t: t.replace('["sh", "-c", "true"]', '["no-such-program-here"]'), "no-such-program-here is not on PATH"),
    (lambda t: t.replace('"./solver"', '"./gone"'), "p.toml: program 'first': program ./gone: no such file"),
    (lambda t: t.replace('"./solver"', f'"./{"x" * 300}"'), "p.toml: program 'first': program: a path component of "
                                                           "300 bytes"),
    (lambda t: t.replace("[[program]]", "[program]", 1), "is not valid TOML"),
    (lambda t: "", "names no program"),
])
def test_a_bad_programs_file_is_refused_in_one_line_before_anything_runs(tmp_path: Path, change, needle: str,
                                                                        fake_launcher):
    shell_program(tmp_path, "solver", "echo rate 5\n")
    (tmp_path / "in.txt").write_text("input")
    (tmp_path / "p.toml").write_text(change(PROGRAMS))
    db = tmp_path / "r.db"
    assert_refused(["study", "--programs", str(tmp_path / "p.toml"), "--db", str(db), "--out", str(tmp_path / "rep")],
                   needle, fake_launcher)
    assert not db.exists() and not (tmp_path / "rep").exists()


def test_a_programs_file_that_is_not_utf8_is_refused(tmp_path: Path, fake_launcher):
    (tmp_path / "p.toml").write_bytes(b'[[program]]\nname = "caf\xe9"\n')
    assert_refused(["study", "--programs", str(tmp_path / "p.toml"), "--db", str(tmp_path / "r.db")],
                   "is not UTF-8 text: byte 0xe9 on line 2", fake_launcher)


@pytest.mark.parametrize(("extra", "needle"), [
    (["./absent"], "program ./absent: no such file"),
    (["./data"], "program ./data is not executable"),
    (["./ok", "--metric", "rate ("], "--metric 'rate (' is not a regular expression"),
    (["./ok", "--verify", "[z-a]"], "--verify '[z-a]' is not a regular expression"),
    (["./ok", "--better", "lower"], "--better needs --metric"),
    (["./ok", "--metric", "r ([0-9]+)", "--better", "up"], "--better"),
    (["./ok", "--checkpoint-dir", "ck"], "--checkpoint-dir: only hympi's apps"),
    (["./ok", "--bind", "none,core"], ""),  # accepted: the launcher binds to core or nothing
    (["rb3d", "--metric", "r ([0-9]+)"], "--metric is for a program of your own"),
    (["mysolver"], "unknown app 'mysolver' (known: "),
    # Linux's limits: a stat of a longer name raised ENAMETOOLONG, an internal error instead of one line.
    ([f"./{'x' * 5000}"], "program: a path of 5002 bytes exceeds 4095 bytes"),
    ([f"./{'x' * 300}/ok"], "program: a path component of 300 bytes ('xxxxxxxxxxxxxxxxxxxx...') exceeds 255 bytes"),
    (["./a\nb"], "program ./a\\nb: no such file"),  # one line, whatever the name holds
])
def test_bad_program_input_is_refused_before_launch(tmp_path: Path, fake_launcher, extra: list[str], needle: str,
                                                    monkeypatch):
    monkeypatch.chdir(tmp_path)
    shell_program(tmp_path, "ok", "echo fine\n")
    (tmp_path / "data").write_text("not a program")
    if not needle:
        proc = hympi("sweep", *extra, "--dry-run", env=fake_launcher[0])
        assert proc.returncode == 0, proc.stderr
        return
    assert_refused(["sweep", *extra, "--db", str(tmp_path / "r.db")], needle, fake_launcher)
    assert not (tmp_path / "r.db").exists()


def test_an_unknown_app_found_on_path_is_named_by_the_path_found(tmp_path: Path, fake_launcher):
    """`hympi sweep nwchem` (Debian's NWChem is /usr/bin/nwchem): hympi never looks a bare name up, and its refusal
    said 'e.g. ./nwchem', a file that is not there; it names the executable PATH finds, and ./NAME only without one."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    solver = shell_program(bin_dir, "mysolver", "echo fine\n")
    env, marker = fake_launcher
    on_path = {**env, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    db = tmp_path / "r.db"
    assert_refused(["sweep", "mysolver", "--db", str(db), "--", "in.nw"],
                   f"a program of your own is named by its path, e.g. {solver} (found on PATH)", (on_path, marker))
    assert_refused(["sweep", "mysolver", "--db", str(db)], "its path, e.g. ./mysolver", fake_launcher)
    assert not db.exists()


def test_the_users_own_text_is_printed_as_typed_not_read_as_markup(tmp_path: Path):
    """rich markup: --verify 'written to [/a-z]+' (a closing tag to rich) crashed the sweep before its first run with
    'internal error (bug): MarkupError', and `hympi run` after its run; --metric 'result: ([a-z0-9.]+)' (a style)
    was shown as 'result: (+)'. The header, each run's reason and the run's table print them as typed."""
    solver = shell_program(tmp_path, "solver", "echo 'result: 5'\n")
    proc = hympi("sweep", str(solver), "--ranks", "1", "--threads", "1", "--repeat", "1", "--no-warmup", "--metric",
                 r"result: ([a-z0-9.]+)", "--verify", "written to [/a-z]+", "--db", str(tmp_path / "r.db"),
                 "--timeout", "20")
    assert proc.returncode == 1 and "internal error" not in proc.stderr, proc.stderr
    shown = " ".join(proc.stdout.split())  # rich wraps at 80 columns
    assert "figure of merit 'result: ([a-z0-9.]+)'" in shown and "verified by 'written to [/a-z]+'" in shown, shown
    assert "failed 0." in shown and "hympi: verification 'written to [/a-z]+' not found" in shown, shown
    proc = hympi("run", str(solver), "--ranks", "1", "--verify", "result: [/0-9]+")
    assert proc.returncode == 0 and "matched 'result: [/0-9]+'" in proc.stdout, proc.stderr


def test_a_reason_cut_in_the_progress_line_says_it_was_cut():
    """ABINIT swept with a --metric it never printed: the progress line cut the reason at 100 characters, bare, so
    that '... its last lines: mpi_procs: 1 | omp_threads: 1 | ...' read '... its last lines: mpi_procs: 1', as if
    ABINIT had printed only that; it ends in '...' now, and a reason that fits is shown whole."""
    metric = r"overall wall time:\s+([0-9.]+)"
    reason = (f"hympi: metric {quoted(metric)} not found in the output; its last lines: mpi_procs: 1 | "
              "omp_threads: 1 | num_warnings: 0 | num_comments: 4 | ...")
    run = Run(1, "abinit", 1, 1, "core", "compact", 1, ("si.abi",), (), ("mpirun",), "failed", 0, 1.9,
              stderr_tail=f"some MPI text\n{reason}")
    line = Text.from_markup(progress_line(SweepItem(1, 1, "core", 1), run)).plain
    assert line.endswith(f" hympi: metric {quoted(metric)} not found in the output; its last lines: ... | ..."), line
    assert clipped(reason[:WHY_CHARS]) == reason[:WHY_CHARS]
    long = f"hympi: {'x' * WHY_CHARS}; its last lines: a | b"
    assert clipped(long) == f"{long[:WHY_CHARS - 3]}..."  # no room for the program's words after hympi's


def test_a_probe_finding_said_before_in_the_sweep_is_shown_by_its_statement():
    """HPC Challenge at 1x2: every such line ended in the probe's 230-character finding; a finding the sweep's
    progress lines said before is shown by its statement and 'as above', and each run's record keeps it whole."""
    threads = ("each rank ran 1 of the 2 threads asked for (OMP_NUM_THREADS=2): this program does not use OpenMP "
               "threads here (one whose option sets its threads, as IQ-TREE's -T, takes each layout's as {threads} "
               "in its arguments)")
    shared = "rank 0's threads 0-1 shared PU 1"
    record = {"rate": 0.0052, "rate_unit": "Tflop/s", "probe": {"findings": [threads, shared]}}
    run = Run(1, "hpcc", 1, 2, "core", "compact", 1, (), (), ("mpirun",), "ok", 0, 0.4, record)
    item = SweepItem(1, 2, "core", 1)
    first = Text.from_markup(progress_line(item, run)).plain
    assert first.endswith(f" {threads} {shared}"), first
    again = Text.from_markup(progress_line(item, run, {threads})).plain
    assert again.endswith(" each rank ran 1 of the 2 threads asked for (OMP_NUM_THREADS=2), as above "
                          f"{shared}"), again
    assert run.record is not None and run.record["probe"]["findings"] == [threads, shared]


def test_a_failed_runs_progress_line_shows_the_programs_last_words():
    """IQ-TREE without its alignment prints its banner, then 'ERROR: File not found missing.phy' and exits 2; the
    progress line showed the first 100 characters of the reason, 'Command: /usr/bin/iqtree2-mpi -s exam...', and
    never the error. The record keeps every line; the progress line shows the last that says 'error' (Ray's comes
    before its memory report), else the last."""
    error = "ERROR: File not found missing.phy"
    reason = ("hympi: iqtree2-mpi ended with exit code 2; its last lines: Command: /usr/bin/iqtree2-mpi -s missing.phy "
              "-m HKY+G -redo -pre x --fast | Seed:    894809 (Using SPRNG) | Reading alignment file missing.phy ... "
              "| "
              f"{error}")
    run = Run(1, "iqtree2-mpi", 1, 1, "core", "compact", 1, ("-s", "missing.phy"), (), ("mpirun",), "failed", 2,
              2.5, stderr_tail=f"mpirun's notice\n{reason}")
    line = Text.from_markup(progress_line(SweepItem(1, 1, "core", 1), run)).plain
    assert line.endswith(f" hympi: iqtree2-mpi ended with exit code 2; its last lines: ... | {error}"), line
    ray = ("hympi: verification 'Rank 0 wrote' not found in the output; its last lines: Sequences: small.fa | Error, "
           "ray-1x1/ already exists, change the -o parameter to another value. | Rank 0: assembler memory usage: "
           "50220 KiB | Rank 0: Rank= 0 Size= 1 ProcessIdentifier= 18648")
    assert clipped(ray) == ("hympi: verification 'Rank 0 wrote' not found in the output; its last lines: ... | Error, "
                            "ray-1x1/ already exists, change the -o parameter to another value. | ...")
    foam = ("hympi: icofoam ended with exit code 1; its last lines: 'controlDict' | --> FOAM FATAL ERROR : | "
            "Could not find mandatory etc entry (mode=ugo) | 'controlDict'")
    assert clipped(foam) == ("hympi: icofoam ended with exit code 1; its last lines: ... | --> FOAM FATAL ERROR : "
                             "Could not find mandatory etc entry (mode=ugo) | ...")
    one = f"hympi: p ended with exit code 1; its last lines: {'y' * 2 * WHY_CHARS}"
    assert clipped(one) == f"hympi: p ended with exit code 1; its last lines: {'y' * (WHY_CHARS - 3)}..."


def test_a_program_is_swept_under_the_real_launcher_and_its_output_judged(tmp_path: Path):
    """A shell script as the program, bound by mpirun: its rank count reaches it, its metric is captured, a run
    whose verification line is missing fails with the reason, and a hang is killed as a timeout; the runs are
    keyed by the program's path and digest, and a changed file is a new program, not a resume."""
    solver = shell_program(tmp_path, "solver", """
n=${OMPI_COMM_WORLD_SIZE:-${PMI_SIZE:-1}}
r=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}
[ "$r" = 0 ] || exit 0
if [ -e "TMP/hang" ]; then sleep 60; fi
echo "ranks $n threads $OMP_NUM_THREADS"
printf 'caf\\351 output\\n'
echo "rate $((n * 100 + OMP_NUM_THREADS))"
[ "$n" = 2 ] && [ "$OMP_NUM_THREADS" = 1 ] || echo "RESULT OK"
""".replace("TMP", str(tmp_path)))
    db = tmp_path / "r.db"
    args = ["sweep", str(solver), "--ranks", "1,2", "--threads", "1", "--repeat", "1", "--no-warmup",
            "--metric", r"rate ([0-9]+)", "--metric-unit", "rank-points", "--verify", "RESULT OK", "--db", str(db),
            "--timeout", "20"]
    proc = hympi(*args)
    assert proc.returncode == 1, proc.stdout + proc.stderr  # 2x1 misses its verification line
    with Store.open(db, create=False) as store:
        (sweep,) = store.sweeps()
        assert sweep.params["program"] == str(solver)
        assert sweep.params["program_sha256"] == hashlib.sha256(solver.read_bytes()).hexdigest()
        runs = {(r.ranks, r.threads): r for r in store.runs()}
    assert runs[(1, 1)].status == "ok" and runs[(1, 1)].value("rate") == 101
    assert runs[(1, 1)].record is not None and runs[(1, 1)].record["rate_unit"] == "rank-points"
    assert runs[(2, 1)].status == "failed" and "verification 'RESULT OK' not found" in runs[(2, 1)].stderr_tail
    assert "--bind-to" in runs[(1, 1)].command  # the launcher binds a program
    solver.write_text(solver.read_text() + "\n# rebuilt\n")
    again = hympi(*args, "--resume", "1")
    assert again.returncode == 2 and "has changed since this sweep was recorded" in again.stderr, again.stderr
    (tmp_path / "hang").write_text("")
    hang = hympi("sweep", str(solver), "--ranks", "1", "--repeat", "1", "--no-warmup", "--timeout", "3",
                 "--db", str(tmp_path / "h.db"))
    with Store.open(tmp_path / "h.db", create=False) as store:
        assert [r.status for r in store.runs()] == ["timeout"], hang.stdout + hang.stderr
    # No run recorded a problem: the verdict's line is the program's name alone, not 'solver :'.
    assert re.search(r"(?m)^solver: No layout", hang.stdout), hang.stdout
    os.remove(tmp_path / "hang")


def test_hympi_run_launches_a_program_bound_by_the_launcher_and_judges_it(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shell_program(tmp_path, "solver", 'echo "threads $OMP_NUM_THREADS places $OMP_PLACES"\necho "rate 42"\n'
                                '[ "$1" = good ] && echo "RESULT OK"\nexit 0\n')
    code, record = hympi_json("run", "./solver", "--threads", "2", "--oversubscribe", "--metric", r"rate ([0-9]+)",
                              "--verify", "RESULT OK", "--json", "--", "good")
    assert code == 0 and record["rate"] == 42 and record["threads"] == 2 and record["problem"] == "good"
    bad = hympi("run", "./solver", "--verify", "RESULT OK", "--", "bad")
    assert bad.returncode == 1 and "run failed: verification 'RESULT OK' not found" in bad.stderr, bad.stderr
    shown = hympi("run", "./solver", "--threads", "2", "--oversubscribe", "--", "good")
    assert "threads 2 places cores" in shown.stdout and "by the launcher" in shown.stdout, shown.stdout


@pytest.mark.parametrize(("command", "code"), [
    (["run", "./waiter", "--verify", "went on", "--"], 0),
    # hympi profile runs any command; this one is no MPI program, so no profile is written after it (exit 1).
    (["profile", "--", "./waiter"], 1),
])
def test_a_programs_output_is_shown_as_it_prints_it(tmp_path: Path, monkeypatch, command: list[str], code: int):
    """A run of minutes or hours shows its progress as under plain mpirun: the program prints a line on each of its
    outputs, then waits (30 s at most) for a file the test makes only once hympi has shown both lines."""
    monkeypatch.chdir(tmp_path)
    go = tmp_path / "go"
    shell_program(tmp_path, "waiter", 'echo started\necho "warming up" >&2\ni=0\n'
                                      'while [ ! -e "$1" ] && [ $i -lt 300 ]; do sleep 0.1; '
                                      'i=$((i+1)); done\n[ -e "$1" ] && echo "went on"\n')
    proc = subprocess.Popen(forkcli.command([*command, str(go)]), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout is not None and proc.stderr is not None
        first = proc.stdout.readline()  # shown only at the end, it would come after the program gave up waiting
        said = [proc.stderr.readline()]  # likewise its error output (hympi's own lines may come before it)
        while said[-1] not in ("warming up\n", ""):
            said.append(proc.stderr.readline())
        go.touch()
        rest, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert first == "started\n" and proc.returncode == code, err
    assert said[-1] == "warming up\n", said
    assert rest.startswith("went on\n"), rest


def test_a_program_killed_by_a_signal_is_said_so(tmp_path: Path, monkeypatch):
    # A rank the kernel's out-of-memory killer ends gets SIGKILL; the launcher then exits 137, which alone says little.
    monkeypatch.chdir(tmp_path)
    shell_program(tmp_path, "greedy", "echo started\nkill -9 $$\n")
    proc = hympi("run", "./greedy")
    assert proc.returncode == 1
    assert "hympi: error: run failed: greedy ended with exit code 137: killed by signal 9 (SIGKILL), as the kernel's " \
           "out-of-memory killer and a scheduler's memory limit do" in proc.stderr, proc.stderr


@pytest.mark.parametrize(("code", "said"), [
    (3, "exit code 3"), (137, "exit code 137: killed by signal 9 (SIGKILL), as the kernel's out-of-memory killer and "
                              "a scheduler's memory limit do"),
    (139, "exit code 139: killed by signal 11 (SIGSEGV)"), (-15, "exit code -15: killed by signal 15 (SIGTERM)"),
    (200, "exit code 200"), (None, "no exit code"),
])
def test_an_exit_code_says_which_signal_killed_the_run(code, said):
    assert RunOutcome("failed", code, 1.0, ["mpirun"]).exit_text() == said


# What the launchers print when they cannot start the program at all (Open MPI 4.1.4 and MPICH 4.0's Hydra, copied
# from their runs): Open MPI then exits 131 or 132, codes that read as signals 3 and 4.
OMPI_EXECVE = """--------------------------------------------------------------------------
Open MPI tried to fork a new process via the "execve" system call but
failed.  Open MPI checks many things before attempting to launch a
child process, but nothing is perfect. This error may be indicative
of another problem on the target host, or even something as silly as
having specified a directory for your application. Your job will now
abort.

  Local host:        vm
  Working dir:       /work/a31m
  Application name:  ./badelf
  Error:             Exec format error
--------------------------------------------------------------------------
--------------------------------------------------------------------------
mpirun was unable to start the specified application as it encountered an
error:

Error code: -125
Error name: The specified application failed to start
Node: vm

when attempting to start process rank 0.
--------------------------------------------------------------------------
"""
OMPI_NO_ACCESS = """--------------------------------------------------------------------------
mpirun was unable to launch the specified application as it could not access
or execute an executable:

Executable: /nonexistent
Node: vm

while attempting to start process rank 0.
--------------------------------------------------------------------------
"""
HYDRA = ("[proxy:0:0@vm] HYDU_create_process (utils/launch/launch.c:73): execvp error on file ./solver (No such file "
         "or directory)\n")
OMPI_SIGNAL = ("--------------------------------------------------------------------------\nmpirun noticed that "
               "process rank 0 with PID 0 on node vm exited on signal 3 (Quit).\n")


@pytest.mark.parametrize(("code", "stderr", "said"), [
    (131, OMPI_EXECVE, "exit code 131: the launcher could not start it (Exec format error)"),
    (131, OMPI_EXECVE.replace("Exec format error", "/w/x has a bad interpreter on the first line."),
     "exit code 131: the launcher could not start it (/w/x has a bad interpreter on the first line)"),
    (132, OMPI_NO_ACCESS, "exit code 132: the launcher could not start it (could not access or execute an "
                          "executable)"),
    (255, HYDRA, "exit code 255: the launcher could not start it (No such file or directory)"),
    (131, OMPI_SIGNAL, "exit code 131: killed by signal 3 (SIGQUIT)"),  # a rank that ran and was killed
])
def test_a_program_the_launcher_could_not_start_is_said_so_not_a_signal(code: int, stderr: str, said: str):
    assert RunOutcome("failed", code, 1.0, ["mpirun"], "", stderr).exit_text() == said


def test_a_binary_the_kernel_cannot_run_is_recorded_as_not_started(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    binary = tmp_path / "solver"
    binary.write_bytes(b"\x7fELF\x01\x01\x01 not a binary for this machine")
    binary.chmod(0o755)
    proc = hympi("run", "./solver")
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.splitlines()[-1] == ("hympi: error: run failed: solver ended with exit code 131: the launcher "
                                            "could not start it (Exec format error)"), proc.stderr


@pytest.mark.parametrize(("first_line", "words"), [
    ("#!/nonexistent/python3", "program ./script: its interpreter /nonexistent/python3 (line 1) does not exist"),
    ("#!", "program ./script: its line 1 '#!' names no interpreter"),
    ("#!{tmp}/plain -x", "program ./script: its interpreter {tmp}/plain (line 1) is not executable"),
])
def test_a_script_whose_interpreter_cannot_run_is_refused_before_launch(tmp_path: Path, fake_launcher, monkeypatch,
                                                                         first_line: str, words: str):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "plain").write_text("not a program\n")
    script = tmp_path / "script"
    script.write_text(first_line.format(tmp=tmp_path) + "\necho hi\n")
    script.chmod(0o755)
    assert_refused(["run", "./script"], words.format(tmp=tmp_path), fake_launcher)
    assert_refused(["sweep", "./script", "--db", str(tmp_path / "r.db")], words.format(tmp=tmp_path), fake_launcher)
    assert not (tmp_path / "r.db").exists()


# What Debian's mpirun (Open MPI 4.1) and mpiexec (MPICH 4.0) write to stderr after a rank exited 1; Elk wrote why to
# its stdout.
OMPI_EXITED = """--------------------------------------------------------------------------
mpirun has exited due to process rank 0 with PID 0 on
node vm exiting improperly. There are three reasons this could occur:

You can avoid this message by specifying -quiet on the mpirun command line.
--------------------------------------------------------------------------
"""
MPICH_EXITED = """
===================================================================================
=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES
=   PID 6218 RUNNING AT vm
=   EXIT CODE: 1
===================================================================================
"""


@pytest.mark.parametrize("launcher", [OMPI_EXITED, MPICH_EXITED])
def test_a_program_that_exits_non_zero_is_recorded_with_its_last_words_not_the_launchers(launcher: str):
    """Elk without its elk.in prints 'Error(readinput): error opening elk.in' on stdout and exits 1; the sweep's
    record said only 'elk-lapw ended with exit code 1', its stderr tail all the launcher's notice. `hympi run`
    showed the output as it came and does not repeat it."""
    outcome = RunOutcome("failed", 1, 1.0, ["mpirun", "./p"], "\nElk code version 8.4.30 started\n\n"
                         "Error(readinput): error opening elk.in\n\n", f"warning: a rank's own word\n{launcher}")
    out = judge(_program(), outcome, 1, 1, ())
    assert out.status == "failed" and out.stderr.startswith(outcome.stderr)  # the launcher's words are kept
    assert out.stderr.splitlines()[-1] == ("hympi: p ended with exit code 1; its last lines: Elk code version 8.4.30 "
                                           "started | Error(readinput): error opening elk.in | warning: a rank's own "
                                           "word"), out.stderr
    shown = judge(_program(), outcome, 1, 1, (), shown=True)
    assert shown.stderr.splitlines()[-1] == "hympi: p ended with exit code 1", shown.stderr


def test_a_sweep_records_why_a_program_failed(tmp_path: Path, monkeypatch):
    """... and, every layout failed, launches it no more (6 launches planned, 2 made)."""
    monkeypatch.chdir(tmp_path)
    shell_program(tmp_path, "solver", 'echo "Error(readinput): error opening elk.in"\nexit 1\n')
    db = tmp_path / "r.db"
    proc = hympi("sweep", "./solver", "--ranks", "1,2", "--repeat", "3", "--no-warmup", "--db", str(db))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    out = " ".join(proc.stdout.split())
    assert "sweep 1 stopped: 2 failed; every launch failed, so nothing more was launched" in out
    assert "the 4 launch(es) left would fail alike" in out, out
    with Store.open(db, create=False) as store:
        runs = store.runs()
    assert sorted(r.ranks for r in runs) == [1, 2]
    report = hympi("report", "--db", str(db), "--out", str(tmp_path / "rep"))
    assert report.returncode == 0, report.stderr
    said = ("sweep 1 (solver) ended with 2 of its 6 planned runs: every launch failed (1x1 core: failed; 2x1 core: "
            "failed) and no run of sweep 1 was ever ok")
    assert said in " ".join(report.stdout.split()), report.stdout
    assert said in " ".join((tmp_path / "rep" / "index.html").read_text().split())
    for run in runs:  # each rank's words (2 ranks, the same twice)
        assert run.stderr_tail.splitlines()[-1] == ("hympi: solver ended with exit code 1; its last lines: "
                                                    + " | ".join(["Error(readinput): error opening elk.in"] * run.ranks)
                                                    ), run.stderr_tail


def test_a_failed_programs_error_output_is_shown_once(tmp_path: Path, monkeypatch):
    # Shown as it came, it is not repeated after hympi's own line saying the run failed.
    monkeypatch.chdir(tmp_path)
    shell_program(tmp_path, "failing", 'echo "cannot read the mesh" >&2\nexit 3\n')
    proc = hympi("run", "./failing")
    assert proc.returncode == 1
    assert proc.stderr.count("cannot read the mesh") == 1, proc.stderr
    assert proc.stderr.rstrip().endswith("hympi: error: run failed: failing ended with exit code 3"), proc.stderr


@pytest.mark.parametrize(("extra", "needle"), [
    (["./ok", "--binder", "hympi"], "--binder hympi: a program of your own does not call hympi's binding"),
    (["./ok", "--metric", "no group"], "--metric 'no group' has no group"),
    (["rb3d", "--verify", "x"], "--verify is for a program of your own"),
    (["rb3d", "--env", "A=1"], "--env is for a program of your own"),
    (["./ok", "--env", "OMP_NUM_THREADS=4"], "--env OMP_NUM_THREADS: hympi sets it for every launch"),
    (["./ok", "--env", "OMPI_MCA_btl=self"], "--env OMPI_MCA_btl: an MPI parameter: give it with --mpi-param"),
    (["./ok", "--env", "MPIR_CVAR_ASYNC_PROGRESS=1"], "--env MPIR_CVAR_ASYNC_PROGRESS: an MPI parameter"),
    (["./ok", "--env", "LD_PRELOAD=/x.so"], "--env LD_PRELOAD: the probe preloads itself there"),
    (["./ok", "--env", "A-B=1"], "--env needs NAME=VALUE, NAME a letter or _ then letters, digits or _, got 'A-B=1'"),
    (["./ok", "--env", "A"], "--env needs NAME=VALUE"),
    (["./ok", "--env", "A=x\ty"], "--env A: its value must be printable text on one line"),
    (["./ok", "--env", "A=1", "--env", "A=2"], "--env A is given twice"),
    (["rb3d", "--stdin", "in.txt"], "--stdin is for a program of your own"),
    (["./ok", "--stdin", "missing.txt"], "missing.txt does not exist"),
    (["./ok", "--stdin", "/dev/null"], "--stdin /dev/null is a device: leave --stdin out, every run reads /dev/null "
                                       "without it"),
    (["./absent"], "program ./absent: no such file"),
])
def test_hympi_run_refuses_bad_program_input_before_launch(tmp_path: Path, fake_launcher, monkeypatch,
                                                           extra: list[str], needle: str):
    monkeypatch.chdir(tmp_path)
    shell_program(tmp_path, "ok", "echo fine\n")
    assert_refused(["run", *extra], needle, fake_launcher)


def test_a_programs_environment_reaches_every_rank_and_is_part_of_its_sweep(tmp_path: Path, monkeypatch):
    """--env sets a variable for every rank through the launcher (-x: ranks on other nodes too; GREETING is not in
    hympi's own environment, so rank 1 sees it only so), and a sweep records it: another value is another sweep."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GREETING", raising=False)
    shell_program(tmp_path, "greeter", 'echo "rank $OMPI_COMM_WORLD_RANK says $GREETING"\n')
    code, record = hympi_json("run", "./greeter", "--ranks", "2", "--env", "GREETING=hello world", "--verify",
                              "(?m)^rank 1 says hello world$", "--json")
    assert code == 0 and record["verified"], record
    db = tmp_path / "r.db"
    sweep = ["sweep", "./greeter", "--ranks", "1", "--repeat", "1", "--no-warmup", "--verify", "(?m)says h[io]$",
             "--db", str(db)]
    for greeting in ("hi", "ho"):
        proc = hympi(*sweep, "--env", f"GREETING={greeting}", "--resume")
        assert proc.returncode == 0, proc.stdout + proc.stderr
    with Store.open(db, create=False) as store:
        sweeps = store.sweeps()
        runs = {r.sweep_id: r for r in store.runs()}
    assert [s.params["env"] for s in sweeps] == ["GREETING=hi", "GREETING=ho"]
    assert [SweepParams.from_dict(s.params).spec(1, 1, "core").env for s in sweeps] == \
        [(("GREETING", "hi"),), (("GREETING", "ho"),)]
    for s, greeting in zip(sweeps, ("hi", "ho"), strict=True):
        command = runs[s.id].command
        assert command[command.index(f"GREETING={greeting}") - 1] == "-x", command


@pytest.mark.parametrize(("edit", "what"), [
    ('echo "# rebuilt" >> "$0"', "program {tmp}/solver"),  # a rebuild while the sweep goes on
    ('echo "7" >> in.txt', "--stdin {tmp}/in.txt"),  # its input edited in the meantime
])
def test_a_program_or_input_that_changes_during_a_sweep_stops_it_keeping_the_runs_before(
        tmp_path: Path, monkeypatch, edit: str, what: str):
    """Its later runs would be recorded as measurements of the file the sweep began with."""
    monkeypatch.chdir(tmp_path)
    shell_program(tmp_path, "solver", f'read size\necho "rate $size"\n{edit}\n')
    (tmp_path / "in.txt").write_text("5\n")
    proc = hympi("sweep", "./solver", "--ranks", "1", "--repeat", "3", "--no-warmup", "--ignore-load", "--stdin",
                 "in.txt", "--db", str(tmp_path / "r.db"))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    said = what.format(tmp=tmp_path)
    assert proc.stderr.splitlines()[-1].startswith(f"hympi: error: {said} has changed (its sha256 is no longer "), \
        proc.stderr
    assert proc.stderr.splitlines()[-1].endswith("since sweep 1 began: the runs measured before are kept; the rest "
                                                 "would measure another file: start a new sweep for it")
    with Store.open(tmp_path / "r.db", create=False) as store:
        assert [r.status for r in store.runs()] == ["ok"] and store.sweeps()[0].status == "interrupted"


def test_a_watched_file_is_read_again_only_when_touched_and_said_changed_only_when_its_bytes_are(tmp_path: Path,
                                                                                               monkeypatch):
    path = tmp_path / "in.txt"
    path.write_text("5\n")
    digest = hashlib.sha256(b"5\n").hexdigest()
    check = watch_file(path, digest)
    reads = []
    monkeypatch.setattr("hympi.program.file_digest", lambda p: reads.append(p) or hashlib.sha256(p.read_bytes())
                        .hexdigest())
    assert (check(), check(), len(reads)) == (None, None, 1)  # the first check reads it, the next a stat
    os.utime(path, ns=(1, 1))  # touched, the same bytes
    assert (check(), len(reads)) == (None, 2)
    path.write_text("6\n")
    assert check() == f"has changed (its sha256 is no longer {digest[:12]}...)"
    path.unlink()
    assert check() == "is gone"


def test_every_run_of_a_sweep_reads_the_programs_stdin_file_from_its_start(tmp_path: Path, monkeypatch):
    """`lmp < in.melt` is how LAMMPS is often run. A sweep runs its program many times and only the first would read
    hympi's own standard input (the others: nothing, an ok run of nothing), so a file redirected there is refused,
    --stdin gives every run the file, and without either each run reads /dev/null. One run (hympi run) passes
    hympi's standard input on, as mpirun does."""
    monkeypatch.chdir(tmp_path)
    shell_program(tmp_path, "reader", 'read line\necho "read: $line"\n')
    (tmp_path / "in.txt").write_text("melt\n")
    sweep = ["sweep", "./reader", "--ranks", "1", "--repeat", "2", "--no-warmup", "--verify", "(?m)^read: melt$",
             "--db"]
    proc = hympi(*sweep, str(tmp_path / "given.db"), "--stdin", "in.txt")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with Store.open(tmp_path / "given.db", create=False) as store:
        assert [r.status for r in store.runs()] == ["ok", "ok"]
        assert store.sweeps()[0].params["stdin"] == "in.txt"
    with (tmp_path / "in.txt").open("rb") as redirected:
        refused = subprocess.run(forkcli.command([*sweep, str(tmp_path / "redirected.db")]), stdin=redirected,
                                 capture_output=True, text=True, timeout=120, check=False)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert "standard input is a file, but each run of reader reads /dev/null: name the file with --stdin FILE" \
        in refused.stderr and not (tmp_path / "redirected.db").exists()
    unfed = hympi(*sweep, str(tmp_path / "none.db"))
    assert unfed.returncode == 1 and "verification '(?m)^read: melt$' not found" in unfed.stdout + unfed.stderr
    with (tmp_path / "in.txt").open("rb") as redirected:
        one = subprocess.run(forkcli.command(["run", "./reader", "--verify", "(?m)^read: melt$"]), stdin=redirected,
                             capture_output=True, text=True, timeout=120, check=False)
    assert one.returncode == 0 and "read: melt" in one.stdout, one.stdout + one.stderr


def test_hympi_affinity_starts_a_program_with_its_variables_and_standard_input(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shell_program(tmp_path, "needy", '[ "$GREETING" = hi ] || exit 3\nread line\n[ "$line" = melt ] || exit 4\n')
    (tmp_path / "in.txt").write_text("melt\n")
    assert hympi("affinity", "./needy").returncode == 1  # exit 3: started without them
    given = hympi("affinity", "./needy", "--env", "GREETING=hi", "--stdin", "in.txt")
    assert given.returncode == 0, given.stdout + given.stderr
    refused = hympi("affinity", "--env", "GREETING=hi")
    assert refused.returncode == 2 and "--env is for a program of your own" in refused.stderr


def test_hympi_tune_run_searches_layouts_and_mpi_parameters_of_a_program(tmp_path: Path, tmp_path_factory):
    """The hybrid test program (mpicc-built, no hympi inside) tuned over ranks and an Open MPI parameter: every
    configuration measured through the program's own metric, the best named, its parameters set through the
    launcher's environment."""
    invocation = hybrid(hybrid_binary(tmp_path_factory), 400_000, 20)
    (tmp_path / "space.toml").write_text("[layout]\nranks = [1, 2]\ndefault = { ranks = 1 }\n"
                                         "[mpi.btl_vader_eager_limit]\nvalues = [4096, 8192]\n")
    db = tmp_path / "t.db"
    proc = hympi("tune", "run", invocation.command[0], "--space", str(tmp_path / "space.toml"), "--db", str(db),
                 "--metric", invocation.metric, "--metric-unit", invocation.metric_unit, "--verify", invocation.verify,
                 "--env", "OMP_STACKSIZE=16M", "--", *invocation.command[1:], timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "best:" in proc.stdout
    with Store.open(db, create=False) as store:
        runs = store.runs()
    assert {(r.ranks, r.status) for r in runs} == {(1, "ok"), (2, "ok")}
    assert all(r.record is not None and r.record["rate_unit"] == "Mupdates/s" for r in runs)
    assert any("OMPI_MCA_btl_vader_eager_limit=8192" in " ".join(r.command) for r in runs)
    assert all("OMP_STACKSIZE=16M" in r.command for r in runs)
    # The best configuration's command runs the program by its path, judged as its tune judged it.
    best = hympi("tune", "best", "--db", str(db), "--format", "flags")
    assert best.returncode == 0, best.stderr
    words = shlex.split(best.stdout)
    assert words[:3] == ["hympi", "run", invocation.command[0]], words
    assert words[words.index("--env") + 1] == "OMP_STACKSIZE=16M", words
    cut = words.index("--")
    again = hympi(*words[1:cut], "--json", *words[cut:])
    assert again.returncode == 0, again.stdout + again.stderr
    record = json.loads(again.stdout.strip().splitlines()[-1])
    assert record["rate_unit"] == "Mupdates/s" and record["metrics"]["verification"].startswith("matched"), record


def test_hympi_tune_run_says_which_configurations_left_threads_idle(tmp_path: Path):
    """Debian's LAMMPS (no OpenMP styles) tuned over one and two threads: its 1x2 runs compute on one of the two
    cores they hold, and the summary says so from the probe (the probe's working threads of an OpenMP program:
    test_tune_predict's thread check)."""
    (tmp_path / "space.toml").write_text("[layout]\nranks = [1]\nthreads = [1, 2]\ndefault = { threads = 1 }\n")
    invocation = lammps(cells=6, steps=200)
    proc = hympi("tune", "run", invocation.command[0], "--space", str(tmp_path / "space.toml"), "--db",
                 str(tmp_path / "t.db"), "--metric", invocation.metric, "--verify", invocation.verify, "--",
                 *invocation.command[1:], timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = " ".join(proc.stdout.split())
    assert ("threads left idle (the probe): 1x2 computed with 1 of its 2 threads per rank; those configurations ran on "
            "fewer cores than they hold") in out, proc.stdout
    assert "1x1 computed with" not in out  # its one thread computes


@pytest.mark.parametrize("command", [["run"], ["tune", "run"]])
def test_options_hympi_does_not_know_are_not_handed_to_a_program(tmp_path: Path, fake_launcher, command, monkeypatch):
    """`hympi run ./prog --threds 2` ran the program with '--threds 2' as its arguments (an app refuses what it does
    not know; a program may not): refused, its arguments after --."""
    monkeypatch.chdir(tmp_path)
    shell_program(tmp_path, "ok", "echo fine\n")
    (tmp_path / "space.toml").write_text("[layout]\nranks = [1, 2]\ndefault = { ranks = 1 }\n")
    tune = ["--space", "space.toml", "--db", str(tmp_path / "r.db")] if command[0] == "tune" else []
    assert_refused([*command, "./ok", *tune, "--threds", "2"],
                   f"unrecognized arguments: --threds 2 (a program's own arguments follow --: hympi "
                   f"{' '.join(command)} ./ok [options] -- ARGS)", fake_launcher)
    assert not (tmp_path / "r.db").exists()


def test_hympi_run_sets_a_programs_mpi_parameters_and_refuses_one_given_twice(tmp_path: Path, monkeypatch):
    """--mpi-param reached an app but not a program (hympi run dropped it); given twice, the last one won."""
    monkeypatch.chdir(tmp_path)
    shell_program(tmp_path, "shower", 'echo "eager=$OMPI_MCA_btl_vader_eager_limit"\n')
    proc = hympi("run", "./shower", "--mpi-param", "btl_vader_eager_limit=8192")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "eager=8192" in proc.stdout
    twice = hympi("run", "./shower", "--mpi-param", "btl_vader_eager_limit=8192", "--mpi-param",
                  "btl_vader_eager_limit=4096")
    assert twice.returncode == 2 and twice.stderr.strip().splitlines() == [
        "hympi: error: --mpi-param btl_vader_eager_limit is given twice"]


def test_a_tune_without_a_score_says_so_in_one_line(tmp_path: Path, monkeypatch):
    """Every run failed: exit 1 with no line of why, and 'use it: hympi tune best', which then refused the tune."""
    monkeypatch.chdir(tmp_path)
    shell_program(tmp_path, "failing", "exit 3\n")
    (tmp_path / "space.toml").write_text("[layout]\nranks = [1, 2]\ndefault = { ranks = 1 }\n")
    proc = hympi("tune", "run", "./failing", "--space", "space.toml", "--db", "t.db")
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1] == (
        "hympi: error: tune 1 has no score: no configuration had a measured run that ended ok undisturbed by other "
        "work (the table says why)")
    assert "use it" not in proc.stdout


def test_a_programs_arguments_name_the_layouts_threads_and_ranks(tmp_path: Path, monkeypatch):
    """IQ-TREE 2 runs as many OpenMP threads as its -T says (1 by default) whatever OMP_NUM_THREADS is: `-T
    {threads}` gives each layout its own count. The arguments as typed stay the sweep's and its runs' problem, so
    the layouts are still one problem's; the command recorded is the one launched."""
    monkeypatch.chdir(tmp_path)
    shell_program(tmp_path, "tree", 'if [ "$2" = "$OMP_NUM_THREADS" ] && [ "$3" = "ranks=$4" ] && '
                                    '[ "$4" = "$OMPI_COMM_WORLD_SIZE" ]; then echo "threads agree"; fi\n')
    args = ["--", "-T", "{threads}", "ranks={ranks}", "{ranks}"]
    db = tmp_path / "r.db"
    proc = hympi("sweep", "./tree", "--ranks", "1", "--threads", "1,2", "--repeat", "1", "--no-warmup",
                 "--ignore-load", "--verify", "threads agree", "--db", str(db), *args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with Store.open(db, create=False) as store:
        runs = sorted(store.runs(), key=lambda r: r.threads)
    assert [r.status for r in runs] == ["ok", "ok"]
    assert {r.app_args for r in runs} == {("-T", "{threads}", "ranks={ranks}", "{ranks}")}
    assert {r.problem for r in runs} == {"-T {threads} ranks={ranks} {ranks}"}
    assert [r.command[-4:] for r in runs] == [("-T", str(t), "ranks=1", "1") for t in (1, 2)]
    code, record = hympi_json("run", "./tree", "--ranks", "2", "--verify", "threads agree", "--json", *args)
    assert code == 0 and record["verified"], record


def test_each_launch_gets_a_new_directory_of_its_own(tmp_path: Path, monkeypatch, fake_launcher):
    """Ray refuses an output directory that exists (and exits 0): with one fixed `-o`, every launch after the first
    of a sweep was a refusal. `{run}` is a new, empty directory of each launch's own, made before it and kept; the
    arguments as typed stay the runs' problem, the command recorded names the directory (`hympi run` says it on
    stderr); a printed plan makes none."""
    monkeypatch.chdir(tmp_path)
    shell_program(tmp_path, "assembler", 'mkdir "$2" || exit 3\necho "$OMP_NUM_THREADS" > "$2/contigs"\n'
                                         'echo "Rank 0 wrote $2/contigs"\n')
    sweep = ["sweep", "./assembler", "--ranks", "1", "--threads", "1,2", "--repeat", "2", "--ignore-load",
             "--verify", "wrote .*/contigs", "--db", str(tmp_path / "r.db"), "--", "-o", "{run}/out"]
    proc = hympi(*sweep[:-3], "--dry-run", *sweep[-3:])
    assert proc.returncode == 0 and "{run}/out" in proc.stdout, proc.stdout + proc.stderr
    assert not (tmp_path / "hympi-runs").exists()
    proc = hympi(*sweep)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with Store.open(tmp_path / "r.db", create=False) as store:
        runs = store.runs()
    assert len(runs) == 6 and {r.status for r in runs} == {"ok"}, [r.stderr_tail for r in runs]  # 2 warm-ups
    assert {r.problem for r in runs} == {"-o {run}/out"}
    made = sorted((tmp_path / "hympi-runs").iterdir())
    assert len(made) == 6
    assert all(path.name.startswith(("assembler-1x1-", "assembler-1x2-")) for path in made), made
    written = {str(path / "out"): (path / "out" / "contigs").read_text().strip() for path in made}
    for run in runs:
        assert run.command[-2] == "-o" and written[run.command[-1]] == str(run.threads)
    proc = hympi("run", "./assembler", "--verify", "wrote", "--json", "--", "-o", "{run}/out")
    assert proc.returncode == 0 and json.loads(proc.stdout)["verified"], proc.stdout + proc.stderr
    (made_now,) = set((tmp_path / "hympi-runs").iterdir()) - set(made)
    assert proc.stderr.splitlines() == [f"hympi: the run's directory: {made_now}"], proc.stderr  # stdout: JSON alone
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    (tmp_path / "elsewhere" / "hympi-runs").write_text("")
    program = str(tmp_path / "assembler")
    for command in (["run", program], ["sweep", program, "--ranks", "1", "--db", "e.db"]):
        assert_refused([*command, "--", "-o", "{run}/out"], "{run} in the arguments: "
                       f"{tmp_path / 'elsewhere' / 'hympi-runs'} is not a directory", fake_launcher)
    assert not (tmp_path / "elsewhere" / "e.db").exists()


def test_only_the_failed_launches_keep_their_directories_when_asked(tmp_path: Path, monkeypatch, fake_launcher):
    """A preparation that copies a case into `{run}` left one copy a launch, ok or not: `--keep-run-dirs failed`
    removes an ok run's directory once it is recorded (its output file read) and keeps the failed ones',
    with what the program wrote there, each named on the line after its run's; the sweeps and tunes of a program
    given it are other sweeps and tunes (their identity holds it), and `tune best --format flags` gives it again.
    Without a `{run}` it is refused."""
    monkeypatch.chdir(tmp_path)
    shell_program(tmp_path, "solver", 'mkdir "$1" && echo "step time 1.$OMP_NUM_THREADS" > "$1/log"\n'
                                      '[ "$OMP_NUM_THREADS" = 2 ] && { echo "diverged" >&2; exit 3; }\nexit 0\n')
    db = tmp_path / "r.db"
    proc = hympi("sweep", "./solver", "--ranks", "1", "--threads", "1,2", "--repeat", "2", "--ignore-load",
                 "--output-file", "{run}/out/log", "--metric", r"step time ([0-9.]+)", "--metric-unit", "s",
                 "--keep-run-dirs", "failed", "--db", str(db), "--", "{run}/out")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    with Store.open(db, create=False) as store:
        runs = store.runs()
        (sweep,) = store.sweeps()
    assert sorted(r.status for r in runs) == ["failed"] * 3 + ["ok"] * 3, [r.stderr_tail for r in runs]  # warm-ups
    assert sweep.params["keep_run_dirs"] == "failed"
    kept = sorted((tmp_path / "hympi-runs").iterdir())
    assert sorted(str(path / "out") for path in kept) == sorted(r.command[-1] for r in runs if r.status == "failed")
    assert sorted(re.findall(r"(?m)^  its directory: (\S+)$", proc.stdout)) == [str(path) for path in kept]
    assert [(path / "out" / "log").read_text() for path in kept] == ["step time 1.2\n"] * 3
    assert {r.record["metrics"]["merit"]["value"] for r in runs if r.record is not None} == {1.1}
    # The same command line without it is another sweep, not a resumption of this one.
    proc = hympi("sweep", "./solver", "--ranks", "1", "--threads", "1", "--repeat", "1", "--no-warmup",
                 "--ignore-load", "--db", str(db), "--", "{run}/out")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with Store.open(db, create=False) as store:
        assert len(store.sweeps()) == 2 and "keep_run_dirs" not in store.sweeps()[1].params
    assert len(list((tmp_path / "hympi-runs").iterdir())) == 4
    (tmp_path / "space.toml").write_text("[layout]\nthreads = [1]\nbind = [\"core\", \"none\"]\n"
                                         "default = { threads = 1, bind = \"core\" }\n")
    proc = hympi("tune", "run", "./solver", "--space", "space.toml", "--repeat", "1", "--ignore-load",
                 "--keep-run-dirs", "failed", "--db", "t.db", "--", "{run}/out")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert len(list((tmp_path / "hympi-runs").iterdir())) == 4  # 2 configurations, 4 ok launches, none kept
    proc = hympi("tune", "best", "--db", "t.db", "--format", "flags")
    assert proc.returncode == 0 and "--keep-run-dirs failed" in proc.stdout, proc.stdout + proc.stderr
    for command in ("run", "affinity"):  # one ok launch: nothing kept
        proc = hympi(command, "./solver", "--keep-run-dirs", "failed", "--", "{run}/out")
        assert proc.returncode == 0 and "directory" not in proc.stderr, proc.stdout + proc.stderr
        assert len(list((tmp_path / "hympi-runs").iterdir())) == 4
    before = set((tmp_path / "hympi-runs").iterdir())
    proc = hympi("affinity", "./solver", "--", "{run}/out")  # without it, kept and named, as by `hympi run`
    (made_now,) = set((tmp_path / "hympi-runs").iterdir()) - before
    assert proc.returncode == 0 and proc.stderr.splitlines() == [f"hympi: the run's directory: {made_now}"], \
        proc.stdout + proc.stderr
    assert_refused(["affinity", "--keep-run-dirs", "failed"], "--keep-run-dirs is for a program of your own (named "
                   "by its path); hympi-affinity is not one", fake_launcher)
    for command in (["run", "./solver"], ["affinity", "./solver"],
                    ["sweep", "./solver", "--ranks", "1", "--db", "e.db"]):
        assert_refused([*command, "--keep-run-dirs", "failed", "--", "out"], "--keep-run-dirs failed: neither the "
                       "arguments, --output-file nor --prepare name {run}, so no launch has a directory of its own",
                       fake_launcher)
        assert_refused([*command, "--keep-run-dirs", "some", "--", "{run}"], "--keep-run-dirs: unknown choice "
                       "'some'", fake_launcher)
    assert not (tmp_path / "e.db").exists()


def test_an_output_file_in_the_launchs_own_directory_is_each_runs_own(tmp_path: Path, monkeypatch):
    """CP2K's `-o h2o.out` appends to one file run after run; `-o {run}/h2o.out --output-file {run}/h2o.out` gives
    each run a file of its own, judged and recorded by its path."""
    monkeypatch.chdir(tmp_path)
    shell_program(tmp_path, "cp2k", 'echo "step time $OMP_NUM_THREADS.5" > "$1"\n')
    proc = hympi("sweep", "./cp2k", "--ranks", "1", "--threads", "1,2", "--repeat", "1", "--no-warmup",
                 "--ignore-load", "--output-file", "{run}/h2o.out", "--metric", r"step time ([0-9.]+)",
                 "--metric-unit", "s", "--db", str(tmp_path / "r.db"), "--", "{run}/h2o.out")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with Store.open(tmp_path / "r.db", create=False) as store:
        runs = sorted(store.runs(), key=lambda r: r.threads)
    assert [r.status for r in runs] == ["ok", "ok"], [r.stderr_tail for r in runs]
    files = [Path(r.record["metrics"]["output_file"]) for r in runs if r.record is not None]
    assert [f.parent.parent for f in files] == [tmp_path / "hympi-runs"] * 2 and files[0] != files[1]
    assert [f.read_text() for f in files] == ["step time 1.5\n", "step time 2.5\n"]
    assert [r.record["metrics"]["merit"]["value"] for r in runs if r.record is not None] == [1.5, 2.5]


def test_hympis_options_after_the_programs_arguments_are_said_to_be_the_programs(tmp_path: Path, monkeypatch,
                                                                                fake_launcher):
    """`hympi sweep ... -- -s example.phy --resume`: the flag added at the end of the command line went to IQ-TREE
    ('Invalid "--resume" option') in every run of a new sweep, without a word that hympi never saw it. Any of the
    command's own options after `--` is noted once on stderr after the command has run (a --json record stays alone
    on stdout), not for bad input (one line) and not for hympi's apps, which have options of those names."""
    monkeypatch.chdir(tmp_path)
    shell_program(tmp_path, "solver", 'echo "args: $*"\n')
    sweep = ["sweep", "./solver", "--ranks", "1", "--repeat", "1", "--no-warmup", "--ignore-load", "--db",
             str(tmp_path / "r.db")]
    note = "hympi: note: {} after '--' went to the program, not to hympi (hympi's options go before '--')"
    proc = hympi(*sweep, "--", "-s", "x", "--resume")
    assert proc.returncode == 0 and proc.stderr.splitlines()[-1] == note.format("--resume"), proc.stderr
    proc = hympi(*sweep, "--resume", "--", "-s", "x")
    assert proc.returncode == 0 and "note:" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    code, record = hympi_json("run", "./solver", "--json", "--", "--ranks=2", "-s", "--threads", "2", "--ranks", "3")
    assert code == 0 and record["ranks"] == 1
    proc = hympi("run", "./solver", "--", "--ranks=2", "-s", "--threads", "2", "--ranks", "3")
    assert proc.stderr.splitlines()[-2:] == [note.format("--ranks"), note.format("--threads")], proc.stderr
    (tmp_path / "space.toml").write_text("[layout]\nranks = [1, 2]\ndefault = { ranks = 1 }\n")
    proc = hympi("tune", "run", "./solver", "--space", "space.toml", "--db", str(tmp_path / "t.db"), "--repeat", "1",
                 "--ignore-load", "--", "--strategy", "x")  # a subcommand's subcommand: tune run's own options
    assert proc.stderr.splitlines()[-1] == note.format("--strategy"), proc.stderr
    proc = hympi("run", "./solver", "--", "--help", "--iterations")  # the program's own; not hympi run options
    assert "note:" not in proc.stderr and "args: --help --iterations" in proc.stdout, proc.stdout + proc.stderr
    assert_refused(["run", "./solver", "--ranks", "0", "--", "--threads", "2"], "--ranks", fake_launcher)
