"""The results store: one SQLite file (WAL mode) holding machines, sweeps, studies and every run."""

from __future__ import annotations

import functools
import json
import os
import socket
import sqlite3
import time
import types
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from hympi.busy.accounting import Interference
from hympi.errors import HympiFatal, UsageError
from hympi.jsontypes import JsonObject
from hympi.outputs import write_problem
from hympi.store.owner import owner_alive, process_start
from hympi.store.schema import SCHEMA_VERSION, current_version, migrate
from hympi.textfile import file_problem

DEFAULT_DB = "hympi-results.db"
# How long a connection waits for another process's write lock (a sweep committing a run, a migration) before it
# gives up with "database is locked".
BUSY_TIMEOUT_S = 30.0
RUN_STATUSES = ("ok", "failed", "timeout", "unverified")
# A launch the batch system ended (Slurm's CANCELLED), or that hympi's own stop killed (Ctrl-C, SIGTERM): kept as an
# attempt only, so the item stays to be run again.
ATTEMPT_STATUSES = (*RUN_STATUSES, "cancelled")
# The memory policy of a run recorded before runs had one (and of a run that sets none): first touch.
DEFAULT_MEMBIND = "none"
TUNE_STATUSES = ("running", "interrupted", "finished")
# The repeat number of a warm-up run: recorded like any run, never counted in a statistic.
WARMUP_REPEAT = 0
# What identifies a sweep item: (ranks, threads, bind, repeat, membind, item arguments).
ItemKey = tuple[int, int, str, int, str, tuple[str, ...]]


def now_utc() -> str:
    """The current time as an ISO 8601 UTC string (seconds)."""
    return datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def _of_sweeps(sweep_ids: list[int] | None) -> tuple[str, list[int]]:
    """The WHERE clause (and its parameters) that keeps the rows of the given sweeps; none for None (every row)."""
    if sweep_ids is None:
        return "", []
    return f" WHERE sweep_id IN ({', '.join('?' * len(sweep_ids))})", list(sweep_ids)


