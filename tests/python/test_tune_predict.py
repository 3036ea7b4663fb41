"""The predictor across programs: features from a profile, leave-one-program-out on a learnable synthetic set,
and the CLI's refusals."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

import tunedata
from conftest import DISTURBED_ABOVE, hympi
from fakeapps import REPO, fake_bin_dir, launches
from fakebusy import samplers
from hympi.errors import HympiError
from hympi.launch.cvars import CvarListing
from hympi.profile import SIZE_BINS, read_profile
from hympi.store import Store
from hympi.topology import MachineSummary
from hympi.tune.features import (
    BUSY_PROFILE_NAME,
    FEATURE_NAMES,
    StaticFeatures,
    busy_profile_text,
    call_group,
    feature_vector,
    program_features,
    thread_check,
    thread_limit,
)
from hympi.tune.predict import (
    BEAT_MARGIN,
    Candidate,
    ProgramData,
    constant_pick,
    cross_validate,
    evaluate,
    mean_ratio,
    predict_best,
    stored_space,
    train,
    training_set,
    tuned_programs,
    within_thread_limit,
)
from hympi.tune.programs import thread_check_layout
from hympi.tune.space import Configuration, SearchSpace, parse_space

MACHINE = MachineSummary(packages=2, numa_nodes=4, cores=16, pus=32, caches=(), hash="h", raw="{}")
CVARS = str(tunedata.CVARS_JSON)


@pytest.fixture(scope="module")
def tuned_db(tmp_path_factory) -> Path:
    """Six programs, each with an exhaustive tune and a stored profile (built once: it takes seconds)."""
    path = tmp_path_factory.mktemp("tuned") / "t.db"
    tunedata.tuned_store(path).close()
    return path


@pytest.fixture
def space_file(tmp_path) -> Path:
    """The synthetic space as a TOML file."""
    path = tmp_path / "space.toml"
    path.write_text(tunedata.SPACE_TOML)
    return path


def _profile(tmp_path: Path, histograms: dict[str, list[int]], wall: list[float], mpi: list[float]) -> Path:
    """A profile JSON file as libhympi-profile writes it (2 ranks)."""
    data = {"format": "hympi-profile", "ranks": 2, "bytes": [[0, 1], [1, 0]], "messages": [[0, 1], [1, 0]],
            "collectives": {}, "mpi_library": "test", "size_bins": list(SIZE_BINS),
            "histograms": histograms, "mpi_time_s": mpi, "wall_time_s": wall}
    path = tmp_path / "profile.json"
    path.write_text(json.dumps(data))
    return path


def test_features_are_shares_and_rates_in_the_documented_order(tmp_path):
    path = _profile(tmp_path, {"p2p": [10, 0, 30, 40, 0, 20, 0],  # small 40, medium 40, large 20
                               "MPI_Alltoallv": [0, 0, 0, 0, 0, 3, 1],  # all large
                               "MPI_Ialltoall": [0, 0, 0, 0, 4, 0, 0],  # medium: the non-blocking twin counts too
                               "MPI_Allreduce": [8, 0, 0, 0, 0, 0, 0], "MPI_Barrier": [2, 0, 0, 0, 0, 0, 0],
                               "MPI_Gatherv": [0, 1, 0, 1, 0, 0, 0], "MPI_Comm_split": [5, 0, 0, 0, 0, 0, 0]},
                    wall=[2.0, 2.0], mpi=[0.5, 1.5])
    got = program_features(read_profile(path), StaticFeatures(ranks=2, threads=3, nodes=2, machine=MACHINE))
    assert list(got) == list(FEATURE_NAMES)
    assert got["mpi_share"] == pytest.approx(0.5)
    assert (got["p2p_small"], got["p2p_medium"], got["p2p_large"]) == pytest.approx((0.4, 0.4, 0.2))
    assert (got["alltoall_small"], got["alltoall_medium"], got["alltoall_large"]) == pytest.approx((0, 0.5, 0.5))
    assert got["bcast_small"] == pytest.approx(0.5) and got["bcast_medium"] == pytest.approx(0.5)
    assert got["reduce_small"] == 1.0 and got["barrier_small"] == 1.0
    # 100 p2p events over 2 ranks x 2 s; 8 alltoall events -> 2 per rank per second
    assert got["p2p_log_rate"] == pytest.approx(math.log10(26.0))
    assert got["alltoall_log_rate"] == pytest.approx(math.log10(3.0))
    assert got["reduce_log_rate"] == pytest.approx(math.log10(3.0))
    assert (got["ranks"], got["ranks_per_node"], got["threads"]) == (2.0, 1.0, 3.0)
    assert (got["cores"], got["numa_nodes"], got["packages"]) == (16.0, 4.0, 2.0)
    assert call_group("MPI_Comm_split") is None and call_group("MPI_Reduce_scatter_block") == "reduce"


def test_features_refuse_a_profile_without_wall_time(tmp_path):
    path = _profile(tmp_path, {"p2p": [1, 0, 0, 0, 0, 0, 0]}, wall=[0.0, 0.0], mpi=[0.0, 0.0])
    with pytest.raises(HympiError, match="no wall time"):
        program_features(read_profile(path), StaticFeatures(2, 1, 1, MACHINE))


def no_library() -> CvarListing:
    """A cvar source that fails: tunes carry their parameters' cvars, so nothing may ask the MPI library."""
    raise AssertionError("the space was rebuilt from the MPI library instead of the cvars the tune stored")


