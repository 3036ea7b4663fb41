"""Error types: soft errors are recorded and a sweep goes on, fatal ones stop, usage errors exit 2."""

from __future__ import annotations


class HympiError(Exception):
    """A run failed; callers record it and may continue."""

    def __init__(self, message: str, *, command: list[str] | None = None, returncode: int | None = None,
                 stderr_tail: str = "") -> None:
        super().__init__(message)
        self.command = command or []
        self.returncode = returncode
        self.stderr_tail = stderr_tail


class HympiFatal(HympiError):
    """Nothing sensible can continue (missing launcher, broken build)."""


class UsageError(Exception):
    """Bad user input: one line naming the bad value, exit code 2, nothing launched."""
