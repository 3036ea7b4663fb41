"""The probe: what libhympi-profile, preloaded with HYMPI_PROBE_DIR set, saw inside any program's run, and the
findings hympi draws from it without the program's help.

Each process writes probe-<host>-<pid>.json (profile/probe.cpp): the MPI world it saw, its wall time and time inside
MPI, its peak memory, and its threads: the main thread, then every thread created with pthread_create, with the
library that created it. A GCC binary's OpenMP threads are those libgomp created (libgomp has no OMPT); threads of the
MPI library (progress, PMIx) are left out of the thread findings. From these:
- singletons: N processes each saw an MPI world of size 1 (or never initialised MPI) when N ranks were launched;
- the closed-loop affinity check: each OpenMP thread's binding against the layout's intended cpuset, and threads of
  one rank bound to a shared PU;
- idle threads: OpenMP threads that used under IDLE_SHARE of the busiest thread's CPU time after MPI_Init, or never
  started, in ranks that computed on fewer threads than asked for (a program with nested parallel regions starts
  dozens of short-lived ones beside those that work);
- the "why" figures of a run: time inside MPI, imbalance across ranks, memory per process.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from hympi.jsontypes import JsonObject
from hympi.launch.layout import ThreadPlace, cpu_list
from hympi.launch.layout_check import layout_mismatches
from hympi.launch.mpirun import RunOutcome
from hympi.paths import profile_library
from hympi.place.tree import parse_cpu_list

# A thread that used less CPU than this share of its process's busiest thread did nothing useful here.
IDLE_SHARE = 0.05
# Libraries whose threads are OpenMP threads (GCC's libgomp, LLVM's libomp, Intel's libiomp5).
OPENMP_RUNTIMES = ("libgomp", "libomp", "libiomp")


# Environment variables for a launch's ranks.
Env = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class ProbeThread:
    """One thread of a process: its number (0 = main, then OpenMP threads in creation order), CPU seconds (of them
    `init_cpu_s` before MPI_Init returned), binding and the PUs it was seen on."""

    number: int
    cpu_s: float
    bound: frozenset[int]
    used: frozenset[int]
    init_cpu_s: float = 0.0  # 0 in files written before the probe recorded it

    @property
    def work_cpu_s(self) -> float:
        """CPU seconds after MPI's start-up: what the thread did for the program."""
        return self.cpu_s - self.init_cpu_s


@dataclass(frozen=True)
class ProbeProcess:
    """One process of a run as the probe saw it."""

    host: str
    pid: int
    mpi_initialized: bool
    rank: int
    world_size: int
    wall_s: float
    mpi_s: float
    max_rss_mib: float
    threads: tuple[ProbeThread, ...]
    # The probe's own cost (0 in files written before it was recorded): its sampler thread's CPU seconds and the
    # CPU seconds its start took (the hwloc topology load).
    sampler_cpu_s: float = 0.0
    start_cpu_s: float = 0.0
    # Started by another process's MPI_Comm_spawn (False in files written before it was recorded).
    spawned: bool = False

    @property
    def probe_cpu_s(self) -> float:
        """All the CPU time the probe itself took in this process."""
        return self.sampler_cpu_s + self.start_cpu_s


def probe_env(directory: Path) -> Env:
    """The environment a launch needs for the probe to write into `directory` (the ranks get it, not the launcher)."""
    library = str(profile_library())
    preload = os.environ.get("LD_PRELOAD", "")  # the user's own preloads stay, after the probe
    return (("LD_PRELOAD", f"{library}:{preload}" if preload else library), ("HYMPI_PROBE_DIR", str(directory)),
            ("HYMPI_PROFILE_OUT", str(directory / "profile.json")))


def launch_probed(launch: Callable[[Env], RunOutcome]) -> tuple[RunOutcome, tuple[ProbeProcess, ...]]:
    """Runs `launch` with the probe's environment (a fresh directory, removed afterwards) and reads what it wrote."""
    with tempfile.TemporaryDirectory(prefix="hympi-probe-") as directory:
        outcome = launch(probe_env(Path(directory)))
        return outcome, read_probe(Path(directory))


