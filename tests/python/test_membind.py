"""--membind: the memory policy from `hympi run` and `hympi sweep` (an axis) to the app (HYMPI_MEMBIND), the results
database (schema 7), the report and the study; real rb3d runs under every policy record where their pages went."""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

import skips
from conftest import hympi, hympi_json, sweep_params
from fakeapps import fake_bin_dir, launches
from hympi.errors import UsageError
from hympi.launch.mpirun import MEMORY_POLICIES, LaunchSpec, build_command, check_layout
from hympi.report.analysis import group_runs, labels, recommend
from hympi.store import Run, Store, schema
from hympi.study import StudyOptions, membind_axis
from hympi.sweep import SweepItem, SweepParams, checkpoint_path
from hympi.topology import machine_summary
from olddb import store_at

REPO = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("HYMPI_BIN_DIR") or REPO / "build" / "bin")


def test_the_policy_goes_to_every_rank_and_is_checked():
    spec = LaunchSpec("hympi-rb3d", 2, 1, membind="interleave")
    assert spec.app_env()["HYMPI_MEMBIND"] == "interleave"
    assert LaunchSpec("hympi-rb3d", 1, 1).app_env()["HYMPI_MEMBIND"] == "none"  # explicit: hympi.toml cannot differ
    assert "HYMPI_MEMBIND=interleave" in build_command(spec, "mpirun", "openmpi")
    with pytest.raises(UsageError, match="unknown memory policy 'bogus'"):
        check_layout(LaunchSpec("hympi-rb3d", 1, 1, membind="bogus"), 2)


@pytest.mark.parametrize(
    ("args", "env", "needle"),
    [
        (["run", "rb3d", "--membind", "bogus"], {}, "--membind: unknown memory policy 'bogus'"),
        (["run", "rb3d", "--membind", ""], {}, "--membind"),
        (["run", "rb3d"], {"HYMPI_MEMBIND": "bogus"}, "HYMPI_MEMBIND: unknown memory policy 'bogus'"),
        (["sweep", "rb3d", "--membind", "bogus"], {}, "--membind: unknown memory policy 'bogus'"),
        (["sweep", "rb3d", "--membind", "none,"], {}, "--membind"),
        (["sweep", "rb3d"], {"HYMPI_MEMBIND": "bogus"}, "HYMPI_MEMBIND"),
    ],
)
def test_a_bad_policy_is_one_line_exit_2_and_nothing_launched(args, env, needle, fake_launcher, tmp_path):
    launcher, marker = fake_launcher
    proc = hympi(*args, "--db", str(tmp_path / "r.db"), env={**launcher, **env}) if args[0] == "sweep" else \
        hympi(*args, env={**launcher, **env})
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], proc.stderr
    assert not marker.exists() and not (tmp_path / "r.db").exists()


def test_run_passes_the_policy_and_shows_where_the_pages_went(tmp_path: Path):
    env = fake_bin_dir(tmp_path)
    code, rec = hympi_json("run", "rb3d", "--membind", "interleave", "--json", env=env)
    assert code == 0 and rec["membind"] == "interleave"  # the fake app echoes HYMPI_MEMBIND as the frame does
    config = tmp_path / "hympi.toml"
    config.write_text('membind = "location"\n')
    code, rec = hympi_json("--config", str(config), "run", "rb3d", "--json", env=env)
    assert code == 0 and rec["membind"] == "location"  # the options layer: config < HYMPI_MEMBIND < --membind
    code, rec = hympi_json("--config", str(config), "run", "rb3d", "--json", env={**env, "HYMPI_MEMBIND": "local"})
    assert rec["membind"] == "local"
    code, rec = hympi_json("--config", str(config), "run", "rb3d", "--membind", "none", "--json",
                           env={**env, "HYMPI_MEMBIND": "local"})
    assert rec["membind"] == "none"
    table = hympi("run", "rb3d", "--ranks", "2", "--membind", "local", env=env)
    assert table.returncode == 0, table.stderr
    assert "local; 100 % of 16 pages where intended (u 100 %)" in table.stdout


