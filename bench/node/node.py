#!/usr/bin/env python3
"""The many-core node script (issue 34): the measurements a 2-core machine cannot make, in one time budget.

Usage: bench/node/run.sh [--quick] [--out DIR] [--budget SECONDS]
                         [--parts study,npb,blades,pencil,transpose,tune,probe]

Parts, in this order, each given its share of what is left of the budget when it starts (a part that finishes
early leaves its time to the next ones):

* study: `hympi study` over every core (quick problem sizes, `--repeat auto`; rb3d, spmv3d and BT-MZ, quick: rb3d):
  per app every ranks x threads split of 1 and all cores, each layout's median rate against the recommended one
  with its bootstrap interval.
* npb: NPB-MZ BT, SP and LU at class B (quick: S) on every split N x 1 ... 1 x N of the cores, the Fortran
  reference (NPB_REF_BIN) and hympi back to back, both unbound as bench/npb-mz/run.sh runs them: Mop/s and
  hympi / Fortran. Layouts go all-ranks, all-threads, then the splits between, so a short budget keeps the ends.
* blades: bench/blades/blades.py, hybrid vs two-level MPI on the blade row (Jin et al., "High performance computing
  using MPI and OpenMP on multi-core parallel systems", Figs. 7-8) up to N2 = 8.
* pencil: bench/pencil/weak.py, Time/DoF from 1 rank to every core, with the STREAM triad of the same run, and
  where a step goes (compute, and each transpose's pack, exchange and unpack).
* transpose: bench/pencil/transpose.py, hympi's plane <-> pencil transposes against FFTW-MPI's at 2 ranks (128^3 and
  256x256x128; quick: 32^3), every exchange and wire precision.
* tune: bench/tune/run.py's guided part for LU-MZ (every split of the cores) and IS (this node's rank counts), over
  spaces written at run time.
* probe: bench/probe/run.py, the probe's cost on rb3d at 1 x N and N x 1 (paired wall-time ratio, the sampler's CPU).

A part cut by the budget is interrupted (SIGINT, so sweeps and tunes record what they finished) and its table
holds what finished. Everything goes to OUT: OUT/<part>.md, OUT/node.md (the machine and every table, in order) and
OUT/work/ (databases, logs, reports). Exit 0 when every part ran and every finished run verified, 1 otherwise,
2 for bad options.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hympi.launch.mpirun import launcher_path, launcher_version
from hympi.report.analysis import group_runs, recommend, verdict
from hympi.stats.compare import MIN_SAMPLES, ratio_ci
from hympi.store import Store
from hympi.topology import MachineSummary, machine_summary, run_hympi_info
from hympi.tune.results import best, tune_results

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/, for the scripts' shared helpers
import common
from common import REPO, hympi_here, parse_names, reject, require_seconds

common.PROG = "node"  # what this script's error lines have always begun with

DEFAULT_BUDGET_S = 520.0  # the 9 minutes on a 16-core node, less the start-up of the node itself
QUICK_BUDGET_S = 240.0
# Seconds an interrupted part gets to record what it finished before it is killed.
GRACE_S = 15.0
NPB_BENCHMARKS = ("bt-mz", "sp-mz", "lu-mz")
NPB_VERIFIED = re.compile(r"Verification\s*=\s*SUCCESSFUL")
NPB_MOPS = re.compile(r"Mop/s total\s*=\s*([0-9.eE+]+)")
# hwloc's topology XML names the processor in an info attribute of its package objects.
CPU_MODEL = re.compile(r'<info name="CPUModel" value="([^"]*)"')


@dataclass(frozen=True)
class Node:
    """Where and how this run measures: the node's topology, the output folder, quick or full sizes."""

    summary: MachineSummary
    out: Path
    quick: bool
    python: str

    @property
    def cores(self) -> int:
        """Cores of the node (every part's layouts fill them)."""
        return self.summary.cores

    @property
    def work(self) -> Path:
        """Databases, logs and reports."""
        return self.out / "work"

    def splits(self) -> list[tuple[int, int]]:
        """Every ranks x threads that fills the cores, all-ranks and all-threads first, then the splits between
        from the middle out (a budget that runs short keeps the ends and the balanced ones)."""
        all_splits = [(self.cores // t, t) for t in range(1, self.cores + 1) if self.cores % t == 0]
        ends = [all_splits[0], all_splits[-1]] if len(all_splits) > 1 else all_splits
        middle = sorted(all_splits[1:-1], key=lambda rt: abs(math.log(rt[0] / rt[1])))
        return ends + middle

    def hympi(self) -> list[str]:
        """The hympi command from this tree, with the interpreter running this script."""
        return hympi_here(self.python)


@dataclass(frozen=True)
class Outcome:
    """One command's end: its exit code (None when the budget cut it) and its standard output."""

    returncode: int | None
    stdout: str

    @property
    def cut(self) -> bool:
        """True when the deadline interrupted the command."""
        return self.returncode is None


def call(command: list[str], deadline: float, log: Path, env: dict[str, str] | None = None) -> Outcome:
    """Runs `command` in its own process group until it ends or `deadline` (time.monotonic) passes; then SIGINT,
    GRACE_S to finish, SIGKILL. Output goes to `log` (stdout and stderr) and stdout is returned."""
    print(f"$ {shlex.join(command)}", file=sys.stderr, flush=True)
    with log.open("w") as err:
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=err, text=True, errors="replace",
                                start_new_session=True, env={**os.environ, **(env or {})})
        try:
            stdout, _ = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
            code: int | None = proc.returncode
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGINT)
            try:
                stdout, _ = proc.communicate(timeout=GRACE_S)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                stdout, _ = proc.communicate()
            code = None
    with log.open("a") as err:
        err.write(f"\n--- stdout ---\n{stdout}\n--- exit {code if code is not None else 'cut by the budget'} ---\n")
    return Outcome(code, stdout)


