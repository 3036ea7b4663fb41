"""A program's output, and what a run wrote into its output file, read within a bounded size.

hympi searches a run's output for its HYMPI_RESULT line, a program's metric and verification, and keeps its last
lines for a failed run's reason. A program may print far more than that (a solver logging every step for hours):
holding all of it would take hympi's memory with it. Each stream keeps its first and its last bytes, whole lines,
and says in between how much it left out.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from typing import IO

# A program states what it ran at its start and its figures and verdict at its end; 32 MiB a stream keeps ~400,000
# lines of 80 characters, more than LAMMPS prints for a million steps with thermo output every 100, and bounds
# hympi's memory per launch to a few hundred MiB (the text is decoded and searched once or twice).
KEPT_HEAD_BYTES = 4 << 20
KEPT_TAIL_BYTES = 28 << 20
READ_BYTES = 1 << 16
# What a line of output is taken to be at most when only the last lines are wanted.
LINE_CHARS = 4096
OMITTED = re.compile(r"\[hympi: (\d+) bytes of this output left out here\b")


def tail_lines(text: str, count: int) -> list[str]:
    """The last `count` lines of `text` (fewer where they average over LINE_CHARS characters), split off its end
    alone: the text may be tens of MiB of short lines."""
    chunk = text[-count * LINE_CHARS:]
    lines = chunk.splitlines()
    if len(chunk) < len(text):
        lines = lines[1:]  # it may begin inside a line
    return lines[-count:]


def omitted_note(text: str) -> str:
    """' (N bytes in the middle of it were not kept ...)' when `text` holds a capture's cut, else ''."""
    cuts = [int(found.group(1)) for found in OMITTED.finditer(text)]
    if not cuts:
        return ""
    return (f" ({sum(cuts)} bytes in the middle of it were not kept: hympi keeps the first {KEPT_HEAD_BYTES >> 20} "
            f"and the last {KEPT_TAIL_BYTES >> 20} MiB of each output stream)")


class BoundedCapture:
    """Reads `stream` to its end on a thread of its own (so a program never blocks on a full pipe), keeping its first
    KEPT_HEAD_BYTES and its last KEPT_TAIL_BYTES; `echo`, when given, is handed every line as it completes (several
    at a time, and the unfinished last one at the end), all of them, kept or not."""

    def __init__(self, stream: IO[bytes], echo: Callable[[bytes], None] | None = None) -> None:
        self._stream = stream
        self._echo = echo
        self._unfinished = b""
        self._failure: Exception | None = None
        self._head = bytearray()
        self._tail = bytearray()
        self._dropped = 0
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _pass_on(self, chunk: bytes) -> None:
        """Hands `echo` the lines `chunk` completes (the last at the stream's end, b'')."""
        if self._echo is None:
            return
        lines = self._unfinished + chunk
        end = lines.rfind(b"\n") + 1 if chunk else len(lines)
        self._unfinished = lines[end:]
        if end:
            # Whatever becomes of the echo, the stream is read to its end: a program must never block on its pipe.
            try:
                self._echo(lines[:end])
            except OSError:
                self._echo = None  # its reader went away (a closed pipe); whoever writes there next finds out
            except Exception as exc:  # noqa: BLE001 - a bug, raised again by text() on the caller's thread
                self._echo, self._failure = None, exc

    def _read(self) -> None:
        read = getattr(self._stream, "read1", self._stream.read)
        try:
            while chunk := read(READ_BYTES):
                self._pass_on(chunk)
                room = KEPT_HEAD_BYTES - len(self._head)
                if room > 0:
                    self._head += chunk[:room]
                    chunk = chunk[room:]
                self._tail += chunk
                if len(self._tail) > 2 * KEPT_TAIL_BYTES:  # trimmed now and then, not on every read
                    self._trim()
            self._pass_on(b"")
        except OSError as exc:  # a file that cannot be read to its end: its reader says so (text())
            self._failure = exc
        finally:
            self._stream.close()

    def _trim(self) -> None:
        excess = len(self._tail) - KEPT_TAIL_BYTES
        if excess > 0:
            del self._tail[:excess]
            self._dropped += excess

    def join(self, timeout: float | None) -> bool:
        """Waits up to `timeout` seconds (None: for ever) for the stream's end; whether it ended."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def text(self) -> str:
        """What was kept, decoded as text with newlines as Python's text mode reads them (bytes that are not UTF-8
        replaced), with one line saying how many bytes were left out between head and tail. Call after join (before
        it: what the stream held so far, or less). Raises what reading the stream raised, and what the echo raised
        other than OSError."""
        if self._failure is not None:
            raise self._failure
        head, tail = bytes(self._head), bytes(self._tail[-KEPT_TAIL_BYTES:])
        dropped = self._dropped + len(self._tail) - len(tail)
        if dropped:
            # Whole lines on either side of the cut: the broken ones go with the bytes left out.
            newline = tail.find(b"\n")
            if 0 <= newline < len(tail) - 1:
                dropped += newline + 1
                tail = tail[newline + 1:]
            end = head.rfind(b"\n") + 1
            if end:
                dropped += len(head) - end
                head = head[:end]
            else:
                head += b"\n"
            tail = f"[hympi: {dropped} bytes of this output left out here]\n".encode() + tail
        text = (head + tail).decode(errors="replace")
        return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def read_bounded(stream: IO[bytes]) -> str:
    """`stream` read to its end as BoundedCapture keeps it (a file: its text from where it stands)."""
    capture = BoundedCapture(stream)
    capture.join(None)
    return capture.text()
