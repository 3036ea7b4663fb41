"""Text from outside hympi (paths, app arguments, program names, an MPI library's texts, the problem an app names,
other processes' names) is printed as typed: rich reads '[bold]' as a style and drops it, '[link=a]' as a link,
and '[/x]' as a closing tag, which crashed the command with 'internal error (bug): MarkupError'."""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path

import pytest

from conftest import REPO, hympi
from fakeapps import fake_bin_dir
from hympi import study
from hympi.busy.quiet import Load, quiet_start
from hympi.cli import main as cli_main
from userprograms import shell_program

# Each markup rich knows: a style, a closing tag without its opening one, a link.
MARKUP = "[bold]a[/x]b[link=a]c"
# No file name holds a '/': a program's own name carries the two others.
PROGRAM_NAME = "p[bold]q[link=a]r"
# Wide enough that rich wraps no path of the tests' temporary directories.
WIDE = {"COLUMNS": "400"}


def _markup_dir(tmp_path: Path) -> Path:
    """tmp_path/[bold]a[/x]b[link=a]c (two directories: its '/' is one's end)."""
    directory = tmp_path / MARKUP
    directory.mkdir(parents=True)
    return directory


def _as_typed(text: str, out: str, err: str) -> None:
    """`text` is in `out` as typed (rich's wrapping of a table's title undone), and nothing crashed."""
    assert "internal error" not in err, err
    assert text in " ".join(out.split()), out


def test_config_and_info_print_the_launchers_path_as_typed(tmp_path: Path):
    launcher = shell_program(_markup_dir(tmp_path), "mpirun", "exit 0\n")
    env = {**WIDE, "HYMPI_MPIRUN": str(launcher), "HYMPI_MPI_FLAVOR": "openmpi"}
    config = hympi("config", env=env)
    _as_typed(f'"{launcher}"', config.stdout, config.stderr)
    info = hympi("info", env=env)
    _as_typed(f"{launcher} (openmpi)", info.stdout, info.stderr)


def test_tune_params_prints_the_librarys_texts_as_they_are(tmp_path: Path):
    listing = json.loads((REPO / "tests" / "data" / "mpit-openmpi-4.1.4.json").read_text())
    listing["mpi_library"] = f"Open MPI {MARKUP}"
    listing["cvars"] = [{**listing["cvars"][0], "description": f"size {MARKUP}"}]
    (tmp_path / "cvars.json").write_text(json.dumps(listing))
    proc = hympi("tune", "params", "--cvars", str(tmp_path / "cvars.json"), env=WIDE)
    _as_typed(f"1 MPI control variables of Open MPI {MARKUP}", proc.stdout, proc.stderr)
    assert f"size {MARKUP}" in proc.stdout


