"""The files a program's arguments name, watched while a sweep runs (hympi.inputs): which are inputs, what a change
of one does to the run and the sweep, and resuming a sweep whose input changed since."""

from __future__ import annotations

import dataclasses
import hashlib
import os
from pathlib import Path

import pytest

from conftest import hympi
from hympi.errors import UsageError
from hympi.inputs import InputWatch, check_inputs_since, earlier_inputs, named_files
from hympi.program import Program
from hympi.store import Run, Store
from userprograms import shell_program


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_files_an_argument_names_where_the_program_runs_are_watched_and_nothing_else(tmp_path: Path):
    for name in ("in.melt", "case.inp", "out.log", "reads.txt", "pre-{ranks}.in"):
        (tmp_path / name).write_text("x\n")
    (tmp_path / "case").mkdir()
    program = Program(name="p", path="/x/p", sha256="0" * 64, workdir=str(tmp_path), output_file="out.log",
                      stdin="reads.txt")
    args = ["-in", "in.melt", "--input=case.inp", "-log", "out.log", "reads.txt", "-case", "case", "pre-{ranks}.in",
            "missing.in", "8", "in.melt", "/proc/cpuinfo", "-var=", "", "x" * 5000]
    assert named_files(program, args) == [tmp_path / "in.melt", tmp_path / "case.inp"]


def test_the_first_launch_tells_outputs_and_after_it_any_change_is_an_input_changed(tmp_path: Path):
    inp, log = tmp_path / "in.txt", tmp_path / "log.txt"
    inp.write_text("5\n")
    log.write_text("old run\n")
    watch = InputWatch([inp, log])
    digest = _sha(inp)
    assert watch.changed() is None
    log.write_text("this run\n")  # what the first launch writes: its output
    assert watch.settle(first=True) == ([log], None)
    assert watch.paths == [inp] and watch.digests() == {str(inp): digest}
    log.write_text("the next run\n")  # an output is watched no longer
    os.utime(inp, ns=(1, 1))  # touched, the same bytes: no change
    assert watch.changed() is None and watch.settle(first=False) == ([], None)
    inp.write_text("6\n")  # during a later launch
    assert watch.settle(first=False) == ([], f"{inp} has changed (its sha256 is no longer {digest[:12]}...)")
    inp.write_text("5\n")
    assert watch.changed() is None  # the bytes the sweep began with
    inp.unlink()
    assert watch.changed() == f"{inp} is gone or cannot be read"


def test_an_input_earlier_runs_read_is_checked_against_their_digest_and_never_taken_for_an_output(tmp_path: Path):
    """A resumed sweep's, or a tune's next configuration's, first launch: a file earlier runs recorded as their input
    stays one, and a change since they read it is found before anything is launched."""
    inp = tmp_path / "in.txt"
    inp.write_text("5\n")
    digest = _sha(inp)
    watch = InputWatch([inp], known={str(inp): digest})
    assert watch.changed() is None
    inp.write_text("6\n")
    written, changed = watch.settle(first=True)
    assert written == [] and changed is not None and changed.startswith(f"{inp} has changed")
    edited = InputWatch([inp], known={str(inp): digest})  # a later sweep's, the file edited before it began
    assert edited.changed() == f"{inp} has changed (its sha256 is no longer {digest[:12]}...)"


