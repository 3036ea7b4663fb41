"""hympi tune run/best/params: bad input refused before anything launches, a tune resumed after interruption measures
what the uninterrupted one does, and one real tune of rb3d under mpirun."""

from __future__ import annotations

import dataclasses
import io
import json
import random
import shutil
from pathlib import Path

import pytest
from rich.console import Console

import skips
from conftest import REPO, hympi, tune_params
from fakeapps import InProcessLauncher, launch_env, launch_ranks
from hympi.busy.quiet import Load, quiet_start
from hympi.cli import main as cli_main
from hympi.errors import HympiFatal, UsageError
from hympi.launch.cvars import parse_cvars, read_listing
from hympi.paths import binary
from hympi.store import Store
from hympi.sweep import SweepParams
from hympi.tune.declared import declared_names, parse_mpivars, parse_ompi_info
from hympi.tune.output import BestConfiguration, best_of_tune, mca_params, render, run_command_text
from hympi.tune.results import tune_results
from hympi.tune.space import parse_space
from hympi.tune.tuner import TuneParams, open_tune, run_tune, tune_resume_missed

FIXTURE = REPO / "tests" / "data" / "mpit-openmpi-4.1.4.json"
CVARS = parse_cvars(FIXTURE.read_text())
SMALL = """
[layout]
ranks = [1, 2]
default = { ranks = 2 }
[mpi.btl_vader_eager_limit]
values = [4096, 8192]
"""


def _cli(monkeypatch: pytest.MonkeyPatch, env: dict[str, str], *args: str) -> int:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return cli_main(list(args))


@pytest.mark.parametrize(("space", "extra", "message"), [
    ("[mpi.btl_vader_eagerlimit]\nvalues = [4096]", (),
     "unknown MPI parameter 'btl_vader_eagerlimit' (not a control variable of Open MPI v4.1.4)"),
    ("[mpi.btl_vader_eager_limit]\nvalues = ['abc']", (), "btl_vader_eager_limit: 'abc' is not an unsigned integer"),
    ("[layout]\nranks = [2]", (), "the search space is empty"),
    (SMALL, ("--max-runs", "3"), "5 configurations, more than --max-runs 3: use --strategy guided"),
    (SMALL, ("--strategy", "annealing"), "unknown strategy 'annealing'"),
    (SMALL, ("--repeat", "0"), "--repeat must be >= 1"),
    ("[layout]\nranks = [1, 64]", (), "layout 64x1 of the space needs 64 PUs"),
])
def test_bad_tunes_exit_2_with_one_line_and_launch_nothing(space: str, extra: tuple[str, ...], message: str,
                                                           tmp_path: Path, fake_launcher, monkeypatch, capsys):
    env, marker = fake_launcher
    (tmp_path / "space.toml").write_text(space)
    code = _cli(monkeypatch, env, "tune", "run", "rb3d", "--space", str(tmp_path / "space.toml"), "--cvars",
                str(FIXTURE), "--db", str(tmp_path / "t.db"), *extra, "--", "--size", "8")
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and message in err[0], err
    assert not marker.exists() and not (tmp_path / "t.db").exists()


@pytest.mark.parametrize(("space", "message"), [
    ("[layout]\nranks = [1, 64]\n[mpi.btl_vader_eager_limit]\nvalues = [4096]",
     "layout 64x1 of the space needs 64 PUs"),
    ("[layout]\nranks = [2]", "the search space is empty"),
])
def test_without_a_saved_listing_what_needs_no_cvars_is_refused_before_the_library_is_asked(
        space: str, message: str, tmp_path: Path, fake_launcher, monkeypatch, capsys):
    """Asking the library for its cvars is a launch (hympi-mpit under mpirun): a layout the machine cannot hold is
    refused before it, and a space without MPI parameters never asks."""
    env, marker = fake_launcher
    (tmp_path / "space.toml").write_text(space)
    code = _cli(monkeypatch, env, "tune", "run", "rb3d", "--space", str(tmp_path / "space.toml"), "--db",
                str(tmp_path / "t.db"), "--", "--size", "8")
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and message in err[0], err
    assert not marker.exists() and not (tmp_path / "t.db").exists()