def test_leave_one_program_out_learns_the_rule_and_beats_the_constant_pick(tuned_db):
    with Store.open(tuned_db) as store:
        verdicts, notes = evaluate(store, no_library)
        data, _ = training_set(store, tuned_programs(store, no_library))
    assert notes == [] and [v.program for v in verdicts] == sorted(p for p, _, _ in tunedata.PROGRAMS)
    by_name = {v.program: v for v in verdicts}
    for program, large, other in tunedata.PROGRAMS:
        v = by_name[program]
        best = max(tunedata.rule(large, other, c) for c in tunedata.space().configurations())
        assert v.best_speedup == pytest.approx(math.exp(best - tunedata.rule(large, other, tunedata.space().default)),
                                               rel=0.01)
        assert v.measured is not None and v.ratio == pytest.approx(v.measured / v.best_speedup)
    # The constant pick (best on average) is right for one side of the rule only; the network reads the feature.
    assert mean_ratio(verdicts) >= 0.95
    assert mean_ratio(verdicts, baseline=True) < 0.8
    # A network that does not see the features can do no better than the constant: they carry the answer.
    blind = [replace(p, features=tuple(0.0 for _ in p.features)) for p in data]
    verdicts, _ = cross_validate(blind)
    assert mean_ratio(verdicts) < 0.85


def test_predict_best_and_failed_configurations(tmp_path):
    store = tunedata.tuned_store(tmp_path / "t.db", tunedata.PROGRAMS[:4])
    machine = store.machine(1)
    space = tunedata.space()
    doomed = next(c for c in space.configurations() if c.params().get("btl_vader_eager_limit") == "65536")
    tunedata.add_tune(store, machine.id, "big --n 1", "exhaustive", list(space.configurations()),
                      lambda c: tunedata.rule(0.95, 0.5, c), failed=(doomed,))
    store.add_profile(machine.id, "big --n 1", "big", 4, 1, tunedata.features(0.95, 0.5), {})
    data, _ = training_set(store, tuned_programs(store, tunedata.listing))
    big = next(p for p in data if p.program == "big --n 1")
    assert big.speedup(doomed.key()) == 0.0
    targets = {c.key: t for c, t in big.rows()}
    assert targets[doomed.key()] < min(t for k, t in targets.items() if k != doomed.key())
    predictor = train(data)
    config, speedup = predict_best(predictor, tunedata.features(0.9, 0.5), space)
    assert config.params().get("btl_vader_eager_limit") == "65536"  # large messages: the high eager limit ...
    assert speedup > 1.2
    config, _ = predict_best(predictor, tunedata.features(0.1, 0.5), space)
    assert config.params().get("btl_vader_eager_limit") == "1024"  # ... small ones: the low one


def test_evaluate_and_predict_on_the_command_line(tuned_db, space_file, tmp_path):
    db = Path(shutil.copy(tuned_db, tmp_path / "t.db"))
    # rb3d profiled again: now its thread check saw one of two threads compute, beside 0.9 cores of other work;
    # spmv3d beside 0.5, which the limit below lets pass.
    with Store.open(db) as store:
        store.add_profile(1, "rb3d --size 32", "rb3d", 4, 1,
                          {**tunedata.features(0.8, 0.7, working_threads=1), BUSY_PROFILE_NAME: 0.9}, {})
        store.add_profile(1, "spmv3d --size 32", "spmv3d", 4, 1,
                          {**tunedata.features(0.95, 0.4), BUSY_PROFILE_NAME: 0.5}, {})
    limited = ("picked among the configurations of at most 1 thread per rank: it computed with no more when its "
               "thread check gave it more (the probe), and at its MPI share fewer computing ranks cannot be faster")
    proc = hympi("tune", "evaluate", "--db", str(db), "--cvars", CVARS, "--no-profile", "--disturbed-above", "0.6")
    assert proc.returncode == 0, proc.stderr
    assert "spmv3d --size 32" in proc.stdout and "baseline ratio" in proc.stdout
    assert proc.stdout.count("profiled beside other work") == 1
    assert "rb3d --size 32: profiled beside other work (0.90 cores of it" in proc.stdout
    mean = float(proc.stdout.split("mean ratio predicted/best: ")[1].split()[0])
    assert mean >= 0.95
    assert proc.stdout.count(limited) == 1 and f"rb3d --size 32: {limited}" in proc.stdout
    # The program's own tune is left out of training; its stored profile is reused, so nothing is launched. Its
    # space has one thread per rank only: the limit leaves every configuration in, and is said under the pick.
    proc = hympi("tune", "predict", "rb3d", "--space", str(space_file), "--db", str(db), "--cvars", CVARS,
                 "--", "--size", "32")
    assert proc.returncode == 0, proc.stderr
    assert "program: rb3d --size 32 (its stored profile" in proc.stdout
    assert "trained on 5 programs (60 measured configurations)" in proc.stdout
    assert "btl_vader_eager_limit=65536" in proc.stdout.split("predicted best: ")[1].splitlines()[0]
    assert "hympi run rb3d -n " in proc.stdout and "btl_vader_eager_limit = 65536" in proc.stdout
    lines = proc.stdout.splitlines()
    after = lines.index(next(line for line in lines if line.startswith("predicted best: "))) + 1
    assert lines[after] == f"({limited})"


