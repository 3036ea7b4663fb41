"""The report's Checkpoint I/O section: for runs whose HYMPI_RESULT has an "io" object that wrote or read something,
checkpoint write and restart read bandwidth per app, layout and HDF5 option set (sieve buffer, alignment, collective
or independent, MPI-IO hints), and what the checkpoints cost: their share of the run's timed region, their cost
measured within each run (the solver thread's seconds on them and its steps beside the background writer beyond its
quiet steps, IoRecord.checkpoint_cost_s), and the slowdown against runs of the same configuration without
checkpoints where the database has both.

Bandwidths are bytes over seconds of the whole operation as the frame times it (a checkpoint: create, write, flush
to disk, close, rename; a restart: open, header checks, read with checksum), in GB/s (10^9 B). A restarted run's
time covers only the steps after its restart: it gives a read bandwidth but takes no part in the time comparisons.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

from hympi.iorecord import IoRecord, io_record
from hympi.stats.compare import MIN_SAMPLES, median_ci, slowdown_ci
from hympi.stats.median import median_or_none
from hympi.store import Run

MIB = 2.0**20


@dataclass(frozen=True)
class IoRow:
    """One app configuration, layout and HDF5 option set: medians over its runs with I/O."""

    app: str
    problem: str
    layout: str
    options: str
    runs: int
    checkpoints: float | None  # per run
    checkpoint_mib: float | None  # per checkpoint
    write_gbs: float | None
    restarts: int
    read_gbs: float | None
    share: float | None  # checkpoint seconds / timed region
    cost: float | None  # IoRecord.checkpoint_cost_s / timed region: what they cost, measured within each run
    cost_ci: tuple[float, float] | None  # its 95 % interval (stats.compare.median_ci), None with too few runs
    slowdown: float | None  # (with - without) / with, median times of runs without any I/O in the same group
    slowdown_ci: tuple[float, float] | None  # its 95 % interval (stats.compare.slowdown_ci), None with too few runs


@dataclass(frozen=True)
class CheckpointIoView:
    """The rows of the section (empty: no run did any checkpoint or restart)."""

    rows: tuple[IoRow, ...]



def _ok(run: Run) -> bool:
    """A run that reached its end (its record's values count)."""
    return run.record is not None and run.status in ("ok", "unverified")


def checkpoint_io_view(runs: list[Run]) -> CheckpointIoView:
    """The section's rows: runs grouped by (app, problem, app arguments, layout, binding, HDF5 options)."""
    with_io: dict[tuple[str, ...], list[tuple[Run, IoRecord]]] = {}
    plain: dict[tuple[str, ...], list[float]] = {}
    for run in runs:
        if not _ok(run):
            continue
        io = io_record(run.record)
        base = (run.app, run.problem, " ".join(run.app_args), f"{run.ranks}x{run.threads}", run.bind)
        if io is None or not io.any:
            time_s = run.value("time_s")
            if time_s is not None and time_s > 0:
                plain.setdefault(base, []).append(time_s)
            continue
        with_io.setdefault((*base, io.h5.label()), []).append((run, io))
    rows = []
    for key, members in sorted(with_io.items()):
        app, problem, _, layout, _, options = key
        writers = [(r, io) for r, io in members if io.checkpoints > 0 and io.restart_step < 0]
        readers = [io for _, io in members if io.read_gbs is not None]
        shares = [io.checkpoint_s / t for r, io in writers if (t := r.value("time_s")) is not None and t > 0]
        costs = [c / t for r, io in writers
                 if (c := io.checkpoint_cost_s) is not None and (t := r.value("time_s")) is not None and t > 0]
        times = [t for r, _ in writers if (t := r.value("time_s")) is not None and t > 0]
        without = plain.get(key[:5], [])
        with_t, without_t = median_or_none(times), median_or_none(without)
        enough = min(len(times), len(without)) >= MIN_SAMPLES
        rows.append(IoRow(
            app=app, problem=problem, layout=layout, options=options, runs=len(members),
            checkpoints=median_or_none([float(io.checkpoints) for _, io in writers]),
            checkpoint_mib=median_or_none([io.checkpoint_bytes / io.checkpoints / MIB for _, io in writers]),
            write_gbs=median_or_none([g for _, io in writers if (g := io.write_gbs) is not None]),
            restarts=len(readers), read_gbs=median_or_none([g for io in readers if (g := io.read_gbs) is not None]),
            share=median_or_none(shares), cost=median_or_none(costs),
            cost_ci=median_ci(costs)[1:] if len(costs) >= MIN_SAMPLES else None,
            slowdown=(with_t - without_t) / with_t if with_t and without_t is not None else None,
            slowdown_ci=slowdown_ci(without, times)[1:] if enough else None))
    return CheckpointIoView(tuple(rows))


def _cell(value: float | None, fmt: str) -> str:
    """A number for a table cell; '-' when absent."""
    return "-" if value is None else format(value, fmt)


def _pct(value: float | None) -> str:
    """A share as a percentage; '-' when absent."""
    return "-" if value is None else f"{100 * value:.1f} %"


def _pct_ci(value: float | None, ci: tuple[float, float] | None) -> str:
    """'6.6 % [3.1, 9.0]' (95 % interval); 'indistinguishable from none [-3.9, 11.9] %' when the interval holds 0;
    the bare value without an interval (too few runs) and '-' when absent."""
    if value is None or ci is None:
        return _pct(value)
    low, high = 100 * ci[0], 100 * ci[1]
    if low <= 0 <= high:
        return f"indistinguishable from none [{low:.1f}, {high:.1f}] %"
    return f"{100 * value:.1f} % [{low:.1f}, {high:.1f}]"


def checkpoint_io_section(view: CheckpointIoView) -> str:
    """The Checkpoint I/O section's HTML ('' when no run wrote or read a checkpoint)."""
    if not view.rows:
        return ""
    head = ("<tr><th class='l'>app</th><th class='l'>problem</th><th>layout</th><th class='l'>HDF5 options</th>"
            "<th>runs</th><th>checkpoints/run</th><th>MiB/checkpoint</th><th>write GB/s</th><th>restarts</th>"
            "<th>read GB/s</th><th>checkpoint share</th><th>cost in run</th><th>slowdown</th></tr>")
    rows = "".join(
        f"<tr><td class='l'>{escape(r.app)}</td><td class='l'>{escape(r.problem)}</td><td>{escape(r.layout)}</td>"
        f"<td class='l'>{escape(r.options)}</td><td>{r.runs}</td><td>{_cell(r.checkpoints, '.3g')}</td>"
        f"<td>{_cell(r.checkpoint_mib, '.4g')}</td><td><b>{_cell(r.write_gbs, '.3g')}</b></td><td>{r.restarts}</td>"
        f"<td><b>{_cell(r.read_gbs, '.3g')}</b></td><td>{_pct(r.share)}</td>"
        f"<td>{_pct_ci(r.cost, r.cost_ci)}</td><td>{_pct_ci(r.slowdown, r.slowdown_ci)}</td></tr>"
        for r in view.rows)
    caption = ("medians over the runs of each app configuration, layout and HDF5 option set (sieve buffer, alignment, "
               "collective or independent transfers, MPI-IO hints); write = checkpoint bytes / seconds of the whole "
               "checkpoint (create, write, flush to disk, close, rename), read = the restart's (open, header checks, "
               "read with checksum), GB/s = 10^9 B/s; checkpoint share = checkpoint seconds / the run's timed region; "
               "cost in run = those seconds and what the solver's steps beside the background writer took beyond the "
               "median of its quiet steps just before, over the timed region (measured within each run, so the "
               "machine's drift from run to run is not in it; '-' for records without the step counts); "
               "slowdown = (time with - time without) / time with, against runs of the same configuration without "
               "any I/O ('-' when the database has none); both with their 95 % bootstrap interval where there are "
               f"{MIN_SAMPLES} runs or more ('indistinguishable from none' when it holds 0); restarted runs count for "
               "reading only")
    return (f"<h2 id='checkpoint-io'>Checkpoint I/O</h2><table class='checkpoint-io'><caption>{caption}</caption>"
            f"{head}{rows}</table>")
