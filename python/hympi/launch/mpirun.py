"""Launching an app with the local MPI launcher, with a timeout and a parsed result."""

from __future__ import annotations

import dataclasses
import math
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import IO

from hympi.capture import BoundedCapture, tail_lines
from hympi.contract import contract, enum_names
from hympi.errors import HympiFatal, UsageError, unknown_name
from hympi.jsontypes import JsonObject
from hympi.launch.banner import target_of_banner
from hympi.launch.layout import LayoutSpec
from hympi.launch.stop import stop_deferred, stop_if_signalled
from hympi.limits import MAX_JOB_THREADS, MAX_NODE_PUS
from hympi.paths import binary
from hympi.place.tree import load_node_tree
from hympi.result import ResultError, ResultRecord, parse_result
from hympi.settings import settings

BIND_POLICIES = enum_names("BindPolicy")
DISTRIBUTIONS = enum_names("Distribution")
MEMORY_POLICIES = enum_names("MemoryPolicy")
DEFAULT_MEMBIND = str(contract().option("membind").default)  # type: ignore[union-attr]
MPI_FLAVORS = ("openmpi", "mpich")
# Who binds ranks and threads: hympi itself with hwloc (the launcher binds nothing), or the launcher from the layout
# spec's arguments (the app then keeps the binding it inherits: HYMPI_BIND=none).
BINDERS = ("hympi", "launcher")


def mpit_read_env() -> str | None:
    """The variable (contract option `mpit_read`) naming the MPI control variables the app frame reads back through
    MPI_T and reports as `mpi_cvars`; None while the contract declares no such option."""
    option = contract().option("mpit_read")
    return option.env if option is not None else None


def mpi_env_name(name: str, flavor: str) -> str:
    """The environment variable that sets MPI control variable `name`: OMPI_MCA_<name> (Open MPI) or
    MPIR_CVAR_<NAME> (MPICH), never prefixed twice; raises ValueError for an unknown flavour."""
    if flavor == "openmpi":
        return name if name.startswith("OMPI_MCA_") else f"OMPI_MCA_{name}"
    if flavor == "mpich":
        upper = name.upper()
        return upper if upper.startswith("MPIR_CVAR_") else f"MPIR_CVAR_{upper}"
    raise ValueError(f"unknown MPI flavour {flavor!r} (expected {', '.join(MPI_FLAVORS)})")


# What a program's arguments may name in braces, replaced at each launch: the layout's figures, as `{threads}` (a
# program that takes its thread count as an option and ignores OMP_NUM_THREADS, IQ-TREE's -T, default 1, would
# otherwise run every layout's ranks on one thread each, whatever the layout says), and `{run}`, a directory of the
# launch's own that hympi makes empty just before it (Ray refuses an output directory that exists, so a sweep of it
# with one fixed `-o` measured one assembly and then only refusals). Only these exact names are replaced; other
# braces pass unchanged.
RUN_DIR = "run"
ARG_PLACEHOLDERS = ("ranks", "threads", RUN_DIR)
RUN_DIR_PLACEHOLDER = f"{{{RUN_DIR}}}"
_PLACEHOLDER = re.compile(r"\{(" + "|".join(ARG_PLACEHOLDERS) + r")\}")


def with_placeholders(args: Sequence[str], ranks: int, threads: int, run_dir: str | None) -> tuple[str, ...]:
    """`args` with each ARG_PLACEHOLDERS name in braces replaced by the launch's figure or its directory `run_dir`
    (None: not made, the placeholder stays as typed, as in a sweep's printed plan)."""
    values = {"ranks": str(ranks), "threads": str(threads), RUN_DIR: run_dir}
    return tuple(_PLACEHOLDER.sub(lambda m: values[m.group(1)] or m.group(0), arg) for arg in args)