def _self_check_figures(db: Path, program: str) -> tuple[float, float]:
    """The leave-one-out mean ratios (network, constant pick) over the programs `predict PROGRAM` trains on."""
    with Store.open(db) as store:
        data, _ = training_set(store, [t for t in tuned_programs(store, no_library) if t.program != program])
    verdicts, _ = cross_validate(data)
    mean, constant = mean_ratio(verdicts), mean_ratio(verdicts, baseline=True)
    assert mean is not None and constant is not None
    return mean, constant


def _printed_figures(stdout: str) -> tuple[float, float]:
    """The two mean ratios of predict's self-check line."""
    found = re.search(r"predictor ([0-9.]+), constant pick ([0-9.]+)", stdout)
    assert found, stdout
    return float(found[1]), float(found[2])


def _eager(config: Configuration) -> float:
    """-1 for the low eager limit, +1 for the high one, 0 unset."""
    return {"1024": -1.0, "65536": 1.0}.get(config.params().get("btl_vader_eager_limit", ""), 0.0)


def test_predict_recommends_the_constant_pick_where_the_network_does_not_beat_it(tmp_path, space_file):
    # Pairs of programs with near-identical profiles want opposite eager limits, so the profile cannot tell them
    # apart: held out, each is predicted from its twin's landscape. The library's default eager limit is second
    # best for both (and 2 ranks a little faster everywhere): the constant pick, 2x1 with the defaults, is within
    # 5 % of every program's best.
    db = tmp_path / "twins.db"
    twins = ("is --class S", "is --class W", "lu-mz --class S", "bt-mz --class S", "rb3d --size 32",
             "spmv3d --size 32", "rb3d --size 64")
    with Store.open(db) as store:
        machine = store.ensure_machine("host", "t", "Open MPI 4.1.4", "gcc", dict(tunedata.SUMMARY))
        for i, program in enumerate(twins):
            sign = 1.0 if i % 2 == 0 else -1.0
            large = (0.1, 0.1, 0.5, 0.5, 0.9, 0.9, 0.3)[i] + 0.02 * (i % 2)
            tunedata.add_tune(store, machine.id, program, "exhaustive", list(tunedata.space().configurations()),
                              lambda c, s=sign: 0.3 * s * _eager(c) + 0.25 * (_eager(c) == 0) + 0.05 * (c.ranks == 2))
            store.add_profile(machine.id, program, program.split()[0], 4, 1, tunedata.features(large, 0.5), {})
    proc = hympi("tune", "predict", "rb3d", "--space", str(space_file), "--db", str(db), "--cvars", CVARS, "--",
                 "--size", "64")
    assert proc.returncode == 0, proc.stderr
    mean, constant = _self_check_figures(db, "rb3d --size 64")
    assert mean < constant  # the network does lose here, it does not merely tie
    assert _printed_figures(proc.stdout) == (round(mean, 3), round(constant, 3))
    assert (f"the predictor does not beat the constant pick by {BEAT_MARGIN:g} (mean ratio to the best measured, "
            "leaving one of 6 training programs out") in proc.stdout
    assert "constant pick (best on average over the training programs): 2x1 core (MPI defaults)" in proc.stdout
    assert "recommended: 2x1 core (MPI defaults) (the constant pick)" in proc.stdout
    run_line = proc.stdout.split("run it: ")[1].splitlines()[0]
    assert " -n 2 " in run_line and "--mpi-param" not in run_line
    assert "# (every parameter at the library's default: set nothing)" in proc.stdout
    assert "btl_vader_eager_limit = " not in proc.stdout


def test_predict_recommends_its_prediction_where_the_network_wins(tuned_db, space_file):
    proc = hympi("tune", "predict", "rb3d", "--space", str(space_file), "--db", str(tuned_db), "--cvars", CVARS,
                 "--", "--size", "32")
    assert proc.returncode == 0, proc.stderr
    mean, constant = _self_check_figures(tuned_db, "rb3d --size 32")
    assert mean - constant >= BEAT_MARGIN
    assert _printed_figures(proc.stdout) == (round(mean, 3), round(constant, 3))
    assert "self-check: the predictor beats the constant pick (" in proc.stdout
    predicted = proc.stdout.split("predicted best: ")[1].splitlines()[0]
    assert f"recommended: {predicted} (the prediction)" in proc.stdout
    assert "btl_vader_eager_limit=65536" in predicted and "btl_vader_eager_limit = 65536" in proc.stdout
    assert "picked among the configurations" not in proc.stdout  # its thread check saw both threads compute


