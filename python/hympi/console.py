"""The rich console every hympi command prints its tables and progress through.

rich answers a write into a closed pipe (`hympi config | head -1`) by pointing stdout at /dev/null and exiting 1;
hympi's entry point answers it with 141, quietly, as the shell reports `yes | head` (hympi.cli.main). This console
leaves the broken pipe to the entry point, so every command ends alike whether its output was a table or text.
"""

from __future__ import annotations

import errno

from rich.console import Console


class HympiConsole(Console):
    """rich's Console, but a closed stdout raises BrokenPipeError for the entry point to handle."""

    def on_broken_pipe(self) -> None:
        """Stops printing and hands the broken pipe on (rich itself would exit 1)."""
        self.quiet = True
        raise BrokenPipeError(errno.EPIPE, "the reader of hympi's output has gone")