def test_an_input_edited_during_a_sweep_fails_its_run_stops_the_sweep_and_refuses_a_resume_until_restored(
        tmp_path: Path, monkeypatch):
    """The solver edits its input file during its second launch (as a user setting up the next experiment in the same
    file would): that run is recorded failed, the sweep stops with the first run kept, and --resume refuses the
    changed input; restored, the sweep resumes. Its output file, left by an earlier run and named in its arguments,
    is told apart by the first launch and never stops it."""
    monkeypatch.chdir(tmp_path)
    shell_program(tmp_path, "solver", 'n=$(cat count 2>/dev/null || echo 0); echo $((n + 1)) > count\n'
                                      'if [ "$n" -eq 1 ]; then echo "# next" >> "$2"; fi\n'
                                      'echo "run $n" > "$4"; echo "size $(head -n 1 "$2")"\n')
    inp = tmp_path / "in.txt"
    inp.write_text("5\n")
    (tmp_path / "out.txt").write_text("an earlier run\n")
    digest = _sha(inp)
    sweep = ["sweep", "./solver", "--ranks", "1", "--repeat", "3", "--no-warmup", "--ignore-load", "--verify",
             "size 5", "--db", str(tmp_path / "r.db"), "--", "-in", "in.txt", "-o", "out.txt"]
    proc = hympi(*sweep)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert (f"input files, checked between launches: {inp}, {tmp_path / 'out.txt'} (one the arguments name that the "
            "launches up to the first ok run change is taken for an output)") in proc.stdout
    assert f"{tmp_path / 'out.txt'} changed during the launch: the program's output" in proc.stdout
    assert proc.stderr.splitlines()[-1] == (
        f"hympi: error: input {inp} has changed (its sha256 is no longer {digest[:12]}...) during a launch of sweep 1, "
        "recorded as failed: the runs measured before are kept; the rest would measure another input: start a new "
        "sweep for it"), proc.stderr
    with Store.open(tmp_path / "r.db", create=False) as store:
        runs = store.runs()
        assert [r.status for r in runs] == ["ok", "failed"] and store.sweeps()[0].status == "interrupted"
    assert runs[0].record is not None and runs[0].record["metrics"]["inputs"] == {str(inp): digest}
    assert f"hympi: input {inp} has changed" in runs[1].stderr_tail

    refused = hympi(*sweep[:-5], "--resume", *sweep[-5:])
    assert refused.returncode == 2 and refused.stderr.splitlines() == [
        f"hympi: error: {inp}, an input the program's arguments name, has changed since sweep 1's last run (sha256 "
        f"{digest[:12]}...): the runs left would measure another input; start a new sweep"], refused.stderr

    inp.write_text("5\n")
    resumed = hympi(*sweep[:-5], "--resume", *sweep[-5:])
    assert resumed.returncode == 1 and "sweep 1 finished: 1 ok" in resumed.stdout, resumed.stdout + resumed.stderr
    assert f"{tmp_path / 'out.txt'} changed during the launch" in resumed.stdout  # told apart again
    with Store.open(tmp_path / "r.db", create=False) as store:
        assert [r.status for r in store.runs()] == ["ok", "failed", "ok"]


def test_a_run_failed_by_an_input_edited_during_it_keeps_its_directory(tmp_path: Path, monkeypatch):
    """With --keep-run-dirs failed, a launch's directory goes only once its run is recorded ok: the launch that ended
    ok while its input was edited is a failed run, and keeps what it wrote in its directory."""
    monkeypatch.chdir(tmp_path)
    shell_program(tmp_path, "solver", 'n=$(cat count 2>/dev/null || echo 0); echo $((n + 1)) > count\n'
                                      'if [ "$n" -eq 1 ]; then echo "# next" >> "$2"; fi\n'
                                      'mkdir "$4" && echo "run $n" > "$4/log"; echo "size $(head -n 1 "$2")"\n')
    (tmp_path / "in.txt").write_text("5\n")
    proc = hympi("sweep", "./solver", "--ranks", "1", "--repeat", "3", "--no-warmup", "--ignore-load", "--verify",
                 "size 5", "--keep-run-dirs", "failed", "--db", str(tmp_path / "r.db"), "--", "-in", "in.txt", "-o",
                 "{run}/out")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    with Store.open(tmp_path / "r.db", create=False) as store:
        runs = store.runs()
    assert [r.status for r in runs] == ["ok", "failed"], [r.stderr_tail for r in runs]
    (kept,) = (tmp_path / "hympi-runs").iterdir()
    assert str(kept / "out") == runs[1].command[-1] and (kept / "out" / "log").read_text() == "run 1\n"
    assert f"  its directory: {kept}" in proc.stdout


def test_an_output_a_failed_first_launch_left_alone_is_told_apart_by_the_next(tmp_path: Path, monkeypatch):
    """A launch that fails before writing its output says nothing of it: the launches up to the first ok one do."""
    monkeypatch.chdir(tmp_path)
    shell_program(tmp_path, "solver", 'n=$(cat count 2>/dev/null || echo 0); echo $((n + 1)) > count\n'
                                      'if [ "$n" -eq 0 ]; then exit 1; fi\necho "run $n" > "$2"; echo ok\n')
    (tmp_path / "out.txt").write_text("an earlier run\n")
    proc = hympi("sweep", "./solver", "--ranks", "1", "--repeat", "3", "--no-warmup", "--ignore-load", "--verify",
                 "ok", "--db", str(tmp_path / "r.db"), "--", "-o", "out.txt")
    assert proc.returncode == 1 and "sweep 1 finished: 1 failed, 2 ok" in proc.stdout, proc.stdout + proc.stderr
    assert f"{tmp_path / 'out.txt'} changed during the launch: the program's output" in proc.stdout
    with Store.open(tmp_path / "r.db", create=False) as store:
        assert [r.status for r in store.runs()] == ["failed", "ok", "ok"]
        assert [r.record["metrics"]["inputs"] for r in store.runs()[1:]] == [{}, {}]  # out.txt is no input


