"""Reading the text files a user hands hympi (config, search space, rankfile, cvars, node topologies).

Path.read_text() decodes with the locale's codec and raises UnicodeDecodeError, a traceback, on the first byte that
is not valid; these files are UTF-8 (TOML requires it, JSON is written so), so a bad byte is bad input: one line
naming the file and where the byte is.
"""

from __future__ import annotations

import os
import stat
import tomllib
from pathlib import Path
from typing import Any

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


def file_problem(path: str | os.PathLike[str]) -> str | None:
    """Why `path` cannot be read as an input file, in words that follow the path (None for a regular file or a link
    to one): 'does not exist', 'is a directory', 'is a FIFO', 'is a device', 'is a socket'. The C++ twin is
    hympi::file_problem; a FIFO would block the reader and /dev/null read as empty, so both refuse them."""
    try:
        mode = os.stat(path).st_mode  # follows links, as opening the file would
    except FileNotFoundError:
        return "does not exist"
    except OSError as exc:  # a directory on the way without search permission, a name too long
        return f"cannot be examined ({exc.strerror or exc})"
    return _mode_problem(mode)


def replace_problem(path: str | os.PathLike[str]) -> str | None:
    """Why an output written beside `path` and renamed onto it (hympi.outputs) must not take its place, in words
    that follow the path; None for a regular file, a name that does not exist yet, or a symbolic link to either
    (output_stream renames onto the file the link names, so the link stays). A rename would put a plain file where
    a device or FIFO was (/dev/null included) and the reader of the FIFO would never see the output. The C++ twin is
    require_replaceable (src/h5/checkpoint.cpp), which refuses every link: it renames onto the name itself."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:  # a new file, or a dangling link's target, made by the rename
        return None
    except OSError as exc:  # a name too long, a loop of links
        return f"cannot be examined ({exc.strerror or exc})"
    problem = _mode_problem(mode)
    if problem is None:
        return None
    if os.path.islink(path):
        problem = f"is a symbolic link to {os.path.realpath(path)}, which {problem}"
    return f"{problem}, not a file an output may replace"


def _mode_problem(mode: int) -> str | None:
    """file_problem's words for a file of this stat mode (None for a regular file)."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "is a directory"
    if stat.S_ISFIFO(mode):
        return "is a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "is a device"
    if stat.S_ISSOCK(mode):
        return "is a socket"
    return "is not a regular file"


def require_regular_file(path: str | os.PathLike[str], what: str) -> None:
    """UsageError naming `what` and the path when `path` exists but is no regular file, before anyone reads it: a
    FIFO blocks the read until someone writes, /dev/zero and /dev/full never end it; OSError (for the caller to
    word, as a failed read) when it cannot be examined, a missing file among them."""
    problem = _mode_problem(os.stat(path).st_mode)
    if problem is not None:
        raise UsageError(f"{what} {os.fspath(path)} {problem}")


def read_utf8(path: str | os.PathLike[str], what: str) -> str:
    """The text of the UTF-8 file `path`; UsageError naming `what` for a path that is no regular file
    (require_regular_file) or for bytes that are not UTF-8, OSError (for the caller to word) when it cannot be
    read."""
    require_regular_file(path, what)
    return decode_utf8(Path(path).read_bytes(), what, path)


def read_toml(path: str | os.PathLike[str], what: str) -> dict[str, Any]:
    """The TOML table of file `path`; UsageError naming `what` (e.g. 'config file') and the file when it cannot be
    read, is not UTF-8 or is not valid TOML."""
    try:
        return tomllib.loads(read_utf8(path, what))
    except OSError as exc:
        raise UsageError(f"cannot read {what} {os.fspath(path)}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{what} {os.fspath(path)} is not valid TOML: {exc}") from None
    except RecursionError:  # arrays or tables nested deeper than tomllib's stack
        raise UsageError(f"{what} {os.fspath(path)} is not valid TOML: nested too deeply") from None
