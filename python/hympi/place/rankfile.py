"""Rankfiles: Open MPI's `rank N=host slot=P:C`, the MPICH/Hydra equivalent, and reading them back."""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from hympi.errors import UsageError
from hympi.jsontypes import JsonObject
from hympi.place.tree import ClusterTree, Slot, load_node_tree, parse_cpu_list
from hympi.textfile import read_utf8


def write_openmpi_rankfile(cluster: ClusterTree, slots: Sequence[Slot], hosts: Sequence[str]) -> str:
    """`rank r=host slot=package:core-in-package` lines (logical indexes, as Open MPI's rankfile reads them)."""
    lines = []
    for rank, slot in enumerate(slots):
        core = cluster.tree_of(slot.node).cores[slot.core]
        lines.append(f"rank {rank}={hosts[slot.node]} slot={core.package}:{core.core_in_package}")
    return "\n".join(lines) + "\n"


def write_hydra(cluster: ClusterTree, slots: Sequence[Slot], hosts: Sequence[str], rankfile_name: str) -> str:
    """A Hydra host file (one `host:1` line per rank, in rank order) and the -bind-to user: list to use with it.

    Hydra binds the k-th process of every host to the k-th entry of one list, so the map is exact
    only when all nodes use the same core sequence; otherwise the per-node lists are given as comments.
    """
    per_node: dict[int, list[str]] = {}
    for slot in slots:
        pus = sorted(cluster.tree_of(slot.node).cores[slot.core].pus)
        per_node.setdefault(slot.node, []).append("+".join(str(p) for p in pus))
    lists = {",".join(v) for v in per_node.values()}
    head = [f"# MPICH/Hydra equivalent of {rankfile_name}: one line per rank, in rank order.",
            f"# mpiexec -f {rankfile_name}.hydra -n {len(slots)} -bind-to user:{min(lists)} ./app"]
    if len(lists) > 1:
        head.append("# nodes use different core sequences; Hydra's user binding takes one list for all hosts:")
        head += [f"#   {hosts[node]}: -bind-to user:{','.join(v)}" for node, v in sorted(per_node.items())]
    return "\n".join(head + [f"{hosts[s.node]}:1" for s in slots]) + "\n"


@dataclass(frozen=True)
class RankfileEntry:
    """One `rank N=host slot=P:C` line."""

    rank: int
    host: str
    package: int
    core: int


# A host name as hympi writes and reads it in a rankfile: RFC 1123 letters, digits, '-' and '.' (and '_', which some
# sites use), starting with a letter, digit or '_'. Whitespace, '#', '=', ',' and ':' are the separators of the
# rankfile, its comments, --hosts and the Hydra host file ('host:1'), so a name holding one cannot be read back.
HOST_NAME = r"[A-Za-z0-9_][A-Za-z0-9_.-]*"
_HOST = re.compile(HOST_NAME)
_LINE = re.compile(rf"^rank\s+(\d+)\s*=\s*({HOST_NAME})\s+slot\s*=\s*(\d+):(\d+)\s*$")


# The longest name DNS can resolve (RFC 1035: 253 characters written out).
MAX_HOST_NAME = 253


def check_host_names(names: Sequence[str], source: str) -> list[str]:
    """`names`, one per node, as a list, or UsageError naming `source` (e.g. '--hosts') and the first name a rankfile
    cannot hold (the rule read_rankfile parses with: HOST_NAME, at most MAX_HOST_NAME characters) or that repeats
    (two nodes of one name would put two ranks on every slot of it)."""
    seen: set[str] = set()
    for name in names:
        if _HOST.fullmatch(name) is None:
            raise UsageError(f"{source}: host name {name[:80]!r} is not a rankfile host name (letters, digits, '.', "
                             "'-' and '_', not starting with '.' or '-')")
        if len(name) > MAX_HOST_NAME:
            raise UsageError(f"{source}: host name {name[:40]!r}... has {len(name)} characters, more than the "
                             f"{MAX_HOST_NAME} of any name DNS resolves")
        if name in seen:
            raise UsageError(f"{source}: host name {name!r} is given twice (one name per node)")
        seen.add(name)
    return list(names)