def cut_note(outcome: Outcome, what: str) -> str:
    """The line a table gets when the budget cut its command."""
    return f"\n*{what} was cut by the time budget: the table holds what finished.*\n" if outcome.cut else ""


# --- study ---------------------------------------------------------------------------------------------------------

def study_part(node: Node, deadline: float) -> tuple[str, bool]:
    """`hympi study --quick` over every core; per app a table of layouts against the recommended one."""
    db = node.work / "study.db"
    # STREAM's arrays grow with the last-level cache and its runs with the rank count (seconds a run on a node with
    # hundreds of MiB of L3): the pencil part measures the triad instead, so the node's study sweeps the solvers; the
    # quick one rb3d alone, in timed regions of 0.1 s instead of the study's 0.5 (on the 2-core VM, 2026-11-29: 12
    # CPU-s instead of 34; with STREAM, 44 more).
    apps = "rb3d" if node.quick else "rb3d,spmv3d,bt-mz"
    size = ["--min-time", "0.1"] if node.quick else []
    outcome = call([*node.hympi(), "study", "--quick", "--apps", apps, "--max-repeat", "4", *size,
                    "--timeout", "60", "--db", str(db), "--out", str(node.work / "study-report")],
                   deadline, node.work / "study.log")
    if not db.exists():
        return f"`hympi study` wrote no database (exit {outcome.returncode}; work/study.log).\n", False
    with Store.open(db, create=False) as store:
        sweeps = store.sweeps()
        runs = [r for r in store.runs() if r.repeat > 0]
    machine_of = {s.id: s.machine_id for s in sweeps}
    lines = [f"`hympi study --quick --apps {apps}` ({len(sweeps)} sweeps, {len(runs)} measured runs):", ""]
    healthy = outcome.returncode == 0
    for group in group_runs(runs, machine_of):
        # Without a verdict (too few runs to confirm a lead) the layouts stand against the fastest median instead.
        chosen = verdict(group).recommended
        comparable = [s for s in group.layouts if len(s.rates) >= MIN_SAMPLES]
        reference = chosen or max(comparable, key=lambda s: s.rate_median or 0.0, default=None)
        against = "recommended" if chosen is not None else "fastest median"
        unit = group.rate_unit or "rate"
        lines += [f"**{group.app}** {group.problem}", "",
                  f"| layout | bind | ok / runs | median {unit} | / {against} [95 % CI] |", "|---|---|---|---|---|"]
        for s in group.layouts:
            versus = "-"
            if reference is not None and s is reference:
                versus = against
            elif reference is not None and len(s.rates) >= MIN_SAMPLES:
                ratio, low, high = ratio_ci(s.rates, reference.rates)
                versus = f"{ratio:.3f} [{low:.3f}, {high:.3f}]"
            median = f"{s.rate_median:.4g}" if s.rate_median is not None else "-"
            lines.append(f"| {s.label} | {s.bind} | {s.ok} / {s.runs} | {median} | {versus} |")
            healthy &= s.ok == s.runs
        lines += ["", recommend(group), ""]
    return "\n".join(lines) + cut_note(outcome, "The study"), healthy


