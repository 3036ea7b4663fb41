"""The machine as a tree of cores (from hwloc XML), replicated over nodes or one per unlike node, with tree
distances."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from hympi.errors import UsageError
from hympi.topology import run_hympi_info

# hwloc 1.x names for the same objects.
_ALIASES = {"Socket": "Package"}
# The (type, cpuset) of every object from the machine root down to one object.
_Chain = list[tuple[str, frozenset[int]]]


def parse_cpuset(text: str) -> frozenset[int]:
    """hwloc's XML bitmap ('0x000000ff' or comma-separated 32-bit words, most significant first)."""
    value = 0
    for raw in text.split(","):
        word = raw.strip().removeprefix("0x")
        if not word or "f...f" in word:
            raise UsageError(f"unsupported infinite cpuset '{text}' in topology XML")
        value = (value << 32) | int(word, 16)
    return frozenset(i for i in range(value.bit_length()) if value >> i & 1)


def parse_cpu_list(text: str) -> frozenset[int]:
    """hwloc list syntax ('0-3,8'), as hympi-affinity prints bound sets."""
    out: set[int] = set()
    for raw in text.split(","):
        part = raw.strip()
        if not part:
            continue
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return frozenset(out)


@dataclass(frozen=True)
class Core:
    """One core of a node: logical index, its package and NUMA domain, its PUs (OS indexes)."""

    index: int
    package: int
    core_in_package: int
    numa: int
    pus: frozenset[int]
    path: tuple[frozenset[int], ...]  # distinct cpusets from the machine down to this core


@dataclass(frozen=True)
class NodeTree:
    """The cores of one node with the hierarchy above them."""

    cores: tuple[Core, ...]
    packages: int
    numa_nodes: int
    spec: str

    @property
    def height(self) -> int:
        """Levels from the node root down to a core (the largest distance inside the node)."""
        return max(len(c.path) for c in self.cores) - 1

    def children(self, prefix: tuple[frozenset[int], ...], cores: tuple[int, ...]) -> list[tuple[int, ...]]:
        """Cores under `prefix`, grouped by the next level down (in logical order)."""
        depth = len(prefix)
        groups: dict[frozenset[int], list[int]] = {}
        for c in cores:
            path = self.cores[c].path
            key = path[depth] if depth < len(path) else path[-1]
            groups.setdefault(key, []).append(c)
        return [tuple(g) for g in groups.values()]


def _walk(elem: ET.Element, ancestors: _Chain, out: list[tuple[_Chain, str]]) -> None:
    """Depth-first: records (ancestors, type, cpuset) of every Core (or PU where there are no cores)."""
    kind = _ALIASES.get(elem.get("type", ""), elem.get("type", ""))
    cpuset_text = elem.get("cpuset")
    here = ancestors
    if cpuset_text is not None and kind not in ("NUMANode", "MemCache", "Bridge", "PCIDev", "OSDev", "Misc"):
        here = [*ancestors, (kind, parse_cpuset(cpuset_text))]
        out.append((here, kind))
    for child in elem.findall("object"):
        _walk(child, here, out)


def parse_topology_xml(xml_text: str, spec: str = "") -> NodeTree:
    """Builds the core tree of one node from hwloc XML; raises UsageError for unusable XML."""
    try:
        root = ET.fromstring(xml_text)
    except ET.ParseError as exc:
        raise UsageError(f"topology {spec or 'XML'} is not valid XML: {exc}") from None
    top = root.find("object")
    if top is None:
        raise UsageError(f"topology {spec or 'XML'} has no objects")
    objects: list[tuple[_Chain, str]] = []
    _walk(top, [], objects)
    leaf_kind = "Core" if any(k == "Core" for _, k in objects) else "PU"
    numa_sets = [parse_cpuset(e.get("cpuset", "0x0")) for e in root.iter("object") if e.get("type") == "NUMANode"]
    packages = [chain[-1][1] for chain, k in objects if k == "Package"]
    cores: list[Core] = []
    per_package: dict[int, int] = {}
    for chain, kind in objects:
        if kind != leaf_kind:
            continue
        cpus = chain[-1][1]
        path: list[frozenset[int]] = []
        for _, cs in chain:
            if not path or cs != path[-1]:
                path.append(cs)  # identical cpusets (core = its L1 = its L2) are one level
        pkg = next((i for i, p in enumerate(packages) if cpus <= p), 0)
        numa = next((i for i, s in enumerate(numa_sets) if cpus <= s), 0)
        cores.append(Core(len(cores), pkg, per_package.get(pkg, 0), numa, cpus, tuple(path)))
        per_package[pkg] = per_package.get(pkg, 0) + 1
    if not cores:
        raise UsageError(f"topology {spec or 'XML'} has no cores")
    return NodeTree(tuple(cores), max(len(packages), 1), max(len(numa_sets), 1), spec)


