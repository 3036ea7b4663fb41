"""The SQLite results store: schema with migrations, machines, sweeps, studies and runs."""

from hympi.store.db import (
    DEFAULT_DB,
    RUN_STATUSES,
    TUNE_STATUSES,
    WARMUP_REPEAT,
    Attempt,
    ItemKey,
    MachineRecord,
    ProfileRecord,
    Run,
    Store,
    Study,
    Sweep,
    TuneRecord,
    check_db_path,
    now_utc,
    params_key,
)
from hympi.store.schema import APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION

__all__ = [
    "APPLICATION_ID",
    "DEFAULT_DB",
    "MIGRATIONS",
    "RUN_STATUSES",
    "SCHEMA_VERSION",
    "TUNE_STATUSES",
    "WARMUP_REPEAT",
    "Attempt",
    "ItemKey",
    "MachineRecord",
    "ProfileRecord",
    "Run",
    "Store",
    "Study",
    "Sweep",
    "TuneRecord",
    "check_db_path",
    "now_utc",
    "params_key",
]