def test_predict_with_too_few_training_programs_to_check_still_predicts(tmp_path, space_file):
    db = tmp_path / "three.db"
    tunedata.tuned_store(db, tunedata.PROGRAMS[:3]).close()
    proc = hympi("tune", "predict", "is", "--space", str(space_file), "--db", str(db), "--cvars", CVARS, "--",
                 "--class", "S")
    assert proc.returncode == 0, proc.stderr
    assert ("self-check: not made (leaving one out needs 3 training programs, 2 here): the prediction is unchecked"
            in proc.stdout)
    predicted = proc.stdout.split("predicted best: ")[1].splitlines()[0]
    assert f"recommended: {predicted} (the prediction)" in proc.stdout


def test_a_tuned_program_of_your_own_is_profiled_by_its_path(tmp_path):
    from hympi.program import program_of
    from hympi.sweep import program_fields
    from hympi.tune.programs import profile_launches, program_text

    (tmp_path / "in.txt").write_text("input\n")
    program = program_of(shutil.which("true") or "/bin/true", {"env": ("GREETING=hello world",),
                                                               "stdin": str(tmp_path / "in.txt")})
    assert program_text(program.path, ("--size", "8")) == f"{program.name} --size 8"  # as its tune names it
    fields = program_fields(program)
    store = tunedata.tuned_store(tmp_path / "t.db", tunedata.PROGRAMS[:1])
    tunedata.add_tune(store, 1, f"{fields['app']} --size 8", "exhaustive", list(tunedata.space().configurations()),
                      lambda c: 0.0, subject=tuple(sorted(fields.items())))
    tuned = {t.program: t for t in tuned_programs(store, no_library)}
    store.close()
    own = tuned[f"{program.name} --size 8"]
    assert (own.app, own.command) == (program.name, program.path)
    assert tuned[tunedata.PROGRAMS[0][0]].command == "is"  # an app is launched by its name
    # Profiled by its path at the space's default layout (its name is no app: looked up as one, it was refused).
    launches = profile_launches(own.command, own.app_args, own.space, MACHINE, own.subject)
    assert (launches.profile.app_binary, launches.profile.app_args, launches.profile.ranks) == (
        program.path, ("--size", "8"), 4)
    assert launches.profile.app_env()["GREETING"] == "hello world"  # its --env, as its tune's runs had it
    assert launches.stdin == tmp_path / "in.txt"  # and its --stdin
    assert profile_launches("is", (), own.space, MACHINE).stdin == subprocess.DEVNULL  # an app's: nothing
    assert launches.thread_check is None  # the space has one thread per rank only: nothing to check


def test_evaluate_leaves_out_a_program_whose_profiling_fails_and_evaluates_the_others(tuned_db, tmp_path):
    from hympi.program import program_of
    from hympi.sweep import program_fields

    db = Path(shutil.copy(tuned_db, tmp_path / "t.db"))
    fields = program_fields(program_of(shutil.which("true") or "/bin/true", {}))  # no MPI: writes no profile
    with Store.open(db) as store:
        tunedata.add_tune(store, 1, f"{fields['app']} --size 8", "exhaustive",
                          list(tunedata.space().configurations()), lambda c: 0.0, subject=tuple(sorted(fields.items())))
    proc = hympi("tune", "evaluate", "--db", str(db), "--cvars", CVARS)
    assert proc.returncode == 0, proc.stderr
    assert "hympi: profiling true --size 8 failed (" in proc.stderr and "no profile written" in proc.stderr
    assert "true --size 8 left out" in proc.stderr
    assert "left out: true --size 8: no stored profile, left out" in proc.stdout
    assert all(p in proc.stdout for p, _, _ in tunedata.PROGRAMS)  # the others evaluated


def test_cli_refuses_too_few_programs_and_unknown_programs(tmp_path, space_file, fake_launcher):
    env, marker = fake_launcher
    db = tmp_path / "few.db"
    tunedata.tuned_store(db, tunedata.PROGRAMS[:2]).close()
    proc = hympi("tune", "predict", "nosuchapp", "--space", str(space_file), "--db", str(db), "--cvars", CVARS,
                 env=env)
    assert proc.returncode == 2 and "unknown app 'nosuchapp'" in proc.stderr and proc.stderr.count("\n") == 1
    proc = hympi("tune", "evaluate", "--db", str(db), "--cvars", CVARS, env=env)
    assert proc.returncode == 2 and "at least 3 programs" in proc.stderr and "found 2" in proc.stderr
    db1 = tmp_path / "one.db"
    tunedata.tuned_store(db1, tunedata.PROGRAMS[:1]).close()
    proc = hympi("tune", "predict", "--space", str(space_file), "--db", str(db1), "--cvars", CVARS, "--", "rb3d",
                 "--size", "16", env=env)
    assert proc.returncode == 2 and "at least 2 other programs" in proc.stderr and "found 1" in proc.stderr
    proc = hympi("tune", "predict", "rb3d", "--env", "A=1", "--space", str(space_file), "--db", str(db),
                 "--cvars", CVARS, env=env)
    assert proc.returncode == 2 and "--env is for a program of your own" in proc.stderr, proc.stderr
    proc = hympi("tune", "predict", "/bin/true", "--env", "OMP_NUM_THREADS=2", "--space", str(space_file), "--db",
                 str(db), "--cvars", CVARS, env=env)
    assert proc.returncode == 2 and "--env OMP_NUM_THREADS: hympi sets it" in proc.stderr, proc.stderr
    assert not marker.exists()


