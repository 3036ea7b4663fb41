"""A deliberately misbehaving app and stand-in launchers, for sweep tests that must fail, hang or be killed."""

from __future__ import annotations

import json
import os
import sys
from abc import ABC, abstractmethod
from pathlib import Path

import psutil

from hympi.launch.mpirun import RunOutcome
from hympi.profile import SIZE_BINS

REPO = Path(__file__).resolve().parents[2]

# The app: behaves per layout as its arguments say (--fail-at 1x2 --hang-at 2x1 --unverified-at 1x1 --sleep S).
# Its rate is 10 * ranks + threads, so tests know which layout is best, unless --rates 1x1=1.0,2x1=1.3 gives the
# true rate per layout and --noise 0.4 multiplies it by a uniform factor in [0.6, 1.4]: drawn from
# $FAKE_NOISE_SEED, the layout and how often that layout ran before (so every run differs, and a test that fixes the
# seed gets the same noise again). Every real launch (not --validate-ranks) appends "RxT" to $FAKE_LOG, so tests can
# count launches. The record carries min_time_s from $HYMPI_MIN_TIME, as the real apps do. With $HYMPI_PROFILE_OUT set
# (hympi profile's preload) it writes a profile of large all-to-all messages there. Checkpoints as the real frame
# takes them: --checkpoint PATH --checkpoint-every N writes "fake-checkpoint N" to PATH (through PATH.tmp and a
# rename) before anything else, --restart PATH reads it back (exit 2 naming the file when it is not one) and the
# record gets an "io" object with restart_step; --hang-once hangs at --hang-at only when not restarting. With
# --steps N the run ends at step N, as the real apps at --iterations: no checkpoint beyond N, none of the step it
# restarted from, and rate 0 when it restarts from step N (nothing left to time). The record
# names the memory policy of $HYMPI_MEMBIND (as the frame does) and an array "u" all on node 0. With
# $FAKE_HOLD_AFTER=N every launch after the first N (counted in $FAKE_LOG) hangs as --hang-at does: a sweep started
# so cannot finish before a test has stopped it, however slow the machine, and the environment variable is no
# sweep parameter, so resuming the sweep without it runs to its end. $FAKE_PROBLEM names the problem (default fake).
FAKE_APP = r'''#!PYTHON
import json, os, random, sys, time
args = sys.argv[1:]
if "--validate-ranks" in args:
    if "--reject" in args:
        print("hympi-rb3d: error: --reject is not an option", file=sys.stderr)
        sys.exit(2)
    sys.exit(0)
def opt(name, default=None):
    return args[args.index(name) + 1] if name in args else default
ranks = int(os.environ.get("OMPI_COMM_WORLD_SIZE") or os.environ.get("FAKE_RANKS") or 1)
rank = int(os.environ.get("OMPI_COMM_WORLD_RANK") or 0)
threads = int(os.environ.get("OMP_NUM_THREADS", "1"))
layout = f"{ranks}x{threads}"
runs_before = 0
launches_before = 0
if rank == 0 and os.environ.get("FAKE_LOG"):
    if os.path.exists(os.environ["FAKE_LOG"]):
        with open(os.environ["FAKE_LOG"]) as log:
            logged = log.read().split()
        runs_before = logged.count(layout)
        launches_before = len(logged)
    with open(os.environ["FAKE_LOG"], "a") as log:
        log.write(layout + "\n")
rate = 10.0 * ranks + threads
if opt("--rates"):
    rate = dict((k, float(v)) for k, v in (item.split("=") for item in opt("--rates").split(",")))[layout]
noise = float(opt("--noise", "0"))
if noise:
    draw = random.Random(f"{os.environ.get('FAKE_NOISE_SEED', '0')}:{layout}:{runs_before}")
    rate *= 1.0 + draw.uniform(-noise, noise)
step0 = -1
if opt("--restart"):
    try:
        with open(opt("--restart")) as f:
            magic, step = f.read().split()
        assert magic == "fake-checkpoint"
        step0 = int(step)
    except (OSError, ValueError, AssertionError):
        print(f"hympi-rb3d: error: {opt('--restart')} is not a hympi checkpoint", file=sys.stderr)
        sys.exit(2)
every = int(opt("--checkpoint-every", "0"))
last = int(opt("--steps", "0")) or None
step = max(step0, 0) + every if last is None else min(max(step0, 0) + every, last)
if opt("--checkpoint") and every and rank == 0 and step != step0:
    with open(opt("--checkpoint") + ".tmp", "w") as f:
        f.write(f"fake-checkpoint {step}\n")
    os.replace(opt("--checkpoint") + ".tmp", opt("--checkpoint"))
if last is not None and step0 >= last:
    rate = 0.0
time.sleep(float(opt("--sleep", "0")))
held = os.environ.get("FAKE_HOLD_AFTER")
if (layout == opt("--hang-at") and not (step0 >= 0 and "--hang-once" in args)) or \
        (held and rank == 0 and launches_before >= int(held)):
    if os.environ.get("FAKE_PIDS"):
        with open(os.environ["FAKE_PIDS"], "a") as f:
            f.write(f"{os.getpid()}\n")
    print("hanging on purpose", file=sys.stderr, flush=True)
    time.sleep(3600)
if layout == opt("--fail-at"):
    print(f"fake app: deliberate failure at {layout}", file=sys.stderr)
    sys.exit(3)
verified = layout != opt("--unverified-at")
if rank == 0 and os.environ.get("HYMPI_PROFILE_OUT"):  # as libhympi-profile would: large all-to-all messages only
    zeros = [[0] * ranks for _ in range(ranks)]
    with open(os.environ["HYMPI_PROFILE_OUT"], "w") as out:
        json.dump({"format": "hympi-profile", "ranks": ranks, "bytes": zeros, "messages": zeros, "collectives": {},
                   "mpi_library": "fake MPI", "size_bins": SIZE_BINS,
                   "histograms": {"MPI_Alltoallv": [0, 0, 0, 0, 0, 6 * ranks, 2 * ranks]},
                   "mpi_time_s": [0.5] * ranks, "wall_time_s": [2.0] * ranks}, out)
if rank == 0:
    record = {"app": "rb3d", "problem": os.environ.get("FAKE_PROBLEM", "fake"), "ranks": ranks, "threads": threads,
              "bind": os.environ.get("HYMPI_BIND"), "dist": os.environ.get("HYMPI_DIST"), "time_s": 1.0,
              "rate": rate, "rate_unit": "GFLOP/s", "min_time_s": float(os.environ.get("HYMPI_MIN_TIME", "1")),
              "verified": verified, "comm_s": 0.1 * ranks,
              "comp_s": 1.0 / threads, "imbalance": 1.0, "max_rss_mib": 10.0 + ranks, "node_rss_mib": 10.0 * ranks,
              "nodes": 1, "metrics": {}, "threads_default": False, "oversubscribed": False, "shared_pus": 0,
              "phases": {}, "hosts": ["fake"], "mpi_library": "fake MPI", "threads_level": "funneled",
              "topology_hash": "fake", "binding": [], "timestamp": "2026-01-01T00:00:00Z",
              "membind": os.environ.get("HYMPI_MEMBIND") or "none",
              "page_placement": {"u": {"page_bytes": 4096, "pages": 8 * ranks, "absent": 0,
                                       "per_node": {"0": 8 * ranks}, "on_intended": 8 * ranks,
                                       "share_on_intended": 1.0}}}
    if opt("--checkpoint") or opt("--restart"):
        record["io"] = {"checkpoint": opt("--checkpoint", ""), "checkpoint_every": every,
                        "restart": opt("--restart", ""), "snapshot": "", "snapshot_every": 0,
                        "h5": {"sieve_bytes": 0, "alignment": 0, "chunk": None, "transfer": "collective",
                               "hints": {}},
                        "checkpoints": 1 if every else 0, "checkpoint_s": 0.05 if every else 0.0,
                        "checkpoint_bytes": 1e8 if every else 0.0, "snapshots": 0, "snapshot_s": 0.0,
                        "snapshot_bytes": 0.0, "restart_s": 0.02 if step0 >= 0 else 0.0,
                        "restart_bytes": 1e8 if step0 >= 0 else 0.0, "restart_step": step0}
    print("HYMPI_RESULT " + json.dumps(record), flush=True)
sys.exit(0 if verified else 1)
'''

