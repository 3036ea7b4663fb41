"""Sweeps: the cross product of layouts x bindings x repeats, each run recorded, resumable after interruption."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from hympi.apps import get_app
from hympi.errors import UsageError
from hympi.launch import slurm
from hympi.launch.mpirun import (
    BIND_POLICIES,
    DISTRIBUTIONS,
    LaunchSpec,
    RunOutcome,
    build_command,
    launcher_path,
    launcher_version,
    run_command,
    validate_with_app,
)
from hympi.paths import REPO_ROOT
from hympi.store import Machine, Run, Store, Sweep, now_utc
from hympi.topology import MachineSummary

LAUNCHERS = ("mpirun", "slurm")
DEFAULT_TIMEOUT_S = 600.0
# Variables that change how a run behaves; recorded with every run.
_ENV_PREFIXES = ("OMP_", "GOMP_", "KMP_", "HYMPI_", "OMPI_MCA_", "MPICH_", "I_MPI_", "UCX_", "FI_")


def parse_int_list(option: str, text: str) -> tuple[int, ...]:
    """'1,2,4' -> (1, 2, 4); raises UsageError naming `option` for empty, non-integer or < 1 entries."""
    parts = [p.strip() for p in text.split(",")]
    if not text.strip() or any(p == "" for p in parts):
        raise UsageError(f"{option} needs a comma-separated list of positive integers, got '{text}'")
    values: list[int] = []
    for part in parts:
        try:
            value = int(part)
        except ValueError:
            raise UsageError(f"{option}: '{part}' is not an integer") from None
        if value < 1:
            raise UsageError(f"{option}: {value} must be >= 1")
        if value not in values:
            values.append(value)
    return tuple(values)


def parse_choice_list(option: str, text: str, choices: tuple[str, ...]) -> tuple[str, ...]:
    """'core,none' -> ('core', 'none'); raises UsageError for empty lists or values not in `choices`."""
    parts = [p.strip() for p in text.split(",")]
    if not text.strip() or any(p == "" for p in parts):
        raise UsageError(f"{option} needs a comma-separated list from {', '.join(choices)}, got '{text}'")
    values: list[str] = []
    for part in parts:
        if part not in choices:
            raise UsageError(f"{option}: unknown value '{part}' (expected {', '.join(choices)})")
        if part not in values:
            values.append(part)
    return tuple(values)


def cross_layouts(ranks: tuple[int, ...], threads: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
    """Every (ranks, threads) pair, ranks-major."""
    return tuple((r, t) for r in ranks for t in threads)


@dataclass(frozen=True)
class SweepParams:
    """Everything that defines a sweep; equal parameters identify the sweep to resume."""

    app: str
    layouts: tuple[tuple[int, int], ...]
    binds: tuple[str, ...] = ("core",)
    dist: str = "compact"
    repeat: int = 1
    app_args: tuple[str, ...] = ()
    timeout: float = DEFAULT_TIMEOUT_S
    oversubscribe: bool = False
    virtual_nodes: int = 1
    launcher: str = "mpirun"

    def as_dict(self) -> dict:
        """JSON-ready form, stored with the sweep."""
        return {"app": self.app, "layouts": [list(x) for x in self.layouts], "binds": list(self.binds),
                "dist": self.dist, "repeat": self.repeat, "app_args": list(self.app_args), "timeout": self.timeout,
                "oversubscribe": self.oversubscribe, "virtual_nodes": self.virtual_nodes, "launcher": self.launcher}

    @classmethod
    def from_dict(cls, data: dict) -> SweepParams:
        """The inverse of as_dict."""
        return cls(data["app"], tuple((int(r), int(t)) for r, t in data["layouts"]), tuple(data["binds"]),
                   data["dist"], int(data["repeat"]), tuple(data["app_args"]), float(data["timeout"]),
                   bool(data["oversubscribe"]), int(data["virtual_nodes"]), data["launcher"])

    def check(self) -> None:
        """Rejects bad values (UsageError, one line naming the value) before anything runs."""
        get_app(self.app)
        if not self.layouts:
            raise UsageError("the sweep has no layouts")
        for ranks, threads in self.layouts:
            if ranks < 1 or threads < 1:
                raise UsageError(f"layout {ranks}x{threads}: ranks and threads must be >= 1")
        if not self.binds:
            raise UsageError("--bind needs at least one binding")
        for bind in self.binds:
            if bind not in BIND_POLICIES:
                raise UsageError(f"unknown binding '{bind}' (expected {', '.join(BIND_POLICIES)})")
        if self.dist not in DISTRIBUTIONS:
            raise UsageError(f"unknown distribution '{self.dist}' (expected {', '.join(DISTRIBUTIONS)})")
        if self.repeat < 1:
            raise UsageError(f"--repeat must be >= 1, got {self.repeat}")
        if not self.timeout > 0:
            raise UsageError(f"--timeout must be > 0, got {self.timeout}")
        if self.virtual_nodes < 1:
            raise UsageError(f"--virtual-nodes must be >= 1, got {self.virtual_nodes}")
        if self.launcher not in LAUNCHERS:
            raise UsageError(f"unknown launcher '{self.launcher}' (expected {', '.join(LAUNCHERS)})")

    def spec(self, ranks: int, threads: int, bind: str) -> LaunchSpec:
        """The launch of one layout."""
        return LaunchSpec(get_app(self.app).binary, ranks, threads, bind, self.dist, self.app_args, self.oversubscribe,
                          (("HYMPI_VIRTUAL_NODES", str(self.virtual_nodes)),))


@dataclass(frozen=True)
class SweepItem:
    """One run of a sweep: a layout, a binding and which repeat."""

    ranks: int
    threads: int
    bind: str
    repeat: int

    def key(self) -> tuple[int, int, str, int]:
        """The same tuple Run.key() gives for the recorded run."""
        return (self.ranks, self.threads, self.bind, self.repeat)

    def label(self) -> str:
        """'2x1 core #1' for progress lines."""
        return f"{self.ranks}x{self.threads} {self.bind} #{self.repeat}"


@dataclass(frozen=True)
class Plan:
    """The items of a sweep and the layouts left out because they would oversubscribe."""

    items: tuple[SweepItem, ...]
    skipped: tuple[tuple[int, int], ...]


def plan(params: SweepParams, cpu_limit: int | None) -> Plan:
    """Items in run order (repeats outermost, so drift spreads over every layout); skips oversubscribing layouts."""
    keep = []
    skipped = []
    for ranks, threads in params.layouts:
        if cpu_limit is not None and ranks * threads > cpu_limit and not params.oversubscribe:
            skipped.append((ranks, threads))
        else:
            keep.append((ranks, threads))
    items = tuple(SweepItem(r, t, b, rep) for rep in range(1, params.repeat + 1) for b in params.binds
                  for r, t in keep)
    return Plan(items, tuple(skipped))


def cpu_limit(params: SweepParams, summary: MachineSummary) -> int | None:
    """How many hardware threads a layout may use without oversubscribing (None: the launcher decides)."""
    if params.launcher == "slurm":
        return slurm.allocation_cpus()
    return summary.pus


def validate_layouts(params: SweepParams, items: tuple[SweepItem, ...]) -> None:
    """Asks the app whether its arguments suit every layout (no MPI); raises UsageError before anything runs."""
    seen: set[tuple[int, int, str]] = set()
    for item in items:
        if (item.ranks, item.threads, item.bind) not in seen:
            seen.add((item.ranks, item.threads, item.bind))
            validate_with_app(params.spec(item.ranks, item.threads, item.bind))


def command_for(params: SweepParams, item: SweepItem) -> list[str]:
    """The launch command of one item as an argument list, for the sweep's launcher."""
    spec = params.spec(item.ranks, item.threads, item.bind)
    if params.launcher == "slurm":
        return slurm.build_srun_command(spec)
    return build_command(spec)