def _process(data: JsonObject) -> ProbeProcess:
    mpi = data["mpi"]
    threads: list[ProbeThread] = []
    for entry in data["threads"]:
        creator = os.path.basename(str(entry["creator"]))
        if entry["index"] != 0 and not creator.startswith(OPENMP_RUNTIMES):
            continue  # the MPI library's own threads
        threads.append(ProbeThread(number=len(threads), cpu_s=float(entry["cpu_s"]),
                                   init_cpu_s=float(entry.get("init_cpu_s", 0.0)),
                                   bound=parse_cpu_list(str(entry["bound"])), used=parse_cpu_list(str(entry["used"]))))
    return ProbeProcess(host=str(data["host"]), pid=int(data["pid"]), mpi_initialized=bool(mpi["initialized"]),
                        rank=int(mpi["rank"]), world_size=int(mpi["size"]),
                        wall_s=float(mpi["wall_s"]) if mpi["initialized"] else float(data["wall_s"]),
                        mpi_s=float(mpi["mpi_s"]), max_rss_mib=float(data["max_rss_kib"]) / 1024.0,
                        threads=tuple(threads), sampler_cpu_s=float(data.get("sampler_cpu_s", 0.0)),
                        start_cpu_s=float(data.get("start_cpu_s", 0.0)), spawned=bool(mpi.get("spawned", False)))


def read_probe(directory: Path) -> tuple[ProbeProcess, ...]:
    """The launched ranks among the process files of a run's probe directory, ordered by rank then pid; files that
    do not parse are left out (a process killed while writing leaves only its temporary file). When some process
    initialised MPI, those that did not are left out too: helpers the MPI library started (an Open MPI singleton's
    orted inherits the preload), not ranks. So are the processes a rank started with MPI_Comm_spawn: a world of
    their own, of their own size and ranks, which the layout did not place."""
    processes = []
    for path in sorted(directory.glob("probe-*.json")):
        try:
            processes.append(_process(json.loads(path.read_text(errors="replace"))))
        except (ValueError, KeyError, TypeError):
            continue
    initialized = [p for p in processes if p.mpi_initialized]
    ranks = [p for p in initialized if not p.spawned] if initialized else processes
    return tuple(sorted(ranks, key=lambda p: (p.rank, p.pid)))


def _numbers(values: Sequence[int]) -> str:
    """'2-4' or '1, 3': thread numbers as a person writes them."""
    ordered = sorted(set(values))
    if len(ordered) > 2 and ordered == list(range(ordered[0], ordered[-1] + 1)):
        return f"{ordered[0]}-{ordered[-1]}"
    return ", ".join(map(str, ordered))


def mpi_job_problem(processes: Sequence[ProbeProcess], ranks: int) -> str | None:
    """Why the run is not one MPI job of `ranks` ranks, or None: a program launched as N singletons (an MPI the
    launcher does not speak), as N processes that never initialised MPI, or as a job of another size than the
    layout's (a launcher that took its task count from elsewhere: srun inside an allocation of more tasks)."""
    if not processes:
        return None
    initialized = [p for p in processes if p.mpi_initialized]
    if ranks >= 2 and not initialized:
        return (f"launched as {len(processes)} independent processes that never initialised MPI: the program does "
                "not use MPI, so its ranks do not work together")
    if ranks >= 2 and all(p.world_size == 1 for p in initialized):
        return (f"launched as {len(initialized)} singletons (each process saw MPI_COMM_WORLD of size 1 instead of "
                f"{ranks}): the program's MPI is not the launcher's")
    # Sizes, not a count of processes: on other nodes a job's processes write their probe files where hympi does not
    # read them, and a program's wrapper script is a process that never initialises MPI.
    sizes = sorted({p.world_size for p in initialized})
    if sizes and sizes != [ranks]:
        return (f"ran as an MPI job of {' and '.join(map(str, sizes))} ranks (MPI_COMM_WORLD's size in its "
                f"processes), not the {ranks} of its layout")
    return None


