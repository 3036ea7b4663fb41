"""Results databases at an older schema version, the one way the migration tests make them."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from hympi.store import Store, schema


@contextmanager
def store_at(path: Path, version: int) -> Iterator[Store]:
    """A new database at `path` as hympi with only migrations 1..`version` made it, open to fill with rows of that
    schema; the next Store.open of it migrates it to the current version."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(schema, "MIGRATIONS", schema.MIGRATIONS[:version])
        with Store.open(path) as store:
            assert store.schema_version() == version
            yield store
