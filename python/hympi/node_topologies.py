"""Every node's own topology, as a launched job gathered it (hympi-info --all-nodes): records, the nodes grouped by
topology hash, and what differs between the groups."""

from __future__ import annotations

import json
from dataclasses import dataclass

from hympi.errors import UsageError
from hympi.jsontypes import JsonObject
from hympi.textfile import read_utf8
from hympi.topology import MachineSummary, summary_from_json

# The summary fields people compare nodes by, with their names in tables and messages.
FIELDS = (("packages", "packages"), ("numa_nodes", "NUMA"), ("cores", "cores"), ("pus", "PUs"),
          ("caches", "caches"), ("architecture", "architecture"))


@dataclass(frozen=True)
class NodeTopology:
    """One node: its index, host (with /vnN on virtual nodes), ranks, what its leader loaded, summary and XML."""

    node: int
    host: str
    ranks: int
    source: str
    summary: MachineSummary
    xml: str

    def field(self, key: str) -> str:
        """A summary field as text (caches as 'L1 2x32K, L2 ...')."""
        if key == "caches":
            return ", ".join(f"L{level} {count}x{size // 1024}K" for level, size, count in self.summary.caches) or "-"
        return str(self.summary.as_dict().get(key, ""))


@dataclass(frozen=True)
class Difference:
    """One summary field that is not the same on every node: its value per group of identical nodes."""

    field: str
    values: tuple[tuple[str, tuple[int, ...]], ...]  # (value, nodes with it)


@dataclass(frozen=True)
class NodeTopologies:
    """The topologies of all nodes of a job, in node order."""

    nodes: tuple[NodeTopology, ...]

    def groups(self) -> list[tuple[str, tuple[int, ...]]]:
        """(topology hash, nodes with it), in order of each hash's first node."""
        out: dict[str, list[int]] = {}
        for n in self.nodes:
            out.setdefault(n.summary.hash, []).append(n.node)
        return [(h, tuple(nodes)) for h, nodes in out.items()]

    @property
    def identical(self) -> bool:
        """Whether every node has the same topology hash."""
        return len(self.groups()) == 1

    def differences(self) -> list[Difference]:
        """The summary fields whose value is not the same on every node."""
        out = []
        for key, name in FIELDS:
            values: dict[str, list[int]] = {}
            for n in self.nodes:
                values.setdefault(n.field(key), []).append(n.node)
            if len(values) > 1:
                out.append(Difference(name, tuple((v, tuple(nodes)) for v, nodes in values.items())))
        return out

    def as_dict(self) -> JsonObject:
        """JSON-ready: every node (with its XML, so `hympi place --node-topologies` can rebuild its tree), the groups
        and the differences."""
        return {"nodes": [{"node": n.node, "host": n.host, "ranks": n.ranks, "source": n.source,
                           "summary": n.summary.as_dict(), "xml": n.xml} for n in self.nodes],
                "identical": self.identical,
                "groups": [{"hash": h, "nodes": list(nodes)} for h, nodes in self.groups()],
                "differences": [{"field": d.field,
                                 "values": [{"value": v, "nodes": list(nodes)} for v, nodes in d.values]}
                                for d in self.differences()]}


def _what_is_wrong(exc: Exception) -> str:
    """Why parse_node_topologies' reading failed, in words (not Python's exception names)."""
    if isinstance(exc, json.JSONDecodeError):
        return f"not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
    if isinstance(exc, KeyError):
        return f"no {exc.args[0]!r} where hympi info writes one"
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    return ("a value of the wrong type: an object whose 'nodes' lists one object per node, with integers node and "
            "ranks, texts host, source and xml, and hympi info's summary")


def parse_node_topologies(text: str, origin: str) -> NodeTopologies:
    """The nodes of hympi-info --all-nodes --json output (or of the JSON `hympi info --all-nodes --json` writes);
    UsageError naming `origin` when it is not such JSON."""
    try:
        data = json.loads(text)
        nodes = tuple(NodeTopology(int(n["node"]), str(n["host"]), int(n["ranks"]), str(n["source"]),
                                   summary_from_json(n["summary"]), str(n["xml"])) for n in data["nodes"])
    except (ValueError, KeyError, TypeError, RecursionError) as exc:
        raise UsageError(f"{origin} is not the JSON of hympi info --all-nodes --json ({_what_is_wrong(exc)})"
                         ) from None
    if not nodes:
        raise UsageError(f"{origin} lists no nodes")
    if [n.node for n in nodes] != list(range(len(nodes))):
        raise UsageError(f"{origin}: nodes must be numbered 0..{len(nodes) - 1} in order")
    return NodeTopologies(nodes)


def read_node_topologies(path: str) -> NodeTopologies:
    """The node topologies saved in `path`; UsageError naming the file when it cannot be read or is not that JSON."""
    try:
        text = read_utf8(path, "node topologies")
    except OSError as exc:
        raise UsageError(f"cannot read node topologies {path} ({exc.strerror or exc})") from None
    return parse_node_topologies(text, path)
