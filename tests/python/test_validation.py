"""Problems that cannot run are refused before launch (issue 30, B.6-B.8), by the check the app itself makes:

- B.6: a problem whose estimated memory exceeds this machine's (hwloc) is one line naming the size and the estimate
  in GiB, exit 2, from `--validate-ranks` and from `hympi run` (nothing launched), and the launched app refuses it
  alike (no std::bad_alloc, no MPI_ABORT); pencil's MPI-int-count limit is checked before launch; NPB-MZ classes kept
  for their geometry (E, F) never run;
- B.7: a checkpoint given to --restart that is empty, truncated, not HDF5, another app's or another size's, past
  --iterations, or has a flipped bit is refused before launch, one line, exit 2;
- B.8: the header attributes (step, residual history) carry a checksum: one changed digit is refused on restart,
  before launch and by the launched app; a checkpoint without the checksum (older hympi) is refused, saying so.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import skips
from conftest import assert_refused
from damage import BAD_CHECKPOINTS, damaged, restart_args

REPO = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("HYMPI_BIN_DIR", REPO / "build" / "bin"))
MPIRUN = shutil.which("mpirun")

pytestmark = skips.needs_apps("hympi-rb3d", "hympi-spmv3d", "hympi-blades", "hympi-pencil", "hympi-bt-mz")

# Far beyond any machine's memory (hundreds of GiB to petabytes), yet valid in every other respect on 2 ranks
# (pencil on 1024, so that its transpose blocks fit MPI's int counts and the memory is what refuses it).
TOO_BIG = {
    "rb3d": (["--size", "100000"], "--size 100000"),
    "spmv3d": (["--global", "100000", "100000", "100000"], "--global 100000 100000 100000"),
    "blades": (["--blades", "16", "--grid", "8192", "8192", "8192"], "--blades 16 --grid 8192 8192 8192"),
    "pencil": (["--grid", "16384", "16384", "64", "--steps", "1"], "--grid 16384 16384 64"),
    "stream": (["--elements", str(10**13)], f"--elements {10**13}"),
}
RANKS = {"pencil": 1024}


def validate(app: str, ranks: int, *args: str) -> subprocess.CompletedProcess[str]:
    """`hympi-APP --validate-ranks RANKS ARGS`: the check `hympi run` makes before it launches anything."""
    env = {k: v for k, v in os.environ.items() if k != "HYMPI_MIN_TIME"}
    return subprocess.run([str(BIN / f"hympi-{app}"), "--validate-ranks", str(ranks), *args], capture_output=True,
                          text=True, timeout=120, env=env, check=False)


def mpirun(app: str, ranks: int, *args: str) -> subprocess.CompletedProcess[str]:
    """The app launched directly, as a user could, without hympi's check in front."""
    assert MPIRUN is not None
    cmd = [MPIRUN, *(["--allow-run-as-root"] if os.geteuid() == 0 else []), "--oversubscribe", "--bind-to", "none",
           "-np", str(ranks), "-x", "OMP_NUM_THREADS=1", str(BIN / f"hympi-{app}"), "--bind", "none", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)


def one_line(proc: subprocess.CompletedProcess[str], *fragments: str) -> str:
    """Exit 2 and a single stderr line holding every fragment; returns the line."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def app_error_lines(app: str, proc: subprocess.CompletedProcess[str]) -> list[str]:
    """The app's own error lines of a launched run (mpirun may add its banner after them), with no abort."""
    assert "MPI_ABORT" not in proc.stderr and "bad_alloc" not in proc.stderr, proc.stderr
    return [line for line in proc.stderr.splitlines() if line.startswith(f"hympi-{app}: error")]


# B.6 ------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("app", sorted(TOO_BIG))
def test_a_problem_beyond_the_machines_memory_is_refused_before_launch_with_the_estimate(app: str) -> None:
    args, named = TOO_BIG[app]
    line = one_line(validate(app, RANKS.get(app, 2), *args), named, "GiB", "more than its")
    assert "needs an estimated" in line


@pytest.mark.parametrize("app", ["rb3d", "spmv3d", "blades"])
def test_hympi_run_refuses_it_and_launches_nothing(app: str, fake_launcher: tuple[dict[str, str], Path]) -> None:
    args, named = TOO_BIG[app]
    assert_refused(["run", app, "--ranks", "2", "--threads", "1", "--", *args], named, fake_launcher)