def read_rankfile(path: str | Path) -> list[RankfileEntry]:
    """Parses the `slot=P:C` rankfiles hympi place writes; raises UsageError naming a bad line."""
    try:
        text = read_utf8(path, "rankfile")
    except OSError as exc:
        raise UsageError(f"cannot read rankfile '{path}': {exc.strerror}") from None
    entries = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        m = _LINE.match(line)
        if m is None:
            raise UsageError(f"rankfile {path} line {number} is not 'rank N=host slot=P:C': '{line}'")
        entries.append(RankfileEntry(int(m[1]), m[2], int(m[3]), int(m[4])))
    return entries


def expected_sets(cluster: ClusterTree, entries: Sequence[RankfileEntry]) -> dict[int, frozenset[int]]:
    """The PU set (OS indexes) each rank of a rankfile should be bound to, on this node's tree."""
    out = {}
    for e in entries:
        core = next((c for c in cluster.tree.cores if c.package == e.package and c.core_in_package == e.core), None)
        if core is None:
            raise UsageError(f"rankfile slot={e.package}:{e.core} of rank {e.rank} does not exist on this machine "
                             f"({cluster.tree.packages} package(s), {len(cluster.tree.cores)} cores)")
        out[e.rank] = core.pus
    return out


def check_rankfile(path: str | Path, ranks: int) -> list[RankfileEntry]:
    """A rankfile for `ranks` ranks: every rank 0..ranks-1 exactly once (raises UsageError otherwise)."""
    entries = read_rankfile(path)
    seen = sorted(e.rank for e in entries)
    if seen != list(range(ranks)):
        raise UsageError(f"rankfile {path} places ranks {seen[:8]}{'...' if len(seen) > 8 else ''}, "
                         f"expected exactly 0..{ranks - 1}")
    return entries


# Set by the resource managers and hostfile options that give mpirun hosts besides this one.
_ALLOCATION_VARS = ("SLURM_JOB_NODELIST", "PBS_NODEFILE", "LSB_HOSTS", "OMPI_MCA_orte_default_hostfile",
                    "OMPI_MCA_prte_default_hostfile")


def local_host_names() -> frozenset[str]:
    """The names by which a rankfile may address this machine."""
    name = socket.gethostname()
    return frozenset({name, name.split(".", 1)[0], socket.getfqdn(), "localhost", "127.0.0.1"})


def other_hosts_possible() -> bool:
    """Whether mpirun may start ranks on hosts besides this one (an allocation or a default hostfile is set)."""
    return any(os.environ.get(var) for var in _ALLOCATION_VARS)


def check_rankfile_fits(path: str | Path, ranks: int, cluster: ClusterTree | None = None) -> list[RankfileEntry]:
    """check_rankfile, plus: every slot exists on this machine's tree and every host is this one.

    Other hosts are accepted only inside an allocation or with a default hostfile (then every node is
    assumed to look like this one). Raises UsageError naming the first bad slot or host.
    """
    entries = check_rankfile(path, ranks)
    cluster = cluster or ClusterTree(load_node_tree("this"), 1)
    expected_sets(cluster, entries)  # UsageError for a package or core this machine does not have
    if not other_hosts_possible():
        names = local_host_names()
        for e in entries:
            if e.host not in names:
                raise UsageError(f"rankfile {path}: host '{e.host}' of rank {e.rank} is not this machine "
                                 f"({socket.gethostname()}) and no allocation or hostfile names other hosts")
    return entries


def binding_problems(rows: Sequence[JsonObject], path: str | Path, cluster: ClusterTree) -> list[str]:
    """Where the observed thread bindings (the HYMPI_RESULT 'binding' rows) differ from the rankfile's slots."""
    expected = expected_sets(cluster, read_rankfile(path))
    problems = []
    for row in rows:
        want = expected.get(int(row["rank"]))
        if want is None:
            problems.append(f"rank {row['rank']} is not in rankfile {path}")
            continue
        bound = parse_cpu_list(str(row.get("bound", "")))
        if bound != want or int(row.get("pu", -1)) not in want:
            problems.append(f"rank {row['rank']} thread {row['thread']} is bound to {row.get('bound')} and ran on "
                            f"PU {row.get('pu')}, rankfile says PUs {','.join(map(str, sorted(want)))}")
    return problems
