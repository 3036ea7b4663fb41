"""A results database damaged on disk (cut short, bytes overwritten, a table dropped, a JSON column that is not the
JSON hympi wrote) is bad input: every command that opens it says '<db> is damaged (why)' in one line, exit 2, and
leaves the file as it was (a sweep writes nothing into it). Was: an internal error naming DatabaseError, and a sweep
that recorded into the file before it failed."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from conftest import hympi
from hympi.store import Run, Store
from refusals import assert_refused, digest


def good_db(path: Path) -> Path:
    """A results database with one sweep of one run, padded to several pages (so that damage can hit one)."""
    with Store.open(path) as store:
        machine = store.ensure_machine("h", "t", "m", "c", {"pad": "x" * 20000})
        sweep = store.create_sweep(machine.id, "rb3d", {"app": "rb3d"}, 1)
        store.add_run(Run(sweep_id=sweep.id, app="rb3d", ranks=1, threads=1, bind="core", dist="compact", repeat=1,
                          app_args=(), env=(("A", "1"),), command=("rb3d",), status="ok", returncode=0, wall_s=1.0,
                          record={"rate": 1.0}))
    return path


def sql(path: Path, statement: str) -> None:
    """Runs one statement on the file, outside hympi."""
    conn = sqlite3.connect(path)
    conn.execute(statement)
    conn.commit()
    conn.close()


def damage(path: Path, kind: str) -> str:
    """Damages the database at `path` in one way; returns the words its refusal must hold."""
    if kind == "truncated":
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
        return "database disk image is malformed"
    if kind == "overwritten":
        data = bytearray(path.read_bytes())
        for page in range(1, len(data) // 4096):  # every page but the header's, from its start
            data[page * 4096: page * 4096 + 64] = b"X" * 64
        path.write_bytes(bytes(data))
        return "is damaged ("
    if kind == "no-runs":
        sql(path, "DROP TABLE runs")
        return "its table runs is missing"
    statement, words = {
        "params": ("UPDATE sweeps SET params_json = '{bad'", "sweeps.params_json holds '{bad', which is not JSON"),
        "result": ("UPDATE runs SET result_json = 'nope'", "runs.result_json holds 'nope', which is not JSON"),
        "env": ("UPDATE runs SET env_json = '5'", "runs.env_json holds '5', not a JSON object"),
    }[kind]
    sql(path, statement)
    return words


KINDS = ["truncated", "overwritten", "no-runs", "params", "result", "env"]
COMMANDS = {
    "export": lambda db, tmp: ["export", "--db", str(db)],
    "report": lambda db, tmp: ["report", "--db", str(db), "--out", str(tmp / "report")],
    "tune best": lambda db, tmp: ["tune", "best", "--db", str(db)],
    "sweep": lambda db, tmp: ["sweep", "/bin/true", "--db", str(db)],
}


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("kind", KINDS)
def test_a_damaged_database_is_named_and_left_alone(kind, command, tmp_path):
    db = good_db(tmp_path / "r.db")
    words = damage(db, kind)
    before = digest(db)
    proc = hympi(*COMMANDS[command](db, tmp_path))
    assert_refused(proc, f"{db} is damaged (", words)
    assert digest(db) == before
    assert not (tmp_path / "report").exists()


def test_an_intact_database_still_opens(tmp_path):
    db = good_db(tmp_path / "r.db")
    proc = hympi("export", "--db", str(db))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("run_id,")
