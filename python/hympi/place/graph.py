"""Undirected weighted graphs in CSR form: built from a matrix, induced subgraphs, heavy-edge matching, coarsening.

Everything here is O(edges) numpy work except the matching, a Python loop over the vertices (O(edges) steps).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import numpy.typing as npt

from hympi.place.matrix import CommMatrix, FloatArray, IntArray


@dataclass(frozen=True, eq=False)
class Graph:
    """The neighbours of v are indices[indptr[v]:indptr[v+1]], with edge weights `weights`; every edge is stored in
    both directions, no self loops; vweights[v] counts the ranks a (coarse) vertex stands for."""

    indptr: IntArray
    indices: IntArray
    weights: FloatArray
    vweights: IntArray

    @property
    def n(self) -> int:
        """Number of vertices."""
        return len(self.vweights)

    @cached_property
    def rows(self) -> IntArray:
        """The source vertex of every stored edge (the CSR row index expanded; computed once)."""
        return np.repeat(np.arange(self.n, dtype=np.int64), np.diff(self.indptr))

    def cut(self, part: npt.NDArray[np.int8]) -> float:
        """Weight of the edges between different parts."""
        return float(self.weights[part[self.rows] != part[self.indices]].sum()) / 2

    def dense(self) -> list[list[float]]:
        """The weight matrix as lists (small graphs only)."""
        out = np.zeros((self.n, self.n))
        out[self.rows, self.indices] = self.weights
        return [[float(x) for x in row] for row in out]


def _csr(n: int, rows: IntArray, cols: IntArray, weights: FloatArray, vweights: IntArray) -> Graph:
    """CSR of directed entries: duplicates summed, self loops and zero weights dropped (both directions must be
    given)."""
    keep = (rows != cols) & (weights != 0)
    key, inverse = np.unique(rows[keep] * n + cols[keep], return_inverse=True)
    sums = np.bincount(inverse.ravel(), weights=weights[keep], minlength=len(key))
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(key // n, minlength=n), out=indptr[1:])
    return Graph(indptr, (key % n).astype(np.int64), sums.astype(np.float64), vweights)


def from_matrix(matrix: CommMatrix) -> Graph:
    """Edge i-j of weight v_ij + v_ji: placement cost does not depend on the direction of a message."""
    rows = np.concatenate([matrix.src, matrix.dst])
    cols = np.concatenate([matrix.dst, matrix.src])
    return _csr(matrix.ranks, rows, cols, np.concatenate([matrix.vol, matrix.vol]),
                np.ones(matrix.ranks, dtype=np.int64))


def subgraph(g: Graph, members: IntArray) -> Graph:
    """The graph induced by `members` (distinct vertices of g; IndexError outside 0..n-1), vertex k of the result
    being members[k]."""
    k = len(members)
    pos = np.full(g.n, -1, dtype=np.int64)
    pos[members] = np.arange(k, dtype=np.int64)
    starts = g.indptr[members]
    lens = g.indptr[members + 1] - starts
    total = int(lens.sum())
    offsets = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(lens) - lens, lens) + np.repeat(starts, lens)
    rows = np.repeat(np.arange(k, dtype=np.int64), lens)
    cols = pos[g.indices[offsets]]
    inside = cols >= 0
    rows, cols = rows[inside], cols[inside]
    indptr = np.zeros(k + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=k), out=indptr[1:])
    return Graph(indptr, cols, g.weights[offsets][inside], g.vweights[members])


def heavy_edge_matching(g: Graph, max_vweight: int, rng: np.random.Generator) -> tuple[IntArray, int]:
    """Pairs every vertex (visited in random order) with its heaviest-edge unmatched neighbour whose combined
    weight stays <= max_vweight; returns the coarse vertex of every vertex and the number of coarse vertices."""
    indptr, indices, weights = g.indptr.tolist(), g.indices.tolist(), g.weights.tolist()
    vw = g.vweights.tolist()
    match = [-1] * g.n
    for v in rng.permutation(g.n).tolist():
        if match[v] >= 0:
            continue
        best, best_w = v, 0.0
        room = max_vweight - vw[v]
        for e in range(indptr[v], indptr[v + 1]):
            u = indices[e]
            if match[u] < 0 and weights[e] > best_w and vw[u] <= room:
                best, best_w = u, weights[e]
        match[v] = best
        match[best] = v
    partner = np.asarray(match, dtype=np.int64)
    leaders, cmap = np.unique(np.minimum(np.arange(g.n, dtype=np.int64), partner), return_inverse=True)
    return cmap.ravel().astype(np.int64), len(leaders)


def coarsen(g: Graph, cmap: IntArray, nc: int) -> Graph:
    """The graph of the coarse vertices: parallel edges summed, edges inside a coarse vertex dropped."""
    return _csr(nc, cmap[g.rows], cmap[g.indices], g.weights,
                np.bincount(cmap, weights=g.vweights, minlength=nc).astype(np.int64))
