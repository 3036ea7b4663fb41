"""The type of a decoded JSON object whose fields are checked where they are read."""

from __future__ import annotations

from typing import Any

# A JSON object (a HYMPI_RESULT record, a hympi-info summary, stored sweep parameters, a profile's collective
# counts): the reader of each field converts or checks it, so the values stay Any here rather than `object`.
JsonObject = dict[str, Any]