@dataclass(frozen=True)
class LaunchSpec:
    """One run: which app, the ranks x threads layout, binding, memory policy and the app's own arguments."""

    app_binary: str
    ranks: int
    threads: int
    bind: str = "core"
    dist: str = "compact"
    app_args: tuple[str, ...] = ()
    oversubscribe: bool = False
    env: tuple[tuple[str, str], ...] = ()
    rankfile: str | None = None
    mpi_params: tuple[tuple[str, str], ...] = ()
    mpit_read: tuple[str, ...] = ()
    membind: str = DEFAULT_MEMBIND
    binder: str = "hympi"
    # The launch's own directory, the value of RUN_DIR_PLACEHOLDER (None: not made, the placeholder stays as typed,
    # as in a sweep's printed plan).
    run_dir: str | None = None

    def launched_args(self) -> tuple[str, ...]:
        """The app's arguments as launched: each ARG_PLACEHOLDERS name in braces replaced by this layout's figure
        (IQ-TREE's `-T {threads}`) or the launch's run_dir; the arguments as given stay the sweep's identity and its
        runs' problem."""
        return with_placeholders(self.app_args, self.ranks, self.threads, self.run_dir)

    def layout(self) -> LayoutSpec:
        """This run as a one-node layout spec: the launcher binds as asked under binder 'launcher' (or as the
        rankfile says), and nothing under binder 'hympi'."""
        bind = self.bind if self.binder == "launcher" else "none"
        return LayoutSpec(1, self.ranks, self.threads, bind, self.dist, self.rankfile, self.oversubscribe)

    def read_back_names(self) -> tuple[str, ...]:
        """The control variables the app reads back: every parameter set, then `mpit_read` (e.g. a tune's other
        parameters, so every configuration pays the same MPI_T cost in time and memory)."""
        return tuple(dict.fromkeys([*(name for name, _ in self.mpi_params), *self.mpit_read]))

    def app_env(self) -> dict[str, str]:
        """Variables every rank needs: thread count, hympi's binding settings and memory policy, oversubscription
        consent and, with MPI parameters, which control variables the app reads back (option mpit_read)."""
        env = {"OMP_NUM_THREADS": str(self.threads), "HYMPI_BIND": self.bind, "HYMPI_DIST": self.dist,
               "HYMPI_MEMBIND": self.membind}
        env.update({"HYMPI_OVERSUBSCRIBE": "1"} if self.oversubscribe else {})  # the apps' binding check allows it
        if self.binder == "launcher":
            env.update({**self.layout().omp_env(), "HYMPI_BIND": "none"})  # keep what the launcher bound
        names = self.read_back_names()
        read_env = mpit_read_env() if names else None
        if read_env:
            env[read_env] = ",".join(names)
        env.update(dict(self.env))
        return env

    def mpi_env(self, flavor: str) -> dict[str, str]:
        """The MPI parameters as the flavour's environment variables (OMPI_MCA_* or MPIR_CVAR_*)."""
        return {mpi_env_name(name, flavor): value for name, value in self.mpi_params}


# How a launcher says it could not start the program at all, rather than a rank that ran and ended: Open MPI 4's
# mpirun then exits 131 or 132, which read as signals 3 and 4 (SIGQUIT, SIGILL) under the 128 + N rule, MPICH's
# Hydra 255. The cause, when it names one: Open MPI's "Error:" line of its execve report ('Exec format error',
# './x has a bad interpreter on the first line'), Hydra's execvp error in parentheses.
_NOT_STARTED = re.compile(r"was unable to (?:start|launch) the specified application|"
                          r"HYDU_create_process \([^)]*\): execvp error on file .* \((?P<hydra>[^)]*)\)")
_EXEC_ERROR = re.compile(r"(?m)^\s*Error:\s+(.+?)\s*$")
_NO_ACCESS = "could not access or execute an executable"