# How both launcher look-alikes begin: the app's environment, then a walk over the launcher's flags up to the app
# (each look-alike's branches follow, inside the loop; args[i:] is the app's command line after it).
_LAUNCHER_FLAGS = r'''#!PYTHON
import os, subprocess, sys
args = sys.argv[1:]
env = dict(os.environ)
i = 0
while i < len(args) and args[i].startswith("-"):
    flag = args[i]
'''

# An Open MPI look-alike: takes build_command's flags (-np N, -x K=V) and execs the app as rank 0 of N.
FAKE_MPIRUN = _LAUNCHER_FLAGS + r'''    if flag == "-np":
        env["FAKE_RANKS"] = args[i + 1]; i += 2
    elif flag == "-x":  # -x K=V sets, -x K forwards the launcher's own value
        key, eq, value = args[i + 1].partition("=")
        if eq:
            env[key] = value
        i += 2
    elif flag in ("--bind-to", "--rankfile"):
        i += 2
    else:
        i += 1
os.execve(args[i], args[i:], env)
'''

# An srun look-alike: --ntasks N, --export=ALL[,K=V,...] (as Slurm 22.05 does it: a K already in srun's environment
# keeps its value), then the app. With FAKE_SRUN_CANCEL_AT=RxT the step of that layout ends as a step that Slurm
# cancelled after the app printed its result and before the step completed: the app's output, then slurmstepd's
# line naming step $SLURM_JOB_ID.<n> CANCELLED (n counts the steps in FAKE_SRUN_LOG), and srun's exit code 0. The
# step of layout FAKE_SRUN_OTHER_AT ends normally but its stderr holds the same line for job FAKE_SRUN_OTHER_JOB (as
# an app that echoes another job's log would print): not a cancel of this step.
FAKE_SRUN = _LAUNCHER_FLAGS + r'''    if flag == "--ntasks":
        # FAKE_SRUN_SINGLETONS: each task an MPI job of its own, as with a --mpi plugin the library does not speak.
        env["FAKE_RANKS"] = "1" if env.get("FAKE_SRUN_SINGLETONS") else args[i + 1]; i += 2
    elif flag == "--cpus-per-task":
        i += 2
    elif flag.startswith("--export="):
        for item in flag.split("=", 1)[1].split(",")[1:]:
            key, value = item.split("=", 1); env.setdefault(key, value)
        i += 1
    else:
        i += 1
log_path = os.environ["FAKE_SRUN_LOG"]
step = len(open(log_path).read().splitlines()) if os.path.exists(log_path) else 0
with open(log_path, "a") as log:
    log.write(" ".join(sys.argv) + "\n")
layout = f"{env.get('FAKE_RANKS', '1')}x{env.get('OMP_NUM_THREADS', '1')}"
banner = "slurmstepd: error: *** STEP {}.{} ON localhost CANCELLED AT 2026-01-01T00:00:00 ***"
if layout in (env.get("FAKE_SRUN_CANCEL_AT"), env.get("FAKE_SRUN_OTHER_AT")):
    app = subprocess.run(args[i:], env=env, capture_output=True, text=True, timeout=60)
    sys.stdout.write(app.stdout)
    sys.stderr.write(app.stderr)
    job = env["SLURM_JOB_ID"] if layout == env.get("FAKE_SRUN_CANCEL_AT") else env["FAKE_SRUN_OTHER_JOB"]
    print(banner.format(job, step), file=sys.stderr)
    sys.exit(app.returncode)
os.execve(args[i], args[i:], env)
'''


