"""One launcher-neutral layout (nodes x ranks per node x threads, binding, distribution or a rankfile), spelled for
Open MPI 4 and 5, MPICH's Hydra and Slurm's srun, with the cpuset every rank and thread is meant to get."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from hympi.contract import enum_names
from hympi.errors import HympiFatal, UsageError, unknown_name
from hympi.limits import MAX_JOB_THREADS, MAX_NODE_PUS, MAX_NODES
from hympi.place.rankfile import check_rankfile, expected_sets
from hympi.place.tree import ClusterTree, NodeTree, load_node_tree

TARGETS = ("openmpi4", "openmpi5", "mpich", "slurm")
# What a launcher can bind to; "none" leaves binding to hympi (HYMPI_BIND) or to nobody.
LAYOUT_BINDS = ("core", "numa", "package")
DISTRIBUTIONS = enum_names("Distribution")
# OpenMP places that hold exactly the set one bind level gives a thread (libgomp: GCC >= 12 knows numa_domains).
OMP_PLACES = {"core": "cores", "numa": "numa_domains", "package": "sockets"}



def layout_words(ranks: int, threads: int) -> str:
    """A layout in words, for tables and sentences: '2 ranks x 1 thread'."""
    return f"{ranks} rank{'' if ranks == 1 else 's'} x {threads} thread{'' if threads == 1 else 's'}"

@dataclass(frozen=True)
class ThreadPlace:
    """Where one thread of one rank is meant to run: its node, rank (global), thread and PU set (OS indexes)."""

    node: int
    rank: int
    thread: int
    cpus: frozenset[int]


def cpu_list(cpus: frozenset[int]) -> str:
    """A PU set in hwloc's list syntax ('0-3,8'), as hympi-affinity prints bound sets."""
    out: list[str] = []
    ordered = sorted(cpus)
    if not ordered:
        return ""
    start = prev = ordered[0]
    for cpu in [*ordered[1:], -2]:
        if cpu != prev + 1:
            out.append(str(start) if start == prev else f"{start}-{prev}")
            start = cpu
        prev = cpu
    return ",".join(out)


def _cores_of(tree: NodeTree, level: str) -> list[list[int]]:
    """Logical core indexes grouped by NUMA domain or package (in index order; empty groups dropped)."""
    groups: dict[int, list[int]] = {}
    for core in tree.cores:
        groups.setdefault(core.numa if level == "numa" else core.package, []).append(core.index)
    return [groups[k] for k in sorted(groups)]


def _need(tree: NodeTree | None) -> NodeTree:
    """The node's tree, which every binding but none needs; ValueError (a caller's bug) without one."""
    if tree is None:
        raise ValueError("this layout needs the node's topology")
    return tree


def scatter_level(tree: NodeTree) -> str:
    """The domain scatter deals ranks over: packages where there are more packages than NUMA domains, else NUMA
    (the rule of the C++ plan_binding, so hympi's and a launcher's binding mean the same)."""
    return "package" if tree.packages > tree.numa_nodes else "numa"


