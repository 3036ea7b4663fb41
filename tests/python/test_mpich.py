"""The MPICH tree (make test's sanitizer tree, built against Debian's MPICH): its apps under Hydra's mpiexec,
Hydra's own binding checked against the layout spec, and its profiler on C and Fortran (MPICH's symbol names)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

import skips
from conftest import REPO, hympi
from hympi.store import Store
from test_profile import PATTERN, expected_matrices

MPIEXEC = shutil.which("mpiexec.mpich")


@pytest.fixture(scope="module")
def mpich_env() -> dict[str, str]:
    """Environment that makes hympi launch the MPICH tree's apps with Hydra; skips without that tree (fails under
    CI)."""
    tree = os.environ.get("HYMPI_TEST_MPICH_BUILD")
    if not tree or not (Path(tree) / "bin" / "hympi-rb3d").is_file():
        skips.skip(skips.Reason.MPICH, "no MPICH tree (HYMPI_TEST_MPICH_BUILD: make test sets it to the sanitizer "
                                       "tree)")
    if MPIEXEC is None:
        skips.skip(skips.Reason.MPICH, "mpiexec.mpich is not installed")
    return {"HYMPI_BIN_DIR": str(Path(tree) / "bin"), "HYMPI_MPIRUN": MPIEXEC,
            "HYMPI_PROFILE_LIB": str(Path(tree) / "lib" / "libhympi-profile.so"),
            # The tree is instrumented: the same sanitizer settings as its CTest runs (CMakeLists.txt).
            "ASAN_OPTIONS": "detect_leaks=1:fast_unwind_on_malloc=0",
            "LSAN_OPTIONS": f"suppressions={REPO / 'cmake' / 'lsan.supp'}:print_suppressions=0",
            "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1"}


def test_an_app_runs_as_one_mpich_job(mpich_env):
    proc = hympi("run", "rb3d", "--ranks", "2", "--json", "--", "--size", "16", "--iterations", "4",
                 env=mpich_env)
    assert proc.returncode == 0, proc.stderr
    record = json.loads(proc.stdout)
    assert record["verified"] is True
    assert record["ranks"] == 2  # one job of two ranks, not two singletons
    assert "MPICH" in record["mpi_library"], record["mpi_library"]


def test_hydra_binding_matches_the_layout_spec(mpich_env):
    proc = hympi("affinity", "--ranks", "2", "--check", "--launcher", "mpich", "--binder", "launcher",
                 env=mpich_env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "layout check (launcher binds): PASSED" in proc.stderr


@pytest.fixture(scope="module")
def mpich_programs(tmp_path_factory, mpich_env) -> dict[str, Path]:
    """pattern.c and pattern.f90 built with MPICH's compiler wrappers, without any profiling support."""
    out = tmp_path_factory.mktemp("mpich-profile")
    subprocess.run(["mpicc.mpich", "-O1", "-o", str(out / "pattern_c"), str(PATTERN / "pattern.c")], check=True,
                   timeout=120)
    subprocess.run(["mpif90.mpich", "-O1", "-fallow-argument-mismatch", "-w", "-o", str(out / "pattern_f"),
                    str(PATTERN / "pattern.f90")], check=True, timeout=120)
    return {"c": out / "pattern_c", "fortran": out / "pattern_f"}


@pytest.mark.parametrize("language", ["c", "fortran"])
def test_the_profiler_counts_mpich_traffic_exactly(mpich_env, mpich_programs, language, tmp_path):
    ranks = 2
    out = tmp_path / "traffic.json"
    proc = hympi("profile", "--out", str(out), "--", MPIEXEC or "", "-n", str(ranks),
                 str(mpich_programs[language]), env=mpich_env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    want_bytes, want_msgs, _ = expected_matrices(ranks)
    assert data["ranks"] == ranks
    assert data["bytes"] == want_bytes  # MPICH's mpi_send_ calls MPI_Send: counted once, not twice
    assert data["messages"] == want_msgs


def test_a_launcher_of_another_mpi_fails_the_run_instead_of_two_singletons(mpich_env):
    # The Open MPI tree's app under Hydra: each rank starts as an MPI job of one rank, and each would verify.
    env = {**mpich_env, "HYMPI_BIN_DIR": str(REPO / "build" / "bin")}
    proc = hympi("run", "rb3d", "--ranks", "2", "--", "--size", "16", "--iterations", "2", env=env)
    assert proc.returncode == 1
    assert "2 ranks were started but the app ran as an MPI job of 1 rank(s)" in proc.stderr


def test_a_sweep_launches_with_the_named_launcher(mpich_env, tmp_path):
    db = tmp_path / "r.db"
    proc = hympi("sweep", "rb3d", "--ranks", "1,2", "--launcher", "mpich", "--no-warmup", "--db", str(db),
                 "--", "--size", "16", "--iterations", "4", env=mpich_env)
    assert proc.returncode == 0, proc.stderr
    with Store.open(db, create=False) as store:
        runs = {r.ranks: r for r in store.runs()}
    assert {ranks: run.status for ranks, run in runs.items()} == {1: "ok", 2: "ok"}
    assert all(run.command[0] == MPIEXEC and "MPICH" in str((run.record or {}).get("mpi_library"))
               for run in runs.values())
