"""A single-node Slurm on localhost for the tests: munged, slurmctld and slurmd from Debian's packages, their
configuration, state, sockets and logs in one temporary directory, started and stopped by the `slurm_cluster`
fixture (conftest.py)."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

TOOLS = ("munged", "slurmctld", "slurmd", "sbatch", "salloc", "srun", "scontrol", "sinfo", "squeue", "scancel")
START_TIMEOUT_S = 20.0


class ClusterUnavailable(Exception):
    """The cluster cannot run here (not root, packages missing, a daemon that did not start): the reason to skip."""


@dataclass(frozen=True)
class SlurmCluster:
    """A running cluster: its slurm.conf, the environment that talks to it and the CPUs of its one node."""

    root: Path
    conf: Path
    cpus: int
    daemons: tuple[subprocess.Popen[bytes], ...]

    def env(self) -> dict[str, str]:
        """This process's environment outside any allocation, with SLURM_CONF naming this cluster."""
        return client_env(self.conf)

    def slurm(self, *args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
        """Runs a Slurm client command against this cluster."""
        return subprocess.run(list(args), capture_output=True, text=True, env=self.env(), timeout=timeout, check=False)


def client_env(conf: Path) -> dict[str, str]:
    """This process's environment without any allocation's variables, with SLURM_CONF naming `conf`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "SBATCH_", "SALLOC_", "SRUN_"))}
    return {**env, "SLURM_CONF": str(conf)}


def free_port() -> int:
    """A TCP port nobody listens on now (the kernel's pick), so parallel clusters and a real one do not clash."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _node_line() -> str:
    """This machine as slurmd sees it (its own hwloc probe: `slurmd -C`), renamed localhost; a node described
    otherwise is drained for differing from its hardware."""
    proc = subprocess.run(["slurmd", "-C"], capture_output=True, text=True, timeout=30, check=False)
    line = proc.stdout.splitlines()[0] if proc.returncode == 0 and proc.stdout.startswith("NodeName=") else ""
    if not line:
        raise ClusterUnavailable(f"slurmd -C cannot describe this machine: {proc.stderr.strip()[-300:]}")
    return "NodeName=localhost NodeAddr=127.0.0.1 " + line.split(" ", 1)[1]


def _cpus(node_line: str) -> int:
    """CPUs=N of a node line."""
    return int(next(f for f in node_line.split() if f.startswith("CPUs=")).split("=", 1)[1])


def write_conf(root: Path, node_line: str, ctld_port: int, slurmd_port: int, munge_socket: Path) -> Path:
    """slurm.conf for one node on localhost with every file under `root`; no cgroups (none in this container), no
    accounting, the builtin scheduler (a job starts at once) and short kill waits (a cancelled job ends fast).

    Several clusters may run at once (one per xdist worker, other sessions on the machine): each has its own ports,
    its own TmpFS (where the pmix plugin makes spmix_appdir_<uid>_<job>.<step>) and job ids from a random start, so
    no two steps share a PMIx namespace (Open MPI names its shared-memory segments after it)."""
    for sub in ("state", "spool", "log", "tmp"):
        (root / sub).mkdir(exist_ok=True)
    conf = root / "slurm.conf"
    conf.write_text("\n".join([
        "ClusterName=hympitest",
        "SlurmctldHost=localhost",
        f"SlurmctldPort={ctld_port}",
        f"SlurmdPort={slurmd_port}",
        "SlurmUser=root",
        "SlurmdUser=root",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={munge_socket}",
        f"StateSaveLocation={root / 'state'}",
        f"SlurmdSpoolDir={root / 'spool'}",
        f"SlurmctldPidFile={root / 'slurmctld.pid'}",
        f"SlurmdPidFile={root / 'slurmd.pid'}",
        f"SlurmctldLogFile={root / 'log' / 'slurmctld.log'}",
        f"SlurmdLogFile={root / 'log' / 'slurmd.log'}",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core",
        "SchedulerType=sched/builtin",
        "MpiDefault=none",
        "ReturnToService=2",
        "KillWait=2",
        f"TmpFS={root / 'tmp'}",
        f"FirstJobId={1000 + secrets.randbelow(60_000_000)}",
        "MailProg=/bin/true",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        f"{node_line} State=UNKNOWN",
        "PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP",
        ""]))
    return conf


def _log_tail(root: Path, lines: int = 8) -> str:
    """The last lines of every daemon log, for a skip reason."""
    parts = []
    for log in sorted(root.glob("log/*")) + sorted(root.glob("munge/*.log")):
        text = log.read_text(errors="replace").strip().splitlines()[-lines:]
        parts.append(f"{log.name}: " + " | ".join(text))
    return "; ".join(parts) or "(no logs)"


def _start_munge(root: Path) -> tuple[subprocess.Popen[bytes], Path]:
    """munged in the foreground with its own key, socket, pid and seed files under root/munge."""
    munge = root / "munge"
    munge.mkdir(mode=0o700)
    key = munge / "munge.key"
    key.write_bytes(secrets.token_bytes(1024))
    key.chmod(0o400)
    sock = munge / "munge.socket"
    proc = subprocess.Popen(["munged", "--foreground", "--force", f"--socket={sock}", f"--key-file={key}",
                             f"--pid-file={munge / 'munged.pid'}", f"--log-file={munge / 'munged.log'}",
                             f"--seed-file={munge / 'munged.seed'}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    return proc, sock


def _wait(what: str, ready: Callable[[], bool], procs: list[subprocess.Popen[bytes]], root: Path,
          deadline: float) -> None:
    """Polls `ready()` until it holds; ClusterUnavailable with the logs when a daemon died or time ran out."""
    while not ready():
        dead = [p for p in procs if p.poll() is not None]
        if dead or time.monotonic() > deadline:
            why = f"exited with {dead[0].returncode}" if dead else f"not ready after {START_TIMEOUT_S:g} s"
            raise ClusterUnavailable(f"{what} {why}: {_log_tail(root)}")
        time.sleep(0.05)


def start(root: Path) -> SlurmCluster:
    """Starts munged, slurmctld and slurmd under `root` and waits until the node is idle; ClusterUnavailable with
    the reason (and the daemons' log tails) when that cannot happen here."""
    if os.geteuid() != 0:
        raise ClusterUnavailable("a real Slurm needs root (slurmd starts job steps as their user)")
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        raise ClusterUnavailable(f"{', '.join(missing)} not installed (apt-get install munge slurmctld slurmd "
                                 "slurm-client; scripts/bootstrap-system.sh)")
    node = _node_line()
    procs: list[subprocess.Popen[bytes]] = []
    try:
        munged, sock = _start_munge(root)
        procs.append(munged)
        _wait("munged", sock.exists, procs, root, time.monotonic() + START_TIMEOUT_S)
        conf = write_conf(root, node, free_port(), free_port(), sock)
        env = {**os.environ, "SLURM_CONF": str(conf)}
        out = open(root / "log" / "daemons.out", "wb")  # noqa: SIM115 - the daemons write to it until stop()
        with out:
            # -i: ignore state files (there are none); -N: the node is "localhost", whatever the host is called.
            procs.append(subprocess.Popen(["slurmctld", "-D", "-i", "-f", str(conf)], env=env, stdout=out,
                                          stderr=subprocess.STDOUT))
            procs.append(subprocess.Popen(["slurmd", "-D", "-N", "localhost", "-f", str(conf)], env=env, stdout=out,
                                          stderr=subprocess.STDOUT))
        cluster = SlurmCluster(root, conf, _cpus(node), tuple(procs))
        deadline = time.monotonic() + START_TIMEOUT_S
        # scontrol ping fails at once while slurmctld is not listening (sinfo would retry for ~10 s).
        _wait("slurmctld", lambda: " is UP" in cluster.slurm("scontrol", "ping").stdout, procs, root, deadline)
        _wait("slurmd", lambda: cluster.slurm("sinfo", "-h", "-n", "localhost", "-o", "%T").stdout.strip() == "idle",
              procs, root, deadline)
        return cluster
    except BaseException:
        _stop(procs)
        raise


def _stop(procs: list[subprocess.Popen[bytes]] | tuple[subprocess.Popen[bytes], ...]) -> None:
    """SIGTERM to each daemon this module started (slurmd and slurmctld first, munged last), SIGKILL after 10 s."""
    for proc in reversed(procs):
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


def stop(cluster: SlurmCluster) -> None:
    """Cancels what is left of the cluster's jobs, then stops its daemons."""
    if cluster.daemons[1].poll() is None:
        cluster.slurm("scancel", "--partition=debug", timeout=15)
        deadline = time.monotonic() + 10
        while cluster.slurm("squeue", "-h", timeout=15).stdout.strip() and time.monotonic() < deadline:
            time.sleep(0.1)
    _stop(cluster.daemons)
