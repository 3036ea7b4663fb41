"""Many slots at once as numpy arrays: their distances and packages on a cluster tree (the cost functions of the
placement). Apart from place.tree so that the launch layer, which needs only the tree, does not import numpy."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from hympi.place.tree import ClusterTree, NodeTree, Slot

# Many slots as arrays: (nodes, cores).
Slots = tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]


def slot_arrays(slots: Sequence[Slot]) -> Slots:
    """The nodes and cores of the slots as arrays."""
    return (np.fromiter((s.node for s in slots), dtype=np.int64, count=len(slots)),
            np.fromiter((s.core for s in slots), dtype=np.int64, count=len(slots)))


@lru_cache(maxsize=16)
def core_distances(tree: NodeTree) -> npt.NDArray[np.int64]:
    """Hops from core a up to the lowest common ancestor with core b, for every two cores of one node."""
    probe = ClusterTree(tree, 1)
    n = len(tree.cores)
    return np.array([[probe.distance(Slot(0, a), Slot(0, b)) for b in range(n)] for a in range(n)], dtype=np.int64)


def distances(cluster: ClusterTree, a: Slots, b: Slots) -> npt.NDArray[np.int64]:
    """ClusterTree.distance() of many pairs at once: a[k] to b[k], each given as (node array, core array);
    IndexError for a core a node does not have."""
    if cluster.uniform:
        within = core_distances(cluster.tree)[a[1], b[1]]
    else:
        within = np.zeros(len(a[0]), dtype=np.int64)
        for k, tree in enumerate(cluster.node_trees):
            here = (a[0] == k) & (b[0] == k)
            d = core_distances(tree)[a[1][here], b[1][here]]
            within[here] = np.where(d > 0, d + cluster.height - tree.height, 0)
    return np.where(a[0] != b[0], cluster.height + 1, within)


def packages(cluster: ClusterTree, at: Slots) -> npt.NDArray[np.int64]:
    """The package of every slot (node array, core array); IndexError for a core a node does not have."""
    if cluster.uniform:
        return np.array([c.package for c in cluster.tree.cores], dtype=np.int64)[at[1]]
    out = np.zeros(len(at[0]), dtype=np.int64)
    for k, tree in enumerate(cluster.node_trees):
        here = at[0] == k
        out[here] = np.array([c.package for c in tree.cores], dtype=np.int64)[at[1][here]]
    return out
