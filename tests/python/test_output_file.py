"""A program that writes its results into a file (--output-file, hympi.filemark): each run is judged on what it
wrote there, never on an earlier run's results in the same file; a file the run did not write fails the run with
that reason; bad values are refused before anything starts; and HPC Challenge, which appends every run's results to
hpccoutf.txt and prints nothing, is swept with its own figure of merit."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

import userprograms
from conftest import assert_refused, hympi
from hympi.errors import UsageError
from hympi.filemark import FileMark, mark_file, text_written_since
from hympi.launch.mpirun import RunOutcome
from hympi.program import Program, judge, load_programs
from hympi.store import Store
from userprograms import shell_program


def _later(path: Path, mark: FileMark) -> None:
    """Moves the file's modification time past the mark's: a rewrite within the clock's tick looks untouched."""
    os.utime(path, ns=(mark.mtime_ns + 10**9, mark.mtime_ns + 10**9))


def test_an_appended_file_gives_only_what_was_appended(tmp_path: Path):
    out = tmp_path / "out.txt"
    out.write_text("result=1\n")
    mark = mark_file(out)
    with out.open("a") as handle:
        handle.write("result=2\n")
    assert text_written_since(mark).text == "result=2\n"


@pytest.mark.parametrize("before", ["result=1\n", "result=1\nand a longer first run\n", ""])
def test_a_file_written_anew_gives_all_of_it(tmp_path: Path, before: str):
    out = tmp_path / "out.txt"
    out.write_text(before)
    mark = mark_file(out)
    out.write_text("result=2\nmore lines than before\n")  # truncated and rewritten: not an append
    _later(out, mark)
    assert text_written_since(mark).text == "result=2\nmore lines than before\n"


def test_a_file_whose_old_beginning_changed_is_read_whole(tmp_path: Path):
    out = tmp_path / "out.txt"
    out.write_text("result=1\n")
    mark = mark_file(out)
    out.write_text("result=3\nresult=2\n")  # longer, same inode, but its first bytes are not the old ones
    assert text_written_since(mark).text == "result=3\nresult=2\n"


def test_a_file_created_by_the_run_is_read_whole_and_bad_bytes_are_replaced(tmp_path: Path):
    out = tmp_path / "out.txt"
    mark = mark_file(out)
    out.write_bytes(b"caf\xe9\nresult=2\n")
    assert text_written_since(mark).text == "caf\ufffd\nresult=2\n"


def test_a_file_the_run_did_not_write_or_removed_has_no_text(tmp_path: Path):
    out = tmp_path / "out.txt"
    assert text_written_since(mark_file(out)).problem == "was not written by the run (there is no such file)"
    out.write_text("result=1\n")
    mark = mark_file(out)
    assert text_written_since(mark).problem == "was not written by the run (it is as it was before the launch)"
    out.write_text("result=1\n")  # rewritten with the same bytes: written, whatever the clock says
    _later(out, mark)
    assert text_written_since(mark).text == "result=1\n"
    out.unlink()
    assert text_written_since(mark).problem == "was not written by the run (there is no such file)"


def test_a_path_that_cannot_be_read_is_marked_as_missing_and_said_so_after_the_run(tmp_path: Path):
    """A directory where the file should be (replaced after the command's checks): the mark reads as a missing file,
    and what the run left there cannot be read either: a problem, never a traceback mid-sweep."""
    out = tmp_path / "out"
    out.mkdir()
    mark = mark_file(out)
    assert mark.size == -1
    assert text_written_since(mark).problem.startswith("cannot be read (")


def _program(tmp_path: Path, **fields: str) -> Program:
    return Program(name="p", path="/x/p", sha256="0" * 64, workdir=str(tmp_path), output_file="out.txt", **fields)


def _outcome(stdout: str) -> RunOutcome:
    return RunOutcome("failed", 0, 2.0, ["mpirun", "./p"], stdout, "")


def test_judge_reads_the_metric_from_the_file_before_the_output(tmp_path: Path):
    program = _program(tmp_path, metric=r"result=([0-9]+)", verify="DONE")
    out = tmp_path / "out.txt"
    out.write_text("result=111\nDONE\n")  # an earlier run's
    mark = mark_file(out)
    with out.open("a") as handle:
        handle.write("result=7\nDONE\n")
    judged = judge(program, _outcome("result=99 in the output\n"), 1, 1, (), text_written_since(mark))
    assert judged.status == "ok" and judged.record is not None
    assert judged.record["metrics"]["merit"]["value"] == 7
    assert judged.record["metrics"]["output_file"] == str(out)


def test_judge_fails_a_run_that_wrote_no_output_file_with_the_reason(tmp_path: Path):
    program = _program(tmp_path, verify="DONE")
    out = tmp_path / "out.txt"
    out.write_text("DONE\n")
    mark = mark_file(out)
    judged = judge(program, _outcome("DONE\n"), 1, 1, (), text_written_since(mark))
    assert judged.status == "failed"
    assert judged.stderr.splitlines()[-1] == (f"hympi: output file {out} was not written by the run (it is as it "
                                              "was before the launch)")


@pytest.mark.parametrize(("extra", "needle"), [
    (["--output-file", "out.txt"], "--output-file needs --metric or --verify: they search the file"),
    (["--output-file", "fifo", "--verify", "x"], "is a FIFO"),
    (["--output-file", "sub", "--verify", "x"], "is a directory"),
    (["--output-file", "nowhere/out.txt", "--verify", "x"], "nowhere does not exist"),
    (["--output-file", "", "--verify", "x"], "--output-file: an empty path names no file"),
])
def test_bad_output_file_input_is_refused_before_launch(tmp_path: Path, fake_launcher, monkeypatch,
                                                        extra: list[str], needle: str):
    monkeypatch.chdir(tmp_path)
    shell_program(tmp_path, "ok", "echo fine\n")
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "sub").mkdir()
    for command in (["sweep", "./ok", "--db", str(tmp_path / "r.db")], ["run", "./ok"]):
        assert_refused([*command, *extra], needle, fake_launcher)
    assert not (tmp_path / "r.db").exists()
    assert_refused(["run", "rb3d", "--output-file", "out.txt"], "--output-file is for a program of your own",
                   fake_launcher)


