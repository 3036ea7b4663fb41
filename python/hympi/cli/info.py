"""hympi info: the machine's topology summary; with --all-nodes, every node's own, gathered by a launched job."""

from __future__ import annotations

import argparse
import json

from rich.markup import escape
from rich.table import Table

from hympi.cli.parser import Subparsers, nonempty_argument
from hympi.console import HympiConsole, add_plain_row
from hympi.errors import HympiFatal, UsageError, unknown_name
from hympi.launch.command import LAUNCHERS, launch_command
from hympi.launch.mpirun import LaunchSpec, launcher_path, mpi_flavor, run_command
from hympi.layout_options import RUN_TIMEOUT
from hympi.limits import MAX_JOB_THREADS, count_argument
from hympi.node_topologies import NodeTopologies, parse_node_topologies
from hympi.params import register, seconds_of
from hympi.place.rankfile import other_hosts_possible
from hympi.settings import settings
from hympi.topology import machine_summary

ALL_NODES_TIMEOUT = RUN_TIMEOUT.described("with --all-nodes: kill the job after S seconds (default: none)")


def add_parser(sub: Subparsers, name: str, summary: str) -> None:
    """Registers `hympi info`."""
    p = sub.add_parser(name, help=summary,
                       description="Topology of this machine (hwloc); with --all-nodes, of every node of a launched "
                                   "job, nodes grouped by topology and their differences shown.")
    p.add_argument("--topology", default=None, type=nonempty_argument("--topology"),
                   help="this | synthetic:<description> | <file.xml> (default this)")
    p.add_argument("--json", action="store_true", help="print JSON (with --all-nodes: each node's XML too, the input "
                                                       "of hympi place --node-topologies)")
    p.add_argument("--all-nodes", action="store_true",
                   help="launch hympi-info under MPI; one leader rank per node reports its own topology")
    p.add_argument("--ranks", "-n", "-np", type=count_argument(MAX_JOB_THREADS), default=None, metavar="R",
                   help="with --all-nodes: ranks to launch (default: one per virtual node)")
    p.add_argument("--virtual-nodes", default=None, metavar="N",
                   help="with --all-nodes: split this machine into N pretend nodes (HYMPI_VIRTUAL_NODES)")
    p.add_argument("--node-topology", default=None, metavar="SPECS", type=nonempty_argument("--node-topology"),
                   help="with --all-nodes: what each node reports instead of its hardware, ';'-separated this | "
                        "synthetic:<description> | <file.xml>, one per node or one for all (HYMPI_NODE_TOPOLOGY)")
    p.add_argument("--launcher", default=None, metavar="NAME", help=f"with --all-nodes: {', '.join(LAUNCHERS)}")
    register(p, (ALL_NODES_TIMEOUT,))
    p.set_defaults(handler=main)


def _size(n: int) -> str:
    """Bytes in KiB/MiB for people."""
    return f"{n / 2**20:.0f} MiB" if n >= 2**20 else f"{n / 2**10:.0f} KiB"


def split_specs(text: str) -> list[str]:
    """HYMPI_NODE_TOPOLOGY's entries, as the apps split them (';', blanks trimmed); UsageError for an empty one."""
    if not text.strip():
        return []
    specs = [s.strip() for s in text.split(";")]
    for k, s in enumerate(specs):
        if not s:
            raise UsageError(f"--node-topology '{text}' has an empty entry {k} (expected this | "
                             "synthetic:<description> | <file.xml> between the ';')")
    return specs


def all_nodes_spec(args: argparse.Namespace) -> LaunchSpec:
    """The launch of hympi-info --all-nodes that args ask for; UsageError, before anything is launched, for bad
    input (every --node-topology entry is loaded here by hympi-info first)."""
    if args.topology is not None:
        raise UsageError(f"--topology '{args.topology}' names one topology; with --all-nodes each node reports its "
                         "own (or its --node-topology entry)")
    resolved = (settings().override("virtual_nodes", args.virtual_nodes, "--virtual-nodes")
                .override("node_topology", args.node_topology, "--node-topology"))
    virtual_nodes = int(resolved.value("virtual_nodes"))
    ranks = virtual_nodes if args.ranks is None else args.ranks
    if ranks < 1:
        raise UsageError(f"--ranks must be >= 1, got {ranks}")
    if ranks < virtual_nodes:
        raise UsageError(f"--virtual-nodes {virtual_nodes} needs at least {virtual_nodes} ranks, got --ranks {ranks}")
    if args.launcher is not None and args.launcher not in LAUNCHERS:
        raise UsageError(unknown_name('launcher', LAUNCHERS, args.launcher))
    text = resolved.text("node_topology")
    specs = split_specs(text)
    for spec in dict.fromkeys(specs):
        machine_summary(spec)  # UsageError naming a spec hwloc cannot load
    local = args.launcher != "slurm" and not other_hosts_possible()
    if local and len(specs) > 1 and len(specs) != virtual_nodes:
        # Launched here, the job has exactly the virtual nodes; elsewhere only the job can count its nodes.
        raise UsageError(f"--node-topology gives {len(specs)} topologies for {virtual_nodes} node(s) (give one per "
                         "node, or one for all)")
    # hympi-info binds nothing and only waits in one gather, so its ranks may share PUs (oversubscribe).
    return LaunchSpec("hympi-info", ranks, 1, "none", app_args=("--all-nodes", "--json"), oversubscribe=True,
                      env=(("HYMPI_VIRTUAL_NODES", str(virtual_nodes)), ("HYMPI_NODE_TOPOLOGY", text)))