def test_tune_run_prints_its_app_arguments_and_database_as_typed(tmp_path: Path):
    env = {**fake_bin_dir(tmp_path), **WIDE}
    (tmp_path / "space.toml").write_text("[layout]\nranks = [1, 2]\n")
    db = _markup_dir(tmp_path) / "t.db"
    proc = hympi("tune", "run", "rb3d", "--space", str(tmp_path / "space.toml"), "--repeat", "1", "--db", str(db),
                 "--", "--label", MARKUP, env=env, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    _as_typed(f"tune 1: rb3d --label {MARKUP} (exhaustive)", proc.stdout, proc.stderr)
    assert f"use it: hympi tune best --tune 1 --db {db}\n" in proc.stdout


def test_run_prints_the_problem_the_app_names_as_typed(tmp_path: Path):
    env = {**fake_bin_dir(tmp_path), **WIDE, "FAKE_PROBLEM": MARKUP}
    proc = hympi("run", "rb3d", "-n", "1", env=env, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    _as_typed(f"rb3d {MARKUP}", proc.stdout, proc.stderr)


def test_a_sweeps_progress_names_a_program_as_typed_on_a_terminal(tmp_path: Path):
    """The progress bar's description ('sweep 1 NAME 1x1 core #1') shows only on a terminal (TTY_COMPATIBLE=1
    tells rich it writes to one)."""
    directory = _markup_dir(tmp_path)
    program = shell_program(directory, PROGRAM_NAME, "echo 'result: 5'\n")
    proc = hympi("sweep", str(program), "--ranks", "1", "--threads", "1", "--repeat", "1", "--no-warmup", "--metric",
                 "result: ([0-9.]+)", "--db", str(directory / "r.db"), "--timeout", "20", "--", MARKUP,
                 env={**WIDE, "TTY_COMPATIBLE": "1"}, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    _as_typed(f"sweep 1 {PROGRAM_NAME} 1x1 core #1", proc.stdout, proc.stderr)
    assert f"results: {directory / 'r.db'}" in proc.stdout


def test_hympi_affinity_names_a_program_as_typed(tmp_path: Path):
    program = shell_program(_markup_dir(tmp_path), PROGRAM_NAME, "exit 0\n")
    proc = hympi("affinity", str(program), env=WIDE, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    _as_typed(f"{PROGRAM_NAME}: where each thread was bound and ran", proc.stdout, proc.stderr)


def test_a_refused_checkpoint_is_named_by_its_path_as_typed(tmp_path: Path):
    """The 2x1 run fails after writing its checkpoint; the next sweep restarts it from the file, which the app
    refuses: hympi says where it moved the file, inside --checkpoint-dir."""
    env = {**fake_bin_dir(tmp_path), **WIDE}
    ckpt = _markup_dir(tmp_path) / "ckpt"
    sweep = ["sweep", "rb3d", "--ranks", "1,2", "--no-warmup", "--db", str(tmp_path / "r.db"),
             "--checkpoint-dir", str(ckpt), "--checkpoint-every", "50", "--", "--fail-at", "2x1"]
    assert hympi(*sweep, env=env, timeout=60).returncode == 1
    (left,) = ckpt.iterdir()
    left.write_text("garbage\n")
    proc = hympi(*sweep, env=env, timeout=60)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    _as_typed(f"the app refused the checkpoint: moved to {left}.rejected;", proc.stdout, proc.stderr)


def test_the_studys_busy_line_names_other_processes_as_they_are(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]):
    """A process may name itself anything (/proc/self/comm): the study's quiet check quotes the busiest. The apps
    asked for are not built (the bin directory holds the fake rb3d only): the study skips them."""
    busy = Load(outside_cores=1.5, top=((MARKUP, 1.5),))
    monkeypatch.setattr(study, "quiet_start", functools.partial(quiet_start, measure=lambda _: busy))
    for key, value in {**fake_bin_dir(tmp_path, with_launchers=False), **WIDE}.items():
        monkeypatch.setenv(key, value)
    for key in ("HYMPI_IGNORE_LOAD", "HYMPI_DISTURBED_ABOVE"):  # the tests' defaults (conftest.py): no quiet check
        monkeypatch.delenv(key)
    code = cli_main(["study", "--quick", "--apps", "stream", "--out", str(tmp_path / "report"),
                     "--db", str(tmp_path / "s.db")])
    out, err = capsys.readouterr()
    assert code == 0, out + err
    _as_typed(f"1.50 cores used by other processes ({MARKUP} 1.50)", out, err)
    assert os.path.exists(tmp_path / "report" / "index.html")


def test_a_path_with_an_emoji_code_is_printed_as_typed(tmp_path: Path):
    """rich replaced ':x:' by an emoji even in lines printed without markup."""
    db = tmp_path / "run:x:1" / "r.db"
    db.parent.mkdir()
    proc = hympi("sweep", "rb3d", "--ranks", "1", "--threads", "1", "--repeat", "1", "--no-warmup", "--db", str(db),
                 env={**fake_bin_dir(tmp_path), **WIDE}, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"results: {db} (hympi report --db {db};" in proc.stdout, proc.stdout
