"""Sweeps: the cross product of layouts x bindings x memory policies x repeats, each run recorded, resumable after
interruption.

Measurement protocol: every layout first runs once as a warm-up (repeat number 0: recorded, never counted), then
the measured rounds 1..repeat follow; each round runs every layout once, in an order shuffled by a generator seeded
with (seed, round), so load drift hits every layout alike and a resumed sweep keeps its order. With --repeat auto,
more rounds of the layouts still inside the noise of the best follow until the best is separated from the
runner-up at the chosen confidence or the --max-repeat budget is spent.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from contextlib import nullcontext, suppress
from dataclasses import dataclass, fields, replace
from functools import partial
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.markup import escape
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
from hympi.busy.accounting import Interference
from hympi.busy.sampler import Sampler
from hympi.console import HympiConsole
from hympi.errors import HympiFatal, StoppedBySignal, UsageError
from hympi.inputs import InputWatch, check_inputs_since, earlier_inputs, named_files
from hympi.iorecord import restart_step
from hympi.jsontypes import JsonObject
from hympi.launch import slurm, slurm_jobs
from hympi.launch.command import launch_command
from hympi.launch.cvars import ignored_texts
from hympi.launch.layout import LAYOUT_BINDS, layout_pus
from hympi.launch.mpirun import (
    DEFAULT_MEMBIND,
    LaunchSpec,
    RunOutcome,
    check_layout_size,
    ended_with,
    launcher_path,
    launcher_version,
    one_mpi_job,
    run_command,
    validate_with_app,
    with_placeholders,
)
from hympi.launch.stop import stop_deferred, stop_signals
from hympi.layout_options import LAUNCHER, RANKS, THREADS
from hympi.outputs import write_problem
from hympi.params import (
    AUTO,
    DEFAULT_CONFIDENCE,
    DEFAULT_DISTURBED_ABOVE,
    DEFAULT_MAX_REPEAT,
    DEFAULT_TIMEOUT_S,
    MAX_REPEAT,
    as_record,
    check_fields,
    closest,
    declared_default,
    differing_params,
    from_record,
)
from hympi.paths import REPO_ROOT, program_named
from hympi.prepare import PREPARE
from hympi.program import (
    KEEP_ALL_RUN_DIRS,
    LAST_LINES,
    LINE_JOINT,
    PROGRAM,
    STDIN,
    Program,
    failed_run,
    file_digest,
    launch_stdin,
    probed_program_run,
    program_of,
    refuse_program_flags,
    refuse_redirected_stdin,
    watch_file,
)
from hympi.result import shown_rate
from hympi.stats.compare import MIN_SAMPLES, Sample, compare, contenders, is_finite_positive
from hympi.stats.median import median_or_none
from hympi.store import WARMUP_REPEAT, ItemKey, MachineRecord, Run, Store, Sweep, now_utc
from hympi.sweep_options import SWEEP, SWEEP_REPEAT, checkpoint_apps
from hympi.topology import MachineSummary

# Variables that change how a run behaves; recorded with every run.
_ENV_PREFIXES = ("OMP_", "GOMP_", "KMP_", "HYMPI_", "OMPI_MCA_", "MPICH_", "I_MPI_", "UCX_", "FI_")
# Exit code of an app for bad input: after --restart, the checkpoint itself was refused (corrupt, another problem).
BAD_INPUT_EXIT = 2
# What a sweep item runs, whichever repeat: (ranks, threads, bind, membind, item arguments).
SweepLayout = tuple[int, int, str, str, tuple[str, ...]]


# What sweeps recorded before a parameter existed ran with (SweepParams.from_dict).
RECORDED_BEFORE: Mapping[str, object] = {"min_time": 0.0, "seed": 0, "warmup": False, "auto": False,
                                         "max_repeat": lambda data: data["repeat"]}
# Parameters recorded and spelled again only when not at their default (a sweep without them keeps its identity).
SPELLED_WHEN_SET = ("mpi_params", "mpit_read", "checkpoint_dir", "checkpoint_every", "membinds", "layout_args",
                    "program", "program_sha256", "metric", "metric_unit", "better", "verify", "workdir",
                    "output_file", "stdin", "stdin_sha256", "env", "prepare", "prepare_sha256", "keep_run_dirs",
                    "disturbed_above")


@dataclass(frozen=True)
class SweepParams:
    """Everything that defines a sweep; equal parameters (except the seed) identify the sweep to resume.

    `repeat` is the number of measured rounds (with `auto`, the rounds before the first decision); `warmup` adds the
    uncounted round 0; `min_time` (s, 0 = off) is exported to the app as HYMPI_MIN_TIME; `seed` shuffles the order.
    With `checkpoint_dir` (absolute; "" = none) every run writes a checkpoint per `checkpoint_every` steps there, and
    a run stopped before its end is relaunched from it by the next run_sweep of the sweep (see checkpoint_path).
    `membinds` is the memory-policy axis (HYMPI_MEMBIND), crossed with the bindings. `layout_args` (empty, or one
    entry per layout) are each layout's own app arguments, after `app_args`: a two-level sweep (hympi.twolevel) gives
    every (ranks, threads) launch its level-2 options, so equal launch shapes of other modes are other items.
    A sweep of a program of the user's own (hympi.program) has its absolute path in `program` ("" for an app; `app`
    is then the program's name), its file's sha256, its figure of merit and verification, `workdir`, where it runs,
    `output_file`, the file it writes its results into ("": none), `stdin`, the file each run reads as its standard
    input ("": /dev/null), with `stdin_sha256` its contents' digest (an edited input is another problem, as a rebuilt
    binary is another program: a new sweep, never resumed into the old one's runs), and `env`, the variables its
    ranks get (one NAME=VALUE a line, as every program field is text), `prepare`, the command run before each
    launch ("": none; hympi.prepare), with `prepare_sha256` its program's file's digest when a path names it (an
    edited preparation is another sweep too), and `keep_run_dirs`, which launches keep their {run} directory
    (hympi.program.KEEP_RUN_DIRS);
    the launcher binds it (it does not call hympi's binding).
    A run during which other processes used more than `disturbed_above` cores of its PUs is disturbed (hympi.busy):
    recorded, marked, never counted.
    """

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
    min_time: float = declared_default("min_time")
    seed: int = 0
    warmup: bool = True
    auto: bool = False
    max_repeat: int = DEFAULT_MAX_REPEAT
    confidence: float = DEFAULT_CONFIDENCE
    mpi_params: tuple[tuple[str, str], ...] = ()
    mpit_read: tuple[str, ...] = ()
    checkpoint_dir: str = ""
    checkpoint_every: int = 0
    membinds: tuple[str, ...] = (DEFAULT_MEMBIND,)
    layout_args: tuple[tuple[str, ...], ...] = ()
    program: str = ""
    program_sha256: str = ""
    metric: str = ""
    metric_unit: str = ""
    better: str = ""
    verify: str = ""
    workdir: str = ""
    output_file: str = ""
    stdin: str = ""
    stdin_sha256: str = ""
    env: str = ""
    prepare: str = ""
    prepare_sha256: str = ""
    keep_run_dirs: str = KEEP_ALL_RUN_DIRS
    disturbed_above: float = DEFAULT_DISTURBED_ABOVE

    def program_spec(self) -> Program | None:
        """The program swept, None for a sweep of one of hympi's apps."""
        return program_from_fields(vars(self))

    def args_of(self, index: int) -> tuple[str, ...]:
        """The own app arguments of layout number `index` (() without per-layout arguments)."""
        return self.layout_args[index] if self.layout_args else ()

    def as_dict(self) -> JsonObject:
        """JSON-ready form, stored with the sweep (mpi_params, mpit_read, the checkpoint settings, the memory
        policies and per-layout arguments only when not the default, so a sweep without any keeps the identity it
        had before they existed)."""
        return as_record(self, SPELLED_WHEN_SET)

    def identity(self) -> JsonObject:
        """What `--resume` matches on: every parameter except the seed (drawn anew by each command line)."""
        data = self.as_dict()
        del data["seed"]
        return data

    @classmethod
    def from_dict(cls, data: JsonObject) -> SweepParams:
        """The inverse of as_dict; a sweep recorded before a key existed gets the behaviour it ran with (no warm-up,
        no minimum time, fixed repeats, seed 0)."""
        return from_record(cls, data, RECORDED_BEFORE)

    def check(self) -> None:
        """Rejects bad values (UsageError, one line naming the value) before anything runs: each field with the
        check its declaration (hympi.sweep_options) gives the flag, then what only fields together decide."""
        program = self.program_spec()
        if program is None:
            get_app(self.app)
        else:
            check_program(program, self)
        if not self.layouts:
            raise UsageError("the sweep has no layouts")
        for ranks, threads in self.layouts:
            if ranks < 1 or threads < 1:
                raise UsageError(f"layout {ranks}x{threads}: ranks and threads must be >= 1")
            check_layout_size(ranks, threads)
        if self.layout_args and len(self.layout_args) != len(self.layouts):
            raise UsageError(f"{len(self.layout_args)} per-layout argument lists for {len(self.layouts)} layouts")
        if not self.binds:
            raise UsageError("--bind needs at least one binding")
        if not self.membinds:
            raise UsageError("--membind needs at least one memory policy")
        check_fields(self, SWEEP)
        if self.auto and self.max_repeat < self.repeat:
            raise UsageError(f"--max-repeat {self.max_repeat} is below the {self.repeat} rounds --repeat auto "
                             "always runs")
        fewest = min(self.layouts, key=lambda x: x[0])
        if self.virtual_nodes > fewest[0]:
            raise UsageError(f"--virtual-nodes {self.virtual_nodes}: layout {fewest[0]}x{fewest[1]} has only "
                             f"{fewest[0]} rank(s), and every virtual node needs at least one")
        if self.checkpoint_dir:
            check_checkpoint_dir(self.app, self.checkpoint_dir, self.checkpoint_every)

    def spec(self, ranks: int, threads: int, bind: str, extra_args: tuple[str, ...] = (),
             membind: str = DEFAULT_MEMBIND) -> LaunchSpec:
        """The launch of one layout under memory policy `membind` (HYMPI_MIN_TIME tells the app how long its timed
        region must last); `extra_args` (the item's own arguments, then a run's --checkpoint ... --restart ...)
        follow the app's arguments. A program is bound by the launcher (and OMP_PLACES / OMP_PROC_BIND)."""
        program = self.program_spec()
        if program is not None:
            return LaunchSpec(self.program, ranks, threads, bind, self.dist, (*self.app_args, *extra_args),
                              self.oversubscribe, program.environment(), mpi_params=self.mpi_params, membind=membind,
                              binder="launcher")
        return LaunchSpec(get_app(self.app).binary, ranks, threads, bind, self.dist, (*self.app_args, *extra_args),
                          self.oversubscribe,
                          (("HYMPI_VIRTUAL_NODES", str(self.virtual_nodes)), ("HYMPI_MIN_TIME", f"{self.min_time:g}")),
                          mpi_params=self.mpi_params, mpit_read=self.mpit_read, membind=membind)

    def checkpoint_tag(self) -> str:
        """8 hex digits of the sweep's identity, in every checkpoint name: sweeps of other parameters sharing a
        checkpoint directory never take each other's files, and a resumed sweep finds its own."""
        text = json.dumps(self.identity(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:8]


def program_fields(program: Program) -> dict[str, str]:
    """The SweepParams fields that name `program`, for from_record with the rest of a sweep's parameters (the output
    file, the environment, the preparation and the run directories kept only when it has them, or other than the
    default: a tune of a program without keeps the identity it had before the fields existed)."""
    return {"app": program.name, "program": program.path, "program_sha256": program.sha256, "metric": program.metric,
            "metric_unit": program.metric_unit, "better": program.better if program.metric else "",
            "verify": program.verify, "workdir": program.workdir,
            **({"output_file": program.output_file} if program.output_file else {}),
            **({"stdin": program.stdin, "stdin_sha256": stdin_digest(program)} if program.stdin else {}),
            **({"env": "\n".join(program.env)} if program.env else {}),
            **({"prepare": program.prepare} if program.prepare else {}),
            **({"prepare_sha256": file_digest_of(PREPARE.flag, path)} if (path := program.prepare_path()) else {}),
            **({"keep_run_dirs": program.keep_run_dirs} if program.keep_run_dirs != KEEP_ALL_RUN_DIRS else {})}


def stdin_digest(program: Program) -> str:
    """The sha256 of the file `program` reads as its standard input (UsageError naming it when it cannot be read)."""
    path = program.stdin_path()
    assert path is not None
    return file_digest_of(STDIN.flag, path)


def file_digest_of(option: str, path: Path) -> str:
    """The sha256 of file `path`, which `option` names (UsageError naming both when it cannot be read)."""
    try:
        return file_digest(path)
    except OSError as exc:
        raise UsageError(f"{option} {path} cannot be read ({exc.strerror or exc})") from None


def program_from_fields(fields: Mapping[str, object]) -> Program | None:
    """The program that SweepParams fields name (program_fields' inverse: a tune stores them as its subject), None
    for one of hympi's apps."""
    if not fields.get("program"):
        return None

    def text(key: str) -> str:
        return str(fields.get(key) or "")

    return Program(name=text("app"), path=text("program"), sha256=text("program_sha256"), metric=text("metric"),
                   metric_unit=text("metric_unit"), better=text("better") or "higher", verify=text("verify"),
                   workdir=text("workdir"), output_file=text("output_file"), stdin=text("stdin"),
                   env=tuple(text("env").splitlines()), prepare=text("prepare"),
                   keep_run_dirs=text("keep_run_dirs") or KEEP_ALL_RUN_DIRS)


def program_subject(subject: str, values: Mapping[str, object]) -> dict[str, str]:
    """The SweepParams fields naming a command's subject: {"app": subject} for one of hympi's apps, or a program's
    fields (program_fields) for a path; `values` are the resolved --metric/--metric-unit/--better/--verify, which
    only a program takes (UsageError naming the flag otherwise)."""
    if not program_named(subject):
        refuse_program_flags(subject, values)
        return {"app": subject}
    program = program_of(subject, values)
    refuse_redirected_stdin(program)
    return program_fields(program)


def check_program(program: Program, params: SweepParams) -> None:
    """What a sweep of a program demands (UsageError naming the value): its figure of merit declared right, bindings
    a launcher can give, no checkpoints (hympi cannot ask a program to write them), and the file unchanged since
    the sweep was recorded (a rebuilt binary is another program: a new sweep)."""
    program.check()
    for bind in params.binds:
        if bind not in (*LAYOUT_BINDS, "none"):
            raise UsageError(f"--bind {bind}: a program is bound by the launcher, which binds to "
                             f"{', '.join(LAYOUT_BINDS)} or none")
    if params.checkpoint_dir:
        raise UsageError(f"--checkpoint-dir: only hympi's apps ({', '.join(checkpoint_apps())}) write checkpoints "
                         "a sweep can restart from")
    if not Path(program.path).is_file():
        raise UsageError(f"program {program.path}: no such file")
    for what, path, sha256 in _recorded_files(program, params):
        if file_digest_of(what, path) != sha256:
            raise UsageError(f"{what} {path} has changed since this sweep was recorded (sha256 {sha256[:12]}...): "
                             "start a new sweep")
    program.check_run_dirs(params.app_args)


def _recorded_files(program: Program, params: SweepParams) -> list[tuple[str, Path, str]]:
    """The files whose digests a sweep of `program` recorded, each with what names it and the digest: the program's
    own, the one it reads as its standard input and its preparation's program, where it has them. check_program
    holds them to the digests at the sweep's start, _watched_files before each launch."""
    files = [("program", Path(program.path), program.sha256)]
    if (stdin := program.stdin_path()) is not None and params.stdin_sha256:
        files.append((STDIN.flag, stdin, params.stdin_sha256))
    if (prepare := program.prepare_path()) is not None and params.prepare_sha256:
        files.append((PREPARE.flag, prepare, params.prepare_sha256))
    return files


def check_checkpoint_dir(app: str, directory: str, every: int) -> None:
    """Rejects (UsageError, one line naming the value) an app without checkpoints, a cadence < 1, and a directory
    that is a file, cannot be written into or cannot be created (its parent is missing or not writable): tried with
    one empty probe file (hympi.outputs.write_problem)."""
    if not get_app(app).checkpoints:
        raise UsageError(f"--checkpoint-dir: {app} writes no checkpoints "
                         f"(apps that do: {', '.join(checkpoint_apps())})")
    if every < 1:
        raise UsageError(f"--checkpoint-every must be >= 1, got {every}")
    path = Path(directory)
    if path.exists() and not path.is_dir():
        raise UsageError(f"--checkpoint-dir {directory} is not a directory")
    if path.is_dir():
        if (why := write_problem(path)) is not None:
            raise UsageError(f"--checkpoint-dir {directory} is not writable ({why})")
        return
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir() or write_problem(parent) is not None:
        raise UsageError(f"--checkpoint-dir {directory} cannot be created: {parent} is not a writable directory")


def checkpoint_path(params: SweepParams, item: SweepItem) -> Path | None:
    """Where the run of `item` keeps its checkpoint: CHECKPOINT_DIR/<app>-<R>x<T>-<bind>[-<membind>]-<repeat>-<tag>.h5,
    the memory policy only when not the default, 6 hex digits of the item's own arguments after it when it has any
    (None for a sweep without checkpoints)."""
    if not params.checkpoint_dir:
        return None
    policy = "" if item.membind == DEFAULT_MEMBIND else f"-{item.membind}"
    if item.args:
        policy += "-" + hashlib.sha256("\0".join(item.args).encode()).hexdigest()[:6]
    name = f"{params.app}-{item.ranks}x{item.threads}-{item.bind}{policy}-{item.repeat}-{params.checkpoint_tag()}.h5"
    return Path(params.checkpoint_dir) / name


def io_args(params: SweepParams, item: SweepItem, restart: bool) -> tuple[str, ...]:
    """The app arguments of a run's checkpoints: --checkpoint PATH --checkpoint-every N, and --restart PATH when
    `restart` (the run continues from the checkpoint an earlier launch of the item left)."""
    path = checkpoint_path(params, item)
    if path is None:
        return ()
    args = ("--checkpoint", str(path), "--checkpoint-every", str(params.checkpoint_every))
    return (*args, "--restart", str(path)) if restart else args


def restartable(params: SweepParams, item: SweepItem) -> bool:
    """Whether an earlier launch of `item` left a checkpoint to restart from."""
    path = checkpoint_path(params, item)
    return path is not None and path.is_file()


def remove_checkpoint(params: SweepParams, item: SweepItem) -> None:
    """Deletes the checkpoint of a run that reached its end, a temporary one a kill during a write left, and the
    lock file its writer held (h5::CheckpointLock)."""
    path = checkpoint_path(params, item)
    if path is not None:
        for leftover in (path, *(path.with_name(path.name + suffix) for suffix in (".tmp", ".lock"))):
            leftover.unlink(missing_ok=True)


def reject_checkpoint(params: SweepParams, item: SweepItem, suffix: str = ".rejected") -> Path | None:
    """Moves a checkpoint no later resume may restart from to <name><suffix>: one the app refused on restart (exit
    2: corrupt, another app's or size's; .rejected) or one a restart could not get past (.stalled, see
    checkpoint_state). The run keeps its status; the file is kept to look at; returns the new name."""
    path = checkpoint_path(params, item)
    if path is None or not path.is_file():
        return None
    target = path.with_name(path.name + suffix)
    os.replace(path, target)
    return target


CheckpointState = tuple[int, int, int]


def checkpoint_state(params: SweepParams, item: SweepItem) -> CheckpointState | None:
    """(inode, size, mtime in ns) of the item's checkpoint, None when there is none. The app replaces the file by a
    rename (a new inode) whenever it writes one, so the same state before and after a restarted launch means that the
    launch wrote none: restarting from that file again would stop at the same place (the checkpoint of the last
    step, with the verification longer than --timeout; or a --timeout shorter than one checkpoint interval)."""
    path = checkpoint_path(params, item)
    if path is None:
        return None
    try:
        info = path.stat()
    except FileNotFoundError:
        return None
    return (info.st_ino, info.st_size, info.st_mtime_ns)


def untimed_restart(outcome: RunOutcome) -> RunOutcome:
    """The outcome of a launch restarted from a checkpoint, 'failed' with a note at the end of its stderr when it
    ended ok but timed no step (rate <= 0 or none: it restarted from the checkpoint of its last step and only
    verified). Recorded 'ok', its rate 0 would stand for a measurement that was never made."""
    rate = outcome.record.get("rate") if outcome.record is not None else None
    if outcome.status != "ok" or (isinstance(rate, (int, float)) and rate > 0):
        return outcome
    note = ("hympi: restarted from the checkpoint of its last step: verified, but no step was left to time (an "
            "earlier launch was stopped after its last step, during the verification: a longer --timeout lets "
            "it end)")
    return replace(outcome, status="failed", stderr=f"{outcome.stderr.rstrip()}\n{note}".lstrip())


@dataclass(frozen=True)
class SweepItem:
    """One run of a sweep: a layout, a binding, a memory policy, which repeat, and the item's own app arguments
    (`args`, after the sweep's: a two-level sweep's --inner/--n2; () for an ordinary sweep)."""

    ranks: int
    threads: int
    bind: str
    repeat: int
    membind: str = DEFAULT_MEMBIND
    args: tuple[str, ...] = ()

    def key(self) -> ItemKey:
        """The same tuple Run.key() gives for the recorded run."""
        return (self.ranks, self.threads, self.bind, self.repeat, self.membind, self.args)

    def layout(self) -> SweepLayout:
        """(ranks, threads, bind, membind, args): what the item runs, whichever repeat."""
        return (self.ranks, self.threads, self.bind, self.membind, self.args)

    def label(self) -> str:
        """'2x1 core #1' for progress lines ('2x1 core membind=interleave #1' under another memory policy, the item's
        own arguments after the layout when it has any)."""
        return f"{layout_name(self.layout())} #{self.repeat}"


@dataclass(frozen=True)
class Plan:
    """The items of a sweep (warm-ups, then the measured rounds) and the layouts left out (would oversubscribe)."""

    items: tuple[SweepItem, ...]
    skipped: tuple[tuple[int, int], ...]
    layouts: tuple[SweepLayout, ...] = ()


def round_order(seed: int, round_no: int, layouts: tuple[SweepLayout, ...]) -> list[SweepLayout]:
    """The layouts of one round in the order they run: a permutation drawn from a generator seeded (seed, round)."""
    rng = np.random.default_rng([seed, round_no])
    return [layouts[i] for i in rng.permutation(len(layouts))]


def plan(params: SweepParams, cpu_limit: int | None) -> Plan:
    """Warm-up round 0 (if any), then rounds 1..repeat, each every layout once in a seeded random order (so drift
    spreads over every layout); skips oversubscribing layouts."""
    keep: list[tuple[int, int, tuple[str, ...]]] = []
    skipped = []
    for index, (ranks, threads) in enumerate(params.layouts):
        if cpu_limit is not None and ranks * threads > cpu_limit and not params.oversubscribe:
            skipped.append((ranks, threads))
        else:
            keep.append((ranks, threads, params.args_of(index)))
    # Bindings x memory policies: with one policy the layouts (and so the seeded order) are those of a sweep before the
    # axis existed.
    layouts = tuple((r, t, b, m, a) for b in params.binds for m in params.membinds for r, t, a in keep)
    first = WARMUP_REPEAT if params.warmup else 1
    items = tuple(SweepItem(r, t, b, rep, m, a) for rep in range(first, params.repeat + 1)
                  for r, t, b, m, a in round_order(params.seed, rep, layouts))
    return Plan(items, tuple(skipped), layouts)


def cpu_limit(params: SweepParams, summary: MachineSummary) -> int | None:
    """How many hardware threads a layout may use without oversubscribing (None: the launcher decides)."""
    if params.launcher == "slurm":
        return slurm.allocation_cpus()
    return summary.pus


def validate_layouts(params: SweepParams, items: tuple[SweepItem, ...]) -> None:
    """Asks the app whether its arguments suit every layout (no MPI); raises UsageError before anything runs. The
    checkpoint options are asked about too once their directory exists (the app may check that it does)."""
    if params.program:
        return  # a program has no --validate-ranks to ask
    seen: set[SweepLayout] = set()
    for item in items:
        if item.layout() not in seen:
            seen.add(item.layout())
            io = io_args(params, item, False) if params.checkpoint_dir and Path(params.checkpoint_dir).is_dir() else ()
            validate_with_app(params.spec(item.ranks, item.threads, item.bind, (*item.args, *io), item.membind))


def command_for(params: SweepParams, item: SweepItem, restart: bool = False,
                env: tuple[tuple[str, str], ...] = (), run_dir: str | None = None) -> list[str]:
    """The launch command of one item as an argument list, for the sweep's launcher (with its checkpoint options,
    and --restart from its checkpoint when `restart`; `env` for every rank: the probe's; `run_dir`: the launch's own
    directory, where its arguments name one)."""
    spec = replace(params.spec(item.ranks, item.threads, item.bind, (*item.args, *io_args(params, item, restart)),
                               item.membind), run_dir=run_dir)
    if env:
        spec = replace(spec, env=(*spec.env, *env))
    if params.launcher == "slurm":  # srun need not exist here: outside an allocation this is the sbatch script's
        return slurm.build_srun_command(spec)
    return launch_command(spec, None if params.launcher == "mpirun" else params.launcher)


def planned_commands(params: SweepParams, item: SweepItem, restart: bool = False) -> list[list[str]]:
    """What a dry run prints for one item: a program's preparation (hympi.prepare; {run} as typed, the directory is
    made only for a launch), then the launch command (command_for)."""
    program = params.program_spec()
    prepared = [program.prepared(item.ranks, item.threads, None)] if program is not None and program.prepare else []
    return [*prepared, command_for(params, item, restart)]


def run_env(params: SweepParams, item: SweepItem) -> tuple[tuple[str, str], ...]:
    """The environment that shapes a run: hympi's layout variables plus OMP_/MPI tuning variables already set."""
    env = {k: v for k, v in os.environ.items() if k.startswith(_ENV_PREFIXES)}
    env.update(params.spec(item.ranks, item.threads, item.bind, membind=item.membind).app_env())
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
        out = subprocess.run([compiler, "--version"], capture_output=True, text=True, errors="replace",
                             timeout=30, check=False)
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


def record_machine(store: Store, summary: MachineSummary, launcher: str) -> MachineRecord:
    """This machine's row in the store (topology, MPI library, compiler)."""
    return store.ensure_machine(socket.gethostname(), summary.hash, mpi_library(launcher), compiler_version(),
                                summary.as_dict())


@dataclass(frozen=True)
class AutoOutcome:
    """How `--repeat auto` ended: after how many measured rounds, and whether the best was separated."""

    rounds: int
    separated: bool
    text: str


@dataclass(frozen=True)
class SweepResult:
    """What one call of run_sweep did; `restarted` runs continued from a checkpoint, `restartable` stopped before
    their end with a checkpoint left, `cancelled` launches the batch system ended (the sweep then stays unfinished:
    running it again restarts or reruns them)."""

    sweep: Sweep
    ran: int
    already_done: int
    statuses: dict[str, int]
    auto: AutoOutcome | None = None
    restarted: int = 0
    restartable: int = 0
    cancelled: int = 0
    gave_up: str = ""
    """Why the sweep launched nothing more (hympi.sweep.gave_up), "" when it ran what it planned."""


def open_sweep(store: Store, machine: MachineRecord, params: SweepParams, total: int, resume: bool | int,
               study_id: int | None = None) -> tuple[Sweep, bool]:
    """The sweep to run: the latest unfinished one with equal parameters (or the given id) when resuming, else new.

    Resuming first marks sweeps whose owner process died (SIGKILL) interrupted; a sweep whose owner still runs is
    refused (UsageError). Run a resumed sweep with SweepParams.from_dict(sweep.params): its seed is the recorded one.
    """
    if resume is not False:
        store.mark_stale_interrupted()
    if isinstance(resume, int) and not isinstance(resume, bool):
        sweep = store.sweep(resume)
        if sweep.app != params.app:
            raise UsageError(f"sweep {resume} is a sweep of {sweep.app}, not {params.app}")
        _refuse_if_owned(sweep)
        _check_inputs(store, sweep)
        return sweep, True
    if resume:
        found = store.latest_unfinished(params.identity())
        if found is not None:
            _refuse_if_owned(found)
            _check_inputs(store, found)
            if study_id is not None:
                store.attach_sweep(found.id, study_id)
            return store.sweep(found.id), True
    return store.create_sweep(machine.id, params.app, params.as_dict(), total, study_id, params.identity()), False


def _check_inputs(store: Store, sweep: Sweep) -> None:
    """UsageError when an input a sweep of a program read has changed since its last run (inputs.check_inputs_since)."""
    program = SweepParams.from_dict(sweep.params).program_spec()
    if program is not None:
        check_inputs_since(program, store.iter_runs([sweep.id]), f"sweep {sweep.id}")


def _refuse_if_owned(sweep: Sweep) -> None:
    """UsageError when another live process is running this sweep."""
    if sweep.status == "running":
        raise UsageError(f"sweep {sweep.id} is still running (pid {sweep.owner_pid} on {sweep.owner_host}); "
                         "wait for it or stop it first")


# How the user spells each parameter that tells sweeps apart (the declared flags, and what has no flag of its own).
_SPELLED: Mapping[str, str] = {
    **{p.name: p.flag for p in (*SWEEP, *PROGRAM)},
    "layouts": f"{RANKS.flag}/{THREADS.flag}", "auto": SWEEP_REPEAT.flag, "app_args": "the app arguments",
    "layout_args": "--n1/--n2/--inner", "mpi_params": "--mpi-param", "mpit_read": "--cvars",
    "program": "the program's path", "program_sha256": "the program's file (rebuilt since)",
    "stdin_sha256": f"the {STDIN.flag} file's contents", "prepare_sha256": f"the {PREPARE.flag} program's file",
    "workdir": "the directory it runs in"}


def resume_missed(store: Store, params: SweepParams, started: Sweep, by_id: bool = True) -> str:
    """What to tell a user whose --resume found no unfinished sweep with `params` (and so `started` a new one): the
    unfinished sweep of the same app before it that differs in the fewest parameters (the newest of those), and
    each parameter it differs in, or that there is none; `by_id`: the command takes `--resume ID` to continue it."""
    here = params.identity()
    found = closest(((sweep, SweepParams.from_dict(sweep.params).identity())
                     for sweep in store.unfinished_of(params.app, before=started.id)), here)
    if found is None:
        return f"--resume: no unfinished sweep of {params.app} to continue"
    sweep, there = found
    continued = f": '--resume {sweep.id}' continues it with its own parameters" if by_id else ""
    return (f"--resume: no unfinished sweep of {params.app} has these parameters; the closest, sweep {sweep.id} "
            f"({sweep.status}), differs in {differing_params(there, here, _SPELLED)}{continued}")


def _stopped(params: SweepParams, item: SweepItem, restart: bool, stop: KeyboardInterrupt,
             seconds: float) -> RunOutcome:
    """The launch of `item` that hympi's stop (Ctrl-C, or the signal of StoppedBySignal) killed after `seconds`: a
    cancelled attempt, kept as the batch system's cancelled steps are; the item stays to run on --resume."""
    how = f"signal {stop.signum} ({stop.name})" if isinstance(stop, StoppedBySignal) else "Ctrl-C"
    return RunOutcome("cancelled", None, seconds, command_for(params, item, restart), "",
                      f"hympi: stopped by {how} after {seconds:.1f} s: the launch was killed, not measured; "
                      "--resume runs it again")


def _outcome_run(sweep_id: int, params: SweepParams, item: SweepItem, outcome: RunOutcome, started: str,
                 restarted: bool = False, interference: Interference | None = None) -> Run:
    """The store record of one launch; a restarted one records the step it continued from (io.restart_step), a
    sampled one the other work beside it and whether that disturbed it (params.disturbed_above)."""
    return Run(sweep_id, params.app, item.ranks, item.threads, item.bind, params.dist, item.repeat,
               (*params.app_args, *item.args), run_env(params, item), tuple(outcome.command), outcome.status,
               outcome.returncode, outcome.seconds, outcome.record, outcome.stderr_tail(), started, now_utc(),
               mpi_params=params.mpi_params, restarted_from_step=restart_step(outcome.record) if restarted else None,
               membind=item.membind, item_args=item.args, interference=interference,
               disturbed=interference is not None and interference.disturbed(params.disturbed_above))


def run_program(params: SweepParams, program: Program, item: SweepItem,
                runner: Callable[[list[str], float], RunOutcome]) -> tuple[RunOutcome, str | None]:
    """One launch of a sweep item of a program (probed_program_run), with its directory (None: none made)."""
    outcome, _, run_dir = probed_program_run(
        program, lambda env, run_dir: runner(command_for(params, item, env=env, run_dir=run_dir), params.timeout),
        item.ranks, item.threads, (*params.app_args, *item.args), params.timeout)
    return outcome, run_dir


# A progress line shows this much of a failed run's last line of stderr; the whole of it is recorded (hympi export,
# the report's runs).
WHY_CHARS = 100


def clipped(line: str) -> str:
    """`line`, or its first WHY_CHARS characters ending in '...': cut bare, ABINIT's reason '... its last lines:
    mpi_procs: 1 | omp_threads: 1 | ...' read '... its last lines: mpi_procs: 1', as if that were all it printed.
    A reason quoting the program's last lines keeps one of them (its first WHY_CHARS characters), '...' standing for
    the others: the last that says 'error', else the last. The first were IQ-TREE's banner ('Command:
    /usr/bin/iqtree2-mpi -s examp...'), the last its 'ERROR: File not found x.phy'; Ray's 'Error, out/ already
    exists' comes before its memory report. A line that ends in ':' heads the line after it, which says what went
    wrong (OpenFOAM's '--> FOAM FATAL ERROR :', then 'Could not find mandatory etc entry'): the two are shown as one."""
    if len(line) <= WHY_CHARS:
        return line
    reason, said, words = line.partition(LAST_LINES)
    if said and len(reason) + len(said) < WHY_CHARS:
        lines = words.split(LINE_JOINT)
        at = next((i for i in reversed(range(len(lines))) if "error" in lines[i].lower()), len(lines) - 1)
        shown, end = lines[at], at
        if shown.rstrip().endswith(":") and at + 1 < len(lines):
            end = at + 1
            shown = f"{shown} {lines[end]}"
        before = f"...{LINE_JOINT}" if at > 0 else ""
        after = f"{LINE_JOINT}..." if end < len(lines) - 1 else ""
        return f"{reason}{said}{before}{clipped(shown)}{after}"
    return f"{line[:WHY_CHARS - 3]}..."


def probe_findings(run: Run) -> list[str]:
    """What the probe found in a run of a program (hympi.probe.apply_probe), in words; [] for none."""
    probe = run.record.get("probe") if run.record else None
    return [str(text) for text in probe.get("findings", [])] if isinstance(probe, dict) else []


def progress_line(item: SweepItem, run: Run, said: Collection[str] = ()) -> str:
    """One progress line for a finished run. A probe finding already in `said` (an earlier line of the sweep's) is
    shown by its statement alone, before its first ': ', and 'as above': IQ-TREE's 'each rank ran 1 of the 2
    threads asked for (OMP_NUM_THREADS=2): this program does not use OpenMP threads here (...)', 230 characters,
    stood at the end of every 1x2 line of a sweep."""
    colour = {"ok": "green", "unverified": "yellow"}.get(run.status, "red")
    rate = run.value("rate")
    # Every text from outside (a unit, a line of stderr, a reason quoting --verify '[/a-z]+ done') is escaped:
    # rich read '[a-z0-9.]' as a style and dropped it, and '[/a-z]' as a closing tag, which crashed the sweep.
    what = shown_rate(rate, str(run.record.get("rate_unit", ""))) if rate is not None and run.record else ""
    tail = run.stderr_tail.strip().splitlines()[-1:] if run.status in ("failed", "timeout", "cancelled") else []
    why = f" [dim]{escape(clipped(tail[0]))}[/dim]" if tail else ""
    label = item.label() + (" warm-up" if item.repeat == WARMUP_REPEAT else "")
    if run.restarted_from_step is not None:
        label += f" from step {run.restarted_from_step}"
    untaken = "".join(f" [yellow]{escape(text)}[/yellow]" for text in ignored_texts(run.mpi_params, run.read_back()))
    findings = (text.partition(": ")[0] + ", as above" if text in said else text for text in probe_findings(run))
    untaken += "".join(f" [yellow]{escape(text)}[/yellow]" for text in findings)
    if run.disturbed and run.interference is not None:
        untaken += f" [yellow]disturbed: other work used {run.interference.outside_cores:.2f} cores[/yellow]"
    return (f"  {escape(f'{label:<26}')} [{colour}]{run.status:<10}[/{colour}] {escape(f'{what:<22}')} "
            f"{run.wall_s:6.1f} s{why}{untaken}")


def layout_name(layout: SweepLayout) -> str:
    """'2x1 core', or '2x1 core membind=interleave' under a memory policy other than the default; the layout's own
    app arguments follow ('2x1 core --inner mpi --n2 2')."""
    policy = "" if layout[3] == DEFAULT_MEMBIND else f" membind={layout[3]}"
    own = "".join(f" {a}" for a in layout[4])
    return f"{layout[0]}x{layout[1]} {layout[2]}{policy}{own}"


def measured_samples(runs: list[Run], layouts: tuple[SweepLayout, ...], before_round: int) -> list[Sample]:
    """Per layout, the ok rates of measured rounds 1 .. before_round-1 with their rounds (warm-ups, later rounds and
    disturbed runs left out)."""
    rates: dict[SweepLayout, list[float]] = {x: [] for x in layouts}
    rounds: dict[SweepLayout, list[tuple[int, int]]] = {x: [] for x in layouts}
    memory: dict[SweepLayout, list[float]] = {x: [] for x in layouts}
    for run in runs:
        key = (run.ranks, run.threads, run.bind, run.membind, run.item_args)
        rate = run.value("rate")
        if key in rates and 1 <= run.repeat < before_round and run.status == "ok" and not run.disturbed \
                and rate is not None and is_finite_positive(rate):
            rates[key].append(rate)
            rounds[key].append((run.sweep_id, run.repeat))
            node = run.value("node_rss_mib")
            if node is not None:
                memory[key].append(node)
    # The same memory the report's tie-break uses, so the sweep's stopping note and the report choose alike.
    return [Sample(layout_name(x), tuple(rates[x]), x[1], x[0] * x[1],
                   median_or_none(memory[x]), tuple(rounds[x])) for x in layouts]


def still_open(params: SweepParams, layouts: tuple[SweepLayout, ...], runs: list[Run], round_no: int,
               reference: Sequence[Sample] = ()) -> tuple[SweepLayout, ...]:
    """The layouts --repeat auto runs again in `round_no`: the best median and every layout not separated from it,
    judged on rounds before `round_no` only (so a resumed sweep decides the same); () when the best is separated.
    A layout with no ok run at all is not run again (more repeats cannot make it comparable); one left with fewer
    than MIN_SAMPLES clean runs because others were disturbed is (it cannot be judged yet). The `reference`
    samples, measured outside this sweep (a tune's best configuration so far), compete too but are never run."""
    samples = measured_samples(runs, layouts, round_no)
    hopeful = [s for s in samples if s.rates] + [s for s in reference if s.rates]
    top = contenders(hopeful, params.confidence)
    short = {layout_name(x) for x in _short_of_clean(runs, layouts, round_no)}
    chosen = {s.label for s in top} if len(top) > 1 else set()
    return tuple(x for x in layouts if layout_name(x) in chosen | short)


def _short_of_clean(runs: list[Run], layouts: tuple[SweepLayout, ...], before_round: int) -> list[SweepLayout]:
    """The layouts with a disturbed ok run in rounds before `before_round` and fewer than MIN_SAMPLES clean ones."""
    clean = {layout_name(x): 0 for x in layouts}
    hit: set[str] = set()
    for run in runs:
        name = layout_name((run.ranks, run.threads, run.bind, run.membind, run.item_args))
        if name in clean and 1 <= run.repeat < before_round and run.status == "ok":
            if run.disturbed:
                hit.add(name)
            else:
                clean[name] += 1
    return [x for x in layouts if layout_name(x) in hit and clean[layout_name(x)] < MIN_SAMPLES]


def _auto_text(params: SweepParams, layouts: tuple[SweepLayout, ...], runs: list[Run], rounds: int,
               separated: bool, reference: Sequence[Sample] = ()) -> str:
    """The sentence that records how --repeat auto ended."""
    samples = [s for s in (*measured_samples(runs, layouts, rounds + 1), *reference) if len(s.rates) >= MIN_SAMPLES]
    if len(samples) < 2:
        hit = sum(1 for r in runs if r.disturbed and r.repeat >= 1)
        left_out = f" ({hit} run(s) overlapped other work and count in no verdict)" if hit else ""
        return (f"--repeat auto: after {rounds} round(s) fewer than two layouts have {MIN_SAMPLES} ok runs"
                f"{left_out}; nothing to separate")
    ranked = sorted(samples, key=lambda s: s.median, reverse=True)
    verdict = compare(ranked[0], ranked[1], params.confidence)
    detail = verdict.sentence()
    if separated:
        return f"--repeat auto: the best is separated from the runner-up after {rounds} round(s): {detail}"
    return (f"--repeat auto: budget of {params.max_repeat} round(s) spent without separating the best from the "
            f"runner-up: {detail}")


def _stopped_keys(store: Store, sweep_id: int) -> set[ItemKey]:
    """The items of a sweep whose recorded run stopped before its end (timeout, or failed without a result line)."""
    return {r.key() for r in store.runs([sweep_id]) if r.status in ("failed", "timeout") and r.record is None}


def restartable_items(store: Store, sweep_id: int, params: SweepParams) -> list[SweepItem]:
    """The recorded items of a sweep that stopped before their end and left a checkpoint to restart from."""
    if not params.checkpoint_dir:
        return []
    return [item for item in (SweepItem(*key) for key in sorted(_stopped_keys(store, sweep_id)))
            if restartable(params, item)]


FAILED_STATUSES = ("failed", "timeout")
"""A launch that measured nothing: no result, or killed at --timeout."""

GIVE_UP_AFTER = 2
"""Failed launches, one of each layout at least, after which a sweep none of whose runs was ok stops (gave_up)."""


def gave_up(sweep: Sweep, layouts: Sequence[SweepLayout], failed: Mapping[SweepLayout, Sequence[str]], ok_seen: bool,
            left: int) -> str:
    """Why a sweep should launch nothing more, "" to go on: each of `layouts` failed in this call (`failed`: its
    statuses of FAILED_STATUSES), GIVE_UP_AFTER launches at least, and no run of the sweep was ever ok (`ok_seen`,
    before this call too). The rest would fail alike (a wrong --verify or --metric, a missing library or input, a
    --timeout too short for any layout), each costing up to --timeout; a first launch that failed once (a file
    not there yet) is tried again, and a layout that fails beside others that run ok (a manager-worker program at
    one rank) is a result, measured to the end."""
    if ok_seen or not layouts or any(x not in failed for x in layouts) or \
            sum(len(failed[x]) for x in layouts) < GIVE_UP_AFTER:
        return ""
    how = "; ".join(f"{layout_name(x)}: {', '.join(failed[x])}" for x in sorted(layouts))
    return (f"every launch failed ({how}) and no run of {_measured_by(sweep)} was ever ok: the {left} launch(es) "
            "left would fail alike, so none was made")


def run_sweep(store: Store, sweep: Sweep, params: SweepParams, items: tuple[SweepItem, ...],
              console: Console | None = None,
              runner: Callable[[list[str], float], RunOutcome] | None = None,
              reference: Sequence[Sample] = (), declared_inputs: Sequence[Path] = ()) -> SweepResult:
    """Runs every item not yet recorded for `sweep`, storing each run in its own transaction; with params.auto,
    then adds rounds of the layouts still in the noise of the best (see still_open; the best may be one of the
    `reference` samples measured elsewhere) up to params.max_repeat.

    With checkpoints (params.checkpoint_dir), an item whose run stopped before its end (timeout, killed) and left a
    checkpoint runs again with --restart from it, and its record replaces the stopped one (kept as an attempt); a
    run that reaches its end (prints its result) removes its checkpoint. The sweep ends 'interrupted' while some run
    stopped with a checkpoint left, so the same command line (or --resume) continues it.

    A program's input files, those its arguments name and the `declared_inputs` (a programs file's), are watched
    between launches (hympi.inputs).

    A launch the batch system cancelled (status 'cancelled', slurm_jobs.step_runner) is stored as an attempt, not as
    the item's run: the item stays to be run, so the sweep ends 'interrupted' and --resume runs it again. So is the
    launch hympi's own stop killed (Ctrl-C, SIGTERM: the stop is raised on once it is stored)."""
    console = console or HympiConsole()
    program = params.program_spec()
    stdin = launch_stdin(program)
    watched = _watched_files(program, params)
    earlier = earlier_inputs(program, store.iter_runs(_measuring(store, sweep))) if program is not None else {}
    inputs = InputWatch(_named_inputs(program, params, items), earlier, declared_inputs) \
        if program is not None else None
    runner = runner or (partial(slurm_jobs.step_runner, stdin=stdin) if params.launcher == "slurm" else
                        partial(run_command, cwd=params.workdir or None, stdin=stdin))
    done = store.done_keys(sweep.id)
    stopped = _stopped_keys(store, sweep.id) if params.checkpoint_dir else set()

    def pending(item: SweepItem) -> bool:
        return item.key() not in done or (item.key() in stopped and restartable(params, item))

    todo = [item for item in items if pending(item)]
    # Whether to go on while every launch fails (gave_up): each pending layout gets a launch in this call (a sweep
    # resumed after its failures were mended is tried again), one ok run of the sweep ever keeps it going.
    tried = tuple(dict.fromkeys(i.layout() for i in todo))
    failed: dict[SweepLayout, list[str]] = {}
    ok_seen = any(r.status not in FAILED_STATUSES for r in store.iter_runs([sweep.id]))
    stopped_because = ""
    statuses: dict[str, int] = {}
    ran = 0
    restarted = 0
    cancelled = 0
    layouts = tuple(dict.fromkeys(i.layout() for i in items))
    occupied = layout_pus(layouts, params.dist, params.virtual_nodes, params.oversubscribe)
    store.claim_sweep(sweep.id)
    # The description names a program of the user's own and its layout's arguments: plain text, not markup.
    columns = (SpinnerColumn(), TextColumn("{task.description}", markup=False), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn())
    auto: AutoOutcome | None = None
    try:
        with stop_signals() as stop_if_signalled, Progress(*columns, console=console, transient=True) as progress:
            task = progress.add_task(f"sweep {sweep.id} {params.app}", total=len(todo))
            said: set[str] = set()  # the probe's findings the progress lines have said in full
            # Whether the files a launch changes are still taken for the program's outputs: until a launch ends ok
            # (one that failed early may not have written them yet), and always with a preparation, which may write
            # a file the arguments name anew for each layout (`-in made.in`).
            outputs_told = False
            always_outputs = program is not None and bool(program.prepare)
            # Said by a sweep, and by a tune until one of its configurations has read the inputs (`earlier`), not
            # again by every configuration after it.
            if inputs is not None and inputs.paths and todo and (sweep.tune_id is None or not earlier):
                progress.console.print(f"input files, checked between launches: {', '.join(map(str, inputs.paths))}"
                                       " (one the arguments name that the launches up to the first ok run change "
                                       "is taken for an output)", highlight=False, markup=False)

            def run_items(batch: list[SweepItem]) -> None:
                nonlocal ran, restarted, cancelled, outputs_told, ok_seen, stopped_because
                for at, item in enumerate(batch):
                    stop_if_signalled()
                    for what, path, check in watched:
                        if (change := check()) is not None:
                            raise HympiFatal(f"{what} {path} {change} since sweep {sweep.id} began: the runs "
                                             "measured before are kept; the rest would measure another file: "
                                             "start a new sweep for it")
                    if inputs is not None and (change := inputs.changed()) is not None:
                        raise HympiFatal(f"input {change} before a launch of {_measured_by(sweep)}, since the "
                                         "last one: the runs measured before are kept; the rest would measure another "
                                         "input: start a new sweep for it")
                    progress.update(task, description=f"sweep {sweep.id} {params.app} {item.label()}")
                    started = now_utc()
                    restart = restartable(params, item)
                    before = checkpoint_state(params, item) if restart else None
                    # Slurm's steps are its daemons' children, not this process's: other work cannot be told apart.
                    sampler = Sampler() if params.launcher != "slurm" else None
                    began = time.monotonic()
                    run_dir = None
                    try:
                        with sampler or nullcontext():
                            if program is not None:  # judged on its output and on what the probe saw
                                outcome, run_dir = run_program(params, program, item, runner)
                            else:
                                outcome = runner(command_for(params, item, restart), params.timeout)
                    except KeyboardInterrupt as stop:  # StoppedBySignal too: the launch was killed, not measured
                        run = _outcome_run(sweep.id, params, item, _stopped(params, item, restart, stop,
                                                                           time.monotonic() - began), started)
                        with stop_deferred():  # a second signal is noted, not raised into the store's transaction
                            store.add_attempt(run)
                        with suppress(OSError):  # after SIGHUP the terminal may be gone
                            progress.console.print(progress_line(item, run), highlight=False)
                        raise
                    if program is None and params.launcher != "slurm":  # srun's step runner checks its --ntasks
                        outcome = one_mpi_job(outcome, item.ranks)
                    if program is None:  # a program's judge says how it ended
                        outcome = ended_with(outcome, params.app)
                    written: list[Path] = []
                    input_changed = None
                    if inputs is not None:
                        written, input_changed = inputs.settle(first=always_outputs or not outputs_told)
                        outcome = inputs.recorded(outcome) if input_changed is None else \
                            failed_run(outcome, f"input {input_changed} during the launch: which of its contents "
                                                "the run read is unknown")
                    if restart:
                        outcome = untimed_restart(outcome)
                    run = _outcome_run(sweep.id, params, item, outcome, started, restart,
                                       sampler.interference(occupied.get(item.layout())) if sampler else None)
                    if run.status == "cancelled":  # not the layout's result: kept, and the item left to run again
                        store.add_attempt(run)
                        cancelled += 1
                    elif item.key() in done:
                        store.replace_run(run)
                    else:
                        store.add_run(run)
                    ran += 1
                    restarted += restart
                    statuses[run.status] = statuses.get(run.status, 0) + 1
                    progress.console.print(progress_line(item, run, said), highlight=False)
                    if program is not None:  # recorded first: a stop between the two loses no run
                        program.after_launch(run_dir, run.status == "ok")
                    if run_dir is not None and run.status != "ok":  # kept, to be read
                        progress.console.print(f"  its directory: {run_dir}", highlight=False, markup=False)
                    said.update(probe_findings(run))
                    outputs_told = outputs_told or run.status == "ok"
                    for path in written:
                        progress.console.print(f"  {path} changed during the launch: the program's output, no "
                                               "longer checked as an input", highlight=False, markup=False)
                    if input_changed is not None:
                        raise HympiFatal(f"input {input_changed} during a launch of {_measured_by(sweep)}, recorded "
                                         "as failed: the runs measured before are kept; the rest would measure "
                                         "another input: start a new sweep for it")
                    if outcome.record is not None:  # it reached its end: nothing left to restart from
                        remove_checkpoint(params, item)
                    elif restart and outcome.returncode == BAD_INPUT_EXIT:
                        moved = reject_checkpoint(params, item)
                        if moved is not None:  # in the user's --checkpoint-dir: its path is no markup
                            progress.console.print(f"  [yellow]the app refused the checkpoint: moved to "
                                                   f"{escape(str(moved))}; the run stays failed[/yellow]",
                                                   highlight=False)
                    elif restart and checkpoint_state(params, item) == before:
                        # Restarted and stopped again without a newer checkpoint: one more restart would stop at
                        # the same place, and so would every later one. Bounded here, at one futile restart.
                        moved = reject_checkpoint(params, item, ".stalled")
                        if moved is not None:
                            longer = f"; a --timeout above {params.timeout:g} s lets it end" \
                                if run.status == "timeout" else ""
                            progress.console.print(
                                f"  [yellow]restarted from its checkpoint and stopped again ({run.status}) before "
                                f"writing a newer one: not restarted again (checkpoint moved to "
                                f"{escape(str(moved))}){longer}[/yellow]", highlight=False)
                    progress.advance(task)
                    if run.status in FAILED_STATUSES:
                        if not restartable(params, item):  # a checkpoint left is progress, not a failure
                            failed.setdefault(item.layout(), []).append(run.status)
                    elif run.status != "cancelled":
                        ok_seen = True
                    stopped_because = gave_up(sweep, tried, failed, ok_seen, len(batch) - at - 1)
                    if stopped_because:
                        progress.console.print(f"  {stopped_because}; mend what the lines above say and run it "
                                               "again", highlight=False, markup=False)
                        return
                stop_if_signalled()

            run_items(todo)
            if params.auto and layouts and not stopped_because:
                rounds = params.repeat
                separated = False
                while True:
                    runs = store.runs([sweep.id])
                    open_layouts = still_open(params, layouts, runs, rounds + 1, reference)
                    if not open_layouts:
                        separated = True
                        break
                    if rounds >= params.max_repeat:
                        break
                    rounds += 1
                    batch = [SweepItem(r, t, b, rounds, m, a)
                             for r, t, b, m, a in round_order(params.seed, rounds, open_layouts)]
                    batch = [i for i in batch if pending(i)]
                    progress.update(task, total=(progress.tasks[0].total or 0) + len(batch))
                    run_items(batch)
                runs = store.runs([sweep.id])
                auto = AutoOutcome(rounds, separated, _auto_text(params, layouts, runs, rounds, separated, reference))
                store.set_sweep_note(sweep.id, auto.text)
                store.set_sweep_total(sweep.id, len(runs))
    except BaseException:
        store.set_sweep_status(sweep.id, "interrupted")
        raise
    left = len(restartable_items(store, sweep.id, params))
    if stopped_because:  # over, with what it measured and what it planned: the same command line starts anew
        store.set_sweep_note(sweep.id, stopped_because)
    store.set_sweep_status(sweep.id, "interrupted" if left or cancelled else "finished")
    return SweepResult(store.sweep(sweep.id), ran, len(items) - len(todo), statuses, auto, restarted, left, cancelled,
                       stopped_because)


def _named_inputs(program: Program, params: SweepParams, items: Sequence[SweepItem]) -> list[Path]:
    """The files the arguments of `items` name (hympi.inputs.named_files), each with its layout's figures in place of
    {ranks} and {threads} (`-in in.{ranks}`: one input per rank count); {run} stays, each launch's own."""
    found: dict[Path, None] = {}
    for item in items:
        args = with_placeholders((*params.app_args, *item.args), item.ranks, item.threads, None)
        found.update(dict.fromkeys(named_files(program, args)))
    return list(found)


def _measured_by(sweep: Sweep) -> str:
    """`sweep` as a message names it: 'sweep 3', or 'sweep 3 of tune 2' for a tune's."""
    return f"sweep {sweep.id}" + (f" of tune {sweep.tune_id}" if sweep.tune_id is not None else "")


def _measuring(store: Store, sweep: Sweep) -> list[int]:
    """The sweeps whose runs measure the same thing as `sweep`'s: its own, or its tune's (every configuration of a
    tune compared with the others, on the same inputs)."""
    return [s.id for s in store.tune_sweeps(sweep.tune_id)] if sweep.tune_id is not None else [sweep.id]


def _watched_files(program: Program | None, params: SweepParams) -> list[tuple[str, Path, Callable[[], str | None]]]:
    """What a sweep of `program` checks before each launch (program.watch_file): the program's file, the file it
    reads as its standard input and its preparation's program file, by the digests the sweep recorded
    (check_program checked them at its start)."""
    if program is None:
        return []
    return [(what, path, watch_file(path, sha256)) for what, path, sha256 in _recorded_files(program, params)]


def sbatch_command(params: SweepParams, db: Path) -> list[str]:
    """The `hympi sweep` argument list the sbatch script runs inside the allocation (srun, resuming); UsageError for
    a sweep with per-layout arguments (a two-level sweep runs inside an allocation, not from a script, for now)."""
    if params.layout_args:
        raise UsageError("--launcher slurm outside an allocation: a sweep with --n1/--n2/--inner writes no sbatch "
                         "script yet; run it inside one (salloc)")
    exe = Path(sys.executable).parent / "hympi"
    inline = "import sys; from hympi.cli import main; sys.exit(main())"
    head = [str(exe)] if exe.is_file() else [sys.executable, "-c", inline]
    ranks = tuple(sorted({r for r, _ in params.layouts}))
    threads = tuple(sorted({t for _, t in params.layouts}))
    # A program is named by its path: its name alone would be taken for one of hympi's apps.
    cmd = [*head, "sweep", params.program or params.app, *RANKS.spell(ranks), *THREADS.spell(threads),
           *SWEEP_REPEAT.spell(AUTO if params.auto else params.repeat)]
    defaults = {f.name: f.default for f in fields(params)}
    for p in SWEEP:
        value = getattr(params, p.name, None)
        if p in (SWEEP_REPEAT, LAUNCHER) or value is None or (p is MAX_REPEAT and not params.auto) or \
                (p.name in SPELLED_WHEN_SET and value == defaults[p.name] and not p.setting):
            continue  # a default the environment inside the allocation could change is spelled out
        cmd += p.spell(value)
    program = params.program_spec()
    if program is not None:
        cmd += program.flags()
    cmd += ["--db", str(db.resolve()), *LAUNCHER.spell("slurm"), "--resume"]
    for name, value in params.mpi_params:
        cmd += ["--mpi-param", f"{name}={value}"]
    if params.app_args:
        cmd += ["--", *params.app_args]
    return cmd


def batch_request(params: SweepParams, db: Path, items: int) -> slurm.BatchRequest:
    """The allocation a sweep needs (its largest layout) and the command that runs it there."""
    ntasks = max(r for r, _ in params.layouts)
    cpus = max(t for _, t in params.layouts)
    rounds = params.max_repeat if params.auto else params.repeat
    limit = items * params.timeout * max(1.0, rounds / params.repeat) + 300.0
    return slurm.BatchRequest(slurm.sweep_job_name(params.app), ntasks, cpus, limit, str(Path.cwd()),
                              tuple(sbatch_command(params, db)))