@skips.needs(skips.Reason.OPEN_MPI, MPIRUN is not None, "mpirun is not on PATH")
@pytest.mark.parametrize("app", ["rb3d", "blades"])
def test_the_launched_app_refuses_it_alike_without_bad_alloc(app: str) -> None:
    args, named = TOO_BIG[app]
    proc = mpirun(app, 2, *args)
    assert proc.returncode == 2, proc.stderr
    lines = app_error_lines(app, proc)
    assert len(lines) == 1 and named in lines[0] and "GiB" in lines[0], proc.stderr
    assert "HYMPI_RESULT" not in proc.stdout


def test_the_estimate_grows_with_the_layouts_peak_not_only_the_size() -> None:
    # --verify reference re-solves the whole grid on rank 0: counted (and said) only when asked for.
    args, _ = TOO_BIG["rb3d"]
    assert "--verify reference" in one_line(validate("rb3d", 2, *args))
    assert "--verify reference" not in one_line(validate("rb3d", 2, *args, "--verify", "none"))


def test_a_checkpointing_run_counts_its_staged_copy(tmp_path: Path) -> None:
    # rb3d holds u and f (16 B per point); a checkpoint stages u again (8 B): a size that fits in 0.8 of the
    # machine's memory without checkpoints needs 1.2 of it with them, refused before anything is written.
    refusal = one_line(validate("rb3d", 1, *TOO_BIG["rb3d"][0]))
    found = re.search(r"more than its ([0-9.]+) GiB", refusal)  # hwloc's memory, as the app reads it
    assert found is not None, refusal
    memory = float(found.group(1)) * 2**30
    n = 8 * round((0.8 * memory / 16) ** (1 / 3) / 8)
    args = ("--size", str(n), "--verify", "none")
    assert validate("rb3d", 1, *args).returncode == 0
    ckpt = tmp_path / "c.h5"
    line = one_line(validate("rb3d", 1, *args, "--checkpoint", str(ckpt), "--checkpoint-every", "10"),
                    f"--size {n}", "a checkpoint's staged copy of u, 8 B per point", "more than its")
    assert "needs an estimated" in line and not ckpt.exists()


def test_pencil_mpi_int_count_limit_is_checked_before_launch() -> None:
    # On 2 ranks one transpose block is 150000 x planes by 3000 x 10 / 2 lines (nz 14 keeps 5 modes, 10 doubles):
    # 2.25e9 elements overflow MPI's int counts. Found only after launch before; validate() checks it before the
    # memory, so the line names it.
    one_line(validate("pencil", 2, "--grid", "300000", "3000", "14", "--steps", "1"), "too large for MPI's int counts")


def test_pencil_verify_order_checks_the_doubled_grid_too() -> None:
    # One rank's block is the whole nx x ny x 2 kept modes: under 2^31 elements for 10000 x 10000 x 10 doubles
    # (nz 14 keeps 5 modes), over it for the 2nx x 2ny grid --verify order also runs. Both are refused here for
    # their memory, but only the doubled grid for its int counts, which validate() checks before the memory.
    grid = ["--grid", "10000", "10000", "14", "--steps", "1"]
    solution = validate("pencil", 1, *grid, "--verify", "solution")
    assert "int counts" not in solution.stderr, solution.stderr
    one_line(validate("pencil", 1, *grid, "--verify", "order"), "too large for MPI's int counts")


@pytest.mark.parametrize("cls", ["E", "F"])
@pytest.mark.parametrize("app", ["bt-mz", "sp-mz", "lu-mz"])
def test_geometry_only_npb_classes_never_run(app: str, cls: str, fake_launcher: tuple[dict[str, str], Path]) -> None:
    if not (BIN / f"hympi-{app}").exists():
        skips.skip(skips.Reason.NOT_BUILT, f"hympi-{app} in {BIN}")
    one_line(validate(app, 4, "--class", cls), f"--class {cls}", "geometry only")
    assert_refused(["run", app, "--ranks", "2", "--threads", "1", "--", "--class", cls], "geometry only",
                   fake_launcher)


def test_an_npb_class_beyond_memory_is_refused_with_its_estimate() -> None:
    # Class D of BT-MZ: 67 M points x 21 doubles = 11 GiB; on 1 rank the peak is all of it. Refused wherever the
    # machine has less, accepted elsewhere: the estimate itself must be in the line when refused.
    proc = validate("bt-mz", 1, "--class", "D")
    if proc.returncode == 2:
        one_line(proc, "--class D", "21 doubles per point", "GiB")
    else:
        assert proc.returncode == 0, proc.stderr