def test_predict_profiles_an_unseen_program_once_and_reuses_its_profile(tuned_db, tmp_path, space_file):
    env = fake_bin_dir(tmp_path)
    # The real profiler is preloaded but idle (the fake app calls no MPI); the fake app writes the profile itself.
    env["HYMPI_PROFILE_LIB"] = str(Path(os.environ.get("HYMPI_BIN_DIR") or REPO / "build" / "bin").parent / "lib"
                                   / "libhympi-profile.so")
    db = Path(shutil.copy(tuned_db, tmp_path / "t.db"))
    args = ("tune", "predict", "rb3d", "--space", str(space_file), "--db", str(db), "--cvars", CVARS, "--",
            "--size", "8")
    first = hympi(*args, env=env)
    assert first.returncode == 0, first.stderr
    assert "program: rb3d --size 8 (profiled now, at 4x1 core (MPI defaults))" in first.stdout
    assert launches(env) == ["4x1"]
    with Store.open(db) as store:
        record = store.latest_profile("rb3d --size 8")
    assert record is not None and (record.ranks, record.threads) == (4, 1)
    assert record.features["alltoall_large"] == 1.0 and record.features["mpi_share"] == 0.25
    assert record.features["alltoall_log_rate"] == pytest.approx(math.log10(1 + 8 / 2.0))
    # Large all-to-all messages: the rule of the training programs says high eager limit.
    assert "btl_vader_eager_limit=65536" in first.stdout.split("predicted best: ")[1].splitlines()[0]
    second = hympi(*args, env=env)
    assert second.returncode == 0 and "(its stored profile, at 4x1 core" in second.stdout
    assert launches(env) == ["4x1"]  # not profiled again


def test_a_profile_beside_other_work_is_taken_again_and_the_least_disturbed_kept(tmp_path, monkeypatch):
    """What hympi.busy says of each profiled run is faked (test_busy measures the sampler itself): 1.5, 0.9, then
    1.2 cores of other work. Above --disturbed-above the profile is taken again, PROFILE_TRIES runs in all, the
    least disturbed kept and said to be disturbed; at a threshold above it one run is kept."""
    import hympi.tune.programs as programs
    from hympi.launch.mpirun import launcher_path
    from hympi.sweep import record_machine
    from hympi.topology import machine_summary

    readings = iter([1.5, 0.9, 1.2, 1.5])
    monkeypatch.setattr(programs, "Sampler", samplers(readings))
    runs = []
    real = programs.run_profile
    monkeypatch.setattr(programs, "run_profile",
                        lambda plan, timeout, stdin, **where: (runs.append(plan),
                                                               real(plan, timeout, stdin, **where))[1])
    summary = machine_summary()
    launch = programs.profile_spec("rb3d", ("--size", "12", "--iterations", "20"), Configuration(2, 1, "core"),
                                   summary)
    launches = programs.ProfileLaunches(profile=launch, thread_check=None)
    with Store.open(tmp_path / "p.db") as store:
        machine = record_machine(store, summary, launcher_path())
        kept = programs.profile_program(store, machine, summary, launches, "rb3d", 120, disturbed_above=0.25)
        assert len(runs) == programs.PROFILE_TRIES == 3 and kept.features[BUSY_PROFILE_NAME] == 0.9
        said = busy_profile_text(kept.program, kept.features[BUSY_PROFILE_NAME], 0.25)
        assert said is not None and said.startswith("rb3d --size 12 --iterations 20: profiled beside other work "
                                                    "(0.90 cores of it")
        again = programs.profile_program(store, machine, summary, launches, "rb3d", 120, disturbed_above=2.0,
                                         reuse=False)
    assert len(runs) == 4 and again.id != kept.id and again.features[BUSY_PROFILE_NAME] == 1.5
    assert busy_profile_text(again.program, again.features[BUSY_PROFILE_NAME], 2.0) is None