def run_env(params: SweepParams, item: SweepItem) -> tuple[tuple[str, str], ...]:
    """The environment that shapes a run: hympi's layout variables plus OMP_/MPI tuning variables already set."""
    env = {k: v for k, v in os.environ.items() if k.startswith(_ENV_PREFIXES)}
    env.update(params.spec(item.ranks, item.threads, item.bind).app_env())
    return tuple(sorted(env.items()))


def compiler_version() -> str:
    """The C++ compiler the apps were built with (from CMakeCache.txt), as its --version banner's first line."""
    compiler = "c++"
    cache = REPO_ROOT / "build" / "CMakeCache.txt"
    if cache.is_file():
        for line in cache.read_text(errors="replace").splitlines():
            if line.startswith("CMAKE_CXX_COMPILER:"):
                compiler = line.split("=", 1)[1].strip() or compiler
                break
    try:
        out = subprocess.run([compiler, "--version"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return compiler
    first = out.stdout.strip().splitlines()
    return first[0] if first else compiler


def mpi_library(launcher: str) -> str:
    """The MPI library behind the local launcher ('mpirun (Open MPI) 4.1.4'), or 'unknown'."""
    try:
        return launcher_version(launcher_path())
    except Exception:  # noqa: BLE001 - no local launcher (e.g. a Slurm login node): the runs record their library
        return "unknown"


def record_machine(store: Store, summary: MachineSummary, launcher: str) -> Machine:
    """This machine's row in the store (topology, MPI library, compiler)."""
    return store.ensure_machine(socket.gethostname(), summary.hash, mpi_library(launcher), compiler_version(),
                                summary.as_dict())


class SweepInterrupted(KeyboardInterrupt):
    """The sweep was stopped by SIGINT or SIGTERM; finished runs are stored, `--resume` continues."""


@contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """Turns SIGTERM into SweepInterrupted so the running launch is killed and the sweep marked interrupted."""
    def handler(signum: int, frame: FrameType | None) -> None:
        raise SweepInterrupted(f"signal {signum}")
    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@dataclass(frozen=True)
class SweepResult:
    """What one call of run_sweep did."""

    sweep: Sweep
    ran: int
    already_done: int
    statuses: dict[str, int]


def open_sweep(store: Store, machine: Machine, params: SweepParams, total: int, resume: bool | int,
               study_id: int | None = None) -> tuple[Sweep, bool]:
    """The sweep to run: the latest unfinished one with equal parameters (or the given id) when resuming, else new."""
    if isinstance(resume, int) and not isinstance(resume, bool):
        sweep = store.sweep(resume)
        if sweep.app != params.app:
            raise UsageError(f"sweep {resume} is a sweep of {sweep.app}, not {params.app}")
        return sweep, True
    if resume:
        found = store.latest_unfinished(params.as_dict())
        if found is not None:
            if study_id is not None:
                store.attach_sweep(found.id, study_id)
            return store.sweep(found.id), True
    return store.create_sweep(machine.id, params.app, params.as_dict(), total, study_id), False


def _outcome_run(sweep_id: int, params: SweepParams, item: SweepItem, outcome: RunOutcome, started: str) -> Run:
    """The store record of one launch."""
    return Run(sweep_id, params.app, item.ranks, item.threads, item.bind, params.dist, item.repeat, params.app_args,
               run_env(params, item), tuple(outcome.command), outcome.status, outcome.returncode, outcome.seconds,
               outcome.record, outcome.stderr_tail(), started, now_utc())


def _line(item: SweepItem, run: Run) -> str:
    """One progress line for a finished run."""
    colour = {"ok": "green", "unverified": "yellow"}.get(run.status, "red")
    rate = run.value("rate")
    what = f"{rate:.4g} {run.record.get('rate_unit', '')}" if rate is not None and run.record else ""
    tail = run.stderr_tail.strip().splitlines()[-1:] if run.status in ("failed", "timeout") else []
    why = f" [dim]{tail[0][:100]}[/dim]" if tail else ""
    return f"  {item.label():<18} [{colour}]{run.status:<10}[/{colour}] {what:<22} {run.wall_s:6.1f} s{why}"


def run_sweep(store: Store, sweep: Sweep, params: SweepParams, items: tuple[SweepItem, ...],
              console: Console | None = None,
              runner: Callable[[list[str], float], RunOutcome] | None = None) -> SweepResult:
    """Runs every item not yet recorded for `sweep`, storing each run in its own transaction."""
    console = console or Console()
    runner = runner or (lambda cmd, timeout: run_command(cmd, timeout))
    done = store.done_keys(sweep.id)
    todo = [item for item in items if item.key() not in done]
    statuses: dict[str, int] = {}
    store.set_sweep_status(sweep.id, "running")
    columns = (SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn())
    try:
        with _terminate_as_interrupt(), Progress(*columns, console=console, transient=True) as progress:
            task = progress.add_task(f"sweep {sweep.id} {params.app}", total=len(todo))
            for item in todo:
                progress.update(task, description=f"sweep {sweep.id} {params.app} {item.label()}")
                started = now_utc()
                outcome = runner(command_for(params, item), params.timeout)
                run = _outcome_run(sweep.id, params, item, outcome, started)
                store.add_run(run)
                statuses[run.status] = statuses.get(run.status, 0) + 1
                progress.console.print(_line(item, run), highlight=False)
                progress.advance(task)
    except BaseException:
        store.set_sweep_status(sweep.id, "interrupted")
        raise
    store.set_sweep_status(sweep.id, "finished")
    return SweepResult(store.sweep(sweep.id), len(todo), len(items) - len(todo), statuses)


def sbatch_command(params: SweepParams, db: Path) -> list[str]:
    """The `hympi sweep` argument list the sbatch script runs inside the allocation (srun, resuming)."""
    exe = Path(sys.executable).parent / "hympi"
    inline = "import sys; from hympi.cli import main; sys.exit(main())"
    head = [str(exe)] if exe.is_file() else [sys.executable, "-c", inline]
    ranks = sorted({r for r, _ in params.layouts})
    threads = sorted({t for _, t in params.layouts})
    cmd = head + ["sweep", params.app, "--ranks", ",".join(map(str, ranks)), "--threads", ",".join(map(str, threads)),
                  "--bind", ",".join(params.binds), "--dist", params.dist, "--repeat", str(params.repeat),
                  "--timeout", f"{params.timeout:g}", "--virtual-nodes", str(params.virtual_nodes),
                  "--db", str(db.resolve()), "--launcher", "slurm", "--resume"]
    if params.oversubscribe:
        cmd.append("--oversubscribe")
    if params.app_args:
        cmd += ["--", *params.app_args]
    return cmd


def batch_request(params: SweepParams, db: Path, items: int) -> slurm.BatchRequest:
    """The allocation a sweep needs (its largest layout) and the command that runs it there."""
    ntasks = max(r for r, _ in params.layouts)
    cpus = max(t for _, t in params.layouts)
    limit = items * params.timeout + 300.0
    return slurm.BatchRequest(f"hympi-sweep-{params.app}", ntasks, cpus, limit, str(Path.cwd()),
                              tuple(sbatch_command(params, db)))
