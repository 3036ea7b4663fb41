"""What one run of a program wrote into a file: the file marked before the launch, its new text read after it.

Many programs write their results into a file rather than to their output, and many append to it: HPC Challenge
adds each run's results to the end of hpccoutf.txt. Searching the whole file after a run would credit the run with
the first result in it, an earlier run's; so only the text this run added (or, when it wrote the file anew, all of
it) is searched.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from hympi.capture import read_bounded

# Read in blocks: a log file may be larger than what a run adds to it by far.
_BLOCK = 1 << 20


@dataclass(frozen=True)
class FileMark:
    """A file as it was before a run: missing (`size` -1), or its size, inode, modification time and the sha256 of
    its bytes."""

    path: Path
    size: int = -1
    inode: int = 0
    mtime_ns: int = 0
    sha256: str = ""


@dataclass(frozen=True)
class FileText:
    """What a run wrote into a marked file: its `text`, or `problem` (words that follow the path) when there is none
    to search."""

    text: str = ""
    problem: str = ""


def _digest(path: Path, size: int) -> str:
    """sha256 of the first `size` bytes of `path` (fewer when the file is shorter)."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        left = size
        while left > 0 and (block := handle.read(min(_BLOCK, left))):
            digest.update(block)
            left -= len(block)
    return digest.hexdigest()


def mark_file(path: Path) -> FileMark:
    """`path` as it is now: as missing when it is, or when it cannot be read (then all it holds after the run is
    taken as the run's, and text_written_since says if it still cannot be read)."""
    try:
        status = path.stat()
        return FileMark(path=path, size=status.st_size, inode=status.st_ino, mtime_ns=status.st_mtime_ns,
                        sha256=_digest(path, status.st_size))
    except OSError:
        return FileMark(path=path)


def text_written_since(mark: FileMark) -> FileText:
    """The text the file gained since `mark`: what follows its old bytes when they are still its beginning (it was
    appended to), else the whole file (it was written anew). A file that is missing, or unchanged since the mark, was
    not written by the run: `problem` says so, as it does for a file that cannot be read. Bytes that are not UTF-8
    are replaced (a figure of merit is ASCII; the rest of the file need not be); of a file larger than a program's
    output stream, its head and tail are kept (hympi.capture)."""
    try:
        status = mark.path.stat()
        unchanged = (status.st_ino, status.st_size, status.st_mtime_ns) == (mark.inode, mark.size, mark.mtime_ns)
        if unchanged and _digest(mark.path, mark.size) == mark.sha256:
            return FileText(problem="was not written by the run (it is as it was before the launch)")
        appended = (mark.size >= 0 and status.st_ino == mark.inode and status.st_size > mark.size
                    and _digest(mark.path, mark.size) == mark.sha256)
        with mark.path.open("rb") as handle:
            if appended:
                handle.seek(mark.size)
            text = read_bounded(handle)
    except FileNotFoundError:
        return FileText(problem="was not written by the run (there is no such file)")
    except OSError as exc:
        return FileText(problem=f"cannot be read ({exc.strerror or exc})")
    return FileText(text=text)


def resolve_in(workdir: str, path: str) -> Path:
    """`path` as the program sees it when it runs in `workdir` ("" = hympi's working directory)."""
    return Path(os.path.normpath(Path(workdir or Path.cwd()) / Path(path).expanduser()))
