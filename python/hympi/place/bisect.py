"""Minimum-cut bisection into two parts of exact sizes: multilevel (METIS/Scotch style), boundary FM refinement.

1. Coarsen by heavy-edge matching until at most COARSEST vertices remain (or matching stops shrinking the graph).
2. On the coarsest graph, grow part 0 greedily from TRIES seeds, refine each with FM, keep the smallest cut.
3. Project back level by level; on each level restore the balance (best-gain moves off the heavy side) and refine
   with Fiduccia-Mattheyses passes over the boundary vertices: moves in gain order from a priority queue (a heap
   with lazy invalidation: the gains are real-valued volumes, so integer gain buckets do not apply), each vertex
   moved once per pass, the pass rolled back to its best balanced prefix and stopped after FM_PATIENCE moves
   without improvement. On the finest level the balance is exact (part 0 holds exactly size0 ranks); moves may
   leave it off by one rank in between, which lets FM swap ranks the way Kernighan-Lin does.
A level costs O(edges) numpy work plus O(boundary x degree x log) Python steps per FM pass.
"""

from __future__ import annotations

import heapq
import math

import numpy as np
import numpy.typing as npt

from hympi.place.graph import Graph, coarsen, heavy_edge_matching

Part = npt.NDArray[np.int8]

COARSEST = 128  # stop coarsening at this many vertices
TRIES = 4  # initial partitions (seeds) tried on the coarsest graph
FM_PASSES = 12  # at most this many FM passes per level
FM_PATIENCE = 150  # a pass stops after this many moves without a better balanced cut (fewer on small graphs)
_EPS = 1e-9


def _gains(g: Graph, part: Part) -> list[float]:
    """External minus internal edge weight of every vertex (the cut reduction if it changed sides)."""
    same = part[g.rows] == part[g.indices]
    signed = np.where(same, -g.weights, g.weights)
    return np.bincount(g.rows, weights=signed, minlength=g.n).tolist()  # type: ignore[no-any-return]


