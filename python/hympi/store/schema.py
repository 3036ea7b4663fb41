"""The results database's schema: an ordered list of migrations and the checks that a file is ours."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from hympi.errors import UsageError

# PRAGMA application_id marks a SQLite file as a hympi results database ("HYMP" in ASCII).
APPLICATION_ID = 0x48594D50


@dataclass(frozen=True)
class Migration:
    """One schema step: the version it produces and the SQL that gets there from the one before.

    `rebuilds` marks a step that recreates a table other tables refer to (SQLite cannot change a constraint in
    place): it runs with foreign key enforcement off and checks every reference before it commits (SQLite's
    procedure for such changes).
    """

    version: int
    description: str
    sql: str
    rebuilds: bool = False


# The runs table as of version 6, around the columns that key a sweep item besides ranks, threads, bind and repeat
# (none until version 7): those go after bind. SQLite changes a UNIQUE constraint only by rebuilding the table.
_RUNS_BEFORE_KEY = ("id INTEGER PRIMARY KEY", "sweep_id INTEGER NOT NULL REFERENCES sweeps(id)", "app TEXT NOT NULL",
                    "problem TEXT", "ranks INTEGER NOT NULL", "threads INTEGER NOT NULL", "bind TEXT NOT NULL")
_RUNS_AFTER_KEY = ("dist TEXT NOT NULL", "repeat INTEGER NOT NULL", "app_args_json TEXT NOT NULL",
                   "env_json TEXT NOT NULL", "command_json TEXT NOT NULL",
                   "status TEXT NOT NULL CHECK (status IN ('ok', 'failed', 'timeout', 'unverified'))",
                   "returncode INTEGER", "wall_s REAL NOT NULL", "rate REAL", "rate_unit TEXT", "time_s REAL",
                   "comm_s REAL", "comp_s REAL", "imbalance REAL", "max_rss_mib REAL", "node_rss_mib REAL",
                   "result_json TEXT", "stderr_tail TEXT NOT NULL", "started_at TEXT NOT NULL",
                   "finished_at TEXT NOT NULL", "restarted_from_step INTEGER")
_MEMBIND = "membind TEXT NOT NULL DEFAULT 'none'"
_ITEM_ARGS = "item_args_json TEXT NOT NULL DEFAULT '[]'"


def _rebuild_runs(old_key: tuple[str, ...], new_key: tuple[str, ...]) -> str:
    """SQL that rebuilds runs with the item key columns `new_key` (definitions) in place of `old_key`, keeping every
    row and id; the new columns start at their defaults. It drops the runs_app index with the old table."""
    def names(columns: tuple[str, ...]) -> list[str]:
        return [column.split()[0] for column in columns]

    copied = ", ".join(names(_RUNS_BEFORE_KEY + old_key + _RUNS_AFTER_KEY))
    unique = ", ".join(["sweep_id", "ranks", "threads", "bind", *names(new_key), "repeat"])
    columns = ",\n".join((*_RUNS_BEFORE_KEY, *new_key, *_RUNS_AFTER_KEY, f"UNIQUE ({unique})"))
    return (f"CREATE TABLE runs_new (\n{columns}\n);\n"
            f"INSERT INTO runs_new ({copied})\n    SELECT {copied} FROM runs;\n"
            "DROP TABLE runs;\nALTER TABLE runs_new RENAME TO runs;\n")


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "machines, sweeps and runs", """
        CREATE TABLE machines (
            id INTEGER PRIMARY KEY,
            hostname TEXT NOT NULL,
            topology_hash TEXT NOT NULL,
            mpi_library TEXT NOT NULL,
            compiler TEXT NOT NULL,
            summary_json TEXT NOT NULL,
            created_at TEXT NOT NULL,
            UNIQUE (hostname, topology_hash, mpi_library, compiler)
        );
        CREATE TABLE sweeps (
            id INTEGER PRIMARY KEY,
            machine_id INTEGER NOT NULL REFERENCES machines(id),
            app TEXT NOT NULL,
            params_key TEXT NOT NULL,
            params_json TEXT NOT NULL,
            total INTEGER NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('running', 'interrupted', 'finished')),
            created_at TEXT NOT NULL,
            finished_at TEXT
        );
        CREATE INDEX sweeps_params ON sweeps (params_key, status);
        CREATE TABLE runs (
            id INTEGER PRIMARY KEY,
            sweep_id INTEGER NOT NULL REFERENCES sweeps(id),
            app TEXT NOT NULL,
            problem TEXT,
            ranks INTEGER NOT NULL,
            threads INTEGER NOT NULL,
            bind TEXT NOT NULL,
            dist TEXT NOT NULL,
            repeat INTEGER NOT NULL,
            app_args_json TEXT NOT NULL,
            env_json TEXT NOT NULL,
            command_json TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('ok', 'failed', 'timeout', 'unverified')),
            returncode INTEGER,
            wall_s REAL NOT NULL,
            rate REAL,
            rate_unit TEXT,
            time_s REAL,
            comm_s REAL,
            comp_s REAL,
            imbalance REAL,
            max_rss_mib REAL,
            node_rss_mib REAL,
            result_json TEXT,
            stderr_tail TEXT NOT NULL,
            started_at TEXT NOT NULL,
            finished_at TEXT NOT NULL,
            UNIQUE (sweep_id, ranks, threads, bind, repeat)
        );
        CREATE INDEX runs_app ON runs (app, ranks, threads, bind);
    """),
    Migration(2, "studies group sweeps and keep notes (apps skipped, why)", """
        CREATE TABLE studies (
            id INTEGER PRIMARY KEY,
            machine_id INTEGER NOT NULL REFERENCES machines(id),
            quick INTEGER NOT NULL,
            out_dir TEXT NOT NULL,
            notes_json TEXT NOT NULL DEFAULT '[]',
            created_at TEXT NOT NULL,
            finished_at TEXT
        );
        ALTER TABLE sweeps ADD COLUMN study_id INTEGER REFERENCES studies(id);
    """),
    Migration(3, "sweeps record their owner process (stale 'running' rows) and what --repeat auto decided", """
        ALTER TABLE sweeps ADD COLUMN owner_host TEXT;
        ALTER TABLE sweeps ADD COLUMN owner_pid INTEGER;
        ALTER TABLE sweeps ADD COLUMN owner_start TEXT;
        ALTER TABLE sweeps ADD COLUMN note TEXT;
    """),
    Migration(4, "'placement' means rank-to-core mapping only: the result field of thread bindings is 'binding'", """
        UPDATE runs SET result_json = json_remove(
                json_set(result_json, '$.binding', json(json_extract(result_json, '$.placement'))), '$.placement')
            WHERE result_json IS NOT NULL AND json_valid(result_json)
              AND json_type(result_json, '$.placement') IS NOT NULL;
        UPDATE runs SET problem = 'binding' WHERE app = 'affinity' AND problem = 'placement';
    """),
    Migration(5, "tunes: MPI parameters per run (as set and as read back through MPI_T), tunes over configurations, "
                 "program profiles for the predictor", """
        CREATE TABLE tunes (
            id INTEGER PRIMARY KEY,
            machine_id INTEGER NOT NULL REFERENCES machines(id),
            app TEXT NOT NULL,
            program TEXT NOT NULL,
            strategy TEXT NOT NULL,
            space_json TEXT NOT NULL,
            params_key TEXT NOT NULL,
            params_json TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('running', 'interrupted', 'finished')),
            note TEXT,
            owner_host TEXT,
            owner_pid INTEGER,
            owner_start TEXT,
            created_at TEXT NOT NULL,
            finished_at TEXT
        );
        CREATE INDEX tunes_params ON tunes (params_key, status);
        ALTER TABLE sweeps ADD COLUMN tune_id INTEGER REFERENCES tunes(id);
        CREATE TABLE run_mpi_params (
            run_id INTEGER NOT NULL REFERENCES runs(id),
            name TEXT NOT NULL,
            value TEXT NOT NULL,
            read_back TEXT,
            PRIMARY KEY (run_id, name)
        );
        CREATE TABLE profiles (
            id INTEGER PRIMARY KEY,
            machine_id INTEGER NOT NULL REFERENCES machines(id),
            program TEXT NOT NULL,
            app TEXT NOT NULL,
            ranks INTEGER NOT NULL,
            threads INTEGER NOT NULL,
            features_json TEXT NOT NULL,
            profile_json TEXT NOT NULL,
            created_at TEXT NOT NULL
        );
        CREATE INDEX profiles_program ON profiles (program);
    """),
    Migration(6, "checkpoints: a run restarted from its checkpoint records the step, and the attempts it replaced", """
        ALTER TABLE runs ADD COLUMN restarted_from_step INTEGER;
        CREATE TABLE run_attempts (
            id INTEGER PRIMARY KEY,
            sweep_id INTEGER NOT NULL REFERENCES sweeps(id),
            ranks INTEGER NOT NULL,
            threads INTEGER NOT NULL,
            bind TEXT NOT NULL,
            repeat INTEGER NOT NULL,
            command_json TEXT NOT NULL,
            status TEXT NOT NULL,
            returncode INTEGER,
            wall_s REAL NOT NULL,
            restarted_from_step INTEGER,
            result_json TEXT,
            stderr_tail TEXT NOT NULL,
            started_at TEXT NOT NULL,
            finished_at TEXT NOT NULL
        );
        CREATE INDEX run_attempts_item ON run_attempts (sweep_id, ranks, threads, bind, repeat);
    """),
    Migration(7, "memory policy (--membind) per run: a sweep item is ranks x threads x bind x membind x repeat",
              _rebuild_runs((), (_MEMBIND,)) + """
        UPDATE runs SET membind = json_extract(result_json, '$.membind')
            WHERE result_json IS NOT NULL AND json_valid(result_json)
              AND json_extract(result_json, '$.membind') IN ('local', 'interleave', 'location', 'none');
        CREATE INDEX runs_app ON runs (app, ranks, threads, bind, membind);
        ALTER TABLE run_attempts ADD COLUMN membind TEXT NOT NULL DEFAULT 'none';
        DROP INDEX run_attempts_item;
        CREATE INDEX run_attempts_item ON run_attempts (sweep_id, ranks, threads, bind, membind, repeat);
    """, rebuilds=True),
    Migration(8, "per-item app arguments (a two-level sweep's --inner/--n2): a sweep item is ranks x threads x bind x "
                 "membind x item arguments x repeat",
              _rebuild_runs((_MEMBIND,), (_MEMBIND, _ITEM_ARGS)) + """
        CREATE INDEX runs_app ON runs (app, ranks, threads, bind, membind);
        ALTER TABLE run_attempts ADD COLUMN item_args_json TEXT NOT NULL DEFAULT '[]';
        DROP INDEX run_attempts_item;
        CREATE INDEX run_attempts_item ON run_attempts (sweep_id, ranks, threads, bind, membind, item_args_json,
                                                        repeat);
    """, rebuilds=True),
    Migration(9, "other work during each run (hympi.busy): CPU seconds outside the run's process tree on its PUs, "
                 "as cores, steal, and whether that disturbed the run (NULL: not measured)", """
        ALTER TABLE runs ADD COLUMN outside_cpu_s REAL;
        ALTER TABLE runs ADD COLUMN outside_cores REAL;
        ALTER TABLE runs ADD COLUMN steal_s REAL;
        ALTER TABLE runs ADD COLUMN disturbed INTEGER;
    """),
    Migration(10, "a program's default figure of merit, its wall time, recorded as 1/(s) like every lower-is-better "
                  "time (was launches per hour, 'runs/h')", """
        UPDATE runs SET rate = 1.0 / json_extract(result_json, '$.metrics.merit.value'), rate_unit = '1/(s)',
                        result_json = json_set(result_json,
                            '$.rate', 1.0 / json_extract(result_json, '$.metrics.merit.value'),
                            '$.rate_unit', '1/(s)')
            WHERE rate_unit = 'runs/h' AND result_json IS NOT NULL AND json_valid(result_json)
              AND json_extract(result_json, '$.metrics.merit.unit') = 's'
              AND json_extract(result_json, '$.metrics.merit.value') > 0;
        UPDATE run_attempts SET result_json = json_set(result_json,
                            '$.rate', 1.0 / json_extract(result_json, '$.metrics.merit.value'),
                            '$.rate_unit', '1/(s)')
            WHERE result_json IS NOT NULL AND json_valid(result_json)
              AND json_extract(result_json, '$.rate_unit') = 'runs/h'
              AND json_extract(result_json, '$.metrics.merit.unit') = 's'
              AND json_extract(result_json, '$.metrics.merit.value') > 0;
    """),
)

SCHEMA_VERSION = MIGRATIONS[-1].version


def current_version(conn: sqlite3.Connection, path: str) -> int:
    """The schema version of an open database: 0 for a new empty file; raises UsageError if it is not ours.

    Its reads are one snapshot (the caller's transaction, or one of its own): read one by one, another process
    creating the database could mark it ours between them, and a file with tables but no mark looks foreign."""
    if conn.in_transaction:
        return _version(conn, path)
    conn.execute("BEGIN")
    try:
        return _version(conn, path)
    finally:
        if conn.in_transaction:
            conn.execute("COMMIT")  # it only read


def _version(conn: sqlite3.Connection, path: str) -> int:
    """current_version's reads, inside a transaction."""
    try:
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.DatabaseError as exc:
        raise UsageError(f"{path} is not a hympi results database ({exc})") from None
    if app_id == 0 and not tables:
        return 0
    if app_id != APPLICATION_ID or "schema_version" not in tables:
        raise UsageError(f"{path} is not a hympi results database (it has other tables or another application id)")
    row = conn.execute("SELECT MAX(version) FROM schema_version").fetchone()
    version = int(row[0] or 0)
    if version > SCHEMA_VERSION:
        raise UsageError(f"{path} has schema version {version}, newer than this hympi understands ({SCHEMA_VERSION}); "
                         "upgrade hympi")
    return version


def migrate(conn: sqlite3.Connection, path: str, from_version: int, now: str) -> int:
    """Applies every migration after `from_version` (read before, outside any lock), each in its own
    BEGIN IMMEDIATE transaction; returns the new version.

    Two processes opening one new (or old) database at once both read the old version; each step therefore takes
    the write lock first and reads the version again under it, skipping what the other process has applied by
    then (otherwise the second one repeats the first's ALTER TABLE: "duplicate column name").
    """
    if from_version == 0:
        conn.execute("BEGIN IMMEDIATE")
        try:
            # Both statements are idempotent: the other process may have marked the file ours since it was read.
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, description TEXT "
                         "NOT NULL, applied_at TEXT NOT NULL)")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    for migration in MIGRATIONS:
        if migration.version <= from_version:
            continue
        enforced = int(conn.execute("PRAGMA foreign_keys").fetchone()[0])
        if migration.rebuilds:
            conn.execute("PRAGMA foreign_keys = OFF")  # outside the transaction: inside one it is a no-op
        conn.execute("BEGIN IMMEDIATE")
        try:
            from_version = current_version(conn, path)  # under the write lock: the version no one else can change
            if migration.version <= from_version:
                conn.execute("ROLLBACK")  # applied by another process since the version was first read
                continue
            for statement in _statements(migration.sql):
                conn.execute(statement)
            if migration.rebuilds:
                broken = conn.execute("PRAGMA foreign_key_check").fetchall()
                if broken:
                    raise sqlite3.IntegrityError(f"schema version {migration.version}: {len(broken)} rows lost "
                                                 f"their reference, first {broken[0]}")
            conn.execute("INSERT INTO schema_version (version, description, applied_at) VALUES (?, ?, ?)",
                         (migration.version, migration.description, now))
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        finally:
            if migration.rebuilds:
                conn.execute(f"PRAGMA foreign_keys = {'ON' if enforced else 'OFF'}")
        from_version = migration.version
    return from_version


def _statements(sql: str) -> list[str]:
    """Splits a migration's SQL into statements (they contain no semicolons inside literals)."""
    return [part.strip() for part in sql.split(";") if part.strip()]