def test_a_real_program_is_profiled_once_into_features(tmp_path):
    from hympi.launch.mpirun import launcher_path
    from hympi.sweep import record_machine
    from hympi.topology import machine_summary
    from hympi.tune.programs import ProfileLaunches, profile_program, profile_spec

    summary = machine_summary()
    with Store.open(tmp_path / "p.db") as store:
        machine = record_machine(store, summary, launcher_path())
        launch = profile_spec("rb3d", ("--size", "12", "--iterations", "20"), Configuration(2, 1, "core"), summary)
        launches = ProfileLaunches(profile=launch, thread_check=None)
        record = profile_program(store, machine, summary, launches, "rb3d", timeout=120)
        again = profile_program(store, machine, summary, launches, "rb3d", timeout=120)
    assert again.id == record.id  # stored, not profiled twice
    f = record.features
    assert (record.program, record.ranks, f["ranks"], f["threads"], f["cores"]) == (
        "rb3d --size 12 --iterations 20", 2, 2.0, 1.0, float(summary.cores))
    assert 0.0 < f["mpi_share"] < 1.0  # the halo exchange and the residual's reduction take some of the time
    assert f["p2p_log_rate"] > 1.0 and f["reduce_log_rate"] > 0.0 and f["barrier_log_rate"] > 0.0
    assert f["p2p_small"] == 1.0  # a halo face of 12 x 12 doubles is 1152 B
    assert record.profile["format"] == "hympi-profile" and len(record.profile["wall_time_s"]) == 2


def _rb3d_script(directory: Path, check: str, rb3d_args: str) -> Path:
    """`directory`/solver, a program of the user's own: a shell script that runs the `check` lines, then hympi-rb3d
    with `rb3d_args`."""
    rb3d = Path(os.environ.get("HYMPI_BIN_DIR") or REPO / "build" / "bin") / "hympi-rb3d"
    solver = directory / "solver"
    solver.write_text(f"#!/bin/sh\n{check}\nexec {rb3d} {rb3d_args}\n")
    solver.chmod(0o755)
    return solver


def _two_core_space() -> SearchSpace:
    """Layouts up to 2 ranks x 2 threads on 2 cores, 2x1 the default: its thread check runs at 1x2."""
    return parse_space({"layout": {"ranks": [1, 2], "threads": [1, 2], "bind": ["core"],
                                   "default": {"ranks": 2, "threads": 1, "bind": "core"}},
                        "constraint": [{"max_cpus": 2}]}, {}, "")


def test_a_program_of_a_programs_file_is_profiled_where_its_tune_ran_it(tmp_path):
    # A programs file's program runs in the file's directory, where its inputs are (HPC Challenge reads
    # hpccinf.txt there); its profile and thread check once ran in hympi's own directory instead, and failed.
    from hympi.launch.mpirun import launcher_path
    from hympi.program import program_of
    from hympi.sweep import record_machine
    from hympi.topology import machine_summary
    from hympi.tune.programs import profile_launches, profile_program

    inputs = tmp_path / "inputs"
    inputs.mkdir()
    (inputs / "input.txt").write_text("12\n")
    solver = _rb3d_script(tmp_path, '[ -f input.txt ] || { echo "no input.txt in $PWD" >&2; exit 3; }',
                          '--size "$(cat input.txt)" "$@"')
    program = program_of(str(solver), workdir=str(inputs))
    summary = machine_summary()
    launches = profile_launches(program.path, ("--iterations", "20"), _two_core_space(), summary, program)
    assert launches.workdir == str(inputs) and launches.thread_check is not None
    with Store.open(tmp_path / "p.db") as store:
        machine = record_machine(store, summary, launcher_path())
        record = profile_program(store, machine, summary, launches, program.name, timeout=120)
    assert record.program == "solver --iterations 20" and record.features["checked_threads"] == 2.0


def test_a_program_whose_arguments_name_its_run_directory_is_profiled_with_one_per_launch(tmp_path):
    # `{run}` (a new directory of each launch's own) reached the profiled run and the thread check as typed.
    from hympi.launch.mpirun import launcher_path
    from hympi.program import RUN_DIRS, program_of
    from hympi.sweep import record_machine
    from hympi.topology import machine_summary
    from hympi.tune.programs import profile_launches, profile_program

    solver = _rb3d_script(tmp_path, '[ -d "$1" ] || { echo "no directory $1" >&2; exit 3; }\nshift',
                          '--size 12 "$@"')
    program = program_of(str(solver), workdir=str(tmp_path))
    space = _two_core_space()
    summary = machine_summary()
    launches = profile_launches(program.path, ("{run}", "--iterations", "20"), space, summary, program)
    with Store.open(tmp_path / "p.db") as store:
        machine = record_machine(store, summary, launcher_path())
        # Not profiled again for the tests running beside it: one launch each.
        record = profile_program(store, machine, summary, launches, program.name, timeout=120,
                                 disturbed_above=DISTURBED_ABOVE)
    assert record.program == "solver {run} --iterations 20" and record.features["checked_threads"] == 2.0
    made = sorted(path.name.rsplit("-", 1)[0] for path in (tmp_path / RUN_DIRS).iterdir())
    assert made == ["solver-1x2", "solver-2x1"], made  # the thread check's and the profiled run's
    # Keeping only the failed launches' directories, both ok launches' are removed once they have ended.
    launches = profile_launches(program.path, ("{run}", "--iterations", "20"), space, summary,
                                replace(program, keep_run_dirs="failed"))
    with Store.open(tmp_path / "p.db") as store:
        profile_program(store, record_machine(store, summary, launcher_path()), summary, launches, program.name,
                        timeout=120, disturbed_above=DISTURBED_ABOVE, reuse=False)
    assert len(list((tmp_path / RUN_DIRS).iterdir())) == 2
    # A failed profile says what the program said, not Open MPI's notice that a rank exited non-zero.
    launches = profile_launches(program.path, ("nowhere", "--iterations", "20"), space, summary, program)
    with Store.open(tmp_path / "p.db") as store, pytest.raises(HympiError) as failed:
        profile_program(store, record_machine(store, summary, launcher_path()), summary, launches, program.name,
                        timeout=120)
    assert str(failed.value).startswith("profiling solver nowhere --iterations 20 failed (failed, exit code 3, no "
                                        "profile written): no directory nowhere"), failed.value


