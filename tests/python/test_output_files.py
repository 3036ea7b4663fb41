"""Issue 30 B.10: an output never replaces an input (refused, one line naming both, exit 2, the input untouched),
and every file hympi writes goes through one helper (hympi.outputs): a temporary file in the same directory,
renamed over the target, so a failed write leaves the old file and no half-written one."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import hympi
from fakeapps import fake_bin_dir
from hympi.errors import UsageError
from hympi.outputs import check_not_input, output_stream, same_file, write_output
from hympi.store import Store
from hympi.topology import run_hympi_info
from refusals import assert_refused, digest, files


def results_db(path: Path) -> Path:
    """A results database with one sweep and no runs."""
    with Store.open(path) as store:
        machine = store.ensure_machine("h", "t", "m", "c", {})
        store.create_sweep(machine.id, "rb3d", {"app": "rb3d"}, 1)
    return path


def matrix(path: Path) -> Path:
    """A two-rank dense matrix."""
    path.write_text("0 1\n1 0\n")
    return path


# --- the helper -------------------------------------------------------------------------------------------------------
def test_write_output_replaces_the_file_by_rename(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old\n")
    inode = target.stat().st_ino
    write_output(target, "new\n")
    assert target.read_text() == "new\n"
    assert target.stat().st_ino != inode  # a new file renamed over it, not the old one rewritten in place
    assert files(tmp_path) == ["out.txt"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old\n")
    with pytest.raises(RuntimeError), output_stream(target) as stream:
        stream.write("half of the n")
        raise RuntimeError("disk full")
    assert target.read_text() == "old\n"
    assert files(tmp_path) == ["out.txt"]


def test_permissions_are_the_old_files_or_the_umasks(tmp_path):
    kept = tmp_path / "kept.txt"
    kept.write_text("x")
    kept.chmod(0o640)
    write_output(kept, "y")
    assert kept.stat().st_mode & 0o777 == 0o640
    old = os.umask(0o027)
    try:
        write_output(tmp_path / "new.txt", "z")
    finally:
        os.umask(old)
    assert (tmp_path / "new.txt").stat().st_mode & 0o777 == 0o640  # 0666 less the umask, not mkstemp's 0600
    write_output(tmp_path / "script", "#!/bin/sh\n", mode=0o755)
    assert (tmp_path / "script").stat().st_mode & 0o777 == 0o755


def test_a_symbolic_link_keeps_pointing_at_the_new_content(tmp_path):
    real = tmp_path / "real.txt"
    real.write_text("old")
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    write_output(link, b"new")
    assert link.is_symlink() and real.read_text() == "new"


def test_same_file_sees_through_links_and_dot_dot(tmp_path):
    a = tmp_path / "a.db"
    a.write_text("x")
    (tmp_path / "sub").mkdir()
    os.link(a, tmp_path / "hard.db")
    (tmp_path / "soft.db").symlink_to(a)
    for other in ("hard.db", "soft.db", "sub/../a.db"):
        assert same_file(tmp_path / other, a), other
    assert same_file(tmp_path / "new.db", tmp_path / "sub" / ".." / "new.db")  # neither exists yet
    assert not same_file(tmp_path / "b.db", a)
    with pytest.raises(UsageError, match=r"^--out .*hard.db is the --db input .*a.db: hympi never overwrites"):
        check_not_input("--out", tmp_path / "hard.db", {"--db": a, "--cvars": None})
    check_not_input("--out", tmp_path / "b.db", {"--db": a, "--cvars": None})


# --- the commands -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("spelling", ["g.db", "./g.db", "sub/../g.db", "link.db", "hard.db"])
def test_export_onto_its_database_is_refused(spelling, tmp_path):
    db = results_db(tmp_path / "g.db")
    (tmp_path / "sub").mkdir()
    (tmp_path / "link.db").symlink_to(db)
    os.link(db, tmp_path / "hard.db")
    before, listing = digest(db), files(tmp_path)
    proc = hympi("export", "--db", str(db), "-o", str(tmp_path / spelling))
    assert_refused(proc, "--output", "--db", "never overwrites an input")
    assert digest(db) == before and files(tmp_path) == listing
    with Store.read(db) as store:
        assert len(store.sweeps()) == 1


def test_export_writes_through_a_rename(tmp_path):
    db = results_db(tmp_path / "g.db")
    out = tmp_path / "runs.csv"
    out.write_text("stale\n")
    inode = out.stat().st_ino
    proc = hympi("export", "--db", str(db), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert out.read_text().startswith("run_id,sweep_id,")
    assert out.stat().st_ino != inode
    assert not [p for p in files(tmp_path) if p.endswith(".tmp")]


@pytest.mark.parametrize(("out", "inputs"), [
    ("m.txt", ["--matrix", "m.txt"]),
    ("m", ["--matrix", "m.hydra"]),  # the MPICH twin, OUT.hydra, is written too
    ("node.xml", ["--matrix", "m.txt", "--topology", "node.xml"]),
])
def test_place_onto_one_of_its_inputs_is_refused(out, inputs, tmp_path):
    for name in ("m.txt", "m.hydra"):
        matrix(tmp_path / name)
    (tmp_path / "node.xml").write_text(run_hympi_info("synthetic:pack:1 core:2 pu:1", "xml"))
    before = {name: digest(tmp_path / name) for name in ("m.txt", "m.hydra", "node.xml")}
    listing = files(tmp_path)
    args = [str(tmp_path / a) if a.endswith((".txt", ".hydra", ".xml")) else a for a in inputs]
    proc = hympi("place", *args, "--out", str(tmp_path / out))
    assert_refused(proc, "--out", "input", "never overwrites")
    assert {name: digest(tmp_path / name) for name in before} == before
    assert files(tmp_path) == listing


def test_place_writes_both_rankfiles_through_a_rename(tmp_path):
    m = matrix(tmp_path / "m.txt")
    out = tmp_path / "r.txt"
    out.write_text("old\n")
    inode = out.stat().st_ino
    proc = hympi("place", "--matrix", str(m), "--topology", "synthetic:pack:1 core:2 pu:1", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert out.read_text().startswith("rank 0=") and out.stat().st_ino != inode
    assert (tmp_path / "r.txt.hydra").read_text().startswith("# MPICH/Hydra")
    assert sorted(files(tmp_path)) == ["m.txt", "r.txt", "r.txt.hydra"]


def test_report_whose_index_would_be_the_database_is_refused(tmp_path):
    db = results_db(tmp_path / "index.html")
    before = digest(db)
    proc = hympi("report", "--db", str(db), "--out", str(tmp_path))
    assert_refused(proc, "--out", "--db", "never overwrites")
    assert digest(db) == before


def test_sbatch_script_onto_the_database_is_refused(tmp_path):
    env = fake_bin_dir(tmp_path)
    env["SLURM_JOB_ID"] = ""  # outside an allocation: the sweep writes an sbatch script
    work = tmp_path / "work"
    work.mkdir()
    db = results_db(work / "r.db")
    before = digest(db)
    proc = hympi("sweep", "rb3d", "--launcher", "slurm", "--sbatch", str(db), "--db", str(db), env=env)
    assert_refused(proc, "--sbatch", "--db", "never overwrites")
    assert digest(db) == before
    assert files(work) == ["r.db"]


# --- an sbatch script never replaces what the sweep reads -------------------------------------------------------------
@pytest.mark.parametrize("target", ["program", "stdin", "argument", "output-file", "other.db"])
def test_sbatch_script_onto_a_file_the_sweep_reads_is_refused(target, tmp_path):
    env = fake_bin_dir(tmp_path)
    env["SLURM_JOB_ID"] = ""  # outside an allocation: the sweep writes an sbatch script
    work = tmp_path / "work"
    work.mkdir()
    program = work / "solver"
    program.write_text("#!/bin/sh\necho 'rate 5'\n")
    program.chmod(0o755)
    for name in ("in.txt", "data.txt", "log.txt"):
        (work / name).write_text(f"{name}\n")
    results_db(work / "other.db")
    named = {"program": "solver", "stdin": "in.txt", "argument": "data.txt", "output-file": "log.txt"}
    script = work / named.get(target, target)
    before = {name: digest(work / name) for name in files(work)}
    proc = hympi("sweep", str(program), "--launcher", "slurm", "--sbatch", str(script), "--db", str(work / "r.db"),
                 "--stdin", str(work / "in.txt"), "--output-file", str(work / "log.txt"), "--metric", r"rate (\d+)",
                 "--", str(work / "data.txt"), env=env)
    assert_refused(proc, f"--sbatch {script}", "never overwrites")
    assert {name: digest(work / name) for name in files(work)} == before


# --- the results database is never one of the files the runs read ----------------------------------------------------
def empty_inputs(work: Path) -> Path:
    """A program that leaves a mark when it runs, and empty input files for it (what SQLite would make a database
    of without a word)."""
    program = work / "solver"
    program.write_text(f"#!/bin/sh\ntouch {work / 'ran'}\necho 'rate 5'\n")
    program.chmod(0o755)
    for name in ("in.txt", "data.txt", "log.txt"):
        (work / name).write_text("")
    return program


@pytest.mark.parametrize(("db", "needle"), [("in.txt", "--stdin"), ("data.txt", "argument 1"),
                                            ("log.txt", "--output-file"), ("solver", "program")])
def test_sweep_db_that_is_an_input_of_the_runs_is_refused(db, needle, tmp_path):
    program = empty_inputs(tmp_path)
    before = {name: digest(tmp_path / name) for name in files(tmp_path)}
    proc = hympi("sweep", str(program), "--db", str(tmp_path / db), "--stdin", str(tmp_path / "in.txt"),
                 "--output-file", str(tmp_path / "log.txt"), "--metric", r"rate (\d+)", "--",
                 str(tmp_path / "data.txt"))
    assert_refused(proc, f"--db {tmp_path / db} is the {needle} input", "never overwrites")
    assert {name: digest(tmp_path / name) for name in files(tmp_path)} == before


def test_tune_run_db_that_is_an_argument_of_the_runs_is_refused(tmp_path):
    program = empty_inputs(tmp_path)
    space = tmp_path / "space.toml"
    space.write_text("[layout]\nranks = [1, 2]\ndefault = { ranks = 1 }\n")
    before = {name: digest(tmp_path / name) for name in files(tmp_path)}
    proc = hympi("tune", "run", str(program), "--space", str(space), "--db", str(tmp_path / "data.txt"), "--",
                 str(tmp_path / "data.txt"))
    assert_refused(proc, f"--db {tmp_path / 'data.txt'} is the argument 1 input", "never overwrites")
    assert {name: digest(tmp_path / name) for name in files(tmp_path)} == before
