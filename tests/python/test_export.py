"""hympi export: every stored run, as CSV or JSON, with its machine and full record."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from conftest import hympi
from fakeapps import fake_bin_dir
from hympi.export import COLUMNS, rows, write_csv
from hympi.store import Run, Store


def test_csv_and_json_hold_every_run_with_its_status_and_record(tmp_path: Path):
    env = fake_bin_dir(tmp_path)
    db = tmp_path / "r.db"
    proc = hympi("sweep", "rb3d", "--ranks", "1,2", "--threads", "1,2", "--repeat", "2", "--no-warmup", "--db",
                 str(db), "--", "--fail-at", "1x2", env=env)
    assert proc.returncode == 1, proc.stderr  # 1x2 fails on purpose

    out = hympi("export", "--db", str(db), env=env)
    assert out.returncode == 0, out.stderr
    rows = list(csv.DictReader(io.StringIO(out.stdout)))
    assert tuple(rows[0].keys()) == COLUMNS
    assert len(rows) == 6
    by_layout = {(r["ranks"], r["threads"], r["repeat"]): r for r in rows}
    assert by_layout[("2", "1", "2")]["status"] == "ok" and float(by_layout[("2", "1", "2")]["rate"]) == 21.0
    failed = by_layout[("1", "2", "1")]
    assert failed["status"] == "failed" and failed["rate"] == "" and failed["returncode"] == "3"
    assert "deliberate failure" in failed["stderr_tail"]
    assert json.loads(failed["command"])[-3:] == [str(tmp_path / "bin" / "hympi-rb3d"), "--fail-at", "1x2"]
    assert {r["hostname"] for r in rows} and all(r["topology_hash"] for r in rows)

    target = tmp_path / "runs.json"
    out = hympi("export", "--db", str(db), "--format", "json", "--sweep", "1", "-o", str(target), env=env)
    assert out.returncode == 0 and "wrote 6 runs" in out.stderr
    data = json.loads(target.read_text())
    assert len(data) == 6
    ok = next(r for r in data if r["status"] == "ok")
    assert ok["result"]["rate"] == ok["rate"] and ok["env"]["OMP_NUM_THREADS"] == str(ok["threads"])
    assert isinstance(ok["command"], list)

    assert hympi("export", "--db", str(db), "--sweep", "5", env=env).returncode == 2
    assert hympi("export", "--db", str(tmp_path / "none.db"), env=env).returncode == 2
    assert not (tmp_path / "none.db").exists()


def test_json_is_written_run_by_run_in_the_text_of_one_pretty_printed_list(tmp_path: Path):
    env = fake_bin_dir(tmp_path)
    db = tmp_path / "r.db"
    assert hympi("sweep", "rb3d", "--ranks", "1,2", "--threads", "1", "--repeat", "2", "--no-warmup", "--db",
                 str(db), env=env).returncode == 0
    out = hympi("export", "--db", str(db), "--format", "json", env=env)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert len(data) == 4 and out.stdout == json.dumps(data, indent=1, sort_keys=True) + "\n"
    target = tmp_path / "runs.json"
    assert hympi("export", "--db", str(db), "--format", "json", "-o", str(target), env=env).returncode == 0
    assert target.read_text() == out.stdout
    # A database without runs: an empty list, and a CSV of the header alone.
    empty = tmp_path / "empty.db"
    Store.open(empty).close()
    none = hympi("export", "--db", str(empty), "--format", "json", env=env)
    assert (none.returncode, none.stdout) == (0, "[]\n"), none.stderr
    header = hympi("export", "--db", str(empty), env=env)
    assert (header.returncode, header.stdout) == (0, ",".join(COLUMNS) + "\n"), header.stderr


def test_a_programs_figure_of_merit_is_exported_as_it_printed_it(tmp_path: Path):
    """NWChem swept with --metric 'wall:\\s+([0-9.]+)s' --metric-unit s: the CSV held only the rate, 1/4.4 = 0.2273
    in '1/(s)', and the 4.4 s NWChem printed was nowhere; the figure, its unit and direction are columns now (empty
    for an app's run, whose figure is the rate)."""
    record = {"rate": 1 / 4.4, "rate_unit": "1/(s)", "verified": True, "problem": "h2o.nw",
              "metrics": {"merit": {"value": 4.4, "unit": "s", "better": "lower"}}}
    with Store.open(tmp_path / "r.db") as store:
        machine = store.ensure_machine("h", "t", "m", "c", {})
        sweep = store.create_sweep(machine.id, "nwchem", {"app": "nwchem"}, 2)
        store.add_run(Run(sweep.id, "nwchem", 1, 1, "core", "compact", 1, ("h2o.nw",), (), ("mpirun",), "ok", 0,
                          4.8, record))
        app_sweep = store.create_sweep(machine.id, "rb3d", {"app": "rb3d"}, 1)
        store.add_run(Run(app_sweep.id, "rb3d", 1, 1, "core", "compact", 1, (), (), ("mpirun",), "ok", 0, 2.0,
                          {"rate": 21.0, "rate_unit": "Mcells/s", "verified": True, "problem": "p"}))
        text = io.StringIO()
        write_csv(rows(store), text)
    program, app = csv.DictReader(io.StringIO(text.getvalue()))
    assert (program["merit"], program["merit_unit"], program["merit_better"]) == ("4.4", "s", "lower"), program
    assert (app["merit"], app["merit_unit"], app["merit_better"]) == ("", "", ""), app