# --- NPB-MZ --------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class NpbRun:
    """One NPB-MZ run: Mop/s (None when it printed none) and whether it verified."""

    mops: float | None
    verified: bool

    def cell(self) -> str:
        """'12345' or '12345 (NOT verified)' or 'failed'."""
        if self.mops is None:
            return "failed"
        return f"{self.mops:.0f}" + ("" if self.verified else " (NOT verified)")


def npb_run(command: list[str], threads: int, deadline: float, log: Path) -> NpbRun | None:
    """One unbound NPB-MZ run (either implementation); None when the budget cut it."""
    outcome = call(command, deadline, log, {"OMP_NUM_THREADS": str(threads), "HYMPI_BIND": "none"})
    if outcome.cut:
        return None
    mops = NPB_MOPS.search(outcome.stdout)
    return NpbRun(float(mops.group(1)) if mops else None, bool(NPB_VERIFIED.search(outcome.stdout)))


def npb_part(node: Node, deadline: float) -> tuple[str, bool]:
    """Fortran reference and hympi back to back for every benchmark and split of the cores."""
    npb_class = "S" if node.quick else "B"
    bin_dir = Path(os.environ.get("HYMPI_BIN_DIR", REPO / "build" / "bin"))
    ref_dir = Path(os.environ["NPB_REF_BIN"]) if os.environ.get("NPB_REF_BIN") else None
    mpirun = [launcher_path(), "--oversubscribe", "--bind-to", "none"]
    if "Open MPI" in launcher_version(mpirun[0]):
        mpirun.append("--allow-run-as-root")
    header = (f"NPB-MZ class {npb_class}, unbound (`mpirun --bind-to none`, HYMPI_BIND=none), the Fortran reference "
              f"{'from ' + str(ref_dir) if ref_dir else '(NPB_REF_BIN unset: not run)'} and hympi back to back "
              f"per case:")
    lines = [header, "", "| benchmark | layout | Fortran Mop/s | hympi Mop/s | hympi / Fortran |",
             "|---|---|---|---|---|"]
    healthy = True
    stopped = False
    for ranks, threads in node.splits():
        for bench in NPB_BENCHMARKS:
            if stopped or time.monotonic() >= deadline:
                lines.append(f"| {bench} | {ranks}x{threads} | not run (budget) | | |")
                stopped = True
                continue
            tag = f"{bench}-{npb_class}-{ranks}x{threads}"
            ref = None
            if ref_dir is not None:
                ref = npb_run([*mpirun, "-np", str(ranks), str(ref_dir / f"{bench}.{npb_class}.x")], threads,
                              deadline, node.work / f"npb-ref-{tag}.log")
            ours = npb_run([*mpirun, "-np", str(ranks), str(bin_dir / f"hympi-{bench}"), "--class", npb_class],
                           threads, deadline, node.work / f"npb-hympi-{tag}.log")
            if ours is None or (ref_dir is not None and ref is None):
                lines.append(f"| {bench} | {ranks}x{threads} | cut (budget) | | |")
                stopped = True
                continue
            healthy &= ours.verified and (ref is None or ref.verified)
            ratio = "-"
            if ref is not None and ref.mops and ours.mops:
                ratio = f"{ours.mops / ref.mops:.2f}"
            lines.append(f"| {bench} | {ranks}x{threads} | {ref.cell() if ref else '-'} | {ours.cell()} | {ratio} |")
    return "\n".join(lines) + "\n", healthy


