"""Raw data out of the results store: one row per run, as CSV or JSON, written as the runs are read (a database
of a hundred thousand runs is exported in the memory of one); or one row per attempt, a launch that is no run (one a
restart from its checkpoint replaced, one the batch system or hympi's stop cancelled)."""

from __future__ import annotations

import csv
import json
import textwrap
from collections.abc import Iterable, Iterator, Mapping
from typing import IO, TypedDict

from hympi.jsontypes import JsonObject
from hympi.result import run_placement_share
from hympi.store import MachineRecord, Run, Store


class CsvRow(TypedDict):
    """One run joined with its machine: the flat columns of the CSV export, in order."""

    run_id: int | None
    sweep_id: int
    machine_id: int
    hostname: str
    topology_hash: str
    mpi_library: str
    compiler: str
    app: str
    problem: str
    ranks: int
    threads: int
    bind: str
    membind: str  # the memory policy
    dist: str
    repeat: int
    app_args: str  # space-separated
    status: str
    returncode: int | None
    wall_s: float
    rate: float | None
    rate_unit: str | None
    # A program's figure of merit as it printed it ('4.4' of NWChem's 'wall: 4.4s'), its unit and direction: the rate
    # of a lower-is-better figure is its inverse ('0.2273', '1/(s)'). None for hympi's apps, whose figure is the rate.
    merit: float | None
    merit_unit: str | None
    merit_better: str | None
    time_s: float | None
    comm_s: float | None
    comp_s: float | None
    imbalance: float | None
    max_rss_mib: float | None
    node_rss_mib: float | None
    pages_on_intended: float | None  # share of the reported arrays' pages on the nodes the memory policy meant
    verified: bool | None
    restarted_from_step: int | None  # the checkpoint step a restarted run continued from
    outside_cpu_s: float | None  # CPU seconds other processes used on the run's PUs, steal included (hympi.busy)
    outside_cores: float | None  # the same per second of the run
    steal_s: float | None
    disturbed: bool | None  # outside_cores above the sweep's --disturbed-above (None: not measured)
    started_at: str
    finished_at: str
    command: str  # a JSON list
    stderr_tail: str


class ExportRow(CsvRow):
    """A CSV row plus what only the JSON export holds: the environment and the full HYMPI_RESULT record."""

    env: dict[str, str]
    result: JsonObject | None


COLUMNS: tuple[str, ...] = tuple(CsvRow.__annotations__)


class AttemptCsvRow(TypedDict):
    """One attempt (store.Attempt) with its sweep's app: the flat columns of the CSV export of attempts, in order."""

    sweep_id: int
    app: str
    ranks: int
    threads: int
    bind: str
    membind: str
    repeat: int
    item_args: str  # space-separated: the item's own arguments (a two-level sweep's)
    status: str
    returncode: int | None
    wall_s: float
    restarted_from_step: int | None
    started_at: str
    finished_at: str
    command: str  # a JSON list
    stderr_tail: str


class AttemptRow(AttemptCsvRow):
    """An attempt's CSV row plus its HYMPI_RESULT record, which only the JSON export holds."""

    result: JsonObject | None


ATTEMPT_COLUMNS: tuple[str, ...] = tuple(AttemptCsvRow.__annotations__)


class Merit(TypedDict):
    """The merit columns of a row (CsvRow's)."""

    merit: float | None
    merit_unit: str | None
    merit_better: str | None


def program_merit(run: Run) -> Merit:
    """The figure of merit a program's run recorded (metrics.merit: value, unit, better); Nones for an app's run."""
    metrics = run.record.get("metrics") if run.record else None
    merit = metrics.get("merit") if isinstance(metrics, dict) else None
    if not isinstance(merit, dict) or not isinstance(merit.get("value"), (int, float)):
        return {"merit": None, "merit_unit": None, "merit_better": None}
    return {"merit": float(merit["value"]), "merit_unit": str(merit.get("unit", "")),
            "merit_better": str(merit.get("better", ""))}


