"""Error types: soft errors are recorded and a sweep goes on, fatal ones stop, usage errors exit 2."""

from __future__ import annotations

import signal
from collections.abc import Sequence


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


def unknown_name(what: str, names: Sequence[str], text: str) -> str:
    """How a text that is none of `names` is refused, in the apps' words (core/enum_names.hpp's unknown_name):
    "unknown binding 'x' (expected none, core, numa or package)"."""
    listed = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"
    return f"unknown {what} '{text}' (expected {listed})"


class StoppedBySignal(KeyboardInterrupt):
    """hympi was stopped by a signal (SIGTERM, SIGHUP: hympi.launch.stop); the launch in flight was killed, finished
    runs are stored (a sweep's `--resume` continues).

    `exit_code` is the shell's convention for death by that signal (143 for SIGTERM, 129 for SIGHUP).
    """

    def __init__(self, signum: int) -> None:
        super().__init__(f"signal {signum}")
        self.signum = signum

    @property
    def exit_code(self) -> int:
        """128 + the signal number."""
        return 128 + self.signum

    @property
    def name(self) -> str:
        """The signal's name, as 'SIGTERM'."""
        return signal.Signals(self.signum).name


class StdoutLost(Exception):
    """hympi's standard output cannot take what it prints (a full disk, an I/O error): the command stops, says so in
    one line on stderr and exits 1; what it recorded (a sweep's finished runs) stays, the sweep marked interrupted.
    `strerror`: the system's words for it."""

    def __init__(self, strerror: str) -> None:
        super().__init__(f"cannot write standard output ({strerror})")
        self.strerror = strerror