# --- blades, pencil, transpose, tune, probe: the benchmarks' own scripts ---------------------------------------------

def blades_layouts(node: Node) -> list[tuple[int, int]]:
    """N1 x N2 for Fig. 8: N2 = 1, 2, 4, 8 (those that fit), N1 = 1, 2, 4, ... up to the cores (quick: 1x1, 2x1,
    1x2), at most 8 blade groups (the blade count)."""
    if node.quick:
        return [(1, 1), (2, 1), (1, 2)]
    layouts = []
    n2 = 1
    while n2 <= min(8, node.cores):
        n1 = 1
        while n1 * n2 <= node.cores and n1 <= 8:
            layouts.append((n1, n2))
            n1 *= 2
        n2 *= 2
    return layouts


def script_part(node: Node, deadline: float, name: str, command: list[str], results_from: str = "",
                env: dict[str, str] | None = None) -> tuple[str, bool]:
    """Runs a benchmark script (with `env` added to the environment); its Markdown tables as they are, other output
    from the first line that starts with `results_from` (the script's progress before it stays in the log) kept in a
    fenced block."""
    outcome = call([node.python, *command], deadline, node.work / f"{name}.log", env)
    output = outcome.stdout.splitlines()
    start = next((i for i, line in enumerate(output) if line.startswith(results_from)), len(output))
    # Markdown tables and headings pass as they are; JSON lines stay in the log; the rest is fenced.
    table = [line for line in output if line.startswith(("|", "###"))]
    text = [line for line in output[start:] if not line.startswith(("|", "###", "{"))]
    body = f"`{shlex.join(command)}`\n\n"
    if table:
        body += "\n".join(table) + "\n"
    if any(line.strip() for line in text):
        body += "\n```\n" + "\n".join(text).strip() + "\n```\n"
    if outcome.returncode not in (0, None):
        body += f"\n*exit {outcome.returncode}: work/{name}.log*\n"
    return body + cut_note(outcome, f"`{name}`"), outcome.returncode == 0


def blades_part(node: Node, deadline: float) -> tuple[str, bool]:
    """Hybrid vs two-level MPI on the blade row, N2 up to 8."""
    layouts = ",".join(f"{a}x{b}" for a, b in blades_layouts(node))
    size = ["--iterations", "10", "--grid", "16", "16", "8"] if node.quick else ["--iterations", "50"]
    return script_part(node, deadline, "blades", [str(REPO / "bench/blades/blades.py"), "--layouts", layouts,
                                                  "--repeat", "2", "--db", str(node.work / "blades.db"), *size],
                       results_from="runs: ")


def pencil_part(node: Node, deadline: float) -> tuple[str, bool]:
    """Pencil weak scaling from 1 rank to every core."""
    counts = [1]
    while counts[-1] * 2 <= node.cores:
        counts.append(counts[-1] * 2)
    if counts[-1] != node.cores:
        counts.append(node.cores)
    size = ["--per-rank", "16", "16", "16", "--steps", "10", "--repeat", "2"] if node.quick else \
        ["--per-rank", "64", "64", "64", "--steps", "50", "--repeat", "2"]
    size += ["--stream-repeats", "3"]
    return script_part(node, deadline, "pencil", [str(REPO / "bench/pencil/weak.py"),
                                                  "--ranks", ",".join(map(str, counts)), *size])


def transpose_part(node: Node, deadline: float) -> tuple[str, bool]:
    """Plane <-> pencil transposes against FFTW-MPI's at 2 ranks on the issue's two grids (issue 34 item 3: the
    2-core VMs gave an AMD and an Intel answer; a node is the other x86 core at hand), every exchange and wire."""
    size = ["--grids", "32x32x32", "--repeat", "1", "--reps", "3"] if node.quick else \
        ["--grids", "128x128x128,256x256x128", "--repeat", "3", "--reps", "20"]
    return script_part(node, deadline, "transpose", [str(REPO / "bench/pencil/transpose.py"), "--ranks", "2", *size],
                       results_from="ratios")


