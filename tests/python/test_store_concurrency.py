"""Issue 30 B.5: processes that open one new database at the same moment all end with the current schema; none
dies in the migration another one is applying (each migration step re-reads the version under the write lock)."""

from __future__ import annotations

import multiprocessing
import sqlite3
import traceback
from multiprocessing.synchronize import Barrier
from pathlib import Path

from hympi.store import SCHEMA_VERSION, Store, schema
from olddb import store_at

# Every try starts PROCESSES openers at one barrier; before the fix 3 of 4 tries of two sweeps failed, so TRIES
# tries make a pass by luck all but impossible.
PROCESSES = 3
TRIES = 12


def _open(path: str, barrier: Barrier, errors: multiprocessing.Queue) -> None:
    """Waits for the others, opens the database (creating and migrating it) and reports any exception."""
    try:
        barrier.wait(timeout=30)
        with Store.open(path) as store:
            store.ensure_machine("host", "topo", "mpi", "cc", {})
    except BaseException:  # noqa: BLE001 - reported to the parent, which fails the test with it
        errors.put(traceback.format_exc(limit=3))


def _race(path: Path) -> list[str]:
    """Opens `path` from PROCESSES processes released together; returns their tracebacks."""
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(PROCESSES)
    errors: multiprocessing.Queue = ctx.Queue()
    procs = [ctx.Process(target=_open, args=(str(path), barrier, errors)) for _ in range(PROCESSES)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout=120)
    found = []
    while not errors.empty():
        found.append(errors.get(timeout=5))
    assert all(proc.exitcode == 0 for proc in procs), [proc.exitcode for proc in procs]
    return found


def test_processes_creating_one_database_at_once_all_succeed(tmp_path: Path):
    for attempt in range(TRIES):
        path = tmp_path / f"race-{attempt}.db"
        errors = _race(path)
        assert errors == [], f"try {attempt}: {errors[0]}"
        with Store.open(path, create=False) as store:
            versions = [r[0] for r in store.conn.execute("SELECT version FROM schema_version ORDER BY version")]
            assert versions == list(range(1, SCHEMA_VERSION + 1))  # every step once
            assert len(store.conn.execute("SELECT id FROM machines").fetchall()) == 1


def test_processes_upgrading_one_old_database_at_once_all_succeed(tmp_path: Path):
    for attempt in range(TRIES // 2):
        path = tmp_path / f"old-{attempt}.db"
        with store_at(path, 1):
            pass
        errors = _race(path)
        assert errors == [], f"try {attempt}: {errors[0]}"
        conn = sqlite3.connect(path)
        versions = [r[0] for r in conn.execute("SELECT version FROM schema_version ORDER BY version")]
        conn.close()
        assert versions == list(range(1, SCHEMA_VERSION + 1))


def test_a_step_applied_meanwhile_is_skipped_not_repeated(tmp_path: Path):
    """Deterministic: the version this process read before (0) is stale by the time it migrates."""
    path = tmp_path / "r.db"
    Store.open(path).close()  # another process migrated it completely
    conn = sqlite3.connect(path, isolation_level=None)
    assert schema.migrate(conn, str(path), 0, "now") == SCHEMA_VERSION
    assert conn.execute("SELECT COUNT(*) FROM schema_version").fetchone()[0] == SCHEMA_VERSION
    conn.close()