def _idle(process: ProbeProcess) -> list[int]:
    """The numbers of `process`'s threads that used under IDLE_SHARE of its busiest thread's CPU time, both counted
    from MPI_Init's return: the start-up is the main thread's alone and would make a short run's threads look idle."""
    busiest = max((t.work_cpu_s for t in process.threads), default=0.0)
    return [t.number for t in process.threads if busiest > 0 and t.work_cpu_s < IDLE_SHARE * busiest]


def _working(process: ProbeProcess) -> ProbeProcess:
    """`process` with only the threads that computed (not _idle): a program that opens nested parallel regions
    (Elk) has libgomp start a new team of short-lived threads for each, dozens per run beside the few that work."""
    idle = set(_idle(process))
    return dataclasses.replace(process, threads=tuple(t for t in process.threads if t.number not in idle))


def working_threads(processes: Sequence[ProbeProcess], threads: int) -> int | None:
    """The fewest threads any rank computed with (started and not idle), at most `threads`; None without
    processes. What a layout's cores really did: 1x2 of a program without OpenMP computes on one core."""
    if not processes:
        return None
    # A rank's main thread computes even when the probe recorded none of its threads' CPU time.
    return min(max(1, min(threads, len(_working(p).threads))) for p in processes)


def idle_threads(processes: Sequence[ProbeProcess], threads: int) -> str | None:
    """The finding about OpenMP threads that did no work, or None: threads that never started, or used under
    IDLE_SHARE of the busiest thread's CPU time in their process, in ranks that computed on fewer than `threads`
    (idle threads beside `threads` working ones are a program's short-lived nested teams, not unused cores)."""
    if threads < 2 or not processes:
        return None
    started = {len(p.threads) for p in processes}
    if max(started) < threads:
        # IQ-TREE 2 runs OpenMP threads, but as many as its -T says (1 by default), whatever OMP_NUM_THREADS is.
        return (f"each rank ran {max(started)} of the {threads} threads asked for (OMP_NUM_THREADS={threads}): "
                "this program does not use OpenMP threads here (one whose option sets its threads, as IQ-TREE's "
                "-T, takes each layout's as {threads} in its arguments)")
    short = [p for p in processes if len(_working(p).threads) < threads]
    idle = {p.rank: _idle(p) for p in short}
    if not any(idle.values()):
        return None
    share = f"under {100 * IDLE_SHARE:.0f} % of their rank's busiest thread's CPU time after MPI_Init"
    if len(short) == len(processes) and len({tuple(v) for v in idle.values()}) == 1:
        computed = {len(_working(p).threads) for p in short}
        why = ("this program does not use OpenMP threads here" if computed == {1} else
               f"each rank computed on {' or '.join(map(str, sorted(computed)))} of its {threads} threads")
        return f"threads {_numbers(next(iter(idle.values())))} of every rank used {share}: {why}"
    return "; ".join(f"rank {r}'s threads {_numbers(v)} used {share}" for r, v in sorted(idle.items()) if v)


def binding_rows(processes: Sequence[ProbeProcess]) -> list[JsonObject]:
    """The probe's threads as HYMPI_RESULT-style binding rows (rank, thread, bound, pu: a PU it ran on, one outside
    its binding first)."""
    rows: list[JsonObject] = []
    for p in processes:
        for t in p.threads:
            outside = sorted(t.used - t.bound)
            pu = outside[0] if outside else min(t.used, default=-1)
            rows.append({"host": p.host, "rank": p.rank, "thread": t.number, "bound": cpu_list(t.bound), "pu": pu})
    return rows


def shared_pus(processes: Sequence[ProbeProcess]) -> list[str]:
    """Threads of one rank that computed bound to a common PU: 'rank 3's threads 1-3 shared PU 5'. An idle thread
    there took nothing from the others (a nested team's short-lived threads, Elk's, are bound in their parent's
    place)."""
    out = []
    for p in map(_working, processes):
        for pu in sorted(set().union(*(t.bound for t in p.threads)) if p.threads else ()):
            sharing = [t.number for t in p.threads if t.bound == frozenset({pu})]
            if len(sharing) > 1:
                out.append(f"rank {p.rank}'s threads {_numbers(sharing)} shared PU {pu}")
    return out