def test_an_unknown_app_or_one_it_rejects_is_refused(tmp_path: Path, fake_launcher, monkeypatch, capsys):
    env, marker = fake_launcher
    (tmp_path / "space.toml").write_text(SMALL)
    assert _cli(monkeypatch, env, "tune", "run", "nosuch", "--space", str(tmp_path / "space.toml"), "--cvars",
                str(FIXTURE)) == 2
    assert "unknown app 'nosuch'" in capsys.readouterr().err
    # The app itself refuses its arguments (--validate-ranks), before any launch.
    assert _cli(monkeypatch, env, "tune", "run", "rb3d", "--space", str(tmp_path / "space.toml"), "--cvars",
                str(FIXTURE), "--db", str(tmp_path / "t.db"), "--", "--no-such-option") == 2
    assert "no-such-option" in capsys.readouterr().err
    assert not marker.exists()
    assert _cli(monkeypatch, env, "sweep", "rb3d", "--mpi-param", "x=1", "--cvars", str(FIXTURE), "--db",
                str(tmp_path / "s.db")) == 2
    assert "unknown MPI parameter 'x' (not a control variable of Open MPI v4.1.4)" in capsys.readouterr().err
    assert _cli(monkeypatch, env, "run", "rb3d", "--mpi-param", "btl_vader_eager_limit", "--cvars", str(FIXTURE)) == 2
    assert "--mpi-param needs NAME=VALUE" in capsys.readouterr().err
    assert not marker.exists() and not (tmp_path / "s.db").exists()


def test_params_lists_and_filters_the_cvars(monkeypatch, capsys):
    assert cli_main(["tune", "params", "--cvars", str(FIXTURE), "--grep", "ALLTOALL", "--json"]) == 0
    listed = parse_cvars(capsys.readouterr().out)
    assert sorted(listed) == ["coll_tuned_alltoall_algorithm", "coll_tuned_alltoall_algorithm_segmentsize",
                              "coll_tuned_alltoallv_algorithm"]
    assert listed["coll_tuned_alltoall_algorithm"] == CVARS["coll_tuned_alltoall_algorithm"]


class FakeLauncher(InProcessLauncher):
    """A rate from the layout and eager limit; the library 'ignores' eager limits above 16384 (reads back 4096)."""

    def record(self, cmd: list[str]) -> dict:
        env = launch_env(cmd)
        ranks = launch_ranks(cmd)
        eager = env.get("OMPI_MCA_btl_vader_eager_limit")
        taken = eager if eager is None or int(eager) <= 16384 else "4096"
        rate = 10.0 * ranks * (1.5 if taken == "8192" else 1.0) * (1.2 if env["HYMPI_BIND"] == "core" else 1.0)
        record: dict = {"rate": rate, "rate_unit": "x", "verified": True, "problem": "p", "max_rss_mib": 5.0 * ranks}
        if eager is not None:
            record["mpi_cvars"] = {"btl_vader_eager_limit": taken}
        return record


SPACE = {"layout": {"ranks": [1, 2], "bind": ["core", "none"], "default": {"ranks": 2}},
         "mpi": {"btl_vader_eager_limit": {"values": [4096, 8192, 65536]}}}


def _tune(db: Path, launcher: FakeLauncher, resume: bool, strategy: str = "guided") -> tuple[int, list]:
    space = parse_space(SPACE, CVARS)
    params = tune_params("rb3d", ("--size", "8"), strategy, 7, repeat=1, seed=5, min_time=0.0)
    with Store.open(db) as store:
        machine = store.ensure_machine("h", "t", "Open MPI 4.1.4", "c", {})
        tune, _ = open_tune(store, machine, params, space, resume)
        run_tune(store, machine, tune, space, Console(file=io.StringIO()), launcher)
        return tune.id, [(m.config, m.score, m.ignored) for m in tune_results(store, tune.id)]


