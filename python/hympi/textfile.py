"""Reading the text files a user hands hympi (config, search space, rankfile, cvars, node topologies).

Path.read_text() decodes with the locale's codec and raises UnicodeDecodeError, a traceback, on the first byte that
is not valid; these files are UTF-8 (TOML requires it, JSON is written so), so a bad byte is bad input: one line
naming the file and where the byte is.
"""

from __future__ import annotations

import os
from pathlib import Path

from hympi.errors import UsageError


def decode_utf8(data: bytes, what: str, origin: str | os.PathLike[str]) -> str:
    """`data` as UTF-8 text; UsageError naming `what` (e.g. 'rankfile'), `origin` and the first bad byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        # Line numbers help in a text file; the byte's value helps recognise Latin-1 or a binary file.
        line = data.count(b"\n", 0, exc.start) + 1
        raise UsageError(f"{what} {os.fspath(origin)} is not UTF-8 text: byte 0x{data[exc.start]:02x} on line {line}"
                         ) from None


def read_utf8(path: str | os.PathLike[str], what: str) -> str:
    """The text of the UTF-8 file `path`; UsageError for bytes that are not UTF-8, OSError (for the caller to word)
    when it cannot be read."""
    return decode_utf8(Path(path).read_bytes(), what, path)