def _beyond_layout(processes: Sequence[ProbeProcess], places: Sequence[ThreadPlace]) -> list[str]:
    """The working threads a rank started beyond the layout's (nested teams, teams re-created at another size)
    that ran outside the rank's cpuset: the layout places its own threads only, and these may go anywhere within."""
    planned: dict[int, set[int]] = {}
    cpus: dict[int, frozenset[int]] = {}
    for place in places:
        planned.setdefault(place.rank, set()).add(place.thread)
        cpus[place.rank] = cpus.get(place.rank, frozenset()) | place.cpus
    out = []
    for p in map(_working, processes):
        for t in p.threads:
            if t.number in planned.get(p.rank, ()) or p.rank not in cpus:
                continue
            outside = (t.bound | t.used) - cpus[p.rank]
            if outside:
                out.append(f"rank {p.rank} thread {t.number} (beyond the layout's threads): bound to "
                           f"{cpu_list(t.bound) or '?'}, ran on {cpu_list(t.used) or '?'}, outside the rank's "
                           f"{cpu_list(cpus[p.rank])}")
    return out


def affinity_problems(processes: Sequence[ProbeProcess], places: Sequence[ThreadPlace]) -> list[str]:
    """The closed-loop check: threads bound elsewhere than the layout intends, threads of one rank sharing a PU they
    should not, and threads started beyond the layout outside their rank's cpuset (one line each; [] when everything
    matches)."""
    # A thread that ended between two of the sampler's looks (a nested team's, numbered among the layout's by its
    # birth) has nothing to check.
    unseen = {(p.rank, t.number) for p in processes for t in p.threads if not t.used}
    checked = [place for place in places if (place.rank, place.thread) not in unseen]
    planned = {(place.rank, place.thread) for place in places}
    ranks = {place.rank for place in places}
    rows = [row for row in binding_rows(processes) if (int(row["rank"]), int(row["thread"])) not in unseen
            and ((int(row["rank"]), int(row["thread"])) in planned or int(row["rank"]) not in ranks)]
    return [*shared_pus(processes), *layout_mismatches(checked, rows), *_beyond_layout(processes, places)]


@dataclass(frozen=True)
class Figures:
    """A run's 'why' figures from the probe: the slowest rank's time inside and outside MPI, the imbalance of the
    time outside MPI (max / mean), and peak memory (largest process, and summed over each host's processes)."""

    comm_s: float
    comp_s: float
    imbalance: float
    max_rss_mib: float
    node_rss_mib: float


def figures(processes: Sequence[ProbeProcess]) -> Figures | None:
    """The run's figures, None without processes."""
    if not processes:
        return None
    compute = [max(0.0, p.wall_s - p.mpi_s) for p in processes]
    mean = sum(compute) / len(compute)
    per_host: dict[str, float] = {}
    for p in processes:
        per_host[p.host] = per_host.get(p.host, 0.0) + p.max_rss_mib
    return Figures(comm_s=max(p.mpi_s for p in processes), comp_s=max(compute),
                   imbalance=max(compute) / mean if mean > 0 else 1.0,
                   max_rss_mib=max(p.max_rss_mib for p in processes), node_rss_mib=max(per_host.values()))


