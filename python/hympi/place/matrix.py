"""Communication matrices: read, validate and write (hympi-profile JSON or plain text)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from hympi.errors import UsageError


@dataclass(frozen=True)
class CommMatrix:
    """Volume sent from rank i to rank j (bytes, or any non-negative weight), square."""

    volume: tuple[tuple[float, ...], ...]
    source: str = ""

    @property
    def ranks(self) -> int:
        """Number of ranks (rows)."""
        return len(self.volume)

    def symmetric(self) -> tuple[tuple[float, ...], ...]:
        """v[i][j] + v[j][i]: placement cost does not depend on the direction of a message."""
        n = self.ranks
        return tuple(tuple(self.volume[i][j] + self.volume[j][i] for j in range(n)) for i in range(n))

    def total(self) -> float:
        """Sum of all off-diagonal volume (a rank talking to itself never crosses a link)."""
        return sum(v for i, row in enumerate(self.volume) for j, v in enumerate(row) if i != j)


def _number(text: str, where: str) -> float:
    """One matrix entry: a finite number >= 0, else UsageError naming it."""
    try:
        value = float(text)
    except ValueError:
        raise UsageError(f"non-numeric matrix entry '{text}' at {where}") from None
    if not math.isfinite(value):
        raise UsageError(f"non-finite matrix entry '{text}' at {where}")
    if value < 0:
        raise UsageError(f"negative matrix entry '{text}' at {where}")
    return value


def parse_rows(rows: list[list[str]], source: str) -> CommMatrix:
    """Validates rows of text entries into a square, non-negative CommMatrix."""
    if not rows:
        raise UsageError(f"matrix {source} is empty")
    n = len(rows)
    for i, row in enumerate(rows):
        if len(row) != n:
            raise UsageError(f"matrix {source} is not square: row {i} has {len(row)} entries, expected {n}")
    values = tuple(tuple(_number(str(x), f"row {i}, column {j} of {source}") for j, x in enumerate(row))
                   for i, row in enumerate(rows))
    return CommMatrix(values, source)


def read_matrix(path: str | Path) -> CommMatrix:
    """Reads a hympi-profile JSON file ('bytes' key) or a text matrix (whitespace/comma separated, '#' comments)."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as exc:
        raise UsageError(f"cannot read matrix '{path}': {exc.strerror}") from None
    stripped = text.lstrip()
    if stripped.startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise UsageError(f"matrix '{path}' is not valid JSON: {exc.msg} at line {exc.lineno}") from None
        if not isinstance(data, dict) or not isinstance(data.get("bytes"), list):
            raise UsageError(f"matrix '{path}' has no 'bytes' list (expected a hympi profile file)")
        rows = data["bytes"]
        if not all(isinstance(r, list) for r in rows):
            raise UsageError(f"matrix '{path}': 'bytes' must be a list of rows")
        return parse_rows([[str(x) for x in r] for r in rows], str(path))
    rows = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].replace(",", " ").strip()
        if line:
            rows.append(line.split())
    return parse_rows(rows, str(path))


def write_matrix(matrix: CommMatrix, path: str | Path, comment: str = "") -> None:
    """Writes the text form (one row per line), readable by read_matrix."""
    lines = [f"# {line}" for line in comment.splitlines()] if comment else []
    lines += [" ".join(f"{v:g}" for v in row) for row in matrix.volume]
    Path(path).write_text("\n".join(lines) + "\n")


def ring(n: int, volume: float = 1.0) -> CommMatrix:
    """Each rank sends `volume` to its successor and predecessor on a periodic ring."""
    v = [[0.0] * n for _ in range(n)]
    for i in range(n):
        if n > 1:
            v[i][(i + 1) % n] += volume
            v[i][(i - 1) % n] += volume
    return CommMatrix(tuple(tuple(r) for r in v), f"ring({n})")


def halo3d(dims: tuple[int, int, int], volume: float = 1.0, periodic: bool = False) -> CommMatrix:
    """6-neighbour halo exchange on a px x py x pz process grid, rank = x + px*(y + py*z)."""
    px, py, pz = dims
    n = px * py * pz
    v = [[0.0] * n for _ in range(n)]
    for z in range(pz):
        for y in range(py):
            for x in range(px):
                me = x + px * (y + py * z)
                for axis, extent in enumerate(dims):
                    for step in (-1, 1):
                        c = [x, y, z]
                        c[axis] += step
                        if not 0 <= c[axis] < extent:
                            if not periodic or extent < 2:
                                continue
                            c[axis] %= extent
                        other = c[0] + px * (c[1] + py * c[2])
                        if other != me:
                            v[me][other] += volume
    return CommMatrix(tuple(tuple(r) for r in v), f"halo3d({px}x{py}x{pz})")
