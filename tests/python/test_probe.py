"""The probe (libhympi-profile with HYMPI_PROBE_DIR, hympi.probe): findings on recorded probe files of real runs
(tests/data/probe: the hybrid test program and Debian's LAMMPS, captured once under mpirun and mpiexec.mpich), and
live runs of programs hympi did not build."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import hympi
from hympi.launch.layout import LayoutSpec, ThreadPlace
from hympi.place.tree import load_node_tree
from hympi.probe import (
    ProbeProcess,
    ProbeThread,
    affinity_problems,
    figures,
    idle_threads,
    mpi_job_problem,
    probe_env,
    probe_record,
    read_probe,
    shared_pus,
    waiting_rank,
    working_threads,
)
from hympi.store import Store
from userprograms import early_thread_binary, farm, hybrid, hybrid_binary, lammps, launch, spawn_binary, spawning

RECORDED = Path(__file__).resolve().parents[2] / "tests" / "data" / "probe"


def test_a_bound_hybrid_run_shows_its_busy_threads_and_the_mpi_libraries_threads_are_left_out():
    (process,) = read_probe(RECORDED / "hybrid-1x2")
    assert process.world_size == 1 and process.rank == 0 and process.mpi_initialized
    assert [t.number for t in process.threads] == [0, 1]  # main + libgomp's; Open MPI's progress threads left out
    assert process.threads[0].bound == frozenset({0}) and process.threads[1].bound == frozenset({1})
    assert min(t.cpu_s for t in process.threads) > 0.5 * max(t.cpu_s for t in process.threads)
    assert idle_threads([process], 2) is None and shared_pus([process]) == []
    assert working_threads([process], 2) == 2 and probe_record([process], 1, 2)["probe"]["working_threads"] == 2
    assert mpi_job_problem([process], 1) is None
    places = LayoutSpec(1, 1, 2, "core").placements(load_node_tree("this"))
    assert affinity_problems([process], places) == [] or len(load_node_tree("this").cores) != 2


# What the probe finds of LAMMPS at 1x2 (Debian builds it without OpenMP); a program that sets its threads by an
# option of its own (IQ-TREE 2's -T) finds the same and is told how to give it each layout's.
LAMMPS_1X2_FINDING = ("each rank ran 1 of the 2 threads asked for (OMP_NUM_THREADS=2): this program does not use "
                      "OpenMP threads here (one whose option sets its threads, as IQ-TREE's -T, takes each layout's as "
                      "{threads} in its arguments)")


def test_lammps_without_openmp_threads_is_told_it_does_not_use_them():
    processes = read_probe(RECORDED / "lammps-1x2")
    assert idle_threads(processes, 2) == LAMMPS_1X2_FINDING
    assert idle_threads(processes, 1) is None  # one thread asked for, one ran
    assert working_threads(processes, 2) == 1 and probe_record(processes, 1, 2)["probe"]["working_threads"] == 1


def test_a_program_with_nested_teams_uses_its_threads_and_passes_the_affinity_check():
    """Elk (Debian's elk-lapw 8.4.30, its Al example) at 1x2 opens nested parallel regions: libgomp started 67
    OpenMP threads, of which one beside the main thread computed; the others, short-lived, did under 2 % each, 52
    ended before the sampler saw their binding, and the rest are bound in their parent's place. It computed on both
    cores: no idle-thread finding, no shared PU, and the affinity check passes (it said 'does not use OpenMP
    threads', listed 2 shared PUs and failed on dozens of threads 'not in the layout')."""
    (process,) = read_probe(RECORDED / "elk-1x2")
    assert len(process.threads) > 60
    assert working_threads([process], 2) == 2 and idle_threads([process], 2) is None
    assert shared_pus([process]) == [] and probe_record([process], 1, 2)["probe"]["findings"] == []
    places = [ThreadPlace(0, 0, 0, frozenset({0})), ThreadPlace(0, 0, 1, frozenset({1}))]
    assert affinity_problems([process], places) == []
    busy = max(process.threads[1:], key=lambda t: t.cpu_s)
    astray = dataclasses.replace(process, threads=tuple(
        dataclasses.replace(t, bound=frozenset({5}), used=frozenset({5})) if t is busy else t for t in process.threads))
    assert affinity_problems([astray], places) == [
        f"rank 0 thread {busy.number} (beyond the layout's threads): bound to 5, ran on 5, outside the rank's 0-1"]


def test_threads_idle_beside_working_ones_are_counted():
    """Of 4 threads asked for, each rank computed on 2: the finding says so rather than that OpenMP is unused."""
    threads = tuple(ProbeThread(number=n, cpu_s=cpu, bound=frozenset({n}), used=frozenset({n}))
                    for n, cpu in enumerate((1.0, 0.9, 0.01, 0.0)))
    process = ProbeProcess(host="h", pid=1, mpi_initialized=True, rank=0, world_size=1, wall_s=1.0, mpi_s=0.0,
                           max_rss_mib=1.0, threads=threads)
    assert idle_threads([process], 4) == ("threads 2, 3 of every rank used under 5 % of their rank's busiest thread's "
                                          "CPU time after MPI_Init: each rank computed on 2 of its 4 threads")
    assert idle_threads([process], 2) is None and working_threads([process], 4) == 2


def test_the_rank_that_computed_least_is_named_with_where_it_waited_and_the_others_share():
    """A manager's run is waiting, in MPI (ESyS-Particle's rank 0: the library spins) or off the CPU (HyPhy's rank 0,
    off the CPU): a rank computes on its busiest thread's CPU time after MPI_Init less its time in MPI."""
    def rank(number: int, cpu_s: float, mpi_s: float, wall_s: float = 4.0, init_cpu_s: float = 0.0,
             initialized: bool = True) -> ProbeProcess:
        threads = (ProbeThread(number=0, cpu_s=cpu_s, init_cpu_s=init_cpu_s, bound=frozenset({0}), used=frozenset({0})),
                   ProbeThread(number=1, cpu_s=cpu_s / 2, bound=frozenset({0}), used=frozenset({0})))
        return ProbeProcess(host="h", pid=10 + number, mpi_initialized=initialized, rank=number, world_size=3,
                            wall_s=wall_s, mpi_s=mpi_s, max_rss_mib=1.0, threads=threads)

    spinning = [rank(0, 4.0, 3.8), rank(1, 4.0, 1.2), rank(2, 4.0, 0.4, init_cpu_s=0.5)]
    expected = {"rank": 0, "waiting": 0.95, "in_mpi": 0.95, "others": 0.3}  # rank 1: 2.8 s of 4
    assert waiting_rank(spinning) == pytest.approx(expected)
    assert probe_record(spinning, 3, 1)["probe"]["waiting_rank"] == pytest.approx(expected)
    asleep = [rank(0, 1.5, 0.06, wall_s=3.0), rank(1, 2.8, 0.1, wall_s=3.0)]  # HyPhy's 2x1, scaled
    assert waiting_rank(asleep) == pytest.approx({"rank": 0, "waiting": 0.52, "in_mpi": 0.02, "others": 0.1})
    assert waiting_rank([rank(0, 3.8, 3.8), rank(1, 0.0, 0.0, wall_s=0.0), rank(2, 1.0, 0.0, initialized=False)]) \
        is None
    assert waiting_rank([rank(0, 3.8, 3.8)]) is None  # one rank waits for nobody


def test_two_threads_bound_to_one_pu_fail_the_affinity_check():
    processes = read_probe(RECORDED / "hybrid-2x2-shared")
    assert [p.rank for p in processes] == [0, 1] and all(p.world_size == 2 for p in processes)
    assert shared_pus(processes) == ["rank 0's threads 0, 1 shared PU 0", "rank 1's threads 0, 1 shared PU 1"]
    record = probe_record(processes, 2, 2)
    assert record["probe"]["findings"] == shared_pus(processes)
    assert {(row["rank"], row["thread"]) for row in record["binding"]} == {(0, 0), (0, 1), (1, 0), (1, 1)}


def test_processes_of_another_mpis_launcher_are_singletons_and_its_helpers_are_not_ranks():
    processes = read_probe(RECORDED / "singletons")
    assert len(processes) == 2  # the two singletons' orted helpers, which never initialised MPI, left out
    assert mpi_job_problem(processes, 2) == ("launched as 2 singletons (each process saw MPI_COMM_WORLD of size 1 "
                                               "instead of 2): the program's MPI is not the launcher's")
    assert mpi_job_problem(read_probe(RECORDED / "hybrid-2x2-shared"), 2) is None


@pytest.mark.parametrize("ranks", [1, 3])
def test_a_job_of_another_size_than_the_layout_fails_the_run(ranks: int):
    """srun inside an allocation of 2 tasks, not told --ntasks, ran a 1-rank layout as a job of 2: each process saw
    MPI_COMM_WORLD of size 2."""
    processes = read_probe(RECORDED / "hybrid-2x2-shared")
    assert mpi_job_problem(processes, ranks) == (f"ran as an MPI job of 2 ranks (MPI_COMM_WORLD's size in its "
                                                 f"processes), not the {ranks} of its layout")


def test_the_why_figures_come_from_each_rank_s_time_inside_and_outside_mpi():
    processes = read_probe(RECORDED / "hybrid-2x2-shared")
    found = figures(processes)
    assert found is not None
    assert found.comm_s == max(p.mpi_s for p in processes)
    compute = [p.wall_s - p.mpi_s for p in processes]
    assert found.comp_s == max(compute) and found.imbalance == pytest.approx(max(compute) / (sum(compute) / 2))
    assert found.max_rss_mib == max(p.max_rss_mib for p in processes) > 1
    assert found.node_rss_mib == pytest.approx(sum(p.max_rss_mib for p in processes))  # one host


def test_live_probe_of_programs_hympi_did_not_build(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory):
    """A sweep of LAMMPS (no OpenMP in Debian's build) at 1x2 records the idle-thread finding in every run and says
    it whole once (then by its statement); `hympi run` of the hybrid program under MPICH's launcher (it is built
    with Open MPI) fails as singletons."""
    melt = lammps(cells=4, steps=50)
    db = tmp_path / "r.db"
    proc = hympi("sweep", melt.command[0], "--ranks", "1", "--threads", "2", "--repeat", "1", "--db", str(db), "--",
                 *melt.command[1:])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    warmup, measured = (line for line in proc.stdout.splitlines() if line.startswith("  1x2 core #"))
    assert warmup.endswith(f" {LAMMPS_1X2_FINDING}"), proc.stdout
    assert measured.endswith(" each rank ran 1 of the 2 threads asked for (OMP_NUM_THREADS=2), as above"), proc.stdout
    with Store.open(db, create=False) as store:
        runs = store.runs()
    assert [r.record["probe"]["findings"] for r in runs if r.record] == [[LAMMPS_1X2_FINDING]] * 2
    run = runs[-1]
    assert run.record is not None
    assert run.record["probe"]["working_threads"] == 1  # what explain counts as the cores 1x2 computed on
    assert run.value("max_rss_mib") is not None and run.value("comm_s") is not None
    program = hybrid(hybrid_binary(tmp_path_factory), 20000, 10)
    wrong = hympi("run", program.command[0], "--ranks", "2", "--launcher", "mpich", "--", *program.command[1:])
    assert wrong.returncode == 1 and "launched as 2 singletons" in wrong.stderr, wrong.stderr


def test_the_main_thread_is_thread_0_when_a_library_starts_threads_before_the_probe(
        tmp_path_factory: pytest.TempPathFactory):
    """MPQC links OpenBLAS, whose constructor starts its pool before the probe's constructor ran: its thread was
    recorded first, taken for the main thread, and the real main thread left out, so 1x2 "ran 1 of the 2 threads
    asked for". The hybrid program linked with such a library computes on both."""
    program = hybrid(early_thread_binary(tmp_path_factory), 2_000_000, 40)
    proc = hympi("run", program.command[0], "--ranks", "1", "--threads", "2", "--json", "--", *program.command[1:])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    record = json.loads(proc.stdout.strip().splitlines()[-1])
    assert record["probe"]["findings"] == [] and record["probe"]["working_threads"] == 2, record["probe"]
    assert sorted((row["rank"], row["thread"]) for row in record["binding"]) == [(0, 0), (0, 1)]


def test_the_affinity_check_of_a_program_passes_as_bound_and_fails_when_it_rebinds_itself(
        tmp_path: Path, tmp_path_factory: pytest.TempPathFactory):
    """`hympi affinity PROGRAM --check`: the hybrid program at 1x2 runs where the layout says; run through taskset -c 0
    (a program that rebinds itself), rank 1 is found on PU 0 instead of its own core."""
    program = hybrid(hybrid_binary(tmp_path_factory), 200_000, 20)
    good = hympi("affinity", program.command[0], "--ranks", "1", "--threads", "2", "--check", "--",
                 *program.command[1:])
    assert good.returncode == 0 and "layout check (launcher binds, probe watches): PASSED" in good.stderr, \
        good.stdout + good.stderr
    rebound = hympi("affinity", "/usr/bin/taskset", "--ranks", "2", "--check", "--", "-c", "0", *program.command)
    assert rebound.returncode == 1, rebound.stdout + rebound.stderr
    assert "layout mismatch: rank 1 thread 0: intended" in rebound.stderr and "bound to 0," in rebound.stderr
    assert "FAILED" in rebound.stderr.splitlines()[-1]


def test_the_probe_records_what_it_cost(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory,
                                                     monkeypatch: pytest.MonkeyPatch):
    """Each process file carries the sampler thread's CPU seconds and its start's (bench/probe reports them as the
    probe's cost): more than nothing (it ran, every 20 ms; it loaded a topology) and a small share of the process's
    wall time (a sampler spinning instead of sleeping, or sampling far too often, would use a large one whatever
    the load)."""
    program = hybrid(hybrid_binary(tmp_path_factory), 2_000_000, 400)  # long enough for dozens of samples (0.8 s)
    for name, value in probe_env(tmp_path):
        monkeypatch.setenv(name, value)
    proc = launch(program, 2, 1, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    processes = read_probe(tmp_path)
    assert len(processes) == 2
    for process in processes:
        assert process.wall_s > 0.2, process  # else the bound below says little
        assert 0 < process.sampler_cpu_s < 0.1 * process.wall_s, process
        assert 0 < process.start_cpu_s < 1.0, process  # one PU-only topology load, before MPI_Init


def test_a_short_run_s_threads_are_judged_on_their_work_after_mpi_s_start_up(
        tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    """Open MPI's MPI_Init takes ~0.08 s of the main thread's CPU; a short hybrid run's second thread spends ~2 ms
    computing (threads that sleep when idle: OMP_WAIT_POLICY=passive), under 5 % of the main thread's whole CPU time
    but about half its time after MPI_Init. The probe records each thread's CPU time at MPI_Init's return, and the
    thread check counts from there: both threads worked."""
    program = hybrid(hybrid_binary(tmp_path_factory), 50_000, 5)
    for name, value in probe_env(tmp_path):
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("OMP_WAIT_POLICY", "passive")
    proc = launch(program, 1, 2, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (process,) = read_probe(tmp_path)
    main, team = process.threads
    assert 0 < main.init_cpu_s < main.cpu_s and team.init_cpu_s == 0.0  # the team thread was born after MPI_Init
    assert working_threads([process], 2) == 2 and idle_threads([process], 2) is None, process


def test_a_worker_started_by_mpi_comm_spawn_is_no_rank_of_the_layout(
        tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    """A manager-worker program (tests/programs/spawn.c) on 2 ranks starts a 1-process world of its own with
    MPI_Comm_spawn: the run is still one job of 2 ranks, the worker is marked spawned in its probe file and left out
    of the ranks, and the profile holds the launched job's 2x2 matrix, not the worker's, though it finalizes last."""
    program = spawning(spawn_binary(tmp_path_factory), 100_000)
    probed = tmp_path / "probe"
    probed.mkdir()
    with monkeypatch.context() as m:
        for name, value in probe_env(probed):
            m.setenv(name, value)
        proc = launch(program, 2, 1, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    files = [json.loads(path.read_text())["mpi"] for path in sorted(probed.glob("probe-*.json"))]
    mpi = sorted((f["size"], f["spawned"]) for f in files if f["initialized"])  # not the helpers the spawn started
    assert mpi == [(1, True), (2, False), (2, False)], files
    processes = read_probe(probed)
    assert [(p.rank, p.world_size) for p in processes] == [(0, 2), (1, 2)]
    assert mpi_job_problem(processes, 2) is None
    assert json.loads((probed / "profile.json").read_text())["ranks"] == 2
    # hympi run judges the same program end to end (with room for the worker: --oversubscribe).
    run = hympi("run", program.command[0], "--ranks", "2", "--oversubscribe", "--metric", program.metric,
                "--verify", program.verify, "--", *program.command[1:])
    assert run.returncode == 0, run.stdout + run.stderr


def test_an_mpi4py_futures_farm_is_one_job_of_its_launched_rank():
    """mpi4py.futures, as Python users farm out tasks: 1 launched rank (the manager) spawns a pool of 2 workers. hympi
    run judges the one rank it launched (a world of 1), not the workers' world of 2, and reads the farm's rate."""
    program = farm(8, 2)
    proc = hympi("run", program.command[0], "--ranks", "1", "--oversubscribe", "--json", "--metric", program.metric,
                 "--verify", program.verify, "--", *program.command[1:])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    record = json.loads(proc.stdout.strip().splitlines()[-1])
    assert record["probe"]["processes"] == 1 and record["probe"]["ranks_seen"] == [1], record["probe"]
    assert record["rate"] > 0


@pytest.mark.parametrize(("args", "needle"), [(["--pairs", "1"], "--pairs: 1 gives no interval: at least 2 pairs"),
                                              (["--layouts", "2y1"], "'2y1' is not RANKSxTHREADS")])
def test_the_probe_bench_refuses_what_gives_no_interval_before_it_runs(args: list[str], needle: str):
    proc = subprocess.run([sys.executable, str(RECORDED.parents[2] / "bench" / "probe" / "run.py"), *args],
                          capture_output=True, text=True, timeout=60, check=False)
    (line,) = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and needle in line, proc.stderr
    assert proc.stdout == ""