def test_a_tune_recorded_without_cvars_rebuilds_its_space_from_the_library(tuned_db):
    with Store.open(tuned_db) as store:
        tune = store.tunes()[0]
        legacy = replace(tune, space={k: v for k, v in tune.space.items() if k != "cvars"})
        with pytest.raises(AssertionError, match="rebuilt from the MPI library"):
            stored_space(legacy, no_library)
        rebuilt = stored_space(legacy, tunedata.listing)
        assert rebuilt.configurations() == stored_space(tune, no_library).configurations()


def test_one_listing_source_asks_the_library_once_and_only_for_mpi_parameters(tuned_db, monkeypatch):
    # tune predict rebuilds its own space and every stored one from one source: a second space must not launch
    # hympi-mpit again, and a layout-only space must not launch it at all.
    import hympi.tune.space as space_module

    asked: list[str | None] = []
    monkeypatch.setattr(space_module, "load_listing", lambda path: (asked.append(path), tunedata.listing())[1])
    source = space_module.listing_source(None)
    layouts = {"layout": {"ranks": [1, 2], "threads": [1]}}
    assert len(space_module.library_space(layouts, source).configurations()) == 2 and asked == []
    with Store.open(tuned_db) as store:
        tune = store.tunes()[0]
        legacy = replace(tune, space={k: v for k, v in tune.space.items() if k != "cvars"})
        assert stored_space(legacy, source).configurations() == stored_space(tune, no_library).configurations()
        mine = space_module.library_space(tune.space["source"], source)
    assert mine.configurations() == tunedata.space().configurations() and asked == [None]


def test_the_report_recommends_nothing_from_an_interrupted_tune(tmp_path):
    from hympi.report.html import _honest
    from hympi.report.tuning import tuning_data

    store = tunedata.tuned_store(tmp_path / "t.db", tunedata.PROGRAMS[:1])
    configs = list(tunedata.space().configurations())
    cut = tunedata.add_tune(store, 1, "rb3d --size 8", "exhaustive", configs[:3], lambda c: 0.0)
    store.set_tune_status(cut, "interrupted")
    programs = {p.program: p for p in tuning_data(store)}
    store.close()
    assert _honest(programs["rb3d --size 8"]) == [
        f"rb3d --size 8: tune {cut} is interrupted after 3 of 12 configurations: no recommendation until it "
        "finishes (hympi tune run ... --resume)."]
    assert not any("interrupted" in line for line in _honest(programs[tunedata.PROGRAMS[0][0]]))


# Two layouts that fill two cores, as bench/tune/lopo-8.toml has them: two ranks, or one rank of two threads.
THREADED_SPACE = {"layout": {"ranks": [1, 2], "threads": [1, 2], "bind": ["core"],
                             "default": {"ranks": 2, "threads": 1, "bind": "core"}},
                  "constraint": [{"max_cpus": 2}, {"exclude": {"ranks": 1, "threads": 1}}]}


def test_the_thread_check_runs_at_the_space_s_widest_layout():
    space = parse_space(THREADED_SPACE, {})
    assert thread_check_layout(space) == Configuration(1, 2, "core")
    four = parse_space({**THREADED_SPACE, "layout": {**THREADED_SPACE["layout"], "ranks": [1, 2, 4],
                                                     "threads": [1, 2, 4]},
                        "constraint": [{"max_cpus": 4}]}, {})
    assert thread_check_layout(four) == Configuration(1, 4, "core")  # most threads, then fewest ranks
    assert thread_check_layout(tunedata.space()) is None  # one thread per rank everywhere
    assert thread_limit({"mpi_share": 0.2, **thread_check(2, 1)}) == 1
    assert thread_limit({"mpi_share": 0.2, **thread_check(4, 2)}) == 2
    assert thread_limit({"mpi_share": 0.2, **thread_check(2, 2)}) is None
    assert thread_limit({"mpi_share": 0.2, **thread_check(1, 1)}) is None
    # In MPI for half its time or more at one thread per rank, it may run faster on half the ranks with a core idle
    # each (one rank of HPC Challenge's HPL measured up to 1.72x two here, not separated): nothing is narrowed.
    assert thread_limit({"mpi_share": 0.5, **thread_check(2, 1)}) is None
    assert thread_limit({"mpi_share": 0.45, **thread_check(2, 1)}) == 1
    assert thread_limit({"mpi_share": 0.8, **thread_check(4, 1)}) is None
    assert thread_limit({"mpi_share": 0.7, **thread_check(4, 1)}) == 1  # 4 times the compute: (1 - 0.7) x 4 > 1
    with pytest.raises(HympiError, match="no process of it was seen"):
        thread_check(2, None)


