"""Writing output files: never over one of the command's inputs, and always whole.

Every file hympi writes goes through `output_stream` (or `write_output`): a temporary file in the target's
directory (same file system, so the rename is atomic), renamed over the target once it is complete. A write that
fails or is interrupted leaves the old file (or none) and no half-written one; `check_not_input` refuses an output
that is an input before anything is read, so `hympi export --db g.db -o g.db` can no longer replace the database
with its own export.
"""

from __future__ import annotations

import errno
import os
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import psutil

from hympi.errors import UsageError

# An input: the option that named it and its path (None when the option was not given).
Inputs = Mapping[str, "str | os.PathLike[str] | None"]


def write_problem(directory: str | os.PathLike[str]) -> str | None:
    """Why no file can be created in `directory` (the system's reason), None when one can. Tried, not asked of
    os.access: a read-only mount, or /proc, refuses even root, for whom os.access says yes."""
    try:
        with tempfile.TemporaryFile(dir=directory):
            return None
    except OSError as exc:
        if exc.errno == errno.ENOENT and os.path.isdir(directory):
            # procfs and sysfs refuse a new file as if the directory were missing ('--checkpoint-dir /proc is not
            # writable (No such file or directory)'): the file system says what the directory is.
            return f"a {file_system_of(directory)} file system, which takes no new files"
        return exc.strerror or str(exc)


def file_system_of(path: str | os.PathLike[str]) -> str:
    """The type of the file system `path` is on ('proc', 'ext4'; 'unknown' when no mount holds it): the deepest
    mount point above it among psutil's partitions."""
    resolved = os.path.realpath(path)
    mounts = [p for p in psutil.disk_partitions(all=True)
              if os.path.commonpath([resolved, p.mountpoint]) == p.mountpoint]
    return max(mounts, key=lambda p: len(p.mountpoint)).fstype if mounts else "unknown"


def same_file(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """Whether `a` and `b` name one file: the same inode when both exist (hard and symbolic links, ./x and x), else
    the same absolute path with symbolic links resolved."""
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet)
        return os.path.realpath(a) == os.path.realpath(b)


def check_not_input(option: str, output: str | os.PathLike[str], inputs: Inputs) -> None:
    """UsageError naming both options when the output file `output` (of `option`) is one of `inputs` (option ->
    path): writing it would destroy what the command reads."""
    for name, path in inputs.items():
        if path is not None and str(path) and same_file(output, path):
            raise UsageError(f"{option} {output} is the {name} input {path}: hympi never overwrites an input "
                             "(write the output elsewhere)")


def _new_file_mode() -> int:
    """The permissions open() gives a new file (0666 less the umask); mkstemp's are 0600."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


@contextmanager
def output_stream(path: str | os.PathLike[str], binary: bool = False, mode: int | None = None) -> Iterator[IO[Any]]:
    """A file object to write `path` through: a temporary file beside it (symbolic links followed, so a link
    keeps pointing at the new file), flushed to disk and renamed over `path` when the block ends; removed, with
    `path` untouched, when the block raises. `mode`: the permissions (default: the target's, else 0666 less the
    umask). OSError when the directory cannot take the file."""
    target = Path(os.path.realpath(path))
    if mode is None:
        mode = target.stat().st_mode & 0o7777 if target.is_file() else _new_file_mode()
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    tmp = Path(tmp_name)
    try:
        stream: IO[Any] = os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8")
        with stream:
            yield stream
            stream.flush()
            os.fsync(stream.fileno())  # the data is on disk before the name points at it
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_output(path: str | os.PathLike[str], data: str | bytes, mode: int | None = None) -> Path:
    """Writes `data` (text as UTF-8, or bytes) to `path` through output_stream; returns `path`. OSError when it
    cannot be written (nothing changed then)."""
    with output_stream(path, binary=isinstance(data, bytes), mode=mode) as stream:
        stream.write(data)
    return Path(path)
