"""Parsing the HYMPI_RESULT line every app prints."""

from __future__ import annotations

import json

from hympi.jsontypes import JsonObject

PREFIX = "HYMPI_RESULT "


def parse_result(stdout: str) -> JsonObject | None:
    """The last HYMPI_RESULT record in `stdout`, or None if there is none or it is not JSON."""
    for line in reversed(stdout.splitlines()):
        if line.startswith(PREFIX):
            try:
                record = json.loads(line[len(PREFIX):])
            except json.JSONDecodeError:
                return None
            return record if isinstance(record, dict) else None
    return None
