"""The report's Checkpoint I/O section and HYMPI_RESULT's io object as the frame writes it."""

from __future__ import annotations

import statistics

import pytest

from hympi.iorecord import io_record, restart_step
from hympi.report.checkpoint_io import checkpoint_io_section, checkpoint_io_view
from hympi.report.html import render
from hympi.result import parse_record
from hympi.store import Run
from records import full_record


def _io(checkpoints: int = 0, checkpoint_s: float = 0.0, checkpoint_bytes: float = 0.0, restart_step: int = -1,
        restart_s: float = 0.0, restart_bytes: float = 0.0, sieve: int = 0, transfer: str = "collective",
        hints: dict[str, str] | None = None, steps_writing: int | None = None,
        excess_s: float = 0.0) -> dict[str, object]:
    """An io object in IoSession::to_json()'s shape (without the step counts unless steps_writing is given, as a
    record from before they were counted)."""
    return {"checkpoint": "/c/x.h5" if checkpoints else "", "checkpoint_every": 50 if checkpoints else 0,
            "restart": "/c/x.h5" if restart_step >= 0 else "", "snapshot": "", "snapshot_every": 0,
            "h5": {"sieve_bytes": sieve, "alignment": 4096 if sieve else 0, "chunk": None, "transfer": transfer,
                   "hints": hints or {}},
            "checkpoints": checkpoints, "checkpoint_s": checkpoint_s, "checkpoint_bytes": checkpoint_bytes,
            "snapshots": 0, "snapshot_s": 0.0, "snapshot_bytes": 0.0, "restart_s": restart_s,
            "restart_bytes": restart_bytes, "restart_step": restart_step,
            **({} if steps_writing is None else {"steps_writing": steps_writing, "steps_writing_s": 0.1 * steps_writing,
                                                 "steps_writing_excess_s": excess_s, "steps_quiet": 140,
                                                 "steps_quiet_s": 4.0})}


def _run(ranks: int, repeat: int, time_s: float, io: dict[str, object] | None, status: str = "ok",
         restarted: int | None = None) -> Run:
    record = full_record(ranks=ranks, time_s=time_s, problem="256^3", **({"io": io} if io is not None else {}))
    return Run(1, "rb3d", ranks, 1, "core", "compact", repeat, ("--size", "256"), (), ("mpirun",), status, 0, 1.0,
               record, restarted_from_step=restarted)


def test_the_frames_io_object_is_a_valid_optional_field_and_reads_back_typed():
    record = parse_record(full_record(io=_io(4, 2.0, 4e9)))
    assert record.io is not None and record.io["checkpoints"] == 4
    io = io_record(record.raw)
    assert io is not None and io.write_gbs == pytest.approx(2.0) and io.read_gbs is None and io.any
    assert io.h5.label() == "sieve default, no alignment, collective"
    assert restart_step(record.raw) is None
    io_slab = _io(restart_step=150, restart_s=0.5, restart_bytes=1e9, sieve=4 * 2**20, transfer="independent",
                  hints={"cb_buffer_size": "16777216"})
    io_slab["h5"]["slab_bytes"] = 8 * 2**20  # type: ignore[index]
    back = io_record(full_record(io=io_slab))
    assert back is not None and back.read_gbs == pytest.approx(2.0) and back.restarted
    assert back.h5.label() == "sieve 4 MiB, align 4 KiB, independent, slab 8 MiB, cb_buffer_size=16777216"
    assert io_record(full_record()) is None and not io_record(full_record(io=_io())).any  # asked for no I/O
    assert io.checkpoint_cost_s is None  # a record from before the steps were counted: no cost to give
    counted = io_record(full_record(io=_io(4, 2.0, 4e9, steps_writing=10, excess_s=0.25)))
    assert counted is not None and counted.checkpoint_cost_s == pytest.approx(2.25)
    assert io_record(full_record(io=_io(0, steps_writing=0))).checkpoint_cost_s is None  # no checkpoint, no cost