def params_key(params: JsonObject) -> str:
    """Canonical text of a sweep's parameters: equal parameters give equal keys."""
    return json.dumps(params, sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class MachineRecord:
    """Where runs happened, as stored (a row of the machines table): host, topology, MPI library and compiler."""

    id: int
    hostname: str
    topology_hash: str
    mpi_library: str
    compiler: str
    summary: JsonObject = field(hash=False, compare=False)


@dataclass(frozen=True)
class Sweep:
    """One sweep: an app, its layouts x repeats, and whether it finished."""

    id: int
    machine_id: int
    app: str
    params: JsonObject = field(hash=False, compare=False)
    total: int = 0
    status: str = "running"
    created_at: str = ""
    finished_at: str | None = None
    study_id: int | None = None
    owner_host: str | None = None
    owner_pid: int | None = None
    owner_start: str | None = None
    note: str | None = None
    tune_id: int | None = None


@dataclass(frozen=True)
class TuneRecord:
    """One `hympi tune run`: the program it tunes, its strategy, search space and parameters, and its state."""

    id: int
    machine_id: int
    app: str
    program: str
    strategy: str
    space: JsonObject = field(hash=False, compare=False)
    params: JsonObject = field(hash=False, compare=False)
    status: str = "running"
    note: str | None = None
    created_at: str = ""
    finished_at: str | None = None
    owner_host: str | None = None
    owner_pid: int | None = None
    owner_start: str | None = None


@dataclass(frozen=True)
class ProfileRecord:
    """One program's stored profile (a row of the profiles table): the layout it ran at, the predictor's features
    and the profiler's JSON."""

    id: int
    machine_id: int
    program: str
    app: str
    ranks: int
    threads: int
    features: dict[str, float] = field(hash=False, compare=False)
    profile: JsonObject = field(hash=False, compare=False)
    created_at: str = ""


@dataclass(frozen=True)
class Study:
    """One `hympi study`: the sweeps it ran and the notes it left (apps skipped and why)."""

    id: int
    machine_id: int
    quick: bool
    out_dir: str
    notes: tuple[str, ...]
    created_at: str
    finished_at: str | None


@dataclass(frozen=True)
class Run:
    """One launch of one layout: its configuration (memory policy `membind` included), status and the app's
    HYMPI_RESULT record. `item_args` are the item's own app arguments (a two-level sweep's --inner/--n2), already
    part of `app_args` (everything the app got)."""

    sweep_id: int
    app: str
    ranks: int
    threads: int
    bind: str
    dist: str
    repeat: int
    app_args: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    command: tuple[str, ...]
    status: str
    returncode: int | None
    wall_s: float
    record: JsonObject | None = field(default=None, hash=False, compare=False)
    stderr_tail: str = ""
    started_at: str = ""
    finished_at: str = ""
    id: int | None = None
    mpi_params: tuple[tuple[str, str], ...] = ()
    # The step of the checkpoint this run restarted from (its io.restart_step), None for a run from the start.
    restarted_from_step: int | None = None
    membind: str = DEFAULT_MEMBIND
    item_args: tuple[str, ...] = ()
    # Other work on its PUs while it ran (None: not measured), and whether that exceeded the sweep's threshold.
    interference: Interference | None = None
    disturbed: bool = False

    def key(self) -> ItemKey:
        """The sweep item this run is: (ranks, threads, bind, repeat, membind, item_args)."""
        return (self.ranks, self.threads, self.bind, self.repeat, self.membind, self.item_args)

    def value(self, name: str) -> float | None:
        """A numeric field of the result record (rate, time_s, comm_s, ...), None if absent."""
        if self.record is None:
            return None
        value = self.record.get(name)
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    def read_back(self) -> dict[str, str | None] | None:
        """The MPI control variables the app read back through MPI_T (name -> value, None where the library has no
        such cvar), or None when the run reported none (no record, or an app built without the read-back)."""
        if self.record is None or not isinstance(self.record.get("mpi_cvars"), dict):
            return None
        return {str(k): (None if v is None else str(v)) for k, v in self.record["mpi_cvars"].items()}

    @property
    def problem(self) -> str:
        """The problem the app reported (e.g. '64^3'), or '' when the run produced no record."""
        return str(self.record.get("problem", "")) if self.record else ""


@dataclass(frozen=True)
class Attempt:
    """A launch of a sweep item that is not its run: an earlier one a restart from its checkpoint replaced in the
    runs table (a timeout or a failure), or one the batch system cancelled or hympi's stop killed (status
    'cancelled'; the item has no run until it runs again); kept so the history of the item stays visible."""

    sweep_id: int
    ranks: int
    threads: int
    bind: str
    repeat: int
    command: tuple[str, ...]
    status: str
    returncode: int | None
    wall_s: float
    restarted_from_step: int | None
    record: JsonObject | None = field(default=None, hash=False, compare=False)
    stderr_tail: str = ""
    started_at: str = ""
    finished_at: str = ""
    membind: str = DEFAULT_MEMBIND
    item_args: tuple[str, ...] = ()

    def key(self) -> ItemKey:
        """The sweep item it was: (ranks, threads, bind, repeat, membind, item_args)."""
        return (self.ranks, self.threads, self.bind, self.repeat, self.membind, self.item_args)


# SQLite's primary result codes that mean the database's file or its disk failed a write, not the statement: a full
# disk, an I/O error, a read-only file or mount, a lock held past the busy timeout, a damaged file. Any other
# OperationalError of a write (SQLITE_ERROR: a missing table, a syntax error) is a fault of hympi's and stays one.
_STORAGE_FAULTS = frozenset({
    sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED,
    sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM, sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB,
    sqlite3.SQLITE_PROTOCOL, sqlite3.SQLITE_NOLFS,
})

# SQLite's primary result codes that mean the file is not the database it was: its pages damaged or cut short.
_DAMAGE_CODES = frozenset({sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB})
# OperationalError messages that, in a database hympi made and migrated, mean a table or column was taken out of it.
_MISSING_PARTS = ("no such table", "no such column")


class _Damage(Exception):
    """A stored value that is not what hympi writes there (text that is not JSON, or JSON of another shape)."""


# Every JSON column of the current schema and the kind of value hympi writes there (NULL or '' where a column may
# hold none): what _check_intact looks for in the whole file, and _decoded in each value it reads.
_JSON_COLUMNS: dict[str, type[Any]] = {
    "machines.summary_json": dict, "sweeps.params_json": dict, "runs.app_args_json": list, "runs.env_json": dict,
    "runs.command_json": list, "runs.result_json": dict, "runs.item_args_json": list,
    "run_attempts.command_json": list, "run_attempts.result_json": dict, "run_attempts.item_args_json": list,
    "tunes.space_json": dict, "tunes.params_json": dict, "profiles.features_json": dict,
    "profiles.profile_json": dict, "studies.notes_json": list,
}


@functools.cache
def _schema_tables() -> frozenset[str]:
    """The tables of a database of the current schema (the migrations applied to an empty one in memory)."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    try:
        migrate(conn, ":memory:", 0, now_utc())
        return frozenset(row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"))
    finally:
        conn.close()


def _json_damage(conn: sqlite3.Connection) -> str | None:
    """The first JSON column (_JSON_COLUMNS) holding a value that is not JSON of its kind, in words; None when all
    are whole. SQLite's JSON functions look at every row without Python decoding each."""
    for column, kind in _JSON_COLUMNS.items():
        table, name = column.split(".")
        shape = "object" if kind is dict else "array"
        row = conn.execute(f"SELECT {name} FROM {table} WHERE {name} IS NOT NULL AND {name} != '' AND "
                           f"(NOT json_valid({name}) OR json_type({name}) != '{shape}') LIMIT 1").fetchone()
        if row is not None:
            try:
                _decoded(row[0], kind, column)
            except _Damage as exc:
                return str(exc)
            return f"{column} holds {str(row[0])[:40]!r}, not a JSON {shape}"
    return None


def _decoded(text: str, kind: type[Any], column: str) -> Any:
    """The JSON value of `column` ('runs.env_json') from its stored `text`, which must be a `kind` (dict or list);
    _Damage naming the column otherwise."""
    try:
        value = json.loads(text)
    except (TypeError, ValueError):  # JSONDecodeError is a ValueError; None or bytes a TypeError
        raise _Damage(f"{column} holds {str(text)[:40]!r}, which is not JSON") from None
    if not isinstance(value, kind):
        raise _Damage(f"{column} holds {str(text)[:40]!r}, not a JSON {'object' if kind is dict else 'array'}")
    return value


def _is_damage(exc: sqlite3.DatabaseError) -> bool:
    """Whether SQLite's error says the file is damaged (see _DAMAGE_CODES, _MISSING_PARTS) rather than busy or full."""
    code = getattr(exc, "sqlite_errorcode", None)
    return (code is not None and code & 0xFF in _DAMAGE_CODES) or str(exc).startswith(_MISSING_PARTS)


def _damaged(path: Path, why: object) -> UsageError:
    """The one line for a results database that cannot be read as hympi wrote it: bad input, the file left alone. A
    file that does not even begin as SQLite's do (a text file named by mistake) is no database, not a damaged one."""
    if not is_sqlite_file(path):
        return UsageError(f"{path} is not a hympi results database ({why})")
    return UsageError(f"{path} is damaged ({why})")


def _check_intact(conn: sqlite3.Connection, db: Path) -> None:
    """UsageError (_damaged) unless SQLite's quick_check finds the file's pages and indexes whole, and a file of the
    current schema has all its tables and JSON in every JSON column: a damaged file is refused before anything
    reads a wrong value from it, or writes into it. It reads every page once (milliseconds for a results database
    of thousands of runs)."""
    try:
        problems = [row[0] for row in conn.execute("PRAGMA quick_check(1)")]
        if problems != ["ok"]:
            raise _damaged(db, f"database disk image is malformed: {'; '.join(map(str, problems))}")
        if current_version(conn, str(db)) < SCHEMA_VERSION:
            return  # an older schema: its migration checks what it changes
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if missing := sorted(_schema_tables() - tables):
            raise _damaged(db, f"its table {missing[0]} is missing")
        if (why := _json_damage(conn)) is not None:
            raise _damaged(db, why)
    except sqlite3.DatabaseError as exc:
        if not _is_damage(exc):
            raise
        raise _damaged(db, exc) from None


def _version_of(conn: sqlite3.Connection, db: Path) -> int:
    """current_version of the file just opened, its damage (pages SQLite finds malformed while it reads the schema)
    named as such."""
    try:
        return current_version(conn, str(db))
    except sqlite3.DatabaseError as exc:
        if not _is_damage(exc):
            raise
        raise _damaged(db, exc) from None


def _naming_damage(method: Callable[..., Any]) -> Callable[..., Any]:
    """`method` of Store with damage found while it reads (a JSON column that is not JSON, a table dropped, a page
    quick_check could not see wrong) raised as _damaged naming the store's file, not as hympi's internal error."""
    @functools.wraps(method)
    def checked(self: Store, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except _Damage as exc:
            raise _damaged(self.path, exc) from None
        except sqlite3.DatabaseError as exc:
            if not _is_damage(exc):
                raise
            raise _damaged(self.path, exc) from None
    return checked


# Why an existing file without any table is refused where a database must already exist.
_EMPTY = "{db} is not a hympi results database (it is empty; 'hympi sweep' or 'hympi study' creates one)"


# The first bytes of every SQLite database file (sqlite.org/fileformat.html, "The Database Header").
SQLITE_MAGIC = b"SQLite format 3\x00"


def is_sqlite_file(path: str | os.PathLike[str]) -> bool:
    """Whether `path` is a regular file that begins as an SQLite database does (False when it cannot be read)."""
    try:
        if file_problem(path) is not None:
            return False
        with open(path, "rb") as handle:
            return handle.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC
    except OSError:
        return False


def check_db_path(path: str | os.PathLike[str], create: bool = True) -> None:
    """UsageError naming the path unless it can be opened as a database: an existing readable file, or (with
    `create`) a name in a writable directory. Store.open and Store.read check it before SQLite touches the path; a
    command that must refuse a bad database before it writes anything else (hympi study's report directory) calls
    it first."""
    db = Path(path)
    try:
        if db.is_dir():
            raise UsageError(f"database path {db} is a directory")
        if not db.exists():
            if not create:
                raise UsageError(f"no results database at {db} (run 'hympi sweep' or 'hympi study' first)")
            parent = db.parent if str(db.parent) else Path(".")
            if not parent.is_dir():
                raise UsageError(f"cannot create database {db}: directory {parent} is missing")
            if (why := write_problem(parent)) is not None:
                raise UsageError(f"cannot create database {db}: directory {parent} is not writable ({why})")
        elif (problem := file_problem(db)) is not None:  # a device, a FIFO: SQLite's errors would say nothing
            raise UsageError(f"database path {db} {problem}")
        elif not os.access(db, os.R_OK):
            raise UsageError(f"cannot read database {db}")
    except OSError as exc:  # a name the system refuses to look up (too long, a loop of links)
        raise UsageError(f"cannot open database {str(db)[:80]}: {exc.strerror or exc}") from None


def _connect_read_only(db: Path) -> sqlite3.Connection:
    """A connection in SQLite's read-only mode (no file given by mistake is turned into a database); UsageError
    when SQLite cannot open it. A database in WAL mode needs its -shm file even to be read, which a read-only mount
    (or a directory hympi cannot write) does not let SQLite create: there the file is opened immutable, as SQLite's
    documentation says for read-only media (sqlite.org/wal.html, "Read-Only Databases"; nothing can change it)."""
    uri = db.absolute().as_uri()
    try:
        conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, isolation_level=None, timeout=BUSY_TIMEOUT_S)
        try:
            conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()  # SQLite opens the file at its first read
        except sqlite3.DatabaseError as exc:
            conn.close()
            if (not isinstance(exc, sqlite3.OperationalError) or exc.sqlite_errorcode & 0xFF != sqlite3.SQLITE_CANTOPEN
                    or write_problem(db.absolute().parent) is None):
                raise
            conn = sqlite3.connect(f"{uri}?mode=ro&immutable=1", uri=True, isolation_level=None,
                                   timeout=BUSY_TIMEOUT_S)
        return conn
    except sqlite3.Error as exc:
        if isinstance(exc, sqlite3.DatabaseError) and _is_damage(exc):
            raise _damaged(db, exc) from None
        raise UsageError(f"cannot open database {db}: {exc}") from None


def check_database(path: str | os.PathLike[str]) -> None:
    """check_db_path, and for an existing file that it is a hympi results database (or empty, so Store.open makes it
    one), reading only: for a command that must refuse a foreign file before it writes anything else (hympi
    study's report directory). UsageError naming the path otherwise."""
    db = Path(path)
    check_db_path(db)
    if not db.exists() or db.stat().st_size == 0:
        return
    conn = _connect_read_only(db)
    try:
        if _version_of(conn, db) > 0:
            _check_intact(conn, db)
    finally:
        conn.close()


def _remove_database_files(db: Path) -> None:
    """Removes a database file and SQLite's -wal and -shm beside it (those that are there)."""
    for path in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
        path.unlink(missing_ok=True)


def _use_wal(conn: sqlite3.Connection) -> None:
    """Switches the database to WAL mode (a no-op once it is). The switch needs the file to itself, and SQLite
    reports "database is locked" at once, without waiting, while another process holds it (two sweeps creating one
    database): so it is retried, for up to BUSY_TIMEOUT_S like any other lock."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


class Store:
    """An open results database; every write is its own transaction."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self.conn = conn
        self.path = path

    @classmethod
    def open(cls, path: str | os.PathLike[str], create: bool = True) -> Store:
        """Opens (and if `create`, creates) the database at `path` for writing, migrated to the current schema;
        raises UsageError if it is not usable."""
        db = Path(path)
        check_db_path(db, create)
        created = not db.exists()
        try:
            conn = sqlite3.connect(str(db), isolation_level=None, timeout=BUSY_TIMEOUT_S)
        except sqlite3.Error as exc:
            raise UsageError(f"cannot open database {db}: {exc}") from None
        try:
            version = _version_of(conn, db)  # reads only: a foreign or newer file stays untouched
            if version == 0 and not create:
                raise UsageError(_EMPTY.format(db=db))  # a file named by mistake is not made a database
            if version > 0:
                _check_intact(conn, db)  # before the first write: a damaged file is not written into
            if db.exists() and version > 0 and not os.access(db, os.W_OK):
                raise UsageError(f"database {db} is not writable")
            try:
                _use_wal(conn)
                conn.execute("PRAGMA foreign_keys = ON")
                migrate(conn, str(db), version, now_utc())
            except sqlite3.OperationalError as exc:
                if version > 0:  # ours, failing mid-migration (a full disk): no bad input; each step is atomic
                    raise HympiFatal(f"results database {db} cannot be migrated to schema {SCHEMA_VERSION} "
                                     f"({exc}); it keeps the schema it had") from None
                # An empty file SQLite cannot write beside (its journal) or into: /proc's, a read-only mount's; or a
                # disk too full for the schema, where the files this call created go again (a lock held by another
                # process creating the same database is no such failure: its files are that process's).
                if created and exc.sqlite_errorname not in ("SQLITE_BUSY", "SQLITE_LOCKED"):
                    conn.close()
                    _remove_database_files(db)
                raise UsageError(f"cannot create a database at {db}: {exc}") from None
        except BaseException:
            conn.close()
            raise
        return cls(conn, db)

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> Store:
        """Opens an existing results database for the commands that only read it (report, export, tune best):
        SQLite's read-only mode, so no file given by mistake (an empty one included) is turned into a database.
        UsageError for a missing file or one that is not a hympi results database. A database of an older
        schema is the exception: it is ours, and the readers need the current tables, so it is migrated first."""
        db = Path(path)
        check_db_path(db, create=False)
        conn = _connect_read_only(db)
        try:
            version = _version_of(conn, db)
            if version == 0:
                raise UsageError(_EMPTY.format(db=db))
            _check_intact(conn, db)
        except BaseException:
            conn.close()
            raise
        if version < SCHEMA_VERSION:
            conn.close()
            return cls.open(db, create=False)
        return cls(conn, db)

    def close(self) -> None:
        """Closes the connection (WAL content is checkpointed by SQLite)."""
        self.conn.close()

    def __enter__(self) -> Store:
        """The store itself, closed on leaving the block."""
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        """Closes the store."""
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE ... COMMIT, rolled back on any exception. Every write of the store is one: a database
        that cannot take it (_STORAGE_FAULTS: its disk full, a lock held past BUSY_TIMEOUT_S) is HympiFatal naming
        it, and what it recorded before stays whole, as SQLite commits a transaction entirely or not at all."""
        try:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.conn
            except BaseException:
                if self.conn.in_transaction:  # SQLite ends it itself on some errors (a full disk among them)
                    self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")
        except sqlite3.OperationalError as exc:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            if exc.sqlite_errorcode & 0xFF not in _STORAGE_FAULTS:  # extended codes keep the primary in the low byte
                raise
            raise HympiFatal(f"results database {self.path} cannot be written ({exc}); what it recorded before "
                             "is kept") from None

    def schema_version(self) -> int:
        """The highest migration applied to this database."""
        return int(self.conn.execute("SELECT MAX(version) FROM schema_version").fetchone()[0])

    # machines -----------------------------------------------------------------------------------------------
    def ensure_machine(self, hostname: str, topology_hash: str, mpi_library: str, compiler: str,
                       summary: JsonObject) -> MachineRecord:
        """The machine row for these properties, inserted if new."""
        with self.transaction() as conn:
            conn.execute("INSERT OR IGNORE INTO machines (hostname, topology_hash, mpi_library, compiler, summary_json,"
                         " created_at) VALUES (?, ?, ?, ?, ?, ?)",
                         (hostname, topology_hash, mpi_library, compiler, json.dumps(summary, sort_keys=True),
                          now_utc()))
        row = self.conn.execute("SELECT id FROM machines WHERE hostname = ? AND topology_hash = ? AND mpi_library = ?"
                                " AND compiler = ?", (hostname, topology_hash, mpi_library, compiler)).fetchone()
        return self.machine(int(row[0]))

    def machine(self, machine_id: int) -> MachineRecord:
        """The machine with this id."""
        row = self._row("machines", "id, hostname, topology_hash, mpi_library, compiler, summary_json", "machine",
                        machine_id)
        return MachineRecord(row[0], row[1], row[2], row[3], row[4], _decoded(row[5], dict, "machines.summary_json"))

    # rows by id: sweeps and tunes are owned while they run -------------------------------------------------------
    def _row(self, table: str, columns: str, what: str, row_id: int) -> tuple[Any, ...]:
        """The `columns` of the row of `table` with this id; UsageError naming `what` (e.g. 'sweep') if none."""
        row: tuple[Any, ...] | None = self.conn.execute(f"SELECT {columns} FROM {table} WHERE id = ?",
                                                        (row_id,)).fetchone()
        if row is None:
            raise UsageError(f"no {what} {row_id} in {self.path}")
        return row

    def _set(self, table: str, row_id: int, **values: str | int | None) -> None:
        """Sets columns (named by the keywords) of the row of `table` with this id."""
        assignments = ", ".join(f"{column} = ?" for column in values)
        with self.transaction() as conn:
            conn.execute(f"UPDATE {table} SET {assignments} WHERE id = ?", (*values.values(), row_id))

    def _claim(self, table: str, row_id: int) -> None:
        """Marks a sweep or tune running and owned by this process (so a later reader can tell when it died)."""
        pid = os.getpid()
        self._set(table, row_id, status="running", finished_at=None, owner_host=socket.gethostname(),
                  owner_pid=pid, owner_start=process_start(pid))

    # sweeps -------------------------------------------------------------------------------------------------
    _SWEEP_COLUMNS = ("id, machine_id, app, params_json, total, status, created_at, finished_at, study_id, "
                      "owner_host, owner_pid, owner_start, note, tune_id")

    @staticmethod
    def _sweep(row: tuple[Any, ...]) -> Sweep:
        """A Sweep from a row of _SWEEP_COLUMNS."""
        return Sweep(row[0], row[1], row[2], _decoded(row[3], dict, "sweeps.params_json"), row[4], row[5], row[6],
                     row[7], row[8], row[9], row[10], row[11], row[12], row[13])

    def create_sweep(self, machine_id: int, app: str, params: JsonObject, total: int,
                     study_id: int | None = None, identity: JsonObject | None = None,
                     tune_id: int | None = None) -> Sweep:
        """Records a new sweep in state 'running', owned by this process; `identity` (default `params`) is what
        --resume matches on; `tune_id` attaches it to a tune (one configuration's measurement)."""
        pid = os.getpid()
        with self.transaction() as conn:
            cur = conn.execute("INSERT INTO sweeps (machine_id, app, params_key, params_json, total, status, "
                               "created_at, study_id, owner_host, owner_pid, owner_start, tune_id) "
                               "VALUES (?, ?, ?, ?, ?, 'running', ?, ?, ?, ?, ?, ?)",
                               (machine_id, app, params_key(identity if identity is not None else params),
                                json.dumps(params, sort_keys=True), total, now_utc(), study_id, socket.gethostname(),
                                pid, process_start(pid), tune_id))
            sweep_id = int(cur.lastrowid or 0)
        return self.sweep(sweep_id)

    def claim_sweep(self, sweep_id: int) -> None:
        """Marks a sweep running and owned by this process (so a later reader can tell when it died)."""
        self._claim("sweeps", sweep_id)

    def stale_sweeps(self) -> list[int]:
        """The ids of 'running' sweeps whose owner process is gone (killed with SIGKILL, a crashed node); reads only."""
        return [s.id for s in self.sweeps() if s.status == "running"
                and not owner_alive(s.owner_host, s.owner_pid, s.owner_start)]

    def mark_stale_interrupted(self) -> list[int]:
        """Marks the stale_sweeps interrupted; returns their ids."""
        stale = self.stale_sweeps()
        for sweep_id in stale:
            with self.transaction() as conn:
                conn.execute("UPDATE sweeps SET status = 'interrupted' WHERE id = ? AND status = 'running'",
                             (sweep_id,))
        return stale

    def set_sweep_note(self, sweep_id: int, note: str) -> None:
        """Records what the sweep decided (e.g. how --repeat auto ended)."""
        self._set("sweeps", sweep_id, note=note)

    def set_sweep_total(self, sweep_id: int, total: int) -> None:
        """Updates the planned number of runs (--repeat auto adds rounds)."""
        self._set("sweeps", sweep_id, total=total)

    def sweep(self, sweep_id: int) -> Sweep:
        """The sweep with this id; UsageError if there is none."""
        return self._sweep(self._row("sweeps", self._SWEEP_COLUMNS, "sweep", sweep_id))

    def sweeps(self) -> list[Sweep]:
        """Every sweep, oldest first."""
        return [self._sweep(r) for r in self.conn.execute(f"SELECT {self._SWEEP_COLUMNS} FROM sweeps ORDER BY id")]

    def latest_unfinished(self, params: JsonObject) -> Sweep | None:
        """The newest sweep with exactly these parameters that has not finished and belongs to no tune, if any."""
        row = self.conn.execute(f"SELECT {self._SWEEP_COLUMNS} FROM sweeps WHERE params_key = ? AND status != "
                                "'finished' AND tune_id IS NULL ORDER BY id DESC LIMIT 1",
                                (params_key(params),)).fetchone()
        return self._sweep(row) if row else None

    def unfinished_of(self, app: str, before: int) -> list[Sweep]:
        """The sweeps of `app` older than sweep `before`, whatever their parameters, that have not finished and
        belong to no tune, newest first (what `--resume` chooses from when no sweep had the parameters given)."""
        return [self._sweep(r) for r in self.conn.execute(
            f"SELECT {self._SWEEP_COLUMNS} FROM sweeps WHERE app = ? AND id < ? AND status != 'finished' AND tune_id "
            "IS NULL ORDER BY id DESC", (app, before))]

    def set_sweep_status(self, sweep_id: int, status: str) -> None:
        """Marks a sweep running, interrupted or finished."""
        self._set("sweeps", sweep_id, status=status, finished_at=now_utc() if status == "finished" else None)

    def attach_sweep(self, sweep_id: int, study_id: int) -> None:
        """Counts a (resumed) sweep as part of a study."""
        self._set("sweeps", sweep_id, study_id=study_id)

    # runs ---------------------------------------------------------------------------------------------------
    def add_run(self, run: Run) -> int:
        """Stores one run in its own transaction; returns its id."""
        if run.status not in RUN_STATUSES:
            raise ValueError(f"run status must be one of {RUN_STATUSES}, got {run.status!r}")
        with self.transaction() as conn:
            return self._insert_run(conn, run)

    def replace_run(self, run: Run) -> int:
        """Stores a run of an item that already has one (a restart from its checkpoint after a timeout or a
        failure): the recorded run moves to run_attempts and `run` takes its place, in one transaction; returns the
        new run's id. Without a recorded run of the item it is add_run."""
        if run.status not in RUN_STATUSES:
            raise ValueError(f"run status must be one of {RUN_STATUSES}, got {run.status!r}")
        with self.transaction() as conn:
            key = (run.sweep_id, run.ranks, run.threads, run.bind, run.membind, json.dumps(list(run.item_args)),
                   run.repeat)
            where = ("sweep_id = ? AND ranks = ? AND threads = ? AND bind = ? AND membind = ? AND item_args_json = ?"
                     " AND repeat = ?")
            row = conn.execute(f"SELECT id FROM runs WHERE {where}", key).fetchone()
            if row is not None:
                conn.execute("INSERT INTO run_attempts (sweep_id, ranks, threads, bind, membind, item_args_json,"
                             " repeat, command_json, status, returncode, wall_s, restarted_from_step, result_json,"
                             " stderr_tail, started_at, finished_at) SELECT sweep_id, ranks, threads, bind, membind,"
                             " item_args_json, repeat, command_json, status, returncode, wall_s, restarted_from_step,"
                             " result_json, stderr_tail, started_at, finished_at FROM runs WHERE id = ?", (row[0],))
                conn.execute("DELETE FROM run_mpi_params WHERE run_id = ?", (row[0],))
                conn.execute("DELETE FROM runs WHERE id = ?", (row[0],))
            return self._insert_run(conn, run)

    def add_attempt(self, run: Run) -> None:
        """Stores a launch of an item as an attempt only (a step Slurm cancelled, a launch hympi's stop killed): the
        item keeps its run, or has none, so resuming the sweep runs it again."""
        if run.status not in ATTEMPT_STATUSES:
            raise ValueError(f"attempt status must be one of {ATTEMPT_STATUSES}, got {run.status!r}")
        with self.transaction() as conn:
            conn.execute("INSERT INTO run_attempts (sweep_id, ranks, threads, bind, membind, item_args_json, repeat,"
                         " command_json, status, returncode, wall_s, restarted_from_step, result_json, stderr_tail,"
                         " started_at, finished_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                         (run.sweep_id, run.ranks, run.threads, run.bind, run.membind,
                          json.dumps(list(run.item_args)), run.repeat, json.dumps(list(run.command)), run.status,
                          run.returncode, run.wall_s, run.restarted_from_step,
                          json.dumps(run.record, sort_keys=True) if run.record is not None else None,
                          run.stderr_tail, run.started_at or now_utc(), run.finished_at or now_utc()))

    @staticmethod
    def _insert_run(conn: sqlite3.Connection, run: Run) -> int:
        """INSERTs `run` and its MPI parameters inside the caller's transaction; returns its id. A column a later
        migration added is named only when the run has a value for it (so older schemas still take plain runs)."""
        columns = ["sweep_id", "app", "problem", "ranks", "threads", "bind", "dist", "repeat", "app_args_json",
                   "env_json", "command_json", "status", "returncode", "wall_s", "rate", "rate_unit", "time_s",
                   "comm_s", "comp_s", "imbalance", "max_rss_mib", "node_rss_mib", "result_json", "stderr_tail",
                   "started_at", "finished_at"]
        values: list[object] = [
            run.sweep_id, run.app, run.problem or None, run.ranks, run.threads, run.bind, run.dist, run.repeat,
            json.dumps(list(run.app_args)), json.dumps(dict(run.env), sort_keys=True), json.dumps(list(run.command)),
            run.status, run.returncode, run.wall_s, run.value("rate"),
            run.record.get("rate_unit") if run.record else None, run.value("time_s"), run.value("comm_s"),
            run.value("comp_s"), run.value("imbalance"), run.value("max_rss_mib"), run.value("node_rss_mib"),
            json.dumps(run.record, sort_keys=True) if run.record is not None else None, run.stderr_tail,
            run.started_at or now_utc(), run.finished_at or now_utc()]
        if run.restarted_from_step is not None:
            columns.append("restarted_from_step")
            values.append(run.restarted_from_step)
        if run.membind != DEFAULT_MEMBIND:
            columns.append("membind")
            values.append(run.membind)
        if run.item_args:
            columns.append("item_args_json")
            values.append(json.dumps(list(run.item_args)))
        if run.interference is not None:
            columns += ["outside_cpu_s", "outside_cores", "steal_s", "disturbed"]
            values += [run.interference.outside_cpu_s, run.interference.outside_cores, run.interference.steal_s,
                       int(run.disturbed)]
        cur = conn.execute(f"INSERT INTO runs ({', '.join(columns)}) VALUES ({', '.join('?' * len(values))})", values)
        run_id = int(cur.lastrowid or 0)
        back = run.read_back() or {}
        if run.mpi_params:
            conn.executemany("INSERT INTO run_mpi_params (run_id, name, value, read_back) VALUES (?, ?, ?, ?)",
                             [(run_id, name, value, back.get(name)) for name, value in run.mpi_params])
        return run_id

    def attempts(self, sweep_ids: list[int] | None = None) -> list[Attempt]:
        """The launches restarts replaced (of the given sweeps, if any), oldest first."""
        sql = ("SELECT sweep_id, ranks, threads, bind, repeat, command_json, status, returncode, wall_s,"
               " restarted_from_step, result_json, stderr_tail, started_at, finished_at, membind, item_args_json"
               " FROM run_attempts")
        where, params = _of_sweeps(sweep_ids)
        return [Attempt(r[0], r[1], r[2], r[3], r[4], tuple(_decoded(r[5], list, "run_attempts.command_json")),
                        r[6], r[7], r[8], r[9], _decoded(r[10], dict, "run_attempts.result_json") if r[10] else None,
                        r[11], r[12], r[13], r[14], tuple(_decoded(r[15], list, "run_attempts.item_args_json")))
                for r in self.conn.execute(sql + where + " ORDER BY id", params)]

    def done_keys(self, sweep_id: int) -> set[ItemKey]:
        """The (ranks, threads, bind, repeat, membind, item_args) items of a sweep that already have a recorded run."""
        rows = self.conn.execute("SELECT ranks, threads, bind, repeat, membind, item_args_json FROM runs "
                                 "WHERE sweep_id = ?", (sweep_id,))
        return {(r[0], r[1], r[2], r[3], r[4], tuple(_decoded(r[5], list, "runs.item_args_json"))) for r in rows}

    def runs(self, sweep_ids: list[int] | None = None, leave_out: Sequence[str] = ()) -> list[Run]:
        """Every run (of the given sweeps, if any), in the order they were recorded; `leave_out`: JSON paths of
        their records not read (iter_runs)."""
        return list(self.iter_runs(sweep_ids, leave_out))

    def iter_runs(self, sweep_ids: list[int] | None = None, leave_out: Sequence[str] = ()) -> Iterator[Run]:
        """runs(), one at a time: what reads every run once (export) holds one decoded record in memory, not all of
        them (a hundred thousand runs of 13 KB records took 3.6 GB as a list). `leave_out` ('$.metrics.x') are
        parts of the records SQLite leaves out before they are decoded: what holds every run reads less."""
        record = f"json_remove(result_json, {', '.join('?' * len(leave_out))})" if leave_out else "result_json"
        sql = ("SELECT sweep_id, app, ranks, threads, bind, dist, repeat, app_args_json, env_json, command_json,"
               f" status, returncode, wall_s, {record}, stderr_tail, started_at, finished_at, id,"
               " restarted_from_step, membind, item_args_json, outside_cpu_s, outside_cores, steal_s, disturbed"
               " FROM runs")
        where, params = _of_sweeps(sweep_ids)
        sql += where
        mpi_sql = "SELECT run_id, name, value FROM run_mpi_params"
        if where:
            mpi_sql += f" WHERE run_id IN (SELECT id FROM runs{where})"
        mpi: dict[int, list[tuple[str, str]]] = {}
        for run_id, name, value in self.conn.execute(mpi_sql + " ORDER BY run_id, name", params):
            mpi.setdefault(run_id, []).append((name, value))
        for r in self.conn.execute(sql + " ORDER BY id", [*leave_out, *params]):
            yield Run(r[0], r[1], r[2], r[3], r[4], r[5], r[6], tuple(_decoded(r[7], list, "runs.app_args_json")),
                      tuple(sorted(_decoded(r[8], dict, "runs.env_json").items())),
                      tuple(_decoded(r[9], list, "runs.command_json")), r[10], r[11], r[12],
                      _decoded(r[13], dict, "runs.result_json") if r[13] else None, r[14], r[15], r[16], r[17],
                      tuple(mpi.get(r[17], ())), r[18], r[19], tuple(_decoded(r[20], list, "runs.item_args_json")),
                      None if r[21] is None else Interference(outside_cpu_s=r[21], outside_cores=r[22],
                                                              steal_s=r[23]),
                      bool(r[24]))

    def run_mpi_params(self, run_id: int) -> list[tuple[str, str, str | None]]:
        """The MPI parameters of one run as stored: (name, value as set, value read back or None), by name."""
        return [(r[0], r[1], r[2]) for r in self.conn.execute(
            "SELECT name, value, read_back FROM run_mpi_params WHERE run_id = ? ORDER BY name", (run_id,))]

    # tunes --------------------------------------------------------------------------------------------------
    _TUNE_COLUMNS = ("id, machine_id, app, program, strategy, space_json, params_json, status, note, created_at, "
                     "finished_at, owner_host, owner_pid, owner_start")

    @staticmethod
    def _tune(row: tuple[Any, ...]) -> TuneRecord:
        """A TuneRecord from a row of _TUNE_COLUMNS."""
        return TuneRecord(row[0], row[1], row[2], row[3], row[4], _decoded(row[5], dict, "tunes.space_json"),
                          _decoded(row[6], dict, "tunes.params_json"), row[7], row[8], row[9], row[10], row[11],
                          row[12], row[13])

    def create_tune(self, machine_id: int, app: str, program: str, strategy: str, space: JsonObject,
                    params: JsonObject, identity: JsonObject | None = None) -> TuneRecord:
        """Records a new tune in state 'running', owned by this process; `identity` (default `params`) is what
        --resume matches on."""
        pid = os.getpid()
        with self.transaction() as conn:
            cur = conn.execute("INSERT INTO tunes (machine_id, app, program, strategy, space_json, params_key, "
                               "params_json, status, created_at, owner_host, owner_pid, owner_start) "
                               "VALUES (?, ?, ?, ?, ?, ?, ?, 'running', ?, ?, ?, ?)",
                               (machine_id, app, program, strategy, json.dumps(space, sort_keys=True),
                                params_key(identity if identity is not None else params),
                                json.dumps(params, sort_keys=True), now_utc(), socket.gethostname(), pid,
                                process_start(pid)))
            tune_id = int(cur.lastrowid or 0)
        return self.tune(tune_id)

    def tune(self, tune_id: int) -> TuneRecord:
        """The tune with this id; UsageError if there is none."""
        return self._tune(self._row("tunes", self._TUNE_COLUMNS, "tune", tune_id))

    def tunes(self) -> list[TuneRecord]:
        """Every tune, oldest first."""
        return [self._tune(r) for r in self.conn.execute(f"SELECT {self._TUNE_COLUMNS} FROM tunes ORDER BY id")]

    def claim_tune(self, tune_id: int) -> None:
        """Marks a tune running and owned by this process (so a later reader can tell when it died)."""
        self._claim("tunes", tune_id)

    def set_tune_status(self, tune_id: int, status: str) -> None:
        """Marks a tune running, interrupted or finished; ValueError for another status."""
        if status not in TUNE_STATUSES:
            raise ValueError(f"tune status must be one of {TUNE_STATUSES}, got {status!r}")
        self._set("tunes", tune_id, status=status, finished_at=now_utc() if status == "finished" else None)

    def set_tune_note(self, tune_id: int, note: str) -> None:
        """Records how the tune ended (budget spent, expected improvement below the stop rule, ...)."""
        self._set("tunes", tune_id, note=note)

    def latest_unfinished_tune(self, identity: JsonObject) -> TuneRecord | None:
        """The newest tune with exactly this identity that has not finished, if any (a running one whose owner
        died is reported like an interrupted one: check owner_alive before taking it over)."""
        row = self.conn.execute(f"SELECT {self._TUNE_COLUMNS} FROM tunes WHERE params_key = ? AND status != "
                                "'finished' ORDER BY id DESC LIMIT 1", (params_key(identity),)).fetchone()
        return self._tune(row) if row else None

    def unfinished_tunes_of(self, app: str, before: int) -> list[TuneRecord]:
        """The tunes of `app` older than tune `before`, whatever their parameters and space, that have not finished,
        newest first (what `--resume` chooses from when no tune had the parameters given)."""
        return [self._tune(r) for r in self.conn.execute(
            f"SELECT {self._TUNE_COLUMNS} FROM tunes WHERE app = ? AND id < ? AND status != 'finished' "
            "ORDER BY id DESC", (app, before))]

    def tune_sweeps(self, tune_id: int) -> list[Sweep]:
        """The sweeps (one per configuration measured) of a tune, in the order they were started."""
        return [self._sweep(r) for r in self.conn.execute(
            f"SELECT {self._SWEEP_COLUMNS} FROM sweeps WHERE tune_id = ? ORDER BY id", (tune_id,))]

    # profiles -----------------------------------------------------------------------------------------------
    _PROFILE_COLUMNS = "id, machine_id, program, app, ranks, threads, features_json, profile_json, created_at"

    def add_profile(self, machine_id: int, program: str, app: str, ranks: int, threads: int,
                    features: dict[str, float], profile: JsonObject) -> ProfileRecord:
        """Stores a program's profile and its features; returns the stored record."""
        with self.transaction() as conn:
            cur = conn.execute(f"INSERT INTO profiles ({self._PROFILE_COLUMNS.removeprefix('id, ')}) "
                               "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                               (machine_id, program, app, ranks, threads, json.dumps(features),
                                json.dumps(profile, sort_keys=True), now_utc()))
            profile_id = int(cur.lastrowid or 0)
        row = self.conn.execute(f"SELECT {self._PROFILE_COLUMNS} FROM profiles WHERE id = ?", (profile_id,)).fetchone()
        return self._profile(row)

    def latest_profile(self, program: str, machine_id: int | None = None) -> ProfileRecord | None:
        """The newest stored profile of `program` (on that machine, if given), None if it was never profiled."""
        sql = f"SELECT {self._PROFILE_COLUMNS} FROM profiles WHERE program = ?"
        args: list[str | int] = [program]
        if machine_id is not None:
            sql += " AND machine_id = ?"
            args.append(machine_id)
        row = self.conn.execute(sql + " ORDER BY id DESC LIMIT 1", args).fetchone()
        return self._profile(row) if row else None

    @staticmethod
    def _profile(row: tuple[Any, ...]) -> ProfileRecord:
        """A ProfileRecord from a row of _PROFILE_COLUMNS."""
        return ProfileRecord(row[0], row[1], row[2], row[3], row[4], row[5],
                             _decoded(row[6], dict, "profiles.features_json"),
                             _decoded(row[7], dict, "profiles.profile_json"), row[8])

    # studies ------------------------------------------------------------------------------------------------
    def create_study(self, machine_id: int, quick: bool, out_dir: str) -> int:
        """Records the start of a study; returns its id."""
        with self.transaction() as conn:
            cur = conn.execute("INSERT INTO studies (machine_id, quick, out_dir, created_at) VALUES (?, ?, ?, ?)",
                               (machine_id, int(quick), out_dir, now_utc()))
            return int(cur.lastrowid or 0)

    def add_study_note(self, study_id: int, note: str) -> None:
        """Appends a note (an app skipped and why) to a study."""
        with self.transaction() as conn:
            row = conn.execute("SELECT notes_json FROM studies WHERE id = ?", (study_id,)).fetchone()
            notes = [*_decoded(row[0], list, "studies.notes_json"), note]
            conn.execute("UPDATE studies SET notes_json = ? WHERE id = ?", (json.dumps(notes), study_id))

    def finish_study(self, study_id: int) -> None:
        """Marks a study finished."""
        self._set("studies", study_id, finished_at=now_utc())

    def study(self, study_id: int) -> Study:
        """The study with this id; UsageError if there is none."""
        row = self._row("studies", "id, machine_id, quick, out_dir, notes_json, created_at, finished_at", "study",
                        study_id)
        return Study(row[0], row[1], bool(row[2]), row[3], tuple(_decoded(row[4], list, "studies.notes_json")), row[5],
                     row[6])

    def study_sweeps(self, study_id: int) -> list[Sweep]:
        """The sweeps a study ran, in order."""
        return [self._sweep(r) for r in self.conn.execute(
            f"SELECT {self._SWEEP_COLUMNS} FROM sweeps WHERE study_id = ? ORDER BY id", (study_id,))]


# Every public method of Store names a damaged file as such (_naming_damage); transaction() is a context manager,
# whose writes map SQLite's errors themselves (HympiFatal for a disk that cannot take them).
for _name, _member in list(vars(Store).items()):
    if isinstance(_member, types.FunctionType) and not _name.startswith("_") and _name != "transaction":
        setattr(Store, _name, _naming_damage(_member))
