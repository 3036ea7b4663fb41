"""The programs hympi did not build that the tests of issue 32 study (userprograms.py), each checked on its own: our
hybrid MPI + OpenMP program computes, verifies and reports its rate at every layout and fails when its result is
wrong; Debian's LAMMPS runs its melt input at 1 and 2 ranks and prints what the metric expression reads."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

import userprograms
from userprograms import Invocation

# hybrid.c's size for the tests: about 0.1 s a run at 1x1 on the test machine.
POINTS = 200_000
STEPS = 300


@pytest.fixture
def hybrid_binary(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return userprograms.hybrid_binary(tmp_path_factory)


def metric(program: Invocation, proc: subprocess.CompletedProcess) -> float:
    """The figure of merit `program.metric` reads from a run's output (exactly one match)."""
    found = re.findall(program.metric, proc.stdout)
    assert len(found) == 1, proc.stdout
    return float(found[0])


def layout(expression: str, proc: subprocess.CompletedProcess) -> tuple[int, int]:
    """The ranks and threads a program says it ran on."""
    found = re.search(expression, proc.stdout)
    assert found, proc.stdout
    return int(found[1]), int(found[2])


@pytest.mark.parametrize(("ranks", "threads"), [(1, 1), (2, 1), (1, 2)])
def test_hybrid_verifies_its_result_and_reports_its_rate(hybrid_binary, ranks, threads, tmp_path):
    program = userprograms.hybrid(hybrid_binary, POINTS, STEPS)
    proc = userprograms.launch(program, ranks, threads, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(program.verify, proc.stdout), proc.stdout
    assert layout(userprograms.HYBRID_LAYOUT, proc) == (ranks, threads)
    seconds = float(re.search(r"^time: ([0-9.]+) s$", proc.stdout, re.MULTILINE)[1])
    assert metric(program, proc) == pytest.approx(POINTS * STEPS / seconds / 1e6, rel=1e-3, abs=0.1)


def test_every_openmp_thread_of_hybrid_does_its_share(hybrid_binary, tmp_path):
    # What a probe of the threads must see busy: each thread's CPU time, which an oversubscribed machine slows but
    # does not hide (a loop without its parallel for leaves the second thread at ~0).
    proc = userprograms.launch(userprograms.hybrid(hybrid_binary, POINTS, 2 * STEPS), 1, 2, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    cpu = [float(s) for s in re.search(r"^thread CPU seconds:(( [0-9.]+)+)$", proc.stdout, re.MULTILINE)[1].split()]
    assert len(cpu) == 2, proc.stdout
    assert min(cpu) > 0.25 * max(cpu), proc.stdout


@pytest.mark.parametrize("ranks", [1, 2])
def test_a_wrong_result_fails_verification_with_exit_1(hybrid_binary, ranks, tmp_path):
    program = userprograms.hybrid(hybrid_binary, POINTS, STEPS, broken=True)
    proc = userprograms.launch(program, ranks, 1, tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert re.search(r"(?m)^verification: FAILED \(max relative error [0-9.e+-]+ > 1e-09\)$", proc.stdout)
    assert not re.search(program.verify, proc.stdout)


@pytest.mark.parametrize(("args", "line"), [
    (("0", "10"), "hybrid: N is not a positive integer: '0'"),
    (("100", "1e3"), "hybrid: STEPS is not a positive integer: '1e3'"),
    (("10", "1000"), "hybrid: STEPS decays the solution below 1e-3 for this N: '1000'"),
    (("100", "10", "--brake"), "hybrid: unknown option: '--brake'"),
])
def test_hybrid_refuses_bad_arguments_with_one_line_and_exit_2(hybrid_binary, args, line, tmp_path):
    # As a singleton: mpirun would add its own lines on stderr, and 2 s of waiting after a non-zero exit.
    proc = subprocess.run([str(hybrid_binary), *args], capture_output=True, text=True, timeout=60, check=False,
                          cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.splitlines() == [f"{line} (usage: hybrid N STEPS [--break])"]
    assert proc.stdout == ""


@pytest.mark.parametrize("ranks", [1, 2])
def test_lammps_runs_the_melt_input_and_prints_its_rate(ranks, tmp_path):
    cells, steps = 8, 200
    program = userprograms.lammps(cells=cells, steps=steps)
    proc = userprograms.launch(program, ranks, 1, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(program.verify, proc.stdout), proc.stdout
    assert layout(userprograms.LAMMPS_LAYOUT, proc) == (ranks, 1)
    loop = re.search(userprograms.LAMMPS_LOOP, proc.stdout)
    assert loop, proc.stdout
    # The -var values reached the input: 4 atoms per fcc cell.
    assert (int(loop[3]), int(loop[4])) == (steps, 4 * cells**3)
    # The expression reads timesteps/s, not the tau/day beside it: LAMMPS computes it as steps over loop time.
    assert metric(program, proc) == pytest.approx(steps / float(loop[1]), rel=1e-3)
    assert list(tmp_path.iterdir()) == []


def test_debians_lammps_has_no_openmp_package():
    # Why a sweep of lmp at 1x2 must find idle threads: its styles have no /omp variants in this build, and without
    # a parallel region libgomp never starts the threads OMP_NUM_THREADS asks for.
    lmp = userprograms.lammps().command[0]
    proc = subprocess.run([lmp, "-h"], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    packages = re.search(r"Installed packages:\s*\n\n(.*?)\n\n", proc.stdout, re.DOTALL)
    assert packages, proc.stdout
    assert "KSPACE" in packages[1].split()
    assert "OPENMP" not in packages[1].split()