# B.7 / B.8 ------------------------------------------------------------------------------------------------------

RB3D = ["--size", "20", "--residual-every", "5"]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A checkpoint of iteration 20 written by 2 ranks."""
    if MPIRUN is None:
        skips.skip(skips.Reason.OPEN_MPI, "mpirun is not on PATH")
    path = tmp_path_factory.mktemp("ck") / "rb3d.h5"
    proc = mpirun("rb3d", 2, *RB3D, "--iterations", "20", "--checkpoint", str(path), "--checkpoint-every", "20")
    assert proc.returncode == 0 and path.exists(), proc.stderr
    return path


@pytest.mark.parametrize(("damage", "args", "words"), BAD_CHECKPOINTS)
def test_a_bad_restart_file_is_refused_before_launch(checkpoint: Path, tmp_path: Path, damage: str, args: list[str],
                                                     words: str) -> None:
    bad = damaged(checkpoint, tmp_path / "bad.h5", damage)
    one_line(validate("rb3d", 2, *restart_args(bad, args)), str(bad), words)


@pytest.mark.parametrize(("damage", "args", "words"), [b for b in BAD_CHECKPOINTS if b[0] in ("state-digit", "none")])
def test_hympi_run_refuses_a_bad_restart_file_and_launches_nothing(
    checkpoint: Path, tmp_path: Path, damage: str, args: list[str], words: str,
    fake_launcher: tuple[dict[str, str], Path],
) -> None:
    bad = damaged(checkpoint, tmp_path / "bad.h5", damage)
    assert_refused(["run", "rb3d", "--ranks", "2", "--threads", "1", "--", *restart_args(bad, args)], words,
                   fake_launcher)


@pytest.mark.parametrize("damage", ["state-digit", "no-header-checksum"])
def test_the_launched_app_refuses_a_changed_header_too(checkpoint: Path, tmp_path: Path, damage: str) -> None:
    # Before the checksum, a changed residual was accepted and surfaced as "verification FAILED" at the end.
    bad = damaged(checkpoint, tmp_path / "bad.h5", damage)
    proc = mpirun("rb3d", 2, *restart_args(bad, []))
    assert proc.returncode == 2, proc.stderr
    lines = app_error_lines("rb3d", proc)
    assert len(lines) == 1 and str(bad) in lines[0], proc.stderr
    assert "HYMPI_RESULT" not in proc.stdout and "verification FAILED" not in proc.stderr


def test_a_good_checkpoint_passes_the_check_before_launch(checkpoint: Path) -> None:
    proc = validate("rb3d", 3, *restart_args(checkpoint, []))
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr


@skips.needs(skips.Reason.OPEN_MPI, MPIRUN is not None, "mpirun is not on PATH")
@pytest.mark.parametrize(("app", "args", "line"), [
    ("rb3d", ["--bogus"], "hympi-rb3d: error: The following argument was not expected: --bogus"),
    ("rb3d", ["--size", "8", "--restart", "nonexist.h5"], "hympi-rb3d: error: --restart nonexist.h5: no such file"),
    ("pingpong", ["--iterations", "0"], "hympi-pingpong: error: --iterations: must be a positive integer, got '0'"),
])
def test_an_error_found_before_mpi_init_is_said_once_for_the_job(app: str, args: list[str], line: str) -> None:
    """Every rank parses the same command line and finds the same error before MPI_Init: each printed it, two lines
    (at times interleaved mid-line) for two ranks; the launcher's rank 0 says it now."""
    proc = mpirun(app, 2, *args)
    assert proc.returncode == 2, proc.stderr
    assert app_error_lines(app, proc) == [line], proc.stderr


@pytest.mark.parametrize(("app", "option"), [("rb3d", "--config"), ("is", "--data")])
def test_a_binary_file_named_by_mistake_is_quoted_in_printable_text(tmp_path: Path, app: str, option: str) -> None:
    """The refusal quoted the file's bytes as they were (an ELF header, NULs, line breaks): written \\xNN now."""
    binary = tmp_path / "garbage.bin"
    binary.write_bytes((BIN / f"hympi-{app}").read_bytes()[:300])
    proc = subprocess.run([str(BIN / f"hympi-{app}"), option, str(binary)], capture_output=True, timeout=60,
                          check=False)
    assert proc.returncode == 2, proc.stderr
    line = proc.stderr.decode("ascii")  # raises on a raw byte past ASCII
    assert len(line.strip().splitlines()) == 1 and "\\x7f" in line, line