def test_a_tune_compares_its_configurations_on_one_input(tmp_path: Path, monkeypatch):
    """Every configuration of a tune is a sweep of its own, compared with the others: an input edited between them
    (here while the tune was stopped) would have it compare two problems. Resuming refuses it, in one line."""
    monkeypatch.chdir(tmp_path)
    shell_program(tmp_path, "solver", 'n=$(cat count 2>/dev/null || echo 0); echo $((n + 1)) > count\n'
                                      'if [ "$n" -eq 2 ]; then echo "# next" >> "$2"; fi\n'
                                      'echo "size $(head -n 1 "$2")"\n')
    (tmp_path / "space.toml").write_text("[layout]\nranks = [1, 2]\ndefault = { ranks = 1 }\n")
    inp = tmp_path / "in.txt"
    inp.write_text("5\n")
    digest = _sha(inp)
    tune = ["tune", "run", "./solver", "--space", "space.toml", "--db", "t.db", "--repeat", "1", "--ignore-load",
            "--verify", "size 5"]
    proc = hympi(*tune, "--", "-in", "in.txt")  # the third launch (the second configuration's first) edits it
    assert proc.returncode == 1, proc.stdout + proc.stderr
    # Said by the first configuration only: the second is held to the input the first read.
    assert proc.stdout.count(f"input files, checked between launches: {inp} (one the arguments name") == 1, proc.stdout
    assert proc.stderr.splitlines()[-1].startswith(
        f"hympi: error: input {inp} has changed (its sha256 is no longer {digest[:12]}...) during a launch of sweep 2 "
        "of tune 1"), proc.stderr
    (tmp_path / "count").write_text("9\n")  # no more edits of its own
    inp.write_text("5 # edited while the tune was stopped\n")
    refused = hympi(*tune, "--resume", "--", "-in", "in.txt")
    assert refused.returncode == 2 and refused.stderr.splitlines() == [
        f"hympi: error: {inp}, an input the program's arguments name, has changed since tune 1's last run (sha256 "
        f"{digest[:12]}...): the runs left would measure another input; start a new sweep"], refused.stderr
    inp.write_text("5\n")
    resumed = hympi(*tune, "--resume", "--", "-in", "in.txt")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    with Store.open(tmp_path / "t.db", create=False) as store:
        assert {r.record["metrics"]["inputs"][str(inp)] for r in store.runs() if r.status == "ok"} == {digest}


def test_a_file_the_preparation_remakes_for_a_later_launch_is_its_output_not_an_edited_input(tmp_path: Path,
                                                                                           monkeypatch):
    """`--prepare './make {ranks}' -- -in made.in`: the first launch's preparation wrote made.in as it was (an earlier
    sweep's), the second's anew; that is the preparation's work, not an edit, and the sweep goes on."""
    monkeypatch.chdir(tmp_path)
    shell_program(tmp_path, "make", 'n=$(cat count 2>/dev/null || echo 0); echo $((n + 1)) > count\n'
                                    'echo "$n" > made.in\n')
    shell_program(tmp_path, "solver", 'echo "read $(cat "$2")"\n')
    (tmp_path / "made.in").write_text("0\n")
    proc = hympi("sweep", "./solver", "--ranks", "1", "--repeat", "3", "--no-warmup", "--ignore-load", "--verify",
                 "read", "--prepare", "./make {ranks}", "--db", str(tmp_path / "r.db"), "--", "-in", "made.in")
    assert proc.returncode == 0 and "sweep 1 finished: 3 ok" in proc.stdout, proc.stdout + proc.stderr
    assert f"{tmp_path / 'made.in'} changed during the launch: the program's output" in proc.stdout


