"""An output hympi writes by rename (a temporary file renamed onto the name) is refused, exit 2 and one line naming
the path and what it is, when the name is a device, a FIFO or a socket (or a symbolic link to one): the rename would
put a plain file in its place (was: /dev/null's twin and a FIFO replaced). A link to a regular file is written
through (the link stays, test_output_files.py)."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest

import skips
from conftest import hympi
from fakeapps import fake_bin_dir
from hympi.store import Store
from refusals import assert_refused, files


def results_db(path: Path) -> Path:
    """A results database with one sweep and no runs."""
    with Store.open(path) as store:
        machine = store.ensure_machine("h", "t", "m", "c", {})
        store.create_sweep(machine.id, "rb3d", {"app": "rb3d"}, 1)
    return path


def special(kind: str, path: Path) -> tuple[Path, str]:
    """A file of `kind` at `path` (a link: at path, to a null device beside it) and the words naming what it is."""
    if kind == "fifo":
        os.mkfifo(path)
        return path, "is a FIFO"
    if kind == "socket":
        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind(str(path))
        return path, "is a socket"
    device = path if kind == "device" else path.with_name(path.name + ".null")
    try:
        os.mknod(device, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # /dev/null's numbers, in our own directory
    except PermissionError:
        skips.skip(skips.Reason.NOT_ROOT, "making a device node needs root")
    if kind == "device":
        return path, "is a device"
    path.symlink_to(device.name)
    return path, f"is a symbolic link to {device}, which is a device"


def assert_untouched(path: Path, kind: str) -> None:
    """`path` is still a file of `kind`."""
    mode = os.lstat(path).st_mode
    expected = {"fifo": stat.S_ISFIFO, "socket": stat.S_ISSOCK, "device": stat.S_ISCHR, "link": stat.S_ISLNK}[kind]
    assert expected(mode), oct(mode)


KINDS = ["device", "fifo", "socket", "link"]


@pytest.mark.parametrize("kind", KINDS)
def test_export_output_that_is_no_regular_file_is_refused(kind, tmp_path):
    db = results_db(tmp_path / "g.db")
    out, words = special(kind, tmp_path / "out")
    listing = files(tmp_path)
    proc = hympi("export", "--db", str(db), "-o", str(out))
    assert_refused(proc, f"--output {out} {words}, not a file an output may replace")
    assert_untouched(out, kind)
    assert files(tmp_path) == listing


@pytest.mark.parametrize("kind", KINDS)
def test_place_out_that_is_no_regular_file_is_refused(kind, tmp_path):
    matrix = tmp_path / "m.txt"
    matrix.write_text("0 1\n1 0\n")
    out, words = special(kind, tmp_path / "out")
    listing = files(tmp_path)
    proc = hympi("place", "--matrix", str(matrix), "--topology", "synthetic:pack:1 core:2 pu:1", "--out", str(out))
    assert_refused(proc, f"--out {out} {words}")
    assert_untouched(out, kind)
    assert files(tmp_path) == listing


def test_place_hydra_twin_that_is_a_fifo_is_refused(tmp_path):
    matrix = tmp_path / "m.txt"
    matrix.write_text("0 1\n1 0\n")
    os.mkfifo(tmp_path / "r.hydra")
    proc = hympi("place", "--matrix", str(matrix), "--topology", "synthetic:pack:1 core:2 pu:1",
                 "--out", str(tmp_path / "r"))
    assert_refused(proc, f"{tmp_path / 'r.hydra'} is a FIFO")
    assert files(tmp_path) == ["m.txt", "r.hydra"]


@pytest.mark.parametrize("kind", KINDS)
def test_profile_out_that_is_no_regular_file_is_refused_before_the_run(kind, tmp_path):
    out, words = special(kind, tmp_path / "out")
    marker = tmp_path / "ran"
    proc = hympi("profile", "--out", str(out), "--", "/bin/touch", str(marker))
    assert_refused(proc, f"--out {out} {words}")
    assert_untouched(out, kind)
    assert not marker.exists()


@pytest.mark.parametrize("kind", KINDS)
def test_sbatch_script_that_is_no_regular_file_is_refused(kind, tmp_path):
    env = fake_bin_dir(tmp_path)
    env["SLURM_JOB_ID"] = ""  # outside an allocation: the sweep writes an sbatch script
    work = tmp_path / "work"
    work.mkdir()
    out, words = special(kind, work / "job.sbatch")
    listing = files(work)
    proc = hympi("sweep", "rb3d", "--launcher", "slurm", "--sbatch", str(out), "--db", str(work / "r.db"), env=env)
    assert_refused(proc, f"--sbatch {out} {words}")
    assert_untouched(out, kind)
    assert files(work) == listing


def test_a_link_to_a_regular_file_is_still_written_through(tmp_path):
    db = results_db(tmp_path / "g.db")
    real = tmp_path / "real.csv"
    real.write_text("old\n")
    (tmp_path / "link.csv").symlink_to(real.name)
    proc = hympi("export", "--db", str(db), "-o", str(tmp_path / "link.csv"))
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "link.csv").is_symlink() and real.read_text().startswith("run_id,")
