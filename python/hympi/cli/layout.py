"""hympi layout: one layout spelled for a launcher (arguments, environment) with every rank's and thread's cpuset;
a dry run, nothing is launched."""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass

from hympi.cli.parser import Subparsers
from hympi.errors import UsageError, unknown_name
from hympi.launch.detect import detect_launcher
from hympi.launch.layout import LAYOUT_BINDS, TARGETS, LayoutSpec, cpu_list
from hympi.layout_options import BINDS, DIST, RANKFILE, THREADS, for_one_layout, one_value
from hympi.params import OVERSUBSCRIBE, from_record, register, resolve
from hympi.place.options import NODES, RANKS_PER_NODE
from hympi.place.tree import NodeTree, load_node_tree

# The parameters of the layout spelled, shared with hympi run (hympi.layout_options) and hympi place.
LAYOUT = (NODES.described("nodes (default 1)", 1), RANKS_PER_NODE.described("MPI ranks per node (default 1)", 1),
          for_one_layout(THREADS, "OpenMP threads per rank (default 1)"),
          for_one_layout(BINDS, f"{', '.join(LAYOUT_BINDS)} or none (default HYMPI_BIND or core)"), DIST,
          RANKFILE.described("place ranks by an Open MPI rankfile instead"),
          OVERSUBSCRIBE.described("allow ranks x threads > cores of a node (HYMPI_OVERSUBSCRIBE)"))
# The program each target's arguments follow.
PROGRAMS = {"openmpi4": "mpirun", "openmpi5": "mpirun", "mpich": "mpiexec", "slurm": "srun"}


def add_parser(sub: Subparsers, name: str, summary: str) -> None:
    """Registers `hympi layout`."""
    p = sub.add_parser(name, help=summary,
                       description="Print a launcher's arguments and environment for nodes x ranks per node x threads "
                                   "and the cpuset every rank and thread gets; nothing is launched.")
    register(p, LAYOUT)
    p.add_argument("--for", dest="target", default=None,
                   help=f"{', '.join(TARGETS)} (default: the launcher installed here, from its --version)")
    p.add_argument("--topology", default="this", metavar="SPEC",
                   help="one node: this, synthetic:..., or an hwloc XML file (default this)")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print the layout as JSON")
    out.add_argument("--markdown", action="store_true",
                     help="one Markdown table row per launcher (the --for choice is ignored)")
    p.set_defaults(handler=main)


@dataclass(frozen=True)
class LayoutParams:
    """The values LAYOUT resolved to (hympi.params.from_record)."""

    nodes: int
    ranks_per_node: int
    binds: tuple[str, ...]
    dist: str
    oversubscribe: bool
    threads: tuple[int, ...] = (1,)
    rankfile: str = ""


def spec_from_args(args: argparse.Namespace) -> LayoutSpec:
    """The layout of the command line (checked later against the topology); UsageError for a list of several
    threads or bindings (one layout is spelled)."""
    values = from_record(LayoutParams, resolve(args, LAYOUT))
    return LayoutSpec(values.nodes, values.ranks_per_node, one_value(values.threads, THREADS, "layout", "spells"),
                      one_value(values.binds, BINDS, "layout", "spells"), values.dist, values.rankfile or None,
                      values.oversubscribe)


def environment(spec: LayoutSpec) -> dict[str, str]:
    """What every rank needs besides the arguments: OpenMP's thread count and places, and HYMPI_BIND=none so a hympi
    app keeps the binding the launcher gave it."""
    return {**spec.omp_env(), "HYMPI_BIND": "none"}


def describe(spec: LayoutSpec) -> str:
    """'2 nodes x 4 ranks x 2 threads, core binding, compact' (or the rankfile)."""
    how = f"rankfile {spec.rankfile}" if spec.rankfile else f"{spec.bind} binding, {spec.dist}"
    return f"{spec.nodes} node(s) x {spec.ranks_per_node} rank(s) x {spec.threads} thread(s), {how}" + \
        (", oversubscribed" if spec.oversubscribe else "")


def markdown(spec: LayoutSpec, tree: NodeTree) -> str:
    """A Markdown table: one row per launcher with its arguments and environment (or why it has none)."""
    env = " ".join(f"`{k}={v}`" for k, v in environment(spec).items())
    lines = [f"Layout: {describe(spec)}; node `{tree.spec}`.", "",
             "| launcher | arguments | environment |", "| --- | --- | --- |"]
    for target in TARGETS:
        try:
            text = f"`{' '.join([PROGRAMS[target], *spec.arguments(target, tree)])}`"
            row_env = env
        except UsageError as exc:
            text, row_env = f"no exact spelling: {exc}", "-"
        lines.append(f"| {target} | {text} | {row_env} |")
    return "\n".join(lines) + "\n"


def main(args: argparse.Namespace) -> int:
    """Checks the layout, picks the launcher (given or detected) and prints its spelling and the cpusets."""
    spec = spec_from_args(args)
    spec.check_size()  # before hwloc is asked for the topology
    if args.target is not None and args.target not in TARGETS:
        raise UsageError(unknown_name('launcher', TARGETS, args.target))
    tree = load_node_tree(args.topology)
    spec.check(tree)
    if args.markdown:
        print(markdown(spec, tree), end="")
        return 0
    detected = None if args.target is not None else detect_launcher()
    target = args.target or (detected.target if detected else "")
    arguments = [PROGRAMS[target], *spec.arguments(target, tree)]
    env = environment(spec)
    places = spec.placements(tree)
    if args.json:
        print(json.dumps({"nodes": spec.nodes, "ranks_per_node": spec.ranks_per_node, "threads": spec.threads,
                          "bind": spec.bind, "dist": spec.dist, "rankfile": spec.rankfile,
                          "oversubscribe": spec.oversubscribe, "topology": args.topology, "launcher": target,
                          "detected": detected.version if detected else None, "arguments": arguments, "env": env,
                          "cpusets": [{"node": p.node, "rank": p.rank, "thread": p.thread, "cpus": cpu_list(p.cpus)}
                                      for p in places]}))
        return 0
    origin = f" (detected: {detected.version} at {detected.path})" if detected else ""
    print(f"layout: {describe(spec)} on {args.topology}")
    print(f"launcher: {target}{origin}")
    print(f"arguments: {' '.join(arguments)}")
    print("environment: " + " ".join(f"{k}={v}" for k, v in env.items()))
    print(f"{'node':>5} {'rank':>6} {'thread':>7}  cpus")
    for p in places:
        print(f"{p.node:>5} {p.rank:>6} {p.thread:>7}  {cpu_list(p.cpus)}")
    return 0
