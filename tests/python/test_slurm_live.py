"""`hympi sweep --launcher slurm` against a real single-node Slurm (slurmcluster.py): job steps inside an allocation,
an sbatch submission waited on, a cancelled step and a cancelled allocation, and a controller that does not answer."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import psutil

import forkcli
import skips
import slurmcluster
import userprograms
from hympi.paths import app_dirs
from hympi.store import Store
from hympi.store.db import Run
from slurmcluster import SlurmCluster

HYMPI = forkcli.command([])
# rb3d at 16^3 verifies in milliseconds; 1x1 and 2x1 fit the 2-core allocation every test asks for.
SWEEP = ["sweep", "rb3d", "--ranks", "1,2", "--threads", "1", "--no-warmup", "--seed", "7", "--launcher", "slurm"]
APP_ARGS = ["--", "--size", "16"]


def _two_cpus(cluster: SlurmCluster) -> None:
    """Skips on a node too small for the 2x1 layout (hardware: skips under CI too)."""
    if cluster.cpus < 2:
        skips.skip(skips.Reason.FEW_CPUS, f"the node has {cluster.cpus} CPU; the sweeps need 2")


def _salloc(cluster: SlurmCluster, *args: str) -> list[str]:
    """`salloc` for two tasks running `hympi ARGS` (salloc runs it here, with SLURM_JOB_ID set)."""
    return ["salloc", "--ntasks", "2", "--time", "5", "--quiet", *HYMPI, *args]


def _runs(db: Path) -> list[Run]:
    """Every run in the database, in the order recorded."""
    with Store.open(db, create=False) as store:
        return store.runs()


def _assert_one_mpi_job_per_run(run: Run) -> None:
    """The run was an srun step of R tasks wired into one MPI job: the app saw R ranks, each bound and reporting."""
    assert run.command[0] == "env" and any(Path(a).name == "srun" for a in run.command), run.command
    assert "--mpi=pmix" in run.command, run.command
    record = run.record
    assert record is not None and record["verified"] is True
    assert record["ranks"] == run.ranks, f"{run.ranks} tasks gave an MPI job of {record['ranks']} ranks"
    assert sorted({b["rank"] for b in record["binding"]}) == list(range(run.ranks))


def _steps(cluster: SlurmCluster) -> list[str]:
    """The running job steps (JOB.STEP) of the cluster."""
    out = cluster.slurm("squeue", "-h", "--steps", "-o", "%i").stdout.split()
    return [s for s in out if re.fullmatch(r"\d+\.\d+", s)]


def _wait_for_step(cluster: SlurmCluster, proc: subprocess.Popen[str], index: int, timeout: float = 60) -> str:
    """Polls until step number `index` of the running job appears; fails if the sweep ends first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [s for s in _steps(cluster) if s.endswith(f".{index}")]
        if found:
            return found[0]
        assert proc.poll() is None, f"the sweep ended before step {index}: {proc.communicate()}"
        time.sleep(0.05)
    raise AssertionError(f"no step {index} after {timeout} s")


def _step_fields(cluster: SlurmCluster, step: str) -> dict[str, str]:
    """The KEY=VALUE fields of `scontrol show step` (State, Tasks, ...); empty once the controller forgets the step."""
    out = cluster.slurm("scontrol", "--oneliner", "show", "step", step).stdout
    return dict(field.split("=", 1) for field in out.split() if "=" in field)


def _app_pids(cluster: SlurmCluster, step: str) -> list[int]:
    """The pids of the step's app processes on this node (scontrol listpids: every process of the step)."""
    pids = []
    for line in cluster.slurm("scontrol", "listpids", step).stdout.splitlines()[1:]:  # after the header
        fields = line.split()
        try:
            name = psutil.Process(int(fields[0])).name()
        except (psutil.NoSuchProcess, IndexError, ValueError):
            continue  # exited meanwhile, or a line whose PID is -1
        if name == "hympi-rb3d":
            pids.append(int(fields[0]))
    return pids


def _proc_state(pid: int) -> str:
    """The process's status (psutil.STATUS_*: running, sleeping, stopped, ...), or 'gone'."""
    try:
        return str(psutil.Process(pid).status())
    except psutil.NoSuchProcess:
        return "gone"