def gather(args: argparse.Namespace) -> NodeTopologies:
    """Launches hympi-info --all-nodes and reads what rank 0 printed; UsageError for bad input (also one the job
    found, exit 2), HympiFatal when the launch fails."""
    spec = all_nodes_spec(args)
    timeout = seconds_of(args, ALL_NODES_TIMEOUT)
    outcome = run_command(launch_command(spec, args.launcher), timeout)
    lines = [line for line in outcome.stderr.splitlines() if "hympi-info: error: " in line]
    if outcome.status == "timeout":
        raise HympiFatal(f"hympi-info --all-nodes timed out after {timeout:g} s")
    if outcome.returncode != 0:
        why = lines[-1].split("hympi-info: error: ", 1)[1] if lines else outcome.stderr_tail(3)
        if outcome.returncode == 2 and lines:
            raise UsageError(why)
        raise HympiFatal(f"hympi-info --all-nodes failed (exit {outcome.returncode}): {why}")
    json_lines = [line for line in outcome.stdout.splitlines() if line.startswith("{")]
    if len(json_lines) != 1:
        raise HympiFatal(f"hympi-info --all-nodes printed {len(json_lines)} JSON lines instead of one")
    try:
        return parse_node_topologies(json_lines[0], "hympi-info --all-nodes output")
    except UsageError as exc:
        raise HympiFatal(str(exc)) from None


def nodes_table(topologies: NodeTopologies) -> Table:
    """One row per node: host, ranks, counts, caches and hash (the group letter marks identical nodes)."""
    letters = {h: chr(ord("A") + k) if k < 26 else str(k) for k, (h, _) in enumerate(topologies.groups())}
    table = Table(title=f"{len(topologies.nodes)} node(s)")
    for col in ("node", "host", "ranks", "packages", "NUMA", "cores", "PUs", "caches", "hash", "kind"):
        table.add_column(col, justify="left" if col in ("host", "caches", "hash") else "right",
                         no_wrap=col == "hash")
    for n in topologies.nodes:
        s = n.summary
        # 8 hex digits tell a job's few kinds of node apart; --json has the whole hash.
        add_plain_row(table, str(n.node), n.host, str(n.ranks), str(s.packages), str(s.numa_nodes),
                      str(s.cores), str(s.pus), n.field("caches"), s.hash[:8], letters[s.hash])
    return table


def differences_table(topologies: NodeTopologies) -> Table:
    """Each field that differs, with the nodes that have each value."""
    table = Table()
    for col in ("field", "value", "nodes"):
        table.add_column(col)
    for d in topologies.differences():
        for k, (value, nodes) in enumerate(d.values):
            add_plain_row(table, d.field if k == 0 else "", value or "-", ",".join(map(str, nodes)))
    return table


def main_all_nodes(args: argparse.Namespace) -> int:
    """Gathers every node's topology and prints it, grouped, with the differences (or JSON)."""
    topologies = gather(args)
    if args.json:
        print(json.dumps(topologies.as_dict()))
    else:
        print_nodes(topologies)
    return 0


def print_nodes(topologies: NodeTopologies) -> None:
    """The nodes table, then "all N nodes identical" or what differs between the kinds of node."""
    console = HympiConsole()
    console.print(nodes_table(topologies))
    if topologies.identical:
        print(f"all {len(topologies.nodes)} nodes identical (hash {topologies.nodes[0].summary.hash})")
    else:
        print(f"{len(topologies.groups())} kinds of node: what differs")
        console.print(differences_table(topologies))


def main(args: argparse.Namespace) -> int:
    """Prints the topology summary (and the MPI launcher in use), or with --all-nodes every node's."""
    if args.all_nodes:
        return main_all_nodes(args)
    for flag, value in (("--ranks", args.ranks), ("--virtual-nodes", args.virtual_nodes),
                        ("--node-topology", args.node_topology), ("--launcher", args.launcher),
                        ("--timeout", args.timeout)):
        if value is not None:
            raise UsageError(f"{flag} needs --all-nodes (it launches a job; plain hympi info reads this machine)")
    topology = args.topology or "this"
    summary = machine_summary(topology)
    if args.json:
        print(json.dumps(summary.as_dict()))
        return 0
    table = Table(title=escape(f"topology ({topology})"), show_header=False)  # a file's path
    table.add_row("packages", str(summary.packages))
    table.add_row("NUMA domains", str(summary.numa_nodes))
    table.add_row("cores", str(summary.cores))
    table.add_row("PUs", str(summary.pus))
    for level, size, count in summary.caches:
        table.add_row(f"L{level} cache", f"{count} x {_size(size)}")
    table.add_row("hash", summary.hash)
    if topology == "this":
        launcher = launcher_path()
        add_plain_row(table, "MPI launcher", f"{launcher} ({mpi_flavor(launcher)})")
    HympiConsole().print(table)
    return 0
