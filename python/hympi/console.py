"""The rich console every hympi command prints its tables and progress through.

rich answers a write into a closed pipe (`hympi config | head -1`) by pointing stdout at /dev/null and exiting 1;
hympi's entry point answers it with 141, quietly, as the shell reports `yes | head` (hympi.cli.main). This console
leaves the broken pipe to the entry point, so every command ends alike whether its output was a table or text.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import sys
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.text import Text

from hympi.errors import StdoutLost

if TYPE_CHECKING:  # rich.table only for its type: every hympi process imports this module
    from _typeshed import ReadableBuffer
    from rich.table import Table


class HympiConsole(Console):
    """rich's Console, but a closed stdout raises BrokenPipeError for the entry point to handle, no ':name:' is an
    emoji code, and a line printed into a file or pipe is not wrapped."""

    def __init__(self, **options: Any) -> None:
        # hympi writes no emoji codes; rich replaced them even in text printed without markup: a path 'run:x:1'
        # or a --verify 'status:ok:' came out as 'run❌1' and 'status🆗'.
        super().__init__(**{"emoji": False, **options})
        if "soft_wrap" not in options and not self.is_terminal:
            # A batch job's log: rich cut every line at 80 columns, so `grep 'Best:' job.out` found a recommendation's
            # first 80 characters and a failed run's reason was split mid-word. A terminal still wraps at words.
            self.soft_wrap = True

    def on_broken_pipe(self) -> None:
        """Stops printing and hands the broken pipe on (rich itself would exit 1)."""
        self.quiet = True
        raise BrokenPipeError(errno.EPIPE, "the reader of hympi's output has gone")


class _GuardedStdout(io.RawIOBase):
    """File descriptor 1 as a raw stream whose failed write raises StdoutLost, not an OSError that the entry point
    could not tell from a fault of hympi's own (a closed pipe stays BrokenPipeError, which it handles apart)."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd

    def writable(self) -> bool:
        """It is written."""
        return True

    def fileno(self) -> int:
        """The descriptor (select, os.fstat and rich's terminal checks use it)."""
        return self._fd

    def isatty(self) -> bool:
        """Whether it is a terminal (rich colours only then)."""
        return os.isatty(self._fd)

    def write(self, data: ReadableBuffer) -> int:
        """Writes what the descriptor takes of `data`; StdoutLost when it takes nothing (ENOSPC, EIO, EFBIG)."""
        try:
            return os.write(self._fd, data)
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise StdoutLost(exc.strerror or str(exc)) from None


def guard_stdout() -> None:
    """Puts a text stream over _GuardedStdout in place of sys.stdout (same encoding, error handler and line
    buffering), when sys.stdout is the process's own (not a stream a caller or a test put there)."""
    stream = sys.__stdout__
    if sys.stdout is not stream or not isinstance(stream, io.TextIOWrapper):
        return
    try:
        fd = stream.fileno()
    except (OSError, ValueError):  # closed, or no descriptor
        return
    stream.flush()
    sys.stdout = io.TextIOWrapper(io.BufferedWriter(_GuardedStdout(fd)), encoding=stream.encoding,
                                  errors=stream.errors, line_buffering=stream.line_buffering, write_through=False)


def add_plain_row(table: Table, *cells: str) -> None:
    """Adds a row whose cells print as they are: a str cell is rich markup, where a path or hostname's '[bold]'
    vanished and '[/x]' crashed the command with MarkupError."""
    table.add_row(*(Text(cell) for cell in cells))


def say_on_stderr(*lines: str) -> None:
    """Prints each of `lines` on stderr if it still can: after SIGHUP the terminal it went to may be gone (EIO), and
    hympi is then to exit as stopped by the signal, not fail on its last words."""
    with contextlib.suppress(OSError):
        for line in lines:
            print(line, file=sys.stderr, flush=True)