@dataclass
class RunOutcome:
    """What one launch produced; status is ok, failed, timeout or unverified, or cancelled when the batch system ended
    the launcher's step (slurm_jobs.mark_step_end): then it is no result of the layout's, whatever the app printed."""

    status: str
    returncode: int | None
    seconds: float
    command: list[str]
    stdout: str = ""
    stderr: str = ""
    record: JsonObject | None = field(default=None)  # result.raw, as stored
    result: ResultRecord | None = None

    @classmethod
    def of(cls, status: str, returncode: int | None, seconds: float, command: list[str], stdout: str,
           stderr: str) -> RunOutcome:
        """An outcome whose record is the validated HYMPI_RESULT line of `stdout`: a line that breaks the
        contract makes the run 'failed', with the field named at the end of stderr (so it is recorded)."""
        try:
            result = parse_result(stdout)
        except ResultError as exc:
            return cls("failed" if status != "timeout" else status, returncode, seconds, command, stdout,
                       f"{stderr.rstrip()}\nhympi: {exc}".lstrip())
        if result is not None and status == "":
            status = "ok" if returncode == 0 and result.verified else ("unverified" if not result.verified else
                                                                      "failed")
        return cls(status or "failed", returncode, seconds, command, stdout, stderr,
                   dict(result.raw) if result else None, result)

    def stderr_tail(self, lines: int = 20) -> str:
        """The last lines of stderr, for records and messages."""
        return "\n".join(tail_lines(self.stderr, lines))

    def ending(self, name: str) -> str:
        """'rb3d ended with exit code 137: killed by signal 9 (SIGKILL), ...': how the launch of `name` ended."""
        return f"{name} ended with {self.exit_text()}"

    def exit_text(self) -> str:
        """'exit code 3'; for the code a launcher gives when a rank (or the launcher itself, a negative code) was
        killed by a signal, which one: mpirun, mpiexec and srun exit 128 + N, so 137 is 'killed by signal 9 (SIGKILL)',
        the signal the kernel's out-of-memory killer sends, and a scheduler at a memory limit."""
        code = self.returncode
        if code is None:
            return "no exit code"
        not_started = self.not_started()
        if not_started is not None:
            return f"exit code {code}: the launcher could not start it{not_started}"
        number = -code if code < 0 else code - 128 if 128 < code < 128 + 65 else 0
        if not number:
            return f"exit code {code}"
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        cause = ", as the kernel's out-of-memory killer and a scheduler's memory limit do" if number == 9 else ""
        return f"exit code {code}: killed by signal {number} ({name}){cause}"


    def not_started(self) -> str | None:
        """None unless the launcher said it could not start the program (_NOT_STARTED); then its cause as ' (Exec
        format error)', or '' when it named none."""
        if self.returncode in (None, 0):
            return None
        said = _NOT_STARTED.search(self.stderr)
        if said is None:
            return None
        cause = said["hydra"] or next((m[1] for m in _EXEC_ERROR.finditer(self.stderr)), None)
        if cause is None and _NO_ACCESS in " ".join(self.stderr.split()):
            cause = _NO_ACCESS
        return f" ({cause.rstrip('.')})" if cause else ""


def ended_with(outcome: RunOutcome, name: str) -> RunOutcome:
    """A launch that exited non-zero without a result line as a failed run whose stderr ends with 'hympi: NAME ended
    with exit code N' (and the signal, where the code names one): a sweep's record and progress line then say how
    the run ended, not only the launcher's last words. Any other outcome (a result, a timeout, exit 0) as it is."""
    if outcome.returncode in (None, 0) or outcome.status in ("timeout", "cancelled") or outcome.record is not None:
        return outcome
    note = f"hympi: {outcome.ending(name)}"
    return dataclasses.replace(outcome, status="failed", stderr=f"{outcome.stderr.rstrip()}\n{note}".lstrip())


# What to check when the ranks of a launch do not form one MPI job (one_mpi_job).
LAUNCHER_REMEDY = ("is the launcher of the MPI the app was built with? (HYMPI_MPIRUN, HYMPI_BIN_DIR; "
                   "`hympi info` names the launcher)")