def test_a_programs_file_names_the_output_file_relative_to_its_directory(tmp_path: Path, monkeypatch):
    (tmp_path / "runs").mkdir()
    shell_program(tmp_path / "runs", "solver", "echo fine\n")
    (tmp_path / "runs" / "p.toml").write_text('[[program]]\nname = "s"\ncommand = ["./solver"]\n'
                                              'output_file = "out/result.txt"\nmetric = "r=([0-9]+)"\n')
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError, match=f"directory {tmp_path / 'runs' / 'out'} does not exist"):
        load_programs("runs/p.toml")
    (tmp_path / "runs" / "out").mkdir()
    (run,) = load_programs("runs/p.toml")
    assert run.program.output_path() == tmp_path / "runs" / "out" / "result.txt"


def test_a_program_appending_to_its_file_is_credited_with_its_own_result_at_every_run(tmp_path: Path,
                                                                                      monkeypatch):
    """A script that appends 'ranks N' to results.txt after an earlier run's lines: every run records its own rank
    count (searching the whole file would give every run the first line's 7), and a run that writes nothing fails
    with the reason while the others stay ok. Without `make test`'s Open MPI variable that allows more ranks than
    cores, as a user runs it: 3 ranks on fewer cores must start under the launcher's binding with --oversubscribe."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OMPI_MCA_rmaps_base_oversubscribe", raising=False)
    shell_program(tmp_path, "appender", """
n=${OMPI_COMM_WORLD_SIZE:-${PMI_SIZE:-1}}
r=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}
[ "$r" = 0 ] || exit 0
[ "$n" = 3 ] && exit 0
echo "ranks $n" >> results.txt
echo "checked" >> results.txt
""")
    (tmp_path / "results.txt").write_text("ranks 7\nchecked\n")
    proc = hympi("sweep", "./appender", "--ranks", "1,2,3", "--repeat", "2", "--no-warmup", "--oversubscribe",
                 "--output-file", "results.txt", "--metric", r"ranks ([0-9]+)", "--verify", "checked",
                 "--db", str(tmp_path / "r.db"), "--timeout", "30")
    assert proc.returncode == 1, proc.stdout + proc.stderr  # the 3-rank runs wrote nothing
    with Store.open(tmp_path / "r.db", create=False) as store:
        runs = store.runs()
    assert sorted((r.ranks, r.status, r.value("rate") if r.status == "ok" else None) for r in runs) == [
        (1, "ok", 1), (1, "ok", 1), (2, "ok", 2), (2, "ok", 2), (3, "failed", None), (3, "failed", None)]
    failed = [r for r in runs if r.status == "failed"]
    assert all(f"output file {tmp_path / 'results.txt'} was not written by the run" in r.stderr_tail for r in failed)
    assert (tmp_path / "results.txt").read_text().count("ranks") == 5  # hympi reads the file; it never rewrites it


def test_hpc_challenge_is_swept_on_the_results_it_appends_to_its_file(tmp_path: Path, monkeypatch):
    """Debian's HPC Challenge prints nothing and appends each run's results to hpccoutf.txt. A file that already
    holds an earlier run's summary (HPL at 999 Tflop/s) must not lend it to the new runs: each records its own
    HPL rate, and the file then holds one summary more per run, with the world size of the layout it ran at and
    HPL on a grid of all its ranks (the example's preparation writes hpccinf.txt for each launch)."""
    monkeypatch.chdir(tmp_path)
    program = userprograms.hpcc(tmp_path)
    (tmp_path / program.output_file).write_text("Begin of Summary section.\nCommWorldProcs=5\nHPL_Tflops=999\n"
                                                     "Success=1\nEnd of Summary section.\n")
    proc = hympi("sweep", *program.command, "--ranks", "1,2", "--repeat", "1", "--no-warmup",
                 "--output-file", program.output_file, "--metric", program.metric, "--metric-unit",
                 program.metric_unit, "--verify", program.verify, "--prepare", program.prepare,
                 "--db", str(tmp_path / "r.db"), "--timeout", "120")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with Store.open(tmp_path / "r.db", create=False) as store:
        runs = store.runs()
    assert sorted(r.ranks for r in runs) == [1, 2] and {r.status for r in runs} == {"ok"}
    written = (tmp_path / program.output_file).read_text()
    rates = [float(v) for v in re.findall(program.metric, written)]
    assert rates[0] == 999 and len(rates) == 3  # the seeded summary, then one per run, in launch order
    assert sorted(r.value("rate") for r in runs) == sorted(rates[1:])
    assert all(0 < rate < 1 for rate in rates[1:])  # a 256 x 256 HPL on one core: well under a Tflop/s
    assert sorted(int(n) for n in re.findall(r"(?m)^CommWorldProcs=([0-9]+)$", written)[1:]) == [1, 2]
    sections = re.findall(r"(?ms)^Begin of Summary section\.$(.*?)^End of Summary section\.$", written)[1:]
    summaries = [dict(re.findall(r"(?m)^(\w+)=(\S+)$", section)) for section in sections]
    grids = sorted((s["CommWorldProcs"], s["HPL_nprow"], s["HPL_npcol"]) for s in summaries)
    assert grids == [("1", "1", "1"), ("2", "1", "2")], grids