class _Refiner:
    """FM state of one level: adjacency as Python lists (fast scalar access), parts, gains, part-0 weight."""

    def __init__(self, g: Graph, part: Part, size0: int) -> None:
        self.graph = g
        self.indptr: list[int] = g.indptr.tolist()
        self.indices: list[int] = g.indices.tolist()
        self.weights: list[float] = g.weights.tolist()
        self.vw: list[int] = g.vweights.tolist()
        self.part: list[int] = part.tolist()
        self.gain = _gains(g, part)
        self.w0 = int(g.vweights[part == 0].sum())
        self.size0 = size0

    def move(self, v: int) -> None:
        """Moves v to the other part, updating its neighbours' gains."""
        side = self.part[v]
        self.part[v] = 1 - side
        self.w0 += self.vw[v] if side == 1 else -self.vw[v]
        self.gain[v] = -self.gain[v]
        part, gain, weights, indices = self.part, self.gain, self.weights, self.indices
        for e in range(self.indptr[v], self.indptr[v + 1]):
            u = indices[e]
            gain[u] += 2 * weights[e] if part[u] == side else -2 * weights[e]

    def _boundary(self) -> list[int]:
        """Vertices with a neighbour in the other part."""
        part = np.asarray(self.part, dtype=np.int8)
        rows = self.graph.rows
        return np.unique(rows[part[rows] != part[self.graph.indices]]).tolist()  # type: ignore[no-any-return]

    def after(self, v: int) -> int:
        """Part-0 weight if v moved."""
        return self.w0 + (self.vw[v] if self.part[v] == 1 else -self.vw[v])

    def rebalance(self, tol: int) -> None:
        """Moves best-gain vertices off the heavy part until part 0 is within tol of size0 (each move leaves the
        other part within tol, so the heavy part stays the heavy one)."""
        if abs(self.w0 - self.size0) <= tol:
            return
        heavy = 0 if self.w0 > self.size0 else 1
        part, gain = self.part, self.gain
        heap = [(-gain[v], v) for v in range(len(part)) if part[v] == heavy]
        heapq.heapify(heap)
        while heap and abs(self.w0 - self.size0) > tol:
            key, v = heapq.heappop(heap)
            if part[v] != heavy or -key != gain[v] or self.vw[v] > abs(self.w0 - self.size0) + tol:
                continue  # stale, or too heavy now and later (the room only shrinks)
            self.move(v)
            for e in range(self.indptr[v], self.indptr[v + 1]):
                u = self.indices[e]
                if part[u] == heavy:
                    heapq.heappush(heap, (-gain[u], u))

    def fm_pass(self, move_tol: int, final_tol: int) -> float:
        """One FM pass (moves within move_tol of size0, result within final_tol); returns the cut reduction."""
        part, gain = self.part, self.gain
        heaps: tuple[list[tuple[float, int]], list[tuple[float, int]]] = ([], [])
        indptr, indices = self.indptr, self.indices
        for v in self._boundary():
            heaps[part[v]].append((-gain[v], v))
        for h in heaps:
            heapq.heapify(h)
        locked = bytearray(len(part))
        moved: list[int] = []
        reduction, best, best_len = 0.0, 0.0, 0
        if abs(self.w0 - self.size0) > final_tol:
            best = -math.inf  # any balanced prefix is better than an unbalanced start
        patience = min(FM_PATIENCE, max(FM_PATIENCE // 10, len(part) // 8))
        while len(moved) - best_len < patience:
            choice = -1
            for side in (0, 1):
                h = heaps[side]
                while h and (locked[h[0][1]] or part[h[0][1]] != side or -h[0][0] != gain[h[0][1]]):
                    heapq.heappop(h)
                if h and abs(self.after(h[0][1]) - self.size0) <= move_tol and (
                        choice < 0 or gain[h[0][1]] > gain[choice]):
                    choice = h[0][1]
            if choice < 0:
                break
            reduction += gain[choice]
            self.move(choice)
            locked[choice] = 1
            moved.append(choice)
            for e in range(indptr[choice], indptr[choice + 1]):
                u = indices[e]
                if not locked[u]:
                    heapq.heappush(heaps[part[u]], (-gain[u], u))
            if reduction > best + _EPS and abs(self.w0 - self.size0) <= final_tol:
                best, best_len = reduction, len(moved)
        for v in reversed(moved[best_len:]):
            self.move(v)
        return best if best_len else 0.0

    def refine(self, move_tol: int, final_tol: int) -> None:
        """FM passes until one gains nothing (at most FM_PASSES)."""
        for _ in range(FM_PASSES):
            if self.fm_pass(move_tol, final_tol) <= _EPS:
                break

    def result(self) -> Part:
        """The parts as an array."""
        return np.asarray(self.part, dtype=np.int8)


def _grow(g: Graph, size0: int, seed: int, tol: int) -> Part:
    """Part 0 grown from `seed` by the vertex most connected to it (net of its other edges) until it weighs
    size0 (within tol); a disconnected remainder restarts from its lowest free vertex."""
    indptr, indices, weights = g.indptr.tolist(), g.indices.tolist(), g.weights.tolist()
    vw = g.vweights.tolist()
    degree = np.bincount(g.rows, weights=g.weights, minlength=g.n).tolist()
    inside = [0.0] * g.n
    part = [1] * g.n
    w0 = 0
    skipped = bytearray(g.n)  # too heavy to fit: never added
    heap: list[tuple[float, int]] = [(degree[seed], seed)]
    free = 0
    while w0 < size0:
        if not heap:
            while free < g.n and (part[free] == 0 or skipped[free]):
                free += 1
            if free == g.n:
                break
            heap.append((-(2 * inside[free] - degree[free]), free))
            free += 1
        key, v = heapq.heappop(heap)
        if part[v] == 0 or skipped[v] or -key != 2 * inside[v] - degree[v]:
            continue
        if w0 + vw[v] > size0 + tol:
            skipped[v] = 1
            continue
        part[v] = 0
        w0 += vw[v]
        for e in range(indptr[v], indptr[v + 1]):
            u = indices[e]
            if part[u] == 1:
                inside[u] += weights[e]
                heapq.heappush(heap, (-(2 * inside[u] - degree[u]), u))
    return np.asarray(part, dtype=np.int8)


def _initial(g: Graph, size0: int, tol: int, final_tol: int, rng: np.random.Generator) -> Part:
    """Best of TRIES grown-and-refined partitions; seeds: the least connected vertex, then random ones."""
    degree = np.bincount(g.rows, weights=g.weights, minlength=g.n)
    seeds = [int(np.argmin(degree)), *rng.choice(g.n, size=min(TRIES - 1, g.n), replace=False).tolist()]
    best: tuple[float, Part] | None = None
    for seed in dict.fromkeys(seeds):
        refiner = _Refiner(g, _grow(g, size0, seed, tol), size0)
        refiner.rebalance(final_tol)
        refiner.refine(max(tol, 1), final_tol)
        part = refiner.result()
        cut = g.cut(part)
        if best is None or cut < best[0] - _EPS:
            best = (cut, part)
    assert best is not None
    return best[1]


def bisect(g: Graph, size0: int, rng: np.random.Generator) -> Part:
    """Parts 0/1 of every vertex, part 0 holding exactly size0 vertex weight (unit weights: ranks), minimal cut;
    size0 must lie strictly between 0 and the total weight (the caller's trivial splits need no bisection)."""
    total = int(g.vweights.sum())
    levels, maps = [g], []
    # Coarse vertices may not outweigh the smaller part's share of a coarsest graph, or balance becomes lumpy.
    cap = min(math.ceil(1.5 * total / COARSEST), max(1, min(size0, total - size0) // 2))
    while levels[-1].n > COARSEST:
        cmap, nc = heavy_edge_matching(levels[-1], cap, rng)
        if nc > 0.95 * levels[-1].n:
            break
        levels.append(coarsen(levels[-1], cmap, nc))
        maps.append(cmap)
    top = levels[-1]
    tol_top = 0 if len(levels) == 1 else int(top.vweights.max())
    part = _initial(top, size0, tol_top, tol_top, rng)
    for depth in range(len(levels) - 2, -1, -1):
        part = part[maps[depth]]
        level = levels[depth]
        tol = 0 if depth == 0 else int(level.vweights.max())
        refiner = _Refiner(level, part, size0)
        refiner.rebalance(tol)
        refiner.refine(max(tol, 1), tol)
        part = refiner.result()
    return part
