"""The parameters of a launch's layout, declared once (hympi.params): `hympi sweep` takes them as lists (every
combination is swept), `hympi run` and `hympi affinity` take the same flags with the same parsers and refuse a list
of more than one value (one_value): one command line launches one layout. Kept apart from hympi.sweep
(numpy, the store) so that building hympi's parser stays cheap."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TypeVar

from hympi.errors import UsageError
from hympi.launch.command import DEFAULT_LAUNCHER, LAUNCHERS
from hympi.launch.mpirun import BIND_POLICIES, BINDERS, DISTRIBUTIONS, MEMORY_POLICIES
from hympi.limits import check_path
from hympi.params import OVERSUBSCRIBE, TIMEOUT, Param, choice, choice_list, integer_from, parse_int_list, text_of

Item = TypeVar("Item", int, str)

RANKS = Param("ranks", "--ranks", "comma-separated MPI rank counts (default 1)", parse_int_list, metavar="R,...",
              aliases=("-n", "-np"))
THREADS = Param("threads", "--threads", "comma-separated OpenMP threads per rank (default 1)", parse_int_list,
                metavar="T,...", aliases=("-t",))
BINDS = Param("binds", "--bind", f"comma-separated bindings from {', '.join(BIND_POLICIES)} (default HYMPI_BIND or "
              "core)", choice_list(BIND_POLICIES, "binding"), setting="bind", metavar="BIND,...")
DIST = Param("dist", "--dist", f"distribution: {', '.join(DISTRIBUTIONS)} (default HYMPI_DIST or compact)",
             choice(DISTRIBUTIONS, "distribution"), setting="dist", metavar="DIST")
MEMBINDS = Param("membinds", "--membind", f"comma-separated memory policies from {', '.join(MEMORY_POLICIES)}, "
                 "crossed with the bindings (default HYMPI_MEMBIND or none: first touch)",
                 choice_list(MEMORY_POLICIES, "memory policy"), setting="membind", metavar="POLICY,...")
VIRTUAL_NODES = Param("virtual_nodes", "--virtual-nodes", "split this machine into N pretend nodes "
                      "(HYMPI_VIRTUAL_NODES; every layout needs >= N ranks)", integer_from(1, "a number of nodes"),
                      setting="virtual_nodes", metavar="N")
LAUNCHER = Param("launcher", "--launcher", f"{' or '.join(LAUNCHERS)}: launch with that launcher, checked against "
                 f"its --version (default {DEFAULT_LAUNCHER}: $HYMPI_MPIRUN, else mpirun or mpiexec)",
                 choice(LAUNCHERS, "launcher"), DEFAULT_LAUNCHER, metavar="NAME")
RANKFILE = Param("rankfile", "--rankfile", "Open MPI rankfile to place the ranks with", check_path, metavar="FILE")
# No default here: who binds depends on what runs (hympi's app: hympi; a program of the user's own: the launcher).
BINDER = Param("binder", "--binder", "hympi: hympi binds ranks and threads with hwloc, the launcher binds nothing "
               "(default for hympi's apps); launcher: the launcher binds with the layout's arguments ('hympi layout' "
               "shows them) and OpenMP places the threads (always for a program of your own)",
               choice(BINDERS, "binder"), metavar="WHO")

# One run has no default time limit (a sweep's does: one stuck layout must not hold up the others).
RUN_TIMEOUT = dataclasses.replace(TIMEOUT, help="kill the run after S seconds (default: none)", default=None)



def for_one_layout(param: Param, help: str) -> Param:
    """A list parameter where one layout is launched or spelled: its help and metavar ask for one value (one_value
    refuses more), the list parser kept so that the options layer's values read alike."""
    return dataclasses.replace(param.described(help), metavar=(param.metavar or "").removesuffix(",..."))


# Every parameter of `hympi run` and `hympi affinity` that defines the layout they launch, in the order they resolve.
LAUNCH = (for_one_layout(RANKS, "MPI ranks (default 1)"),
          for_one_layout(THREADS, "OpenMP threads per rank (default 1)"),
          for_one_layout(BINDS, f"binding: {', '.join(BIND_POLICIES)} (default HYMPI_BIND or core)"),
          DIST, for_one_layout(MEMBINDS, f"memory policy: {', '.join(MEMORY_POLICIES)} (default HYMPI_MEMBIND or "
                               "none: first touch)"),
          OVERSUBSCRIBE.described("allow ranks x threads > PUs (HYMPI_OVERSUBSCRIBE)"), VIRTUAL_NODES, RUN_TIMEOUT,
          RANKFILE, LAUNCHER, BINDER)


@dataclass(frozen=True)
class LaunchParams:
    """The values LAUNCH resolved to (hympi.params.from_record); the lists as given (one_value picks their one)."""

    binds: tuple[str, ...]
    dist: str
    membinds: tuple[str, ...]
    oversubscribe: bool
    virtual_nodes: int
    launcher: str
    ranks: tuple[int, ...] = (1,)
    threads: tuple[int, ...] = (1,)
    timeout: float | None = None
    rankfile: str = ""
    binder: str = ""


def one_value(values: tuple[Item, ...], param: Param, command: str, verb: str = "launches") -> Item:
    """The one value of list parameter `param` (--ranks, --bind, ...); UsageError naming the list and `hympi sweep`
    when it has several: `hympi command` launches (or spells, `verb`) one layout."""
    if len(values) > 1:
        raise UsageError(f"{param.flag} {text_of(values)}: hympi {command} {verb} one layout; give one value, or "
                         "sweep them with hympi sweep")
    return values[0]