def _script(path: Path, text: str) -> Path:
    """Writes an executable script run by this Python."""
    path.write_text(text.replace("PYTHON", sys.executable, 1))
    path.chmod(0o755)
    return path


def fake_bin_dir(tmp: Path, with_launchers: bool = True) -> dict[str, str]:
    """A bin dir whose hympi-rb3d is the fake app (hympi-info is the real one); returns the env to use it."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    _script(bin_dir / "hympi-rb3d", FAKE_APP.replace("SIZE_BINS", json.dumps(list(SIZE_BINS))))
    info = bin_dir / "hympi-info"
    if not info.exists():
        built = Path(os.environ.get("HYMPI_BIN_DIR") or REPO / "build" / "bin")  # the real apps the tests run
        info.symlink_to(built / "hympi-info")
    env = {"HYMPI_BIN_DIR": str(bin_dir), "FAKE_LOG": str(tmp / "launches.log"), "FAKE_PIDS": str(tmp / "pids")}
    if with_launchers:
        env["HYMPI_MPIRUN"] = str(_script(tmp / "mpirun", FAKE_MPIRUN))
        env["HYMPI_MPI_FLAVOR"] = "openmpi"
    return env


# Beside the fake srun (where hympi looks for Slurm's other commands): the pretend allocation is always running.
FAKE_SCONTROL = r'''#!/bin/sh
echo "JobId=$SLURM_JOB_ID JobName=fake JobState=RUNNING Reason=None ExitCode=0:0"
'''


def fake_srun(tmp: Path) -> dict[str, str]:
    """Env that makes hympi use the srun look-alike (and a scontrol that says the job runs), inside a pretend 2-CPU
    allocation."""
    _script(tmp / "scontrol", FAKE_SCONTROL)
    return {"HYMPI_SRUN": str(_script(tmp / "srun", FAKE_SRUN)), "FAKE_SRUN_LOG": str(tmp / "srun.log"),
            "SLURM_JOB_ID": "4242", "SLURM_NTASKS": "2", "SLURM_CPUS_PER_TASK": "1"}


def launches(env: dict[str, str]) -> list[str]:
    """Layouts the fake app was launched with, in order."""
    log = Path(env["FAKE_LOG"])
    return log.read_text().split() if log.exists() else []


def pid_alive(pid: int) -> bool:
    """True if a process with this id exists and is not a zombie."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


class InProcessLauncher(ABC):
    """A launcher that runs nothing (run_sweep's and run_tune's `runner`): every launch is 'ok' with the record
    `record(cmd)` makes of its command; raises KeyboardInterrupt at launch number `stop_at` (a killed run)."""

    def __init__(self, stop_at: int | None = None) -> None:
        self.launched = 0
        self.stop_at = stop_at

    def __call__(self, cmd: list[str], timeout: float) -> RunOutcome:
        self.launched += 1
        if self.launched == self.stop_at:
            raise KeyboardInterrupt
        return RunOutcome("ok", 0, 0.0, cmd, "", "", self.record(cmd))

    @abstractmethod
    def record(self, cmd: list[str]) -> dict:
        """The HYMPI_RESULT record of the launch of `cmd`."""


def launch_ranks(cmd: list[str]) -> int:
    """The rank count of a launch command (-np N)."""
    return int(cmd[cmd.index("-np") + 1])


def launch_env(cmd: list[str]) -> dict[str, str]:
    """The K=V settings a launch command passes to the app."""
    return dict(a.split("=", 1) for a in cmd if "=" in a and not a.startswith("-"))
