"""Communication matrices, stored sparse: read and validate (hympi-profile JSON, dense text, coordinate list), write.

Memory grows with the number of nonzero entries; only the dense formats themselves (a profile's `bytes`, a text
matrix) are n x n on disk, and they are turned into coordinates row by row.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import numpy as np
import numpy.typing as npt

from hympi.errors import UsageError
from hympi.limits import MAX_JOB_THREADS, MAX_MATRIX_VOLUME
from hympi.numbers import ascii_float, ascii_int
from hympi.outputs import output_stream, write_output
from hympi.textfile import require_regular_file

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
COO_HEADER = "ranks"  # first line of a coordinate list: 'ranks N'


@dataclass(frozen=True, eq=False)
class CommMatrix:
    """Volume sent from rank src[k] to rank dst[k] (bytes, or any weight > 0), over `ranks` ranks: one entry per
    ordered pair, sorted by (src, dst), no zeros and no diagonal (a rank's traffic to itself crosses no link)."""

    ranks: int
    src: IntArray
    dst: IntArray
    vol: FloatArray
    source: str = ""

    @classmethod
    def from_entries(cls, ranks: int, src: npt.ArrayLike, dst: npt.ArrayLike, vol: npt.ArrayLike,
                     source: str = "") -> CommMatrix:
        """Sums duplicate (src, dst) pairs and drops zeros and the diagonal; the caller has validated the values
        (ValueError if the arrays differ in length)."""
        s, d = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
        v = np.asarray(vol, dtype=np.float64)
        if not len(s) == len(d) == len(v):
            raise ValueError(f"{len(s)} sources, {len(d)} destinations, {len(v)} volumes")
        keep = (s != d) & (v != 0)
        key, inverse = np.unique(s[keep] * ranks + d[keep], return_inverse=True)
        sums = np.bincount(inverse.ravel(), weights=v[keep], minlength=len(key))
        return cls(ranks, key // ranks, key % ranks, sums.astype(np.float64), source)

    @classmethod
    def from_dense(cls, rows: Sequence[Sequence[float]], source: str = "") -> CommMatrix:
        """From a square list of rows (small matrices: tests, generators); entries are not validated, ValueError
        if the rows are not square."""
        a = np.asarray(rows, dtype=np.float64).reshape(len(rows), len(rows))
        s, d = np.nonzero(a)
        return cls.from_entries(len(rows), s, d, a[s, d], source)

    @property
    def nnz(self) -> int:
        """Stored (nonzero, off-diagonal) entries."""
        return len(self.vol)

    def dense(self) -> list[list[float]]:
        """The n x n matrix as lists (small matrices only: O(n^2) memory)."""
        out = np.zeros((self.ranks, self.ranks))
        out[self.src, self.dst] = self.vol
        return [[float(x) for x in row] for row in out]

    def total(self) -> float:
        """Sum of all stored (off-diagonal) volume."""
        return float(self.vol.sum())


def _entries(values: list[str], where: str) -> FloatArray:
    """One text row as finite numbers >= 0; UsageError naming `where` and the first bad entry."""
    bad = next((x for x in values if not _parses(ascii_float, x)), None)
    if bad is not None:
        raise UsageError(f"{where}: non-numeric matrix entry '{bad}'")
    row = np.array(values, dtype=np.float64)
    bad_at = np.flatnonzero(~np.isfinite(row) | (row < 0))
    if len(bad_at):
        k = int(bad_at[0])
        kind = "non-finite" if not math.isfinite(row[k]) else "negative"
        raise UsageError(f"{where}: {kind} matrix entry '{values[k]}' (column {k})")
    return row


def _parses(parse: Callable[[str], object], text: str) -> bool:
    """Whether `parse` (hympi.numbers' ascii_int or ascii_float) accepts the text."""
    try:
        parse(text)
    except ValueError:
        return False
    return True


def _dense_rows(rows: Iterable[tuple[str, list[str]]], source: str) -> CommMatrix:
    """(where, entries) of every row of a square matrix -> sparse; UsageError naming the first bad row or entry."""
    src: list[IntArray] = []
    dst: list[IntArray] = []
    vol: list[FloatArray] = []
    width = -1
    count = 0
    for where, values in rows:
        if width < 0:
            width = len(values)
        elif len(values) != width:
            raise UsageError(f"{where}: matrix is not square: row {count} has {len(values)} entries, expected "
                             f"{width}")
        row = _entries(values, where)
        nz = np.flatnonzero(row)
        src.append(np.full(len(nz), count, dtype=np.int64))
        dst.append(nz.astype(np.int64))
        vol.append(row[nz])
        count += 1
    if count == 0:
        raise UsageError(f"matrix {source} is empty")
    if count != width:
        raise UsageError(f"matrix {source} is not square: {count} rows of {width} entries")
    return CommMatrix.from_entries(count, np.concatenate(src), np.concatenate(dst), np.concatenate(vol), source)


def _read_profile(text: str, path: str) -> CommMatrix:
    """A hympi profile (its `bytes`, row i = sent by rank i) or any JSON object with a square `bytes` list."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"matrix '{path}' is not valid JSON: {exc.msg} at line {exc.lineno}") from None
    except RecursionError:  # nested deeper than the parser's stack: not a profile either
        raise UsageError(f"matrix '{path}' is not valid JSON: nested too deeply") from None
    if not isinstance(data, dict) or not isinstance(data.get("bytes"), list):
        raise UsageError(f"matrix '{path}' has no 'bytes' list (expected a hympi profile file)")
    rows = data["bytes"]
    if not all(isinstance(r, list) for r in rows):
        raise UsageError(f"matrix '{path}': 'bytes' must be a list of rows")
    ranks = data.get("ranks", len(rows))
    if ranks != len(rows):
        raise UsageError(f"matrix '{path}': 'ranks' is {ranks} but 'bytes' has {len(rows)} rows")
    return _dense_rows(((f"{path} 'bytes' row {i}", [str(x) for x in r]) for i, r in enumerate(rows)), path)


def _data_lines(stream: TextIO) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of every line that is not blank or a '#' comment; commas count as blanks."""
    for number, raw in enumerate(stream, 1):
        line = raw.split("#", 1)[0].replace(",", " ").strip()
        if line:
            yield number, line.split()


def _read_coo(lines: Iterable[tuple[int, list[str]]], header: tuple[int, list[str]], path: str) -> CommMatrix:
    """'ranks N' then 'src dst volume' lines (ranks 0..N-1, volume finite >= 0; duplicates add up)."""
    number, fields = header
    if len(fields) != 2 or not _parses(ascii_int, fields[1]) or int(fields[1]) < 1:
        raise UsageError(f"{path}:{number}: expected 'ranks N' with N >= 1, got '{' '.join(fields)}'")
    # A rank is at least one thread of the job; beyond that the (src, dst) keys of from_entries overflow int64.
    ranks = MAX_JOB_THREADS.check(f"{path}:{number}: 'ranks'", int(fields[1]))
    src: list[int] = []
    dst: list[int] = []
    vol: list[float] = []
    for number, fields in lines:
        if len(fields) != 3:
            raise UsageError(f"{path}:{number}: expected 'src dst volume', got '{' '.join(fields)}'")
        for text in fields[:2]:
            if not _parses(ascii_int, text):
                raise UsageError(f"{path}:{number}: rank '{text}' is not an integer")
            if not 0 <= int(text) < ranks:
                raise UsageError(f"{path}:{number}: rank {text} out of range 0..{ranks - 1}")
        try:
            v = ascii_float(fields[2])
        except ValueError:
            raise UsageError(f"{path}:{number}: volume '{fields[2]}' is not a number") from None
        if not math.isfinite(v) or v < 0:
            raise UsageError(f"{path}:{number}: volume '{fields[2]}' must be finite and >= 0")
        src.append(int(fields[0]))
        dst.append(int(fields[1]))
        vol.append(v)
    return CommMatrix.from_entries(ranks, src, dst, vol, path)


def read_matrix(path: str | Path) -> CommMatrix:
    """Reads a hympi-profile JSON file, a coordinate list ('ranks N' line, then 'src dst volume' lines) or a dense
    text matrix (rows of whitespace/comma separated numbers); '#' starts a comment. UsageError names file:line and
    the bad value."""
    name = str(path)
    try:
        require_regular_file(path, "matrix")
        with open(path, encoding="utf-8") as stream:
            first = stream.read(1)
            while first.isspace():
                first = stream.read(1)
            stream.seek(0)
            if first == "{":
                return _within_limit(_read_profile(stream.read(), name))
            lines = _data_lines(stream)
            head = next(lines, None)
            if head is None:
                raise UsageError(f"matrix {name} is empty")
            if head[1][0] == COO_HEADER:
                return _within_limit(_read_coo(lines, head, name))
            rest = ((f"{name}:{number}", fields) for number, fields in lines)
            return _within_limit(_dense_rows(_chain((f"{name}:{head[0]}", head[1]), rest), name))
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise UsageError(f"cannot read matrix '{path}': {reason}") from None


def _within_limit(matrix: CommMatrix) -> CommMatrix:
    """`matrix`, or UsageError naming its file when its total volume exceeds MAX_MATRIX_VOLUME (each entry is
    finite, but their sum, duplicates added up, may not be)."""
    with np.errstate(over="ignore"):  # an overflow is the inf refused here, not a warning besides
        total = matrix.total()
    if not total <= MAX_MATRIX_VOLUME:
        raise UsageError(f"matrix {matrix.source}: total volume {total:g} exceeds hympi's limit of "
                         f"{MAX_MATRIX_VOLUME:g} (placement costs sum volume x distance in floating point)")
    return matrix


def _chain(first: tuple[str, list[str]], rest: Iterable[tuple[str, list[str]]]) -> Iterable[tuple[str, list[str]]]:
    """`first`, then `rest`."""
    yield first
    yield from rest


def write_matrix(matrix: CommMatrix, path: str | Path, comment: str = "") -> None:
    """Writes the dense text form (one row per line: O(n^2) text, written a row at a time), readable by
    read_matrix; OSError if the file cannot be written."""
    starts = np.searchsorted(matrix.src, np.arange(matrix.ranks + 1))  # entries are sorted by (src, dst)
    with output_stream(path) as out:
        for line in comment.splitlines() if comment else []:
            out.write(f"# {line}\n")
        for i in range(matrix.ranks):
            row = ["0"] * matrix.ranks
            for k in range(starts[i], starts[i + 1]):
                row[int(matrix.dst[k])] = f"{matrix.vol[k]:g}"
            out.write(" ".join(row) + "\n")


def write_coo(matrix: CommMatrix, path: str | Path, comment: str = "") -> None:
    """Writes the coordinate list ('ranks N', then one 'src dst volume' line per entry), readable by read_matrix;
    OSError if the file cannot be written."""
    lines = [f"# {line}" for line in comment.splitlines()] if comment else []
    lines.append(f"{COO_HEADER} {matrix.ranks}")
    lines += [f"{s} {d} {v:.17g}" for s, d, v in zip(matrix.src.tolist(), matrix.dst.tolist(), matrix.vol.tolist(),
                                                        strict=True)]
    write_output(path, "\n".join(lines) + "\n")


def ring(n: int, volume: float = 1.0) -> CommMatrix:
    """Each rank sends `volume` to its successor and predecessor on a periodic ring."""
    r = np.arange(n)
    src = np.concatenate([r, r]) if n > 1 else r[:0]
    dst = np.concatenate([(r + 1) % n, (r - 1) % n]) if n > 1 else r[:0]
    return CommMatrix.from_entries(n, src, dst, np.full(len(src), volume), f"ring({n})")


def halo3d(dims: tuple[int, int, int], volume: float = 1.0, periodic: bool = False) -> CommMatrix:
    """6-neighbour halo exchange on a px x py x pz process grid, rank = x + px*(y + py*z)."""
    px, py, pz = dims
    coords = np.indices((px, py, pz)).reshape(3, -1)
    me = coords[0] + px * (coords[1] + py * coords[2])
    src: list[IntArray] = []
    dst: list[IntArray] = []
    for axis, extent in enumerate(dims):
        for step in (-1, 1):
            c = coords.copy()
            c[axis] += step
            inside = (c[axis] >= 0) & (c[axis] < extent)
            if periodic and extent >= 2:
                c[axis] %= extent
                inside[:] = True
            other = c[0] + px * (c[1] + py * c[2])
            src.append(me[inside])
            dst.append(other[inside])
    s, d = np.concatenate(src), np.concatenate(dst)
    # A periodic extent of 2 reaches the same neighbour both ways: the two messages add up.
    return CommMatrix.from_entries(px * py * pz, s, d, np.full(len(s), volume), f"halo3d({px}x{py}x{pz})")