def _threaded_program(name: str, space, rates: dict[int, float], features: dict[str, float]) -> ProgramData:
    """A program tuned over `space` whose rate depends on its threads per rank only (`rates`)."""
    candidates = tuple(Candidate(c.key(), c.label(), c.threads, tuple(space.encode(c)), rates[c.threads])
                       for c in space.configurations())
    return ProgramData(name, tuple(feature_vector(features)), tuple(space.feature_names()), space.default.key(),
                       candidates, thread_limit(features))


def test_a_program_that_leaves_its_threads_idle_is_picked_a_layout_it_computes_on():
    space = parse_space(THREADED_SPACE, {})
    # Four OpenMP programs run fastest as one rank of two threads; a program without OpenMP runs one rank of two
    # threads on one core, at half the rate of two ranks, and its profile looks like theirs.
    openmp = [_threaded_program(f"omp{i}", space, {1: 100.0, 2: 150.0}, tunedata.features(0.5, 0.1 * i))
              for i in range(4)]
    mpi_only = _threaded_program("mpi-only", space, {1: 100.0, 2: 50.0}, tunedata.features(0.5, 0.15, 1))
    assert mpi_only.thread_limit == 1 and [c.threads for c in mpi_only.choices()] == [1]
    verdicts = {v.program: v for v in cross_validate([*openmp, mpi_only])[0]}
    assert verdicts["mpi-only"].predicted.startswith("2x1") and verdicts["mpi-only"].ratio == 1.0
    assert verdicts["mpi-only"].thread_limit == 1
    # The constant pick (1x2, best for every other program) is made among the same configurations.
    assert verdicts["mpi-only"].baseline.startswith("2x1") and verdicts["mpi-only"].baseline_ratio == 1.0
    assert all(verdicts[p.program].thread_limit is None for p in openmp)
    # Without the thread check's limit the network credits it with the OpenMP programs' second core.
    blind = {v.program: v for v in cross_validate([*openmp, replace(mpi_only, thread_limit=None)])[0]}
    assert blind["mpi-only"].predicted.startswith("1x2") and blind["mpi-only"].ratio == 0.5
    assert blind["mpi-only"].baseline_ratio == 0.5
    predictor = train(openmp)
    assert predict_best(predictor, tunedata.features(0.5, 0.15, 1), space)[0] == Configuration(2, 1, "core")
    assert predict_best(predictor, tunedata.features(0.5, 0.15, 2), space)[0] == Configuration(1, 2, "core")
    assert constant_pick(openmp, space, 1) == Configuration(2, 1, "core")
    assert constant_pick(openmp, space) == Configuration(1, 2, "core")
    # A limit no candidate meets leaves every candidate in.
    assert within_thread_limit(openmp[0].candidates, 0) == openmp[0].candidates


def test_the_thread_check_tells_a_program_without_openmp_from_one_with_it(tmp_path, monkeypatch):
    from hympi.launch.mpirun import launcher_path
    from hympi.sweep import record_machine
    from hympi.topology import machine_summary
    from hympi.tune.programs import profile_launches, profile_program

    space = parse_space(THREADED_SPACE, {})
    summary = machine_summary()
    # IS creates its OpenMP threads and leaves them idle; timed for half a second (not the suite's single
    # repetition), its idle thread's spinning after the parallel start (13 ms at GCC's default wait policy, none at
    # the suite's passive one) stays under 5 % of what its main thread computes.
    monkeypatch.setenv("HYMPI_MIN_TIME", "0.5")
    with Store.open(tmp_path / "p.db") as store:
        machine = record_machine(store, summary, launcher_path())
        # rb3d's second thread works beside its main thread, IS's sleeps (OMP_WAIT_POLICY=passive) or spins.
        for app, args, working in (("rb3d", ("--size", "64", "--iterations", "40"), 2), ("is", ("--class", "S"), 1)):
            launches = profile_launches(app, args, space, summary)
            assert launches.thread_check is not None and (launches.thread_check.ranks,
                                                          launches.thread_check.threads) == (1, 2)
            record = profile_program(store, machine, summary, launches, app, timeout=120)
            assert (record.ranks, record.threads, record.features["checked_threads"]) == (2, 1, 2.0)
            # What the probe saw, not thread_limit's verdict: that also reads the MPI share, which a loaded machine
            # inflates (IS class S: 0.15 alone, 0.5-0.65 beside two busy loops: ranks wait for descheduled peers).
            assert record.features["working_threads"] == working, app
