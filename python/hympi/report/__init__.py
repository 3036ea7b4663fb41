"""The static HTML report: machine summary, per-app plots and tables, a recommendation from the data, and the
communication hierarchy from ping-pong runs."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hympi.errors import UsageError
from hympi.report.analysis import AppGroup, group_runs, recommend
from hympi.report.hierarchy import PINGPONG_APP, hierarchy_probes
from hympi.report.html import GroupFigures, explain_groups, render
from hympi.store import Store, now_utc

__all__ = ["AppGroup", "ensure_out_dir", "group_runs", "recommend", "write_report"]


def ensure_out_dir(path: str | os.PathLike[str]) -> Path:
    """Creates `path` if needed and proves it is writable; raises UsageError (nothing else touched) otherwise."""
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise UsageError(f"output directory {out} exists and is not a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out, prefix=".hympi-write-test-"):
            pass
    except OSError as exc:
        raise UsageError(f"output directory {out} is not writable ({exc.strerror or exc})") from None
    return out


def write_report(store: Store, out_dir: Path, sweep_ids: list[int] | None = None, notes: tuple[str, ...] = (),
                 title: str = "hympi study") -> Path:
    """Writes index.html and its PNG plots into `out_dir`; returns the path of index.html."""
    runs = store.runs(sweep_ids)
    sweeps = store.sweeps()
    machine_of = {s.id: s.machine_id for s in sweeps}
    wanted = set(sweep_ids) if sweep_ids is not None else {s.id for s in sweeps}
    machine_ids = sorted({machine_of[i] for i in wanted if i in machine_of})
    machines = [store.machine(i) for i in machine_ids]
    # Ping-pong runs measure the communication hierarchy, not a layout: their own section, not an app group.
    groups = group_runs([r for r in runs if r.app != PINGPONG_APP], machine_of)
    probes = hierarchy_probes(runs, machine_of)
    failed_probes = sum(1 for r in runs if r.app == PINGPONG_APP and r.status != "ok")
    from hympi.report import plots  # matplotlib takes a second to import: only when a report is written

    explained = explain_groups(groups, machines)
    figures: dict[str, GroupFigures] = {}
    for group in groups:
        rate, mem, split = (f"{group.slug}-{kind}.png" for kind in ("rate", "memory", "comm-comp"))
        plots.rate_vs_threads(group, out_dir / rate)
        plots.memory(group, out_dir / mem)
        # An app that records no phases (STREAM) gets no chart at all, not an empty one.
        drawn = plots.comm_comp(group, explained[group.slug][0], out_dir / split)
        figures[group.slug] = GroupFigures(rate, mem, split if drawn is not None else None)
    probe_figures: dict[str, str] = {}
    for probe in probes:
        probe_figures[probe.slug] = f"{probe.slug}-bandwidth.png"
        plots.bandwidth_vs_size(probe, out_dir / probe_figures[probe.slug])
    page = render(title, now_utc(), machines, groups, figures, runs, notes, probes, probe_figures, failed_probes,
                  explained)
    index = out_dir / "index.html"
    tmp = out_dir / ".index.html.tmp"
    tmp.write_text(page, encoding="utf-8")
    os.replace(tmp, index)
    return index