def test_section_shows_bandwidth_per_layout_and_option_share_and_slowdown():
    runs = [
        _run(2, 1, 10.0, _io()), _run(2, 2, 12.0, _io()),  # no I/O asked for: the slowdown's reference (11 s)
        _run(2, 3, 12.0, _io(4, 0.8, 4 * 2**27, steps_writing=9, excess_s=0.4)),
        _run(2, 4, 12.4, _io(4, 1.2, 4 * 2**27, steps_writing=12, excess_s=-0.2)),
        _run(2, 5, 9.0, _io(4, 0.5, 4 * 2**27, sieve=4096)),  # another option set: its own row
        _run(2, 6, 3.0, _io(1, 0.2, 2**27, restart_step=150, restart_s=0.25, restart_bytes=2**27), restarted=150),
        _run(1, 1, 20.0, _io(4, 4.0, 4 * 2**27)),
        _run(1, 2, 30.0, _io(4, 9.0, 4 * 2**27), status="failed"),  # not counted
    ]
    view = checkpoint_io_view(runs)
    rows = {(r.layout, r.options): r for r in view.rows}
    assert set(rows) == {("1x1", "sieve default, no alignment, collective"),
                         ("2x1", "sieve default, no alignment, collective"),
                         ("2x1", "sieve 4 KiB, align 4 KiB, collective")}
    two = rows[("2x1", "sieve default, no alignment, collective")]
    assert two.runs == 3 and two.checkpoints == 4 and two.checkpoint_mib == pytest.approx(128)
    assert two.write_gbs == pytest.approx(statistics.median([4 * 2**27 / 0.8, 4 * 2**27 / 1.2]) / 1e9)
    assert two.restarts == 1 and two.read_gbs == pytest.approx(2**27 / 0.25 / 1e9)
    assert two.share == pytest.approx(statistics.median([0.8 / 12.0, 1.2 / 12.4]))
    assert two.cost == pytest.approx(statistics.median([(0.8 + 0.4) / 12.0, (1.2 - 0.2) / 12.4]))
    assert rows[("2x1", "sieve 4 KiB, align 4 KiB, collective")].cost is None  # a record without the step counts
    assert two.slowdown == pytest.approx((12.2 - 11.0) / 12.2)  # the restarted run's 3 s is not a run time
    assert rows[("1x1", "sieve default, no alignment, collective")].slowdown is None  # nothing to compare with
    html = checkpoint_io_section(view)
    assert html.startswith("<h2 id='checkpoint-io'>Checkpoint I/O</h2>") and "sieve 4 KiB, align 4 KiB" in html
    page = render("t", "now", [], [], {}, runs, ())
    assert "href='#checkpoint-io'" in page and page.count("<h2 id='checkpoint-io'>") == 1


@pytest.mark.parametrize(("with_times", "slowdown_cell"), [
    ([11.0, 11.1, 10.9, 11.0, 11.05, 10.95], "9.1 % ["),                        # separated from the runs without
    ([9.5, 12.0, 10.0, 11.5, 10.4, 11.0], "indistinguishable from none ["),   # the spread holds 0
])
def test_slowdown_and_in_run_cost_carry_their_intervals(with_times: list[float], slowdown_cell: str) -> None:
    """Each of the section's two costs is printed with its 95 % interval, and as indistinguishable from none when the
    interval holds 0; with one run there is no interval and the bare median is shown."""
    plain = [_run(2, k, t, _io()) for k, t in enumerate([10.0, 10.1, 9.9, 10.0, 10.05, 9.95])]
    costs = [0.30, 0.36, 0.33, 0.41, 0.35, 0.38]
    with_ckpt = [_run(2, 10 + k, t, _io(4, 0.3, 4 * 2**27, steps_writing=10, excess_s=c - 0.3))
                 for k, (t, c) in enumerate(zip(with_times, costs, strict=True))]
    (row,) = checkpoint_io_view(plain + with_ckpt).rows
    assert row.slowdown_ci is not None and row.cost_ci is not None and row.cost is not None
    assert row.cost_ci[0] <= row.cost <= row.cost_ci[1] and row.cost_ci[0] > 0
    html = checkpoint_io_section(checkpoint_io_view(plain + with_ckpt))
    assert slowdown_cell in html, html
    assert f"{100 * row.cost:.1f} % [" in html
    (alone,) = checkpoint_io_view(plain + with_ckpt[:1]).rows
    assert alone.slowdown_ci is None and alone.cost_ci is None and alone.slowdown is not None


def test_no_section_without_checkpoints():
    runs = [_run(2, 1, 10.0, _io()), _run(2, 2, 10.0, None)]
    assert checkpoint_io_view(runs).rows == () and checkpoint_io_section(checkpoint_io_view(runs)) == ""
    assert "checkpoint-io" not in render("t", "now", [], [], {}, runs, ())