def one_mpi_job(outcome: RunOutcome, ranks: int, remedy: str = LAUNCHER_REMEDY) -> RunOutcome:
    """The outcome, or a failed one (its stderr ending with a note and `remedy`) when the app reported an MPI job of
    other than `ranks` ranks: a launcher of another MPI, or srun with a --mpi plugin the library does not speak,
    starts every rank as a job of its own, and the layout silently collapses into singletons that all verify."""
    if outcome.result is None or outcome.result.ranks == ranks:
        return outcome
    note = (f"hympi: {ranks} ranks were started but the app ran as an MPI job of {outcome.result.ranks} rank(s): "
            f"{remedy}")
    return dataclasses.replace(outcome, status="failed", stderr=f"{outcome.stderr.rstrip()}\n{note}".lstrip())


def launcher_path() -> str:
    """The MPI launcher: $HYMPI_MPIRUN (a path, or a name on PATH), else mpirun or mpiexec on PATH; UsageError naming
    the variable or key when the one it names is no executable, before anything is launched."""
    setting = settings().get("mpirun")
    override = str(setting.value or "")
    if override:
        if shutil.which(override) is None:
            where = "is not an executable file" if "/" in override else "is not an executable on PATH"
            raise UsageError(f"{setting.name}: MPI launcher '{override}' {where}")
        return override
    for name in ("mpirun", "mpiexec"):
        found = shutil.which(name)
        if found:
            return found
    raise HympiFatal("no MPI launcher found (install Open MPI or MPICH, or set HYMPI_MPIRUN)")


def configured_flavor() -> str | None:
    """The MPI flavour set by HYMPI_MPI_FLAVOR or the config file's mpi_flavor (None when unset: the launcher's
    banner decides); UsageError naming the variable or key for a value that is not one of MPI_FLAVORS, which
    would otherwise spell the launch command as Open MPI's and name no MPI control variable at all."""
    setting = settings().get("mpi_flavor")
    if not setting.value:
        return None
    if setting.value not in MPI_FLAVORS:
        raise UsageError(f"{setting.name}: {unknown_name('MPI flavour', MPI_FLAVORS, str(setting.value))}")
    return str(setting.value)