def probe_part(node: Node, deadline: float) -> tuple[str, bool]:
    """The probe's cost (issue 32) on rb3d at 1xN and Nx1: paired wall-time ratio and the sampler's CPU share."""
    layouts = f"1x{node.cores},{node.cores}x1"
    size = ["--pairs", "2", "--size", "24", "--iterations", "10"] if node.quick else \
        ["--pairs", "8", "--size", "128", "--iterations", "200"]
    return script_part(node, deadline, "probe", [str(REPO / "bench/probe/run.py"), "--layouts", layouts, *size])


def is_space(node: Node) -> Path:
    """IS's search space on this node: up to four rank counts (the cores, halves of it), the collective algorithms
    and the shared-memory single-copy mechanism IS's all-to-all exchanges depend on (as bench/tune/is-48.toml).
    Quick: without the single-copy axis (half the configurations; the test suite's run checks the tables, not IS)."""
    ranks = sorted({max(1, node.cores // d) for d in (1, 2, 4, 8)})[-4:]
    single_copy = "" if node.quick else """
[mpi.btl_vader_single_copy_mechanism]
values = ["none"]
unset = true
"""
    path = node.work / "is-node.toml"
    path.write_text(f"""# written by bench/node/node.py for a {node.cores}-core node
[layout]
ranks = {ranks}
threads = [1]
bind = ["core"]
default = {{ ranks = {ranks[-1]}, threads = 1, bind = "core" }}

[mpi.coll_tuned_use_dynamic_rules]
values = [false, true]

[mpi.coll_tuned_alltoallv_algorithm]
values = ["basic_linear", "pairwise"]
requires = {{ coll_tuned_use_dynamic_rules = true }}
{single_copy}""")
    return path


def lu_mz_space(node: Node) -> Path:
    """LU-MZ's search space on this node: every ranks x threads split of the cores (where IS's space has none whose
    best separates from the default, the layouts of a multi-zone code differ by more than the noise), bound or not,
    and the allreduce algorithm of its residual norms (as bench/tune/lu-mz-48.toml). Quick: without the allreduce
    axis."""
    splits = node.splits()
    ranks = sorted({r for r, _ in splits})
    threads = sorted({t for _, t in splits})
    # The cross product of the axes, less every ranks x threads that leaves cores idle or oversubscribes them.
    partial = "".join(f"\n[[constraint]]\nexclude = {{ ranks = {r}, threads = {t} }}\n"
                      for r in ranks for t in threads if r * t < node.cores)
    allreduce = "" if node.quick else """
[mpi.coll_tuned_use_dynamic_rules]
values = [false, true]

[mpi.coll_tuned_allreduce_algorithm]
values = ["recursive_doubling", "ring"]
requires = { coll_tuned_use_dynamic_rules = true }
"""
    path = node.work / "lu-mz-node.toml"
    path.write_text(f"""# written by bench/node/node.py for a {node.cores}-core node
[layout]
ranks = {ranks}
threads = {threads}
bind = ["core", "none"]
default = {{ ranks = {node.cores}, threads = 1, bind = "core" }}
{allreduce}
[[constraint]]
max_cpus = {node.cores}
{partial}""")
    return path


def tune_part(node: Node, deadline: float) -> tuple[str, bool]:
    """Guided vs exhaustive tuning of LU-MZ, then IS, over this node's spaces."""
    hympi = node.work / "hympi"
    hympi.write_text(f"#!/bin/sh\nexec {shlex.join(node.hympi())} \"$@\"\n")
    hympi.chmod(0o755)
    size = ["--lu-mz-class", "S", "--is-class", "S", "--repeat", "1", "--min-time", "0", "--max-runs", "3",
            "--recheck-pairs", "0"] if node.quick else \
        ["--lu-mz-class", "W", "--is-class", "A", "--repeat", "2", "--min-time", "0.3", "--max-runs", "5",
         "--recheck-pairs", "2"]
    body, ok = script_part(node, deadline, "tune", [str(REPO / "bench/tune/run.py"), "--parts", "guided",
                                                    "--programs", "lu-mz,is", "--space", f"lu-mz={lu_mz_space(node)}",
                                                    "--space", f"is={is_space(node)}",
                                                    "--work", str(node.work / "tune"), *size],
                            env={"HYMPI": str(hympi)})
    db = node.work / "tune" / "tune.db"
    if "| exhaustive |" not in body and db.exists():  # cut before run.py's tables: what the database holds
        body += "\n" + tunes_table(db)
    return body, ok


def tunes_table(db: Path) -> str:
    """Every tune in `db` as it stands: strategy, state, configurations and runs measured, best so far."""
    lines = ["Tunes in the database (run.py's comparison was cut):", "",
             "| tune | program | strategy | state | configurations measured | measured runs | best so far | score |",
             "|---|---|---|---|---|---|---|---|"]
    with Store.open(db, create=False) as store:
        for tune in store.tunes():
            measured = tune_results(store, tune.id)
            top = best(measured)
            runs = sum(len(m.rates) for m in measured)
            label, score = (top.config.label(), f"{top.score:.4g}") if top and top.score else ("-", "-")
            lines.append(f"| {tune.id} | {tune.program} | {tune.strategy} | {tune.status} | {len(measured)} | {runs} "
                         f"| {label} | {score} |")
    return "\n".join(lines) + "\n"


# Each part with its share of the budget (of what is left when it starts, among the parts still to run).
PARTS: dict[str, tuple[float, Callable[[Node, float], tuple[str, bool]]]] = {
    "study": (0.2, study_part),
    "npb": (0.35, npb_part),
    "blades": (0.1, blades_part),
    "pencil": (0.1, pencil_part),
    "transpose": (0.08, transpose_part),
    "tune": (0.2, tune_part),
    "probe": (0.05, probe_part),
}


def machine_header(node: Node) -> str:
    """What the tables were measured on."""
    s = node.summary
    launcher = launcher_path()
    model = CPU_MODEL.search(run_hympi_info("this", "xml"))
    cpu = model.group(1) if model else "CPU model not reported by hwloc"
    return (f"Machine: {s.packages} package(s), {s.numa_nodes} NUMA domain(s), {s.cores} cores, {s.pus} PUs "
            f"({cpu}); {launcher_version(launcher)}; started {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
            f"{'quick' if node.quick else 'full'} mode.\n")


def main() -> int:
    """Runs the parts asked for in the budget; writes the tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small problems (the test suite's 2-core run)")
    parser.add_argument("--out", type=Path, default=Path("node-results"),
                        help="output folder, new or empty (default ./node-results)")
    parser.add_argument("--budget", type=float, default=None,
                        help=f"seconds for all parts (default {DEFAULT_BUDGET_S:g}, quick {QUICK_BUDGET_S:g})")
    parser.add_argument("--parts", default=",".join(PARTS), help=f"of {','.join(PARTS)}")
    args = parser.parse_args()
    parts = parse_names(args.parts, PARTS, "--parts", "part")
    if not parts:
        reject("--parts", "no part given")
    budget = args.budget if args.budget is not None else (QUICK_BUDGET_S if args.quick else DEFAULT_BUDGET_S)
    require_seconds([("--budget", budget)], zero_ok=False)
    if args.out.exists() and any(args.out.iterdir()):
        reject("--out", f"{args.out} exists and is not empty (nothing is overwritten)")
    node = Node(machine_summary(), args.out.resolve(), args.quick, sys.executable)
    node.work.mkdir(parents=True)
    end = time.monotonic() + budget
    report = [f"# Many-core node run ({node.cores} cores)\n", machine_header(node)]
    healthy = True
    for index, name in enumerate(parts):
        share, run = PARTS[name]
        left = sum(PARTS[p][0] for p in parts[index:])
        started = time.monotonic()
        deadline = started + (end - started) * share / left
        body, ok = run(node, deadline)
        took = time.monotonic() - started
        section = f"## {name} ({took:.0f} s)\n\n{body}"
        (node.out / f"{name}.md").write_text(section)
        report.append(section)
        print(section, flush=True)
        healthy &= ok
    (node.out / "node.md").write_text("\n".join(report))
    return 0 if healthy else 1


if __name__ == "__main__":
    sys.exit(main())