def test_sweep_crosses_bindings_with_policies_records_them_and_reports_them(tmp_path: Path):
    env = fake_bin_dir(tmp_path)
    db = tmp_path / "r.db"
    proc = hympi("sweep", "rb3d", "--ranks", "1,2", "--membind", "none,interleave", "--repeat", "4", "--db", str(db),
                 "--seed", "3", env=env)
    assert proc.returncode == 0, proc.stderr
    assert len(launches(env)) == 2 * 2 * 5  # layouts x policies x (warm-up + 4: a verdict's runs)
    with Store.open(db, create=False) as store:
        runs = store.runs()
        (sweep,) = store.sweeps()
    assert {(r.ranks, r.membind) for r in runs} == {(1, "none"), (2, "none"), (1, "interleave"), (2, "interleave")}
    for run in runs:  # the policy reached the app: its record says what it ran with
        assert run.record is not None and run.record["membind"] == run.membind
        assert dict(run.env)["HYMPI_MEMBIND"] == run.membind
    assert sweep.params["membinds"] == ["none", "interleave"]
    (group,) = group_runs(runs, {sweep.id: sweep.machine_id})
    assert sorted(labels(group).values()) == ["1x1", "1x1 membind=interleave", "2x1", "2x1 membind=interleave"]
    assert all(s.placement_median == 1.0 and s.runs == 4 for s in group.layouts)
    assert "2x1 membind=interleave" in recommend(group)
    # Resumed, the sweep finds every item done (items are keyed by policy too): nothing runs again.
    again = hympi("sweep", "rb3d", "--db", str(db), "--resume", str(sweep.id), env=env)
    assert again.returncode == 0 and len(launches(env)) == 20, again.stderr
    assert "20 already recorded" in again.stdout
    out = tmp_path / "report"
    report = hympi("report", "--db", str(db), "--out", str(out), env=env)
    assert report.returncode == 0, report.stderr
    page = (out / "index.html").read_text()
    assert "<th>membind</th>" in page and "<th>pages where intended</th>" in page
    assert "<td>interleave</td>" in page and "<td>100 %</td>" in page
    csv = hympi("export", "--db", str(db), "--format", "csv", env=env).stdout.splitlines()
    header = csv[0].split(",")
    assert {row.split(",")[header.index("membind")] for row in csv[1:]} == {"none", "interleave"}


def test_the_sweep_identity_names_the_policies_only_when_they_are_not_the_default(tmp_path: Path):
    plain = sweep_params("rb3d", ((1, 1),))
    assert "membinds" not in plain.as_dict()  # sweeps recorded before the axis keep their identity
    assert SweepParams.from_dict(plain.as_dict()) == plain
    crossed = sweep_params("rb3d", ((1, 1),), membinds=("none", "local"))
    assert crossed.as_dict()["membinds"] == ["none", "local"]
    assert SweepParams.from_dict(crossed.as_dict()) == crossed
    with pytest.raises(UsageError, match="unknown memory policy 'numa'"):
        sweep_params("rb3d", ((1, 1),), membinds=("numa",)).check()
    ckpt = sweep_params("rb3d", ((1, 1),), checkpoint_dir=str(tmp_path), checkpoint_every=5)
    default, other = (checkpoint_path(ckpt, SweepItem(1, 1, "core", 1, m)) for m in ("none", "interleave"))
    assert default is not None and other is not None and default != other
    assert "-core-1-" in default.name and "-core-interleave-1-" in other.name  # old checkpoints are found again


def _run(sweep_id: int, membind: str = "none", repeat: int = 1) -> Run:
    return Run(sweep_id, "rb3d", 1, 1, "core", "compact", repeat, ("--size", "8"), (), ("mpirun",), "ok", 0, 1.0,
               {"rate": 1.0, "membind": membind}, membind=membind)