@lru_cache(maxsize=4)
def mpi_flavor(launcher: str) -> str:
    """'openmpi' or 'mpich': HYMPI_MPI_FLAVOR (checked by configured_flavor), else from the launcher's --version
    banner."""
    env_flavor = configured_flavor()
    if env_flavor is not None:
        return env_flavor
    try:
        out = subprocess.run([launcher, "--version"], capture_output=True, text=True, errors="replace",
                             timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise HympiFatal(f"cannot run MPI launcher {launcher}: {exc}") from exc
    text = out.stdout + out.stderr
    return "mpich" if ("HYDRA" in text or "MPICH" in text) else "openmpi"


def launcher_version(launcher: str) -> str:
    """First line of the launcher's --version banner (e.g. 'mpirun (Open MPI) 4.1.4'), or 'unknown'."""
    try:
        out = subprocess.run([launcher, "--version"], capture_output=True, text=True, errors="replace",
                             timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    lines = (out.stdout + out.stderr).strip().splitlines()
    return lines[0].strip() if lines else "unknown"


def format_command(cmd: list[str]) -> str:
    """A launch command as a person could paste it into a POSIX shell (display only; never executed)."""
    return shlex.join(cmd)


def check_layout_size(ranks: int, threads: int) -> None:
    """Rejects a layout no machine holds (UsageError naming the limit), before anything, the app's own check
    included, is asked about it."""
    MAX_NODE_PUS.check("--threads", threads)  # a rank's threads share its node
    MAX_JOB_THREADS.check(f"--ranks {ranks} x --threads {threads} =", ranks * threads)


def check_layout(spec: LaunchSpec, pus: int) -> None:
    """Rejects impossible layouts before anything is launched (raises UsageError)."""
    if spec.ranks < 1:
        raise UsageError(f"--ranks must be >= 1, got {spec.ranks}")
    if spec.threads < 1:
        raise UsageError(f"--threads must be >= 1, got {spec.threads}")
    check_layout_size(spec.ranks, spec.threads)
    if spec.bind not in BIND_POLICIES:
        raise UsageError(unknown_name('binding', BIND_POLICIES, spec.bind))
    if spec.dist not in DISTRIBUTIONS:
        raise UsageError(unknown_name('distribution', DISTRIBUTIONS, spec.dist))
    if spec.membind not in MEMORY_POLICIES:
        raise UsageError(unknown_name('memory policy', MEMORY_POLICIES, spec.membind))
    if spec.ranks * spec.threads > pus and not spec.oversubscribe:
        raise UsageError(f"{spec.ranks} ranks x {spec.threads} threads = {spec.ranks * spec.threads} exceeds the "
                         f"{pus} PUs of this machine (pass --oversubscribe to run anyway)")


def launcher_target(launcher: str, flavor: str) -> str:
    """The layout target of a local launcher: mpich, or openmpi4/openmpi5 from its --version banner (an unreadable
    banner, e.g. a test's stand-in, counts as Open MPI 4)."""
    if flavor == "mpich":
        return "mpich"
    return "openmpi5" if target_of_banner(launcher_version(launcher)) == "openmpi5" else "openmpi4"


def build_command(spec: LaunchSpec, launcher: str | None = None, flavor: str | None = None) -> list[str]:
    """The launcher's argument list for `spec` (never a shell string): the layout spec's arguments for this
    launcher, the environment, then the app. UsageError for a launcher-bound layout it cannot spell."""
    launcher = launcher or launcher_path()
    flavor = flavor or mpi_flavor(launcher)
    app = str(binary(spec.app_binary))
    layout = spec.layout()
    native = spec.binder == "launcher" or bool(spec.rankfile)
    # Under binder hympi the launcher binds nothing (--bind-to none), spelled alike by every version.
    target = launcher_target(launcher, flavor) if native else ("mpich" if flavor == "mpich" else "openmpi4")
    needs_tree = spec.binder == "launcher" or (bool(spec.rankfile) and flavor == "mpich")
    args = list(layout.arguments(target, load_node_tree("this") if needs_tree else None))
    env = {**spec.app_env(), **spec.mpi_env(flavor)}
    if flavor == "mpich":
        cmd = [launcher, *args]
        for key, value in env.items():
            cmd += ["-genv", key, value]
        return [*cmd, app, *spec.launched_args()]
    cmd = [launcher, *(["--allow-run-as-root"] if os.geteuid() == 0 else []), *args]
    if spec.binder == "hympi":
        # Open MPI counts one slot per core and refuses more ranks; check_layout already vetted the layout.
        cmd.append("--oversubscribe")
    for key, value in env.items():
        cmd += ["-x", f"{key}={value}"]
    return [*cmd, app, *spec.launched_args()]


def validate_with_app(spec: LaunchSpec) -> None:
    """Asks the app itself whether its arguments suit the layout, without MPI (raises UsageError)."""
    cmd = [str(binary(spec.app_binary)), "--validate-ranks", str(spec.ranks), *spec.launched_args()]
    env = {**os.environ, **spec.app_env()}
    # errors="replace": the app echoes the user's bytes (a --data path, a file's content); one that is not UTF-8
    # must reach the user as one line, not as a UnicodeDecodeError here.
    proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace", env=env, timeout=60, check=False)
    if proc.returncode == 2:
        lines = proc.stderr.strip().splitlines() or [f"invalid arguments for {spec.app_binary}"]
        raise UsageError(lines[-1].split(": error: ", 1)[-1])
    if proc.returncode != 0:
        # The user never typed --validate-ranks: say what hympi was doing, and the app's own last line.
        last = (proc.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise HympiFatal(f"{spec.app_binary} failed while checking its arguments for {spec.ranks} rank(s) "
                         f"(exit code {proc.returncode}): {last}")


# Seconds a killed launcher (and then its output's readers) is given to end.
KILL_GRACE_S = 5.0


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Ends a launcher and every rank it started (they share its process group)."""
    for sig, grace in ((signal.SIGTERM, KILL_GRACE_S), (signal.SIGKILL, KILL_GRACE_S)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


def _load_prctl() -> Callable[..., int] | None:
    """libc's prctl on Linux (loaded here, in the parent, so the child needs no import or lock), else None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _load_prctl()


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when hympi dies, even by SIGKILL, so no launch outlives a sweep."""
    if _PRCTL is not None:
        _PRCTL(1, int(signal.SIGTERM))  # PR_SET_PDEATHSIG = 1


def run_command(cmd: list[str], timeout: float | None, env: dict[str, str] | None = None,
                cwd: str | None = None, echo: Callable[[bytes], None] | None = None,
                stdin: Path | int | None = None, echo_err: Callable[[bytes], None] | None = None) -> RunOutcome:
    """Runs a launch command (in directory `cwd`, None: this process's); a run past `timeout` seconds is killed and
    reported as 'timeout'. `echo` is handed its output's lines as they come (hympi.capture.BoundedCapture), `echo_err`
    its error output's (both are kept in the outcome all the same). `stdin`
    is what it reads as standard input (mpirun passes it to rank 0): a file opened for this launch, or Popen's
    (None: this process's own, subprocess.DEVNULL).

    Raises UsageError, before anything starts, for a timeout that is not a finite number > 0.
    """
    if timeout is not None and not (math.isfinite(timeout) and timeout > 0):
        # subprocess would fail on nan or inf only after the launcher had started.
        raise UsageError(f"--timeout must be a finite number of seconds > 0, got {timeout}")
    start = time.monotonic()
    with stdin.open("rb") if isinstance(stdin, Path) else nullcontext(stdin) as source:
        return _run(cmd, timeout, env, cwd, (echo, echo_err), source, start)


def _run(cmd: list[str], timeout: float | None, env: dict[str, str] | None, cwd: str | None,
         echoes: tuple[Callable[[bytes], None] | None, Callable[[bytes], None] | None], stdin: IO[bytes] | int | None,
         start: float) -> RunOutcome:
    """run_command's launch, with its standard input open."""
    # Output read as bytes by BoundedCapture (bounded memory; decoded with errors="replace": app and launcher
    # output is whatever bytes they print, see validate_with_app).
    proc: subprocess.Popen[bytes] | None = None
    try:
        # A stop signal (launch.stop) waits until the launch is held in `proc`, and is then raised, to kill it.
        with stop_deferred():
            proc = subprocess.Popen(cmd, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    env={**os.environ, **(env or {})}, start_new_session=True, cwd=cwd,
                                    # Only a preloaded libc call runs in the child: no imports, no Python-level
                                    # locks, so rich's refresh thread cannot deadlock it.
                                    preexec_fn=_die_with_parent if _PRCTL is not None else None)  # noqa: PLW1509
        stop_if_signalled()
        assert proc.stdout is not None and proc.stderr is not None
        streams = (BoundedCapture(proc.stdout, echoes[0]), BoundedCapture(proc.stderr, echoes[1]))
        proc.wait(timeout=timeout)
        # As communicate(): the run lasts until its output ends (a rank's child may hold it open), within timeout.
        ended = all(stream.join(None if timeout is None else max(0.0, start + timeout - time.monotonic()))
                    for stream in streams)
    except subprocess.TimeoutExpired:
        ended = False
    except BaseException:
        if proc is not None:  # Ctrl-C, SIGTERM, SIGHUP (launch.stop): leave no rank, nor any process of one, behind
            _kill_group(proc)
        raise
    assert proc is not None  # only a held launch times out or ends
    if not ended:
        _kill_group(proc)
        for stream in streams:
            stream.join(KILL_GRACE_S)
        return RunOutcome.of("timeout", None, time.monotonic() - start, cmd, *(s.text() for s in streams))
    # "": the status follows from the exit code and the record (ok, unverified or failed).
    return RunOutcome.of("", proc.returncode, time.monotonic() - start, cmd, *(s.text() for s in streams))


def launch(spec: LaunchSpec, timeout: float | None = None) -> RunOutcome:
    """Builds the command for `spec` and runs it; failed when its ranks did not form one MPI job (one_mpi_job)."""
    return one_mpi_job(run_command(build_command(spec), timeout), spec.ranks)