def rows(store: Store, sweep_ids: list[int] | None = None) -> Iterator[ExportRow]:
    """Every run (of the given sweeps) joined with its machine, as dicts with COLUMNS plus 'env' and 'result', one
    at a time."""
    machine_of = {s.id: s.machine_id for s in store.sweeps()}
    machines: dict[int, MachineRecord] = {}
    for run in store.iter_runs(sweep_ids):
        machine_id = machine_of[run.sweep_id]
        if machine_id not in machines:
            machines[machine_id] = store.machine(machine_id)
        m = machines[machine_id]
        busy = run.interference
        yield {"run_id": run.id, "sweep_id": run.sweep_id, "machine_id": machine_id, "hostname": m.hostname,
               "topology_hash": m.topology_hash, "mpi_library": m.mpi_library, "compiler": m.compiler,
               "app": run.app, "problem": run.problem, "ranks": run.ranks, "threads": run.threads,
               "bind": run.bind, "membind": run.membind, "dist": run.dist, "repeat": run.repeat,
               "app_args": " ".join(run.app_args),
               "status": run.status, "returncode": run.returncode, "wall_s": run.wall_s,
               "rate": run.value("rate"), "rate_unit": run.record.get("rate_unit") if run.record else None,
               **program_merit(run),
               "time_s": run.value("time_s"), "comm_s": run.value("comm_s"), "comp_s": run.value("comp_s"),
               "imbalance": run.value("imbalance"), "max_rss_mib": run.value("max_rss_mib"),
               "node_rss_mib": run.value("node_rss_mib"), "pages_on_intended": run_placement_share(run),
               "verified": run.record.get("verified") if run.record else None,
               "restarted_from_step": run.restarted_from_step,
               "outside_cpu_s": busy.outside_cpu_s if busy else None,
               "outside_cores": busy.outside_cores if busy else None,
               "steal_s": busy.steal_s if busy else None, "disturbed": run.disturbed if busy else None,
               "started_at": run.started_at, "finished_at": run.finished_at,
               "command": json.dumps(list(run.command)), "stderr_tail": run.stderr_tail,
               "env": dict(run.env), "result": run.record}


def attempt_rows(store: Store, sweep_ids: list[int] | None = None) -> Iterator[AttemptRow]:
    """Every attempt (of the given sweeps), oldest first, as dicts with ATTEMPT_COLUMNS plus 'result'."""
    app_of = {s.id: s.app for s in store.sweeps()}
    for attempt in store.attempts(sweep_ids):
        yield {"sweep_id": attempt.sweep_id, "app": app_of[attempt.sweep_id], "ranks": attempt.ranks,
               "threads": attempt.threads, "bind": attempt.bind, "membind": attempt.membind,
               "repeat": attempt.repeat, "item_args": " ".join(attempt.item_args), "status": attempt.status,
               "returncode": attempt.returncode, "wall_s": attempt.wall_s,
               "restarted_from_step": attempt.restarted_from_step, "started_at": attempt.started_at,
               "finished_at": attempt.finished_at, "command": json.dumps(list(attempt.command)),
               "stderr_tail": attempt.stderr_tail, "result": attempt.record}


def write_csv(data: Iterable[Mapping[str, object]], out: IO[str], columns: tuple[str, ...] = COLUMNS) -> int:
    """Writes CSV with a header row of `columns` to `out`, a row per run (or attempt) as it comes; returns the
    number of rows."""
    writer = csv.DictWriter(out, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    count = 0
    for row in data:
        writer.writerow({k: "" if v is None else v for k, v in row.items()})  # extras are ignored
        count += 1
    return count


def write_json(data: Iterable[Mapping[str, object]], out: IO[str]) -> int:
    """Writes a JSON list of run (or attempt) objects (the command as a list, the result record in full) to `out`,
    an object per row as it comes, in the text json.dumps(list, indent=1, sort_keys=True) gives; returns the number
    of rows."""
    count = 0
    for row in data:
        item = json.dumps({**row, "command": json.loads(str(row["command"]))}, indent=1, sort_keys=True)
        out.write(("[\n" if count == 0 else ",\n") + textwrap.indent(item, " ", lambda _: True))
        count += 1
    out.write("\n]\n" if count else "[]\n")
    return count
