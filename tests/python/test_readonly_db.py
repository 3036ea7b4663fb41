"""Issue 30 B.9: the commands that only read the results database (report, export, tune best) open it read-only
(SQLite mode=ro): a file given as --db that is not a hympi database (an empty one included) is refused, one line
and exit 2, and left exactly as it was; a database is never changed by reading it."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess

import pytest

import skips
from conftest import REPO, hympi
from hympi.errors import UsageError
from hympi.store import SCHEMA_VERSION, Store
from olddb import store_at
from refusals import assert_refused, digest, files

READERS = (["report", "--out", "rep"], ["export"], ["export", "--format", "json"], ["tune", "best"])


@pytest.mark.parametrize("command", [*READERS, ["tune", "predict", "rb3d", "--space", "s.toml"]])
@pytest.mark.parametrize("kind", ["empty", "empty-sqlite"])
def test_an_empty_file_is_refused_and_left_empty(command, kind, tmp_path):
    db = tmp_path / "g.db"
    if kind == "empty":
        db.write_bytes(b"")
    else:  # a valid SQLite file without a single table: what the old readers turned into a hympi database too
        sqlite3.connect(db).close()
    # tune predict checks its space file before the database: a real one, so the database is what it refuses.
    (tmp_path / "s.toml").write_text((REPO / "bench/tune/example-space.toml").read_text())
    before, listing = digest(db), files(tmp_path)
    args = [str(tmp_path / a) if a in ("rep", "s.toml") else a for a in command]
    proc = hympi(*args, "--db", str(db))
    assert_refused(proc, str(db), "not a hympi results database")
    assert digest(db) == before
    assert files(tmp_path) == listing  # no -wal, -shm or report directory either


def test_read_refuses_an_empty_file_and_writes_nothing(tmp_path):
    db = tmp_path / "empty.db"
    db.write_bytes(b"")
    with pytest.raises(UsageError, match="is not a hympi results database"):
        Store.read(db)
    assert db.stat().st_size == 0
    with pytest.raises(UsageError, match="is not a hympi results database"):
        Store.open(db, create=False)  # a database that must exist is not created from an empty file either
    assert db.stat().st_size == 0
    with Store.open(db) as created:  # where creating is the point (sweep, study), it still is
        assert created.schema_version() == SCHEMA_VERSION


def test_read_opens_the_database_read_only(tmp_path):
    db = tmp_path / "r.db"
    with Store.open(db) as store:
        store.ensure_machine("h", "t", "m", "c", {})
    before = digest(db)
    with Store.read(db) as store:
        assert [m[0] for m in store.conn.execute("SELECT hostname FROM machines")] == ["h"]
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            store.conn.execute("DELETE FROM machines")
    assert digest(db) == before


def test_read_of_an_older_schema_migrates_it_once(tmp_path):
    db = tmp_path / "old.db"
    with store_at(db, 1):
        pass
    with Store.read(db) as store:  # the readers' queries need the current tables: an old database is ours to upgrade
        assert store.schema_version() == SCHEMA_VERSION
        assert store.sweeps() == []


def test_reading_never_marks_a_stale_sweep(tmp_path):
    """The report says a sweep's process is gone; only the --resume that takes the sweep over records it."""
    db = tmp_path / "r.db"
    with Store.open(db) as store:
        machine = store.ensure_machine("h", "t", "m", "c", {})
        sweep = store.create_sweep(machine.id, "rb3d", {"app": "rb3d"}, 1)
        store.conn.execute("UPDATE sweeps SET owner_pid = 2147483646 WHERE id = ?", (sweep.id,))  # no such process
    before = digest(db)
    proc = hympi("report", "--db", str(db), "--out", str(tmp_path / "rep"))
    assert proc.returncode == 0, proc.stderr
    assert f"sweep {sweep.id} was left running by a process that no longer exists" in proc.stderr
    assert f"--resume {sweep.id}" in proc.stderr
    assert digest(db) == before
    with Store.read(db) as store:
        assert store.sweep(sweep.id).status == "running"
        assert store.stale_sweeps() == [sweep.id]
    # Bad input beside it is one line, the error's (the note waits until the input has passed its checks).
    proc = hympi("report", "--db", str(db), "--sweep", str(sweep.id + 1), "--out", str(tmp_path / "rep2"))
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1 and "error" in proc.stderr, proc.stderr
    assert not (tmp_path / "rep2").exists()


@pytest.fixture
def read_only_copy(tmp_path):  # type: ignore[no-untyped-def]
    """A results database in WAL mode (as hympi leaves every one) seen through a read-only bind mount of its
    directory, unmounted after; skipped where mounting is not allowed (failed under CI: `make test` runs as root).
    Root may write into any directory but not into a read-only mount, so this holds for root too."""
    source = tmp_path / "source"
    source.mkdir()
    with Store.open(source / "g.db") as store:
        machine = store.ensure_machine("h", "t", "m", "c", {})
        store.create_sweep(machine.id, "rb3d", {"app": "rb3d"}, 1)
    conn = sqlite3.connect(source / "g.db")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()  # the last connection: SQLite removes -wal and -shm, which a reader then cannot create
    assert files(source) == ["g.db"]
    mount = tmp_path / "ro"
    mount.mkdir()
    tool = shutil.which("mount")
    if os.geteuid() != 0 or tool is None:
        skips.skip(skips.Reason.NOT_ROOT, "a read-only bind mount needs root and mount(8)")
    for args in (["--bind", str(source), str(mount)], ["-o", "remount,bind,ro", str(mount)]):
        proc = subprocess.run([tool, *args], capture_output=True, text=True, timeout=30, check=False)
        if proc.returncode != 0:
            subprocess.run(["umount", "--lazy", str(mount)], capture_output=True, timeout=30, check=False)
            skips.skip(skips.Reason.NOT_ROOT, f"cannot make a read-only bind mount here: {proc.stderr.strip()}")
    try:
        yield mount / "g.db"
    finally:
        subprocess.run(["umount", "--lazy", str(mount)], capture_output=True, timeout=30, check=False)


@pytest.mark.parametrize("command", READERS)
def test_a_database_on_a_read_only_mount_is_read(command, read_only_copy, tmp_path):
    args = [str(tmp_path / a) if a == "rep" else a for a in command]
    proc = hympi(*args, "--db", str(read_only_copy))
    if command[:2] == ["tune", "best"]:  # the database holds no tune: said as such, not as a foreign file
        assert_refused(proc, f"no tune in {read_only_copy}")
        return
    assert proc.returncode == 0, proc.stderr
    assert files(read_only_copy.parent) == ["g.db"]