def test_resume_that_finds_no_tune_like_this_one_says_what_differs(tmp_path: Path):
    launcher = FakeLauncher(stop_at=4)
    with pytest.raises(KeyboardInterrupt):
        _tune(tmp_path / "t.db", launcher, False)
    space = parse_space(SPACE, CVARS)
    other_space = parse_space({**SPACE, "layout": {"ranks": [1, 2], "default": {"ranks": 2}}}, CVARS)
    with Store.open(tmp_path / "t.db") as store:
        machine = store.ensure_machine("h", "t", "Open MPI 4.1.4", "c", {})
        params = tune_params("rb3d", ("--size", "8"), "guided", 6, repeat=1, seed=9, min_time=0.0)
        started, resumed = open_tune(store, machine, params, space, True)
        assert not resumed
        assert tune_resume_missed(store, params, space, started) == (
            "--resume: no unfinished tune of rb3d has these parameters; the closest, tune 1 (interrupted), differs "
            "in --max-runs (7 there, 6 here)")
        assert "in --max-runs (7 there, 6 here); --space" in tune_resume_missed(store, params, other_space, started)
        alone = tune_params("is", (), "guided", 6, repeat=1, seed=9, min_time=0.0)
        assert tune_resume_missed(store, alone, space, open_tune(store, machine, alone, space, True)[0]) == \
            "--resume: no unfinished tune of is to continue"


@pytest.mark.parametrize("stop_at", [4, 9])  # inside a sweep (after its warm-up) and between sweeps
def test_an_interrupted_tune_resumes_to_the_same_measurements(tmp_path: Path, stop_at: int):
    whole_id, whole = _tune(tmp_path / "a.db", FakeLauncher(), False)
    assert len(whole) == 7
    launcher = FakeLauncher(stop_at=stop_at)
    with pytest.raises(KeyboardInterrupt):
        _tune(tmp_path / "b.db", launcher, False)
    with Store.open(tmp_path / "b.db") as store:
        assert store.tunes()[0].status == "interrupted"
        kept = len(store.runs())
    launcher.stop_at = None
    resumed_id, resumed = _tune(tmp_path / "b.db", launcher, True)
    assert resumed_id == whole_id and resumed == whole  # the same configurations, chosen alike, scored alike
    with Store.open(tmp_path / "b.db") as store:
        assert store.tune(resumed_id).status == "finished" and len(store.tunes()) == 1
        assert len(store.runs()) == 2 * 7  # warm-up + 1 measured run per configuration: nothing run twice
        assert len(store.runs()) - kept == launcher.launched - stop_at
        found = best_of_tune(store, None)
    assert found.best.config.params() == {"btl_vader_eager_limit": "8192"}
    assert any(ignored == ("btl_vader_eager_limit",) for config, _, ignored in whole
               if config.params().get("btl_vader_eager_limit") == "65536")
    assert "btl_vader_eager_limit = 8192" in mca_params(found).splitlines()
    # An Open MPI parameter is no MPICH variable: the MPICH snippet is refused, naming it (test_tune_best_* below).
    with pytest.raises(UsageError, match="MPICH does not declare MPIR_CVAR_BTL_VADER_EAGER_LIMIT"):
        render(found, "mpich", lambda flavor: frozenset({"MPIR_CVAR_ASYNC_PROGRESS"}))
    assert run_command_text(found) == (f"hympi run rb3d -n {found.best.config.ranks} --threads 1 --bind core "
                                       "--mpi-param btl_vader_eager_limit=8192 -- --size 8")