def _holding_app_dirs(tmp_path: Path, hold: Path) -> Path:
    """A bin directory of hympi's apps (and its lib beside it) in which hympi-rb3d, started as a task of a Slurm step
    while the file `hold` exists, stops itself (SIGSTOP) before it execs the app: a test can then cancel a step whose
    app cannot have ended, on a fast idle machine as on a slow busy one, with no race to catch the app mid-run
    (a held run of 0.23 s was once outrun by four test workers on two cores). Anywhere else (the sweep's checks
    before it launches, or once `hold` is gone) it is the app itself."""
    real = app_dirs()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for binary in real.bin.iterdir():
        (bin_dir / binary.name).symlink_to(binary)
    (tmp_path / "lib").symlink_to(real.lib)
    wrapper = bin_dir / "hympi-rb3d"
    wrapper.unlink()
    wrapper.write_text(f"""#!/bin/sh
if [ -n "${{SLURM_STEP_ID:-}}" ] && [ -e '{hold}' ]; then kill -STOP $$; fi
exec '{real.bin / "hympi-rb3d"}' "$@"
""")
    wrapper.chmod(0o755)
    return bin_dir


def _held_app(cluster: SlurmCluster, proc: subprocess.Popen[str], step: str, timeout: float = 60) -> list[int]:
    """Waits until Slurm runs `step` and every one of its tasks is the holding hympi-rb3d (_holding_app_dirs),
    stopped before the app; returns their pids."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"the sweep ended before step {step} was held: {proc.communicate()}"
        fields = _step_fields(cluster, step)
        assert fields, f"step {step} ended before its tasks were held"
        pids = _app_pids(cluster, step) if fields.get("State") == "RUNNING" else []
        stopped = (psutil.STATUS_STOPPED, psutil.STATUS_TRACING_STOP)
        if len(pids) == int(fields["Tasks"]) and all(_proc_state(pid) in stopped for pid in pids):
            return pids
        time.sleep(0.02)
    raise AssertionError(f"step {step}: its tasks were not all held within {timeout} s")


def test_sweep_inside_an_allocation_runs_each_layout_as_one_srun_step(slurm_cluster: SlurmCluster, tmp_path: Path):
    _two_cpus(slurm_cluster)
    db = tmp_path / "r.db"
    # A user's own OMP_NUM_THREADS must not reach the ranks: each layout's thread count does.
    env = {**slurm_cluster.env(), "OMP_NUM_THREADS": "2"}
    proc = subprocess.run(_salloc(slurm_cluster, *SWEEP, "--db", str(db), *APP_ARGS), capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    runs = _runs(db)
    assert sorted((r.ranks, r.status) for r in runs) == [(1, "ok"), (2, "ok")]
    for run in runs:
        _assert_one_mpi_job_per_run(run)
        assert run.record is not None and run.record["threads"] == 1


def test_sbatch_submission_is_waited_on_and_its_runs_land_in_the_db(slurm_cluster: SlurmCluster, tmp_path: Path):
    _two_cpus(slurm_cluster)
    db, script = tmp_path / "r.db", tmp_path / "sweep.sbatch"
    proc = subprocess.run([*HYMPI, *SWEEP, "--db", str(db), "--sbatch", str(script), "--wait", *APP_ARGS],
                          capture_output=True, text=True, env=slurm_cluster.env(), cwd=tmp_path, timeout=120,
                          check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    job = re.search(r"submitted job (\d+)", proc.stdout)
    assert job is not None, proc.stdout
    assert f"job {job.group(1)} COMPLETED (exit code 0)" in proc.stdout
    assert "sweep 1 finished: 2 ok" in proc.stdout  # the job's own output, printed once it ended
    assert (tmp_path / f"hympi-sweep-rb3d-{job.group(1)}.out").is_file()
    runs = _runs(db)
    assert sorted((r.ranks, r.status) for r in runs) == [(1, "ok"), (2, "ok")]
    for run in runs:
        _assert_one_mpi_job_per_run(run)
    with Store.open(db, create=False) as store:
        assert store.sweep(1).status == "finished"


def test_an_sbatch_sweep_of_a_program_runs_it_by_its_path_and_judges_its_output_file(slurm_cluster: SlurmCluster,
                                                                                     tmp_path: Path):
    """The sweep inside the allocation must find the program by its path (its name would be looked up as one of
    hympi's apps) and judge it alike: HPC Challenge, an MPI program hympi did not build, started by srun, each run
    credited with the results it appended to hpccoutf.txt, its input prepared for its ranks before each step by the
    sweep inside the allocation (the sbatch script spells --prepare again)."""
    _two_cpus(slurm_cluster)
    program = userprograms.hpcc(tmp_path)
    db, script = tmp_path / "r.db", tmp_path / "sweep.sbatch"
    proc = subprocess.run([*HYMPI, "sweep", *program.command, "--ranks", "1,2", "--threads", "1", "--no-warmup",
                           "--launcher", "slurm", "--db", str(db), "--sbatch", str(script), "--wait",
                           "--output-file", program.output_file, "--metric", program.metric,
                           "--metric-unit", program.metric_unit, "--verify", program.verify,
                           "--prepare", program.prepare],
                          capture_output=True, text=True, env=slurm_cluster.env(), cwd=tmp_path, timeout=120,
                          check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    runs = _runs(db)
    assert sorted((r.ranks, r.status) for r in runs) == [(1, "ok"), (2, "ok")], [r.stderr_tail for r in runs]
    written = (tmp_path / program.output_file).read_text()
    assert sorted(int(n) for n in re.findall(r"(?m)^CommWorldProcs=([0-9]+)$", written)) == [1, 2]
    assert sorted(re.findall(r"(?m)^HPL_npcol=([0-9]+)$", written)) == ["1", "2"]  # HPL on all of each step's ranks
    assert sorted(r.value("rate") for r in runs) == sorted(float(v) for v in re.findall(program.metric, written))
    for run in runs:
        assert any(Path(a).name == "srun" for a in run.command), run.command


def test_cancelled_step_is_kept_as_an_attempt_cancelled_allocation_stops_and_resume_finishes(
        slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    _two_cpus(slurm_cluster)
    db = tmp_path / "r.db"
    hold = tmp_path / "hold"
    hold.touch()
    env = {**slurm_cluster.env(), "HYMPI_BIN_DIR": str(_holding_app_dirs(tmp_path, hold))}
    # Two rounds of two layouts. Every step's app holds before it starts (_holding_app_dirs): the first step is
    # cancelled held, the second let go to its end, the third held until the allocation is cancelled.
    args = [*SWEEP, "--repeat", "2", "--db", str(db), *APP_ARGS]
    with subprocess.Popen(_salloc(slurm_cluster, *args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          env=env, cwd=tmp_path) as proc:
        first = _wait_for_step(slurm_cluster, proc, 0)
        _held_app(slurm_cluster, proc, first)
        assert slurm_cluster.slurm("scancel", first).returncode == 0
        second = _wait_for_step(slurm_cluster, proc, 1)
        for pid in _held_app(slurm_cluster, proc, second):
            os.kill(pid, signal.SIGCONT)
        third = _wait_for_step(slurm_cluster, proc, 2)
        _held_app(slurm_cluster, proc, third)
        job = first.split(".")[0]
        assert slurm_cluster.slurm("scancel", job).returncode == 0
        out, err = proc.communicate(timeout=60)
    assert proc.returncode != 0, out + err
    # scancel marks the job CANCELLED, then COMPLETING while its steps are killed; the sweep may see either.
    assert re.search(f"hympi: error: the Slurm allocation {job} has ended \\((CANCELLED|COMPLETING)\\)", err), out + err
    stopped = _runs(db)
    with Store.open(db, create=False) as store:
        (cancelled,) = store.attempts()  # the cancelled step is kept, as an attempt; not as the layout's run
        assert store.sweep(1).status == "interrupted"
    assert [r.status for r in stopped] == ["ok"], [(r.status, r.stderr_tail) for r in stopped]
    _assert_one_mpi_job_per_run(stopped[0])
    assert cancelled.status == "cancelled" and cancelled.record is None, cancelled  # held before it printed a result
    # Slurm's word for it: slurmstepd's line, or srun's own where slurmstepd's did not reach srun before it gave up.
    tail = cancelled.stderr_tail
    if f"STEP {first} ON localhost CANCELLED" in tail:
        assert f"hympi: Slurm ended the launch: step {first} CANCELLED" in tail, tail
    else:
        assert "srun: Job step aborted: Waiting up to" in tail, tail
        assert f"hympi: Slurm ended the launch: a step of job {job} (srun: Job step aborted)" in tail, tail

    hold.unlink()  # the resumed sweep's apps run straight through
    proc2 = subprocess.run(_salloc(slurm_cluster, *SWEEP, "--repeat", "2", "--resume", "--db", str(db), *APP_ARGS),
                           capture_output=True, text=True, env=env, cwd=tmp_path, timeout=180, check=False)
    # The resumed sweep runs the cancelled step's layout again, with the two never finished, and ends finished.
    assert proc2.returncode == 0, proc2.stdout + proc2.stderr
    assert "resuming sweep 1" in proc2.stdout and "1 already recorded" in proc2.stdout, proc2.stdout
    runs = _runs(db)
    assert (runs[0].status, runs[0].started_at) == (stopped[0].status, stopped[0].started_at)
    assert [r.status for r in runs] == ["ok", "ok", "ok", "ok"]
    assert sorted((r.ranks, r.repeat) for r in runs) == [(1, 1), (1, 2), (2, 1), (2, 2)]  # each item once
    assert (cancelled.ranks, cancelled.repeat) in {(r.ranks, r.repeat) for r in runs[1:]}  # run again
    for run in runs:
        _assert_one_mpi_job_per_run(run)
    with Store.open(db, create=False) as store:
        assert store.sweep(1).status == "finished" and store.attempts() == [cancelled]


def test_a_task_that_fails_first_fails_the_run_though_slurm_ends_the_others(slurm_cluster: SlurmCluster,
                                                                           tmp_path: Path) -> None:
    """Rank 0 exits 3 while rank 1 still runs: srun's --kill-on-bad-exit has the controller end the step, and
    slurmstepd says CANCELLED as for a scancel. That is the program's failure, recorded as a failed run (a crash
    kept as a cancelled attempt would be run again by every --resume and never show as failed)."""
    _two_cpus(slurm_cluster)
    program = userprograms.shell_program(tmp_path, "rank0-fails", 'if [ "$SLURM_PROCID" = 0 ]; then\n'
                                         '  echo "rank 0: bad input" >&2; exit 3\nfi\nsleep 60\n')
    db = tmp_path / "r.db"
    proc = subprocess.run(_salloc(slurm_cluster, "sweep", str(program), "--ranks", "2", "--threads", "1",
                                  "--no-warmup", "--launcher", "slurm", "--db", str(db), "--metric", "rate: ([0-9]+)",
                                  "--timeout", "50"),
                          capture_output=True, text=True, env=slurm_cluster.env(), cwd=tmp_path, timeout=120,
                          check=False)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    (run,) = _runs(db)
    assert run.status == "failed", (run.status, run.stderr_tail)
    assert "task 0: Exited with exit code 3" in run.stderr_tail and "Slurm ended the launch" not in run.stderr_tail
    with Store.open(db, create=False) as store:
        assert store.attempts() == []


def test_unreachable_controller_submits_nothing(tmp_path: Path):
    for tool in ("scontrol", "sbatch"):
        if shutil.which(tool) is None:
            skips.skip(skips.Reason.SLURM, f"{tool} is not installed (slurm-client)")
    munge = tmp_path / "munge.socket"  # never created: nothing answers on either port
    conf = slurmcluster.write_conf(tmp_path, "NodeName=localhost CPUs=1", slurmcluster.free_port(),
                                   slurmcluster.free_port(), munge)
    db, script = tmp_path / "r.db", tmp_path / "sweep.sbatch"
    # An sbatch first on PATH that leaves a mark: hympi must not get as far as running it (the real one would retry
    # the controller for ~10 s). A check of the elapsed time said the same until a loaded machine took 10 s to start
    # hympi.
    tools, called = tmp_path / "bin", tmp_path / "sbatch-ran"
    tools.mkdir()
    (tools / "sbatch").write_text(f"#!/bin/sh\ntouch '{called}'\nexit 1\n")
    (tools / "sbatch").chmod(0o755)
    env = {**{k: v for k, v in slurmcluster.client_env(conf).items() if k != "HYMPI_SRUN"},
           "PATH": f"{tools}{os.pathsep}{os.environ['PATH']}"}
    for flag in ("--submit", "--wait"):
        proc = subprocess.run([*HYMPI, *SWEEP, "--db", str(db), "--sbatch", str(script), flag, *APP_ARGS],
                              capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120, check=False)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("hympi: error: the Slurm controller is not reachable"), lines
        assert str(conf) in lines[0]
        assert not called.exists(), "sbatch ran against an unreachable controller"
        assert not script.exists() and not db.exists() and proc.stdout == ""
