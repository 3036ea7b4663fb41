"""Raw data out of the results store: one row per run, as CSV or JSON."""

from __future__ import annotations

import csv
import io
import json
from typing import TypedDict

from hympi.jsontypes import JsonObject
from hympi.result import run_placement_share
from hympi.store import MachineRecord, Store


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


def rows(store: Store, sweep_ids: list[int] | None = None) -> list[ExportRow]:
    """Every run (of the given sweeps) joined with its machine, as dicts with COLUMNS plus 'env' and 'result'."""
    machine_of = {s.id: s.machine_id for s in store.sweeps()}
    machines: dict[int, MachineRecord] = {}
    out: list[ExportRow] = []
    for run in store.runs(sweep_ids):
        machine_id = machine_of[run.sweep_id]
        if machine_id not in machines:
            machines[machine_id] = store.machine(machine_id)
        m = machines[machine_id]
        busy = run.interference
        out.append({"run_id": run.id, "sweep_id": run.sweep_id, "machine_id": machine_id, "hostname": m.hostname,
                    "topology_hash": m.topology_hash, "mpi_library": m.mpi_library, "compiler": m.compiler,
                    "app": run.app, "problem": run.problem, "ranks": run.ranks, "threads": run.threads,
                    "bind": run.bind, "membind": run.membind, "dist": run.dist, "repeat": run.repeat,
                    "app_args": " ".join(run.app_args),
                    "status": run.status, "returncode": run.returncode, "wall_s": run.wall_s,
                    "rate": run.value("rate"), "rate_unit": run.record.get("rate_unit") if run.record else None,
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
                    "env": dict(run.env), "result": run.record})
    return out


def to_csv(data: list[ExportRow]) -> str:
    """CSV text with a header row of COLUMNS."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=COLUMNS, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in data:
        writer.writerow({k: "" if v is None else v for k, v in row.items()})  # extras are ignored
    return buf.getvalue()


def to_json(data: list[ExportRow]) -> str:
    """JSON text: a list of run objects (the command as a list, the result record in full)."""
    return json.dumps([{**row, "command": json.loads(row["command"])} for row in data], indent=1, sort_keys=True) + "\n"