def test_schema_7_keys_runs_by_policy_and_keeps_older_runs(tmp_path: Path):
    path = tmp_path / "old.db"
    with store_at(path, 6) as old:
        machine = old.ensure_machine("h", "t", "m", "c", {})
        sweep = old.create_sweep(machine.id, "rb3d", {"app": "rb3d"}, 2)
        run_id = old.add_run(_run(sweep.id))
        old.conn.execute("INSERT INTO run_mpi_params (run_id, name, value) VALUES (?, 'btl', 'self')", (run_id,))
        old.add_run(Run(sweep.id, "rb3d", 1, 1, "core", "compact", 2, (), (), ("mpirun",), "ok", 0, 1.0,
                        {"rate": 1.0, "membind": "interleave"}))  # the policy only its record knows
    with Store.open(path) as new:
        assert new.schema_version() == schema.SCHEMA_VERSION >= 7
        assert [r.membind for r in new.runs()] == ["none", "interleave"]
        assert new.runs()[0].mpi_params == (("btl", "self"),)
        assert new.conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        new.add_run(_run(sweep.id, "local"))  # same ranks, threads, bind and repeat: another item
        assert new.done_keys(sweep.id) == {(1, 1, "core", 1, "none", ()), (1, 1, "core", 2, "interleave", ()),
                                           (1, 1, "core", 1, "local", ())}
        new.replace_run(_run(sweep.id, "local"))
        (attempt,) = new.attempts()
        assert attempt.membind == "local" and attempt.key() == (1, 1, "core", 1, "local", ())


def test_the_study_sweeps_policies_only_on_several_numa_domains(tmp_path: Path):
    said: list[str] = []
    quick = StudyOptions(True, tmp_path / "out", tmp_path / "r.db", ("rb3d", "pingpong"), 1, 60.0, False)
    with Store.open(tmp_path / "r.db") as store:
        machine = store.ensure_machine("h", "t", "m", "c", {})
        study = store.create_study(machine.id, True, "out")
        one = machine_summary("synthetic:pack:1 numa:1 core:2 pu:1")
        assert membind_axis(store, study, one, replace(quick, apps=("pingpong",)), said.append) == ("none",)
        assert not said  # no layout sweep: nothing to say
        assert membind_axis(store, study, one, quick, said.append) == ("none",)
        (note,) = store.study(study).notes
        assert "1 NUMA domain" in note and "needs >= 2" in note and said == [note]
        two = machine_summary("synthetic:pack:2 numa:1 core:2 pu:1")
        assert membind_axis(store, study, two, quick, said.append) == ("none", "interleave")
        full = membind_axis(store, study, two, replace(quick, quick=False), said.append)
        assert full[0] == "none" and sorted(full) == sorted(MEMORY_POLICIES)
        assert len(store.study(study).notes) == 1


def _numa_nodes() -> int:
    return machine_summary().numa_nodes


@skips.needs_apps("hympi-rb3d")
@pytest.mark.parametrize("policy", MEMORY_POLICIES)
def test_rb3d_records_its_policy_and_where_its_arrays_went(policy: str):
    code, rec = hympi_json("run", "rb3d", "--ranks", "2", "--membind", policy, "--json", "--",
                           "--size", "24", "--iterations", "4")
    assert code == 0, rec
    assert rec["membind"] == policy
    placement = rec["page_placement"]
    assert set(placement) == {"u", "f"}
    for summary in placement.values():
        assert summary["pages"] > 0 and summary["absent"] == 0
        assert sum(summary["per_node"].values()) == summary["pages"]
        if policy != "none" or _numa_nodes() == 1:  # first touch is only where the toucher ran
            assert summary["share_on_intended"] == 1.0


def test_the_app_frame_reports_every_app_array_under_its_own_name():
    """The apps that report arrays name them as docs/locality.md lists them (one short run each)."""
    runs = {"stream": ["--elements", "100000", "--repeats", "2"], "spmv3d": ["--global", "12", "12", "12",
            "--reps", "1", "--cg-iterations", "2", "--operator", "csr", "--allow-unverified"],
            "pencil": ["--grid", "16", "16", "16", "--steps", "1"], "bt-mz": ["--class", "S", "--iterations", "2",
                                                                              "--allow-unverified"]}
    names = {"stream": {"a", "b", "c"}, "spmv3d": {"x", "y", "A", "cg_x", "cg_r", "cg_p", "cg_q"},
             "pencil": {"u", "u_pencils"}, "bt-mz": {"u"}}
    for app, args in runs.items():
        if not (BIN / f"hympi-{app}").exists() or shutil.which("mpirun") is None:
            continue
        proc = hympi("run", app, "--ranks", "2", "--membind", "local", "--json", "--", *args)
        rec = json.loads(proc.stdout.strip().splitlines()[-1])
        assert rec.get("membind") == "local", proc.stderr
        assert set(rec["page_placement"]) == names[app], app
        assert all(s["pages"] > 0 for s in rec["page_placement"].values()), app