class NoisyEagerLauncher(InProcessLauncher):
    """Rates with 10 % noise: eager limit 8192 within the noise of the default (unset), 65536 three times as fast."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: dict[str, int] = {}

    def record(self, cmd: list[str]) -> dict:
        eager = launch_env(cmd).get("OMPI_MCA_btl_vader_eager_limit", "default")
        seen = self.counts.get(eager, 0)
        self.counts[eager] = seen + 1
        noise = 1 + random.Random(f"{eager}:{seen}").uniform(-.1, .1)
        rate = {"default": 100.0, "8192": 101.0, "65536": 300.0}[eager] * noise
        return {"rate": rate, "rate_unit": "x", "verified": True, "problem": "p"}


def test_repeat_auto_measures_a_configuration_until_it_is_separated_from_the_best_so_far(tmp_path: Path):
    space = parse_space({"layout": {"ranks": [1], "default": {"ranks": 1}},
                         "mpi": {"btl_vader_eager_limit": {"values": [8192, 65536]}}}, CVARS)
    params = tune_params("rb3d", ("--size", "8"), "exhaustive", 3, repeat=3, auto=True, max_repeat=7, seed=5,
                         min_time=0.0)
    assert TuneParams.from_dict(json.loads(json.dumps(params.as_dict()))) == params
    with Store.open(tmp_path / "t.db") as store:
        machine = store.ensure_machine("h", "t", "Open MPI 4.1.4", "c", {})
        tune, _ = open_tune(store, machine, params, space, False)
        run_tune(store, machine, tune, space, Console(file=io.StringIO()), NoisyEagerLauncher())
        runs = {m.config.params().get("btl_vader_eager_limit", "default"): m.runs
                for m in tune_results(store, tune.id)}
        notes = {SweepParams.from_dict(s.params).mpi_params: s.note for s in store.tune_sweeps(tune.id)}
    # The default has nothing to be separated from: the rounds a separation needs (4); 8192 stays in its noise to the
    # budget; 65536 is clear as soon as a separation may be claimed (4 rounds).
    assert runs == {"default": 4, "8192": 7, "65536": 4}, runs
    assert notes[(("btl_vader_eager_limit", "8192"),)].startswith("--repeat auto: budget of 7 round(s) spent")
    assert "separated from the runner-up after 4 round(s)" in notes[(("btl_vader_eager_limit", "65536"),)]


def test_tune_run_takes_repeat_auto_as_the_sweep_does(tmp_path: Path, fake_launcher, monkeypatch, capsys):
    env, marker = fake_launcher
    (tmp_path / "space.toml").write_text(SMALL)
    lines = []
    for command in (["tune", "run", "rb3d", "--space", str(tmp_path / "space.toml"), "--cvars", str(FIXTURE)],
                    ["sweep", "rb3d", "--dry-run"]):
        assert _cli(monkeypatch, env, *command, "--db", str(tmp_path / "t.db"), "--repeat", "auto", "--max-repeat",
                    "2") == 2
        lines.append(capsys.readouterr().err.strip())
    assert lines[0] == lines[1] == ("hympi: error: --max-repeat must be >= 4 (the rounds --repeat auto always runs), "
                                    "got 2")
    assert not marker.exists() and not (tmp_path / "t.db").exists()


def test_a_real_tune_of_rb3d_under_mpirun(tmp_path: Path):
    (tmp_path / "space.toml").write_text(SMALL)
    db = tmp_path / "t.db"
    proc = hympi("tune", "run", "rb3d", "--space", str(tmp_path / "space.toml"), "--cvars", str(FIXTURE),
                 "--repeat", "1", "--min-time", "0", "--seed", "1", "--db", str(db), "--", "--size", "8",
                 env={"COLUMNS": "200"}, timeout=240)
    assert proc.returncode == 0, proc.stderr
    assert "measured 5 of 5 configurations" in proc.stdout and "no confidence interval" in proc.stdout
    with Store.open(db, create=False) as store:
        results = tune_results(store, store.tunes()[0].id)
        assert len(results) == 5 and all(m.status == "ok" and m.score for m in results)
        runs = store.runs()
        tuned = [r for r in runs if r.mpi_params]
        assert len(tuned) == 8 and all("-x" in r.command and any(a.startswith("OMPI_MCA_btl_vader_eager_limit=")
                                                                 for a in r.command) for r in tuned)
    best = hympi("tune", "best", "--db", str(db), "--format", "flags")
    assert best.returncode == 0 and best.stdout.startswith("hympi run rb3d -n ")
    args = best.stdout.split()[2:]
    split = args.index("--")
    # The printed command runs as printed (its MPI parameters, where the best has any, checked against the fixture's
    # cvars, not hympi-mpit's: --cvars alone is refused).
    listing = ["--cvars", str(FIXTURE)] if "--mpi-param" in args[:split] else []
    again = hympi("run", *args[:split], *listing, "--json", *args[split:])
    assert again.returncode == 0, again.stderr


def _needs_mpit() -> None:
    """Skips where hympi-mpit is not built (fails under CI); the contract declares mpit_read since the MPI_T work."""
    try:
        binary("hympi-mpit")
    except HympiFatal:
        skips.skip(skips.Reason.NOT_BUILT, "hympi-mpit")


def test_the_installed_library_lists_its_cvars_and_the_app_reads_them_back(tmp_path: Path):
    _needs_mpit()
    listing = read_listing(120.0)
    eager = listing.cvars["btl_vader_eager_limit"]
    assert eager.kind == "integer" and eager.canonical(eager.value or "") == eager.value
    assert listing.cvars["coll_tuned_use_dynamic_rules"].kind == "bool"
    proc = hympi("run", "rb3d", "-n", "2", "--mpi-param", "btl_vader_eager_limit=8192", "--json", "--",
                 "--size", "8")
    assert proc.returncode == 0, proc.stderr
    record = json.loads(proc.stdout.strip().splitlines()[-1])
    assert record["mpi_cvars"] == {"btl_vader_eager_limit": "8192"}
    assert "ignored" not in proc.stderr


# --- tune best --format mca|mpich: only what the target library declares ------------------------------------------
def _best(tmp_path: Path) -> BestConfiguration:
    """The best configuration of a tune on Open MPI 4.1.4: 2 ranks, bind core, btl_vader_eager_limit 8192."""
    _tune(tmp_path / "t.db", FakeLauncher(), False)
    with Store.open(tmp_path / "t.db") as store:
        return best_of_tune(store, None)


def _on_mpich(found: BestConfiguration, params: tuple[tuple[str, str], ...]) -> BestConfiguration:
    """`found` as if the tune had run on MPICH and found `params` best."""
    config = dataclasses.replace(found.best.config, mpi_params=params)
    return dataclasses.replace(found, mpi_library="MPICH Version: 4.0.2", best=dataclasses.replace(found.best,
                                                                                                   config=config))


def test_tune_best_writes_for_another_library_only_what_it_declares(tmp_path: Path):
    found = _best(tmp_path)
    asked: list[str] = []

    def mpich_knows(*names: str):  # a stand-in for mpivars' listing, recording which library was asked
        def lookup(flavor: str) -> frozenset[str]:
            asked.append(flavor)
            return frozenset(names)
        return lookup

    with pytest.raises(UsageError) as refused:
        render(found, "mpich", mpich_knows("MPIR_CVAR_ASYNC_PROGRESS"))
    assert str(refused.value) == ("MPICH does not declare MPIR_CVAR_BTL_VADER_EAGER_LIMIT (parameters of Open MPI "
                                  f"4.1.4, tune {found.tune.id}): nothing written")
    # A name the target does declare is written under its own spelling (the check filters, it does not refuse all).
    text = render(found, "mpich", mpich_knows("MPIR_CVAR_BTL_VADER_EAGER_LIMIT"))
    assert "export MPIR_CVAR_BTL_VADER_EAGER_LIMIT=8192" in text.splitlines()
    assert asked == ["mpich", "mpich"]
    # The tune's own library was checked when the tune ran: its format asks nothing and writes every parameter.
    assert "btl_vader_eager_limit = 8192" in render(found, "mca", mpich_knows()).splitlines()
    assert render(found, "flags", mpich_knows()).startswith("hympi run rb3d")
    assert asked == ["mpich", "mpich"]
    # No listing of the target at all (its tool missing) refuses every parameter rather than guess.
    with pytest.raises(UsageError, match=r"^cannot write btl_vader_eager_limit for MPICH: .*mpivars"):
        render(found, "mpich", lambda flavor: None)
    # The other direction: an MPICH tune's variables are no Open MPI MCA parameters.
    mpich_found = _on_mpich(found, (("MPIR_CVAR_ASYNC_PROGRESS", "1"),))
    assert "export MPIR_CVAR_ASYNC_PROGRESS=1" in render(mpich_found, "mpich", mpich_knows()).splitlines()
    with pytest.raises(UsageError, match=r"^Open MPI does not declare MPIR_CVAR_ASYNC_PROGRESS "):
        render(mpich_found, "mca", lambda flavor: frozenset({"btl_vader_eager_limit"}))


def test_the_listing_tools_outputs_are_parsed():
    mpivars = ("3 MPI Control Variables\n"
               "\tMPIR_CVAR_BCAST_MIN_PROCS       =8\tSCOPE_ALL_EQ\tNo-object\tMPI_INT\tVERBOSITY_USER_BASIC\tLet's\n"
               "\tMPIR_CVAR_ASYNC_PROGRESS=0\tSCOPE_ALL_EQ\tNo-object\tMPI_INT\tVERBOSITY_USER_BASIC\tIf set\n"
               "\tMPIR_CVAR_CH3_NOLOCAL=0\tSCOPE_ALL_EQ\tNo-object\tMPI_INT\tVERBOSITY_USER_BASIC\tx\n\n"
               "1 MPI Performance Variables\n\tMPIR_CVAR_NOT_A_CVAR=0\tpvar\n")
    assert parse_mpivars(mpivars) == {"MPIR_CVAR_BCAST_MIN_PROCS", "MPIR_CVAR_ASYNC_PROGRESS",
                                      "MPIR_CVAR_CH3_NOLOCAL"}
    ompi = ("mca:btl:vader:param:btl_vader_eager_limit:value:4096\n"
            "mca:btl:vader:param:btl_vader_eager_limit:source:default\n"
            "mca:coll:tuned:param:coll_tuned_use_dynamic_rules:value:false\nompi:version:full:4.1.4\n")
    assert parse_ompi_info(ompi) == {"btl_vader_eager_limit", "coll_tuned_use_dynamic_rules"}


@skips.needs(skips.Reason.MPICH, shutil.which("mpivars") is not None, "MPICH's mpivars is not installed")
def test_tune_best_format_mpich_refuses_open_mpi_parameters_against_the_installed_mpich(tmp_path: Path):
    declared = declared_names("mpich")
    assert declared is not None and "MPIR_CVAR_ASYNC_PROGRESS" in declared  # a variable every MPICH 3/4 has
    assert "MPIR_CVAR_BTL_VADER_EAGER_LIMIT" not in declared
    _tune(tmp_path / "t.db", FakeLauncher(), False)
    proc = hympi("tune", "best", "--db", str(tmp_path / "t.db"), "--format", "mpich")
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr.strip().splitlines() == [
        "hympi: error: MPICH does not declare MPIR_CVAR_BTL_VADER_EAGER_LIMIT (parameters of Open MPI 4.1.4, tune 1):"
        " nothing written"]
    native = hympi("tune", "best", "--db", str(tmp_path / "t.db"))  # the tune's own library: written as before
    assert native.returncode == 0 and "btl_vader_eager_limit = 8192" in native.stdout.splitlines()


def test_tune_run_checks_that_the_machine_is_quiet_first_as_a_sweep_does(tmp_path: Path, fake_launcher, monkeypatch,
                                                                          capsys):
    env, marker = fake_launcher
    (tmp_path / "space.toml").write_text(SMALL)
    checks: list[tuple[float, float]] = []

    def busy_machine(threshold: float, wait_s: float, short: bool, say) -> Load:  # type: ignore[no-untyped-def]
        checks.append((threshold, wait_s))
        return quiet_start(threshold, 0.0, short, say, measure=lambda _: Load(1.9, (("cc1plus", 1.9),)))

    def run_tune_stub(*_: object) -> None:  # where the tune would launch its first configuration
        raise UsageError("measuring now")

    monkeypatch.setattr("hympi.cli.tune.quiet_start", busy_machine)
    monkeypatch.setattr("hympi.cli.tune.run_tune", run_tune_stub)
    command = ["tune", "run", "rb3d", "--space", str(tmp_path / "space.toml"), "--cvars", str(FIXTURE), "--db",
               str(tmp_path / "t.db"), "--disturbed-above", "0.5"]
    assert _cli(monkeypatch, {**env, "HYMPI_IGNORE_LOAD": "0", "COLUMNS": "300"}, *command, "--wait-quiet", "30") == 2
    assert checks == [(0.5, 30.0)]
    out, err = capsys.readouterr()
    assert ("hympi: the machine is busy: 1.90 cores used by other processes (cc1plus 1.90); measuring anyway, a run "
            "beside other work marked disturbed (--wait-quiet S waits for it; --ignore-load skips this check)") in out \
        and "measuring now" in err
    assert _cli(monkeypatch, {**env, "HYMPI_IGNORE_LOAD": "0"}, *command, "--ignore-load") == 2
    assert checks == [(0.5, 30.0)] and "measuring now" in capsys.readouterr().err  # measured without asking again
    marker.unlink(missing_ok=True)  # the launcher was asked for the library's version
    assert _cli(monkeypatch, env, *command, "--wait-quiet", "-1") == 2
    assert "--wait-quiet must be" in capsys.readouterr().err and not marker.exists()