def waiting_rank(processes: Sequence[ProbeProcess]) -> JsonObject | None:
    """The rank that computed the smallest share of its run and how much: `waiting`, its share not computing (in MPI,
    or off the CPU, as HyPhy's rank 0 is), `in_mpi`, its share inside MPI, and `others`, the
    largest share not computing among the other ranks. A manager that only waits for its workers (ESyS-Particle's
    rank 0 in MPI, HyPhy's off the CPU) stands out; None under 2 ranks. A rank computes on its busiest thread's CPU time
    after MPI_Init less its time in MPI (where the MPI library spins)."""
    waiting: dict[int, tuple[float, float]] = {}
    for p in processes:
        if p.mpi_initialized and p.wall_s > 0 and p.threads and math.isfinite(p.mpi_s):
            computing = max(0.0, max(t.work_cpu_s for t in p.threads) - p.mpi_s)
            waiting[p.rank] = (min(1.0, max(0.0, 1.0 - computing / p.wall_s)), min(1.0, p.mpi_s / p.wall_s))
    if len(waiting) < 2:
        return None
    top = max(waiting, key=lambda rank: waiting[rank][0])
    return {"rank": top, "waiting": waiting[top][0], "in_mpi": waiting[top][1],
            "others": max(share for rank, (share, _) in waiting.items() if rank != top)}


def probe_record(processes: Sequence[ProbeProcess], ranks: int, threads: int) -> JsonObject:
    """What a run's record gains from the probe: the figures under their HYMPI_RESULT names, the binding rows, and
    the findings in words."""
    found = figures(processes)
    record: JsonObject = {"binding": binding_rows(processes)}
    if found is not None:
        record.update({"comm_s": found.comm_s, "comp_s": found.comp_s, "imbalance": found.imbalance,
                       "max_rss_mib": found.max_rss_mib, "node_rss_mib": found.node_rss_mib})
    findings = [text for text in (idle_threads(processes, threads), *shared_pus(processes)) if text]
    walls = [p.wall_s for p in processes if p.wall_s > 0]
    share = found.comm_s / max(walls) if found and walls and math.isfinite(found.comm_s) else None
    record["probe"] = {"processes": len(processes), "findings": findings,
                       "mpi_share": share, "ranks_seen": sorted({p.world_size for p in processes}),
                       "working_threads": working_threads(processes, threads),
                       "waiting_rank": waiting_rank(processes)}
    return record


@dataclass(frozen=True)
class Waiting:
    """A run's waiting_rank as probe_record recorded it: the rank, its shares of its run not computing and inside
    MPI, and the other ranks' largest share not computing."""

    rank: int
    waiting: float
    in_mpi: float
    others: float


def recorded_waiting_rank(record: JsonObject | None) -> Waiting | None:
    """The run's Waiting, None when the probe did not run or saw fewer than 2 ranks."""
    probe = record.get("probe") if record else None
    found = probe.get("waiting_rank") if isinstance(probe, dict) else None
    if not isinstance(found, dict):
        return None
    rank = found.get("rank")
    shares = [found.get(name) for name in ("waiting", "in_mpi", "others")]
    if not isinstance(rank, int) or not all(isinstance(v, (int, float)) for v in shares):
        return None
    return Waiting(rank, *(float(v) for v in shares if isinstance(v, (int, float))))


def recorded_working_threads(record: JsonObject | None) -> int | None:
    """The threads per rank the probe saw compute in a run (probe_record's `working_threads`), None when the probe
    did not run or did not say."""
    probe = record.get("probe") if record else None
    value = probe.get("working_threads") if isinstance(probe, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def apply_probe(outcome: RunOutcome, processes: Sequence[ProbeProcess], ranks: int, threads: int) -> RunOutcome:
    """A judged program run with what the probe saw: a run that was not one MPI job of `ranks` ranks failed with
    that reason; an ok run's record gains probe_record's figures, binding rows and findings."""
    problem = mpi_job_problem(processes, ranks)
    if problem is not None and outcome.status == "ok":
        return dataclasses.replace(outcome, status="failed", record=None,
                                   stderr=f"{outcome.stderr.rstrip()}\nhympi: {problem}".lstrip())
    if outcome.record is None:
        return outcome
    record = {**outcome.record, **probe_record(processes, ranks, threads)}
    mpi = [p.wall_s for p in processes if p.mpi_initialized]
    if mpi:  # the program's own time, MPI_Init to MPI_Finalize of its slowest rank: what comm_s + comp_s split
        record["time_s"] = max(mpi)
    return dataclasses.replace(outcome, record=record)