@dataclass(frozen=True)
class LayoutSpec:
    """nodes x ranks_per_node x threads, bound to core|numa|package (or none) and distributed compact|scatter, or
    placed by an Open MPI rankfile; oversubscribe allows more threads than cores."""

    nodes: int
    ranks_per_node: int
    threads: int
    bind: str = "core"
    dist: str = "compact"
    rankfile: str | None = None
    oversubscribe: bool = False

    @property
    def ranks(self) -> int:
        """All ranks of the job."""
        return self.nodes * self.ranks_per_node

    def check_size(self) -> None:
        """Rejects counts below 1 or beyond hympi's limits (every thread of every rank gets a cpuset; UsageError
        naming the value), before any topology is loaded."""
        for name, value, limit in (("--nodes", self.nodes, MAX_NODES),
                                   ("--ranks-per-node", self.ranks_per_node, MAX_NODE_PUS),
                                   ("--threads", self.threads, MAX_NODE_PUS)):
            if value < 1:
                raise UsageError(f"{name} must be >= 1, got {value}")
            limit.check(name, value)
        MAX_NODE_PUS.check(f"--ranks-per-node {self.ranks_per_node} x --threads {self.threads} =",
                           self.ranks_per_node * self.threads)
        MAX_JOB_THREADS.check(f"--nodes {self.nodes} x --ranks-per-node {self.ranks_per_node} x --threads "
                              f"{self.threads} =", self.nodes * self.ranks_per_node * self.threads)

    def check(self, tree: NodeTree) -> None:
        """Rejects a layout that is malformed or does not fit one node of `tree` (UsageError naming the value)."""
        self.check_size()
        if self.bind not in (*LAYOUT_BINDS, "none"):
            raise UsageError(unknown_name('binding', LAYOUT_BINDS, self.bind))
        if self.dist not in DISTRIBUTIONS:
            raise UsageError(unknown_name('distribution', DISTRIBUTIONS, self.dist))
        cores = len(tree.cores)
        if self.ranks_per_node * self.threads > cores and not self.oversubscribe:
            raise UsageError(f"{self.ranks_per_node} ranks per node x {self.threads} threads = "
                             f"{self.ranks_per_node * self.threads} exceeds the {cores} cores of a node "
                             f"({tree.spec or 'topology'}; pass --oversubscribe to allow it)")
        if self.rankfile:
            self._rankfile_sets(tree)

    def omp_env(self) -> dict[str, str]:
        """OMP_NUM_THREADS, and with launcher binding OMP_PLACES / OMP_PROC_BIND: each thread on its own place of
        the set the launcher gave its rank (close keeps thread t on the t-th core of the rank)."""
        env = {"OMP_NUM_THREADS": str(self.threads)}
        if self.rankfile or self.bind in OMP_PLACES:
            env["OMP_PLACES"] = OMP_PLACES["core" if self.rankfile else self.bind]
            env["OMP_PROC_BIND"] = "close"
        return env

    def _rankfile_sets(self, tree: NodeTree) -> tuple[list[int], dict[int, frozenset[int]]]:
        """(node of each rank, PU set of each rank) from the rankfile, hosts numbered in order of appearance;
        UsageError for a rankfile that does not place exactly this layout's ranks on `tree`'s cores."""
        assert self.rankfile is not None
        entries = sorted(check_rankfile(self.rankfile, self.ranks), key=lambda e: e.rank)
        hosts = list(dict.fromkeys(e.host for e in entries))
        if len(hosts) != self.nodes:
            raise UsageError(f"rankfile {self.rankfile} names {len(hosts)} host(s), the layout has --nodes "
                             f"{self.nodes}")
        return [hosts.index(e.host) for e in entries], expected_sets(ClusterTree(tree, 1), entries)

    def rank_cpus(self, tree: NodeTree, local_rank: int) -> tuple[frozenset[int], ...]:
        """The PU set of each thread of node-local rank `local_rank` under bind/dist (rankfiles aside)."""
        every = frozenset(p for c in tree.cores for p in c.pus)
        r, size, t_count = local_rank, self.ranks_per_node, self.threads
        if self.bind == "none":
            return (every,) * t_count
        if self.bind in ("numa", "package"):
            domains = _cores_of(tree, self.bind)
            d = r % len(domains) if self.dist == "scatter" else r * len(domains) // size % len(domains)
            cpus = frozenset(p for c in domains[d] for p in tree.cores[c].pus)
            return (cpus,) * t_count
        if self.dist == "compact":
            cores = [(r * t_count + t) % len(tree.cores) for t in range(t_count)]
        else:
            domains = _cores_of(tree, scatter_level(tree))
            mine, slot = domains[r % len(domains)], r // len(domains)
            cores = [mine[(slot * t_count + t) % len(mine)] for t in range(t_count)]
        return tuple(tree.cores[c].pus for c in cores)

    def occupied(self, tree: NodeTree) -> frozenset[int]:
        """Every PU a thread of one node's ranks is bound to (every PU under bind none; rankfiles aside)."""
        return frozenset().union(*(cpus for r in range(self.ranks_per_node) for cpus in self.rank_cpus(tree, r)))

    def placements(self, tree: NodeTree) -> tuple[ThreadPlace, ...]:
        """Every rank's every thread with its intended PU set on nodes that all look like `tree`."""
        if self.rankfile:
            nodes, sets = self._rankfile_sets(tree)
            return tuple(ThreadPlace(nodes[r], r, t, sets[r]) for r in range(self.ranks) for t in range(self.threads))
        out = []
        for rank in range(self.ranks):
            node, local = divmod(rank, self.ranks_per_node)
            out += [ThreadPlace(node, rank, t, cpus) for t, cpus in enumerate(self.rank_cpus(tree, local))]
        return tuple(out)

    def arguments(self, target: str, tree: NodeTree | None) -> tuple[str, ...]:
        """The launcher's own arguments for this layout (counts, mapping, binding; no program, no environment) on
        nodes like `tree` (None will do for bind none and Open MPI rankfiles); UsageError for an unknown target or
        a layout the launcher has no exact spelling for."""
        if target in ("openmpi4", "openmpi5"):
            return self._openmpi(tree, 4 if target == "openmpi4" else 5)
        if target == "mpich":
            return self._hydra(tree)
        if target == "slurm":
            return self._srun(tree)
        raise UsageError(unknown_name('launcher', TARGETS, target))

    def _domains(self, tree: NodeTree) -> int:
        """How many domains the rank-level decision is made over (1: compact and scatter agree)."""
        if self.bind in ("numa", "package"):
            return len(_cores_of(tree, self.bind))
        if self.bind == "core":
            return len(_cores_of(tree, scatter_level(tree)))
        return 1

    def _spread(self, tree: NodeTree) -> bool:
        """True when the layout needs round-robin over domains, i.e. scatter differs from packing."""
        domains = self._domains(tree)
        if domains == 1 or self.ranks_per_node == 1:
            return False
        if self.bind in ("numa", "package") and self.ranks_per_node == domains:
            return False  # one rank per domain: blocks and round-robin agree
        return self.dist == "scatter"

    def _per_domain(self, tree: NodeTree, launcher: str) -> int:
        """Ranks per domain for a ppr mapping; UsageError where they do not divide evenly."""
        domains = self._domains(tree)
        if self.ranks_per_node % domains:
            level = scatter_level(tree) if self.bind == "core" else self.bind
            raise UsageError(f"{launcher} cannot spell {self.ranks_per_node} ranks per node over {domains} "
                             f"{level} domains (not a multiple); use --rankfile")
        return self.ranks_per_node // domains

    def _local_lists(self, tree: NodeTree, launcher: str) -> list[frozenset[int]]:
        """The rankfile's PU sets in node-local rank order, the same on every node (Hydra's user binding and
        srun's masks take one list for all nodes); UsageError otherwise."""
        nodes, sets = self._rankfile_sets(tree)
        per_node: dict[int, list[frozenset[int]]] = {}
        for rank in range(self.ranks):
            per_node.setdefault(nodes[rank], []).append(sets[rank])
        lists = list(per_node.values())
        if any(other != lists[0] for other in lists[1:]):
            raise UsageError(f"{launcher} binds the k-th rank of every node alike, but rankfile {self.rankfile} "
                             "places the nodes' ranks differently")
        return lists[0]

    def _openmpi(self, maybe_tree: NodeTree | None, version: int) -> tuple[str, ...]:
        """mpirun of Open MPI 4 (ORTE) or 5 (PRRTE): ppr mapping, PE=/pe= cores per rank, explicit --bind-to (v5
        binds ppr:N:node ranks to the first package unless told, open-mpi/ompi#11726)."""
        args = ["-np", str(self.ranks)]
        if self.rankfile:
            # v5 deprecates --rankfile for the rankfile mapper (openpmix/prrte#1567).
            return (*args, *(["--rankfile", self.rankfile] if version == 4 else
                             ["--map-by", f"rankfile:file={self.rankfile}"]))
        name = {"core": "core", "numa": "numa", "package": "socket" if version == 4 else "package", "none": "none"}
        over_map, over_bind = (":OVERSUBSCRIBE", ":overload-allowed") if version == 4 else (":oversubscribe",
                                                                                            ":overload")
        if not self.oversubscribe:
            over_map = over_bind = ""
        elif version == 4:
            # ORTE 4.1 still counts one slot per core for ppr:N:node:PE=T despite the map's OVERSUBSCRIBE ("not
            # enough slots" at more ranks than cores), and --bind-to none has no map to modify: the plain flag lifts
            # the count in both.
            args.append("--oversubscribe")
        if self.bind == "none":
            node_map = ["--map-by", f"ppr:{self.ranks_per_node}:node"] if self.nodes > 1 else []
            return (*args, *node_map, "--bind-to", "none")
        tree = _need(maybe_tree)
        pe = "PE" if version == 4 else "pe"
        if self.bind == "core":
            # ppr:R:node:PE=T packs T cores per rank; "core:PE=T" fails on v4 (open-mpi/ompi#7717).
            if self._spread(tree):
                level = name[scatter_level(tree)]
                mapping = [f"ppr:{self._per_domain(tree, 'Open MPI')}:{level}:{pe}={self.threads}{over_map}",
                           "--rank-by", level]
            else:
                mapping = [f"ppr:{self.ranks_per_node}:node:{pe}={self.threads}{over_map}"]
            return (*args, "--map-by", *mapping, "--bind-to", f"core{over_bind}")
        level = name[self.bind]
        if self.ranks_per_node == 1:
            mapping = [f"ppr:1:node{over_map}"]
        else:
            mapping = [f"ppr:{self._per_domain(tree, 'Open MPI')}:{level}{over_map}"]
            if self._spread(tree):
                mapping += ["--rank-by", level]
        return (*args, "--map-by", *mapping, "--bind-to", f"{level}{over_bind}")

    def _hydra(self, maybe_tree: NodeTree | None) -> tuple[str, ...]:
        """mpiexec of MPICH (Hydra): -ppn, -bind-to OBJ[:n] (its -map-by defaults to the binding object, which
        deals ranks round-robin: scatter for numa/package)."""
        args = ["-n", str(self.ranks), *(["-ppn", str(self.ranks_per_node)] if self.nodes > 1 else [])]
        if self.bind == "none" and not self.rankfile:
            return (*args, "-bind-to", "none")
        tree = _need(maybe_tree)
        if self.rankfile:
            lists = self._local_lists(tree, "mpich (Hydra)")
            return (*args, "-bind-to", "user:" + ",".join("+".join(map(str, sorted(s))) for s in lists))
        if self.bind == "core":
            spread = ["-map-by", "socket" if scatter_level(tree) == "package" else "numa"] if self._spread(tree) \
                else []
            return (*args, "-bind-to", f"core:{self.threads}", *spread)
        level = "socket" if self.bind == "package" else "numa"
        if self._domains(tree) > 1 and self.ranks_per_node > 1 and not self._spread(tree) \
                and self.ranks_per_node != self._domains(tree):
            raise UsageError(f"mpich (Hydra) deals -bind-to {level} ranks round-robin; --dist compact with "
                             f"{self.ranks_per_node} ranks per node over {self._domains(tree)} domains has no "
                             "Hydra spelling (use --dist scatter or --rankfile)")
        return (*args, "-bind-to", level)

    def _srun(self, maybe_tree: NodeTree | None) -> tuple[str, ...]:
        """srun: tasks per node, CPUs per task, --cpu-bind=cores|ldoms|sockets, --distribution block:block
        (packed) or block:cyclic (round-robin over sockets)."""
        # --ntasks too: without it srun takes the task count of the allocation it runs in (SLURM_NTASKS, from
        # sbatch --ntasks or salloc -n), and a 1-rank layout in a 2-task allocation ran as 2 ranks.
        args = ["--nodes", str(self.nodes), "--ntasks", str(self.ranks), "--ntasks-per-node", str(self.ranks_per_node),
                "--cpus-per-task", str(self.threads), *(["--overcommit"] if self.oversubscribe else [])]
        if self.bind == "none" and not self.rankfile:
            return (*args, "--cpu-bind=none")
        tree = _need(maybe_tree)
        if self.rankfile:
            masks = ",".join(hex(sum(1 << p for p in s)) for s in self._local_lists(tree, "srun"))
            return (*args, f"--cpu-bind=mask_cpu:{masks}")
        domains = self._domains(tree)
        # Round-robin over domains: scatter, or one rank per numa/package domain.
        cyclic = self._spread(tree) or (self.bind != "core" and self.ranks_per_node == domains > 1)
        sockets_are_domains = self.bind == "package" or tree.numa_nodes == tree.packages or \
            (self.bind == "core" and scatter_level(tree) == "package")
        if cyclic and not sockets_are_domains:
            raise UsageError(f"srun distributes over sockets ({tree.packages}), not over the {tree.numa_nodes} "
                             "NUMA domains this layout deals ranks over; use --rankfile")
        if self.bind != "core" and domains > 1 and self.ranks_per_node > 1 and not cyclic:
            raise UsageError(f"srun packs tasks by CPU, not in blocks of {self.bind} domains: --dist compact with "
                             f"{self.ranks_per_node} ranks per node over {domains} domains has no srun spelling "
                             "(use --dist scatter or --rankfile)")
        cpu_bind = {"core": "cores", "numa": "ldoms", "package": "sockets"}[self.bind]
        return (*args, f"--cpu-bind={cpu_bind}", f"--distribution=block:{'cyclic' if cyclic else 'block'}")


Layout = TypeVar("Layout", bound=tuple[Any, ...])


def layout_pus(layouts: Sequence[Layout], dist: str, virtual_nodes: int,
               oversubscribe: bool) -> dict[Layout, frozenset[int]]:
    """The PUs of this machine each layout's threads are bound to (a layout: ranks, threads, binding first, as a
    sweep's), where the binding decides them: not for virtual nodes, an oversubscribed machine or a machine whose
    topology cannot be read; a layout left out is watched on every PU (hympi.busy)."""
    if virtual_nodes > 1 or oversubscribe:
        return {}
    try:
        tree = load_node_tree("this")
    except (HympiFatal, UsageError, OSError):
        return {}
    return {x: LayoutSpec(1, x[0], x[1], x[2], dist).occupied(tree) for x in layouts
            if x[0] * x[1] <= len(tree.cores)}