def test_the_report_never_pools_runs_of_one_command_line_on_an_edited_input(tmp_path: Path, monkeypatch):
    """Two sweeps of `./solver -in in.txt`, the input edited between them: two problems, two groups, each named by
    the input's digest as its runs read it."""
    monkeypatch.chdir(tmp_path)
    shell_program(tmp_path, "solver", 'echo "size $(cat "$2")"\n')
    inp = tmp_path / "in.txt"
    digests = []
    for size in ("5", "6"):
        inp.write_text(f"{size}\n")
        digests.append(_sha(inp))
        proc = hympi("sweep", "./solver", "--ranks", "1", "--repeat", "2", "--no-warmup", "--ignore-load", "--db",
                     "r.db", "--", "-in", "in.txt")
        assert proc.returncode == 0, proc.stdout + proc.stderr
    report = hympi("report", "--db", "r.db", "--out", str(tmp_path / "rep"), env={"COLUMNS": "1000"})
    assert report.returncode == 0, report.stderr
    named = [line for line in report.stdout.splitlines() if line.startswith("solver -in in.txt")]
    assert len(named) == 2, report.stdout
    for line, digest in zip(named, digests, strict=True):
        assert f", reading {inp} (sha256 {digest[:12]})" in line, line


def test_an_input_named_with_the_layouts_figures_is_each_layouts_own_and_watched(tmp_path: Path, monkeypatch):
    """`-in in.{threads}`: one input per thread count, each watched; an edit of the 2-thread one during a launch
    stops the sweep as any input's does."""
    monkeypatch.chdir(tmp_path)
    shell_program(tmp_path, "solver", 'n=$(cat count 2>/dev/null || echo 0); echo $((n + 1)) > count\n'
                                      'if [ "$n" -eq 2 ]; then echo "# next" >> in.2; fi\necho "read $(cat "$2")"\n')
    for threads in (1, 2):
        (tmp_path / f"in.{threads}").write_text(f"{threads}\n")
    digest = _sha(tmp_path / "in.2")
    proc = hympi("sweep", "./solver", "--ranks", "1", "--threads", "1,2", "--repeat", "2", "--no-warmup",
                 "--ignore-load", "--db", "r.db", "--", "-in", "in.{threads}")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    (header,) = (line for line in proc.stdout.splitlines() if "checked between launches: " in line)
    named = header.partition("checked between launches: ")[2].partition(" (")[0]
    assert sorted(named.split(", ")) == [str(tmp_path / "in.1"), str(tmp_path / "in.2")], header
    assert proc.stderr.splitlines()[-1].startswith(f"hympi: error: input {tmp_path / 'in.2'} has changed (its sha256 "
                                                   f"is no longer {digest[:12]}...) during a launch"), proc.stderr


def test_a_digest_recorded_before_a_preparation_ran_again_holds_no_later_run_to_it(tmp_path: Path):
    """A preparation may make a file the arguments name anew at any launch: a resumed sweep of such a program is not
    refused for it, and its first launches may take it for an output."""
    inp = tmp_path / "made.in"
    inp.write_text("2\n")
    run = Run(1, "p", 1, 1, "core", "compact", 1, ("-in", "made.in"), (), (), "ok", 0, 1.0,
              record={"metrics": {"inputs": {str(inp): "0" * 64}}})
    plain = Program(name="p", path="/x/p", sha256="0" * 64, workdir=str(tmp_path))
    prepared = dataclasses.replace(plain, prepare="./make {ranks}")
    assert earlier_inputs(plain, [run]) == {str(inp): "0" * 64} and earlier_inputs(prepared, [run]) == {}
    check_inputs_since(prepared, [run], "sweep 1")
    with pytest.raises(UsageError, match=r"made\.in, an input the program's arguments name, has changed since sweep 1"):
        check_inputs_since(plain, [run], "sweep 1")


def test_a_programs_files_declared_inputs_are_watched_though_no_argument_names_them(tmp_path: Path, monkeypatch):
    """A programs file's `inputs` are files the program reads (HPC Challenge reads hpccinf.txt, named nowhere): the
    study watches them too, and never takes them for outputs, even in its first launch."""
    monkeypatch.chdir(tmp_path)
    shell_program(tmp_path, "solver", 'if mkdir edited 2>/dev/null; then echo "# next" >> in.txt; fi\n'
                                      'echo "read $(head -n 1 in.txt)"\n')
    inp = tmp_path / "in.txt"
    inp.write_text("5\n")
    digest = _sha(inp)
    (tmp_path / "programs.toml").write_text('[[program]]\nname = "solver"\ncommand = ["./solver"]\n'
                                            'inputs = ["in.txt"]\nverify = "read 5"\n')
    proc = hympi("study", "--quick", "--programs", "programs.toml", "--db", "s.db", "--out", "rep", "--ignore-load",
                 "--repeat", "1")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"checked between launches: {inp} (" in proc.stdout, proc.stdout
    assert f"input {inp} has changed (its sha256 is no longer {digest[:12]}...) during a launch of sweep" in \
        proc.stderr, proc.stderr