@lru_cache(maxsize=16)
def load_node_tree(spec: str = "this") -> NodeTree:
    """The core tree of 'this', 'synthetic:...' or an XML file, loaded and checked by hwloc (hympi-info)."""
    return parse_topology_xml(run_hympi_info(spec, "xml"), spec)


@dataclass(frozen=True)
class Slot:
    """Where one rank goes: a node and a core (logical index) on it."""

    node: int
    core: int


@dataclass(frozen=True)
class ClusterTree:
    """The hardware tree ranks are placed on: `nodes` nodes under a network root, each a copy of `tree`, unless
    `node_trees` gives every node its own tree (unlike nodes; then `tree` is node 0's)."""

    tree: NodeTree
    nodes: int
    node_trees: tuple[NodeTree, ...] = ()

    @classmethod
    def of_nodes(cls, trees: Sequence[NodeTree]) -> ClusterTree:
        """One node per tree: N copies of one tree when they all have the same cores, else a cluster of unlike
        nodes; ValueError for no trees."""
        if not trees:
            raise ValueError("a cluster needs at least one node tree")
        first = trees[0]
        if all(_same_shape(first, t) for t in trees[1:]):
            return cls(first, len(trees))
        return cls(first, len(trees), tuple(trees))

    @property
    def uniform(self) -> bool:
        """True when every node is a copy of `tree`."""
        return not self.node_trees

    def tree_of(self, node: int) -> NodeTree:
        """The tree of node `node` (IndexError outside 0..nodes-1 on unlike nodes)."""
        return self.node_trees[node] if self.node_trees else self.tree

    def cores_of(self, node: int) -> int:
        """Cores of node `node`."""
        return len(self.tree_of(node).cores)

    @property
    def cores_per_node(self) -> int:
        """Cores of every node; ValueError on unlike nodes (cores_of gives each node's)."""
        if self.node_trees:
            raise ValueError("unlike nodes have no single cores-per-node count; use cores_of(node)")
        return len(self.tree.cores)

    @property
    def height(self) -> int:
        """The largest distance inside any node; crossing nodes costs one more."""
        return max(t.height for t in self.node_trees) if self.node_trees else self.tree.height

    def distance(self, a: Slot, b: Slot) -> int:
        """Hops from a core up to the lowest common ancestor: 0 same core .. height+1 across nodes, a shorter node's
        missing levels counted as unshared on unlike nodes."""
        if a.node != b.node:
            return self.height + 1
        tree = self.tree_of(a.node)
        pa, pb = tree.cores[a.core].path, tree.cores[b.core].path
        common = 0
        for x, y in zip(pa, pb, strict=False):
            if x != y:
                break
            common += 1
        if pa == pb:
            return 0
        # Every node is counted from the network root: the levels a shorter node lacks are levels its cores do
        # not share, so sharing only the node costs the same on every node (no padding on identical nodes).
        return max(len(pa), len(pb)) - common + self.height - tree.height

    def level(self, a: Slot, b: Slot) -> str:
        """'inter-node', 'inter-package' or 'intra-package' (the intra-node communication ratio of Wang et al.,
        "Research of MPI programs optimization technology on multi-core clusters", §3.3, splits these)."""
        if a.node != b.node:
            return "inter-node"
        tree = self.tree_of(a.node)
        if tree.cores[a.core].package != tree.cores[b.core].package:
            return "inter-package"
        return "intra-package"


def _same_shape(a: NodeTree, b: NodeTree) -> bool:
    """Whether two node trees have the same cores and hierarchy (their specs may differ)."""
    return a.cores == b.cores and a.packages == b.packages and a.numa_nodes == b.numa_nodes
