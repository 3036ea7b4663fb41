"""Issue 30, B.1, B.2 and C: whatever bytes a file hympi reads holds, and wherever its output goes, the outcome is
success or one line + exit 2 (nothing launched or written), a closed pipe is a quiet exit, and an error nobody
expected is one line naming it as a bug, never a traceback."""

from __future__ import annotations

import contextlib
import io
import json
import os
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import forkcli
import skips
from conftest import hympi
from fakeapps import fake_bin_dir
from hympi.cli import main
from hympi.cli import tune as tune_command
from hympi.errors import UsageError
from hympi.launch.cvars import load_listing, parse_cvars
from hympi.node_topologies import read_node_topologies
from hympi.place.matrix import read_matrix
from hympi.place.rankfile import read_rankfile
from hympi.settings import read_config
from hympi.tune.space import load_space

REPO = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("HYMPI_BIN_DIR") or REPO / "build" / "bin")
CVARS_FILE = REPO / "tests" / "data" / "mpit-openmpi-4.1.4.json"
CVARS = parse_cvars(CVARS_FILE.read_text())
XML = (REPO / "tests" / "data" / "topologies" / "ci-vm-2core.xml").read_text()
SUMMARY = {"packages": 1, "numa_nodes": 1, "cores": 2, "pus": 2, "caches": [], "hash": "h"}
NODES = json.dumps({"nodes": [{"node": 0, "host": "n0", "ranks": 1, "source": "this", "summary": SUMMARY, "xml": XML}]})
TOPOLOGY = str(REPO / "tests" / "data" / "topologies" / "ci-vm-2core.xml")

# A well-formed file of each kind, which the strategies below damage: random bytes alone rarely get past the
# first check of a reader, a few changed bytes in a good file reach the later ones.
GOOD: dict[str, bytes] = {
    "config": b'bind = "core"\ndist = "scatter"\n',
    "space": (REPO / "bench" / "tune" / "example-space.toml").read_bytes(),
    "rankfile": f"rank 0={socket.gethostname()} slot=0:0\nrank 1={socket.gethostname()} slot=0:1\n".encode(),
    "cvars": CVARS_FILE.read_bytes(),
    "nodes": NODES.encode(),
    "matrix": b"# two ranks\n0 5\n5 0\n",
}
# The hostile cases of issue 30 that must hold whatever Hypothesis draws: Latin-1, a UTF-16 mark, nesting deeper
# than the parsers' stacks (TOML and JSON).
HOSTILE = [b"\xff", b"caf\xe9 = 1\n", b"\xff\xfe{\x00}\x00", b"a = " + b"[" * 50_000, b"[" * 50_000]


@st.composite
def damaged(draw: st.DrawFn, kind: str) -> bytes:
    """GOOD[kind] with one slice replaced by random bytes, or random bytes, or a hostile case."""
    good = GOOD[kind]
    choice = draw(st.integers(0, 3))
    if choice == 0:
        return draw(st.binary(max_size=300))
    if choice == 1:
        return draw(st.sampled_from(HOSTILE))
    start = draw(st.integers(0, len(good)))
    end = draw(st.integers(start, min(len(good), start + 8)))
    return good[:start] + draw(st.binary(min_size=1, max_size=8)) + good[end:]


PROPERTY = settings(max_examples=40, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# --- the readers themselves: a value or UsageError with one line ----------------------------------------------------
READERS: dict[str, Callable[[Path], object]] = {
    "config": read_config,
    "space": lambda path: load_space(path, CVARS),
    "rankfile": read_rankfile,
    "cvars": lambda path: load_listing(str(path)),
    "nodes": lambda path: read_node_topologies(str(path)),
    "matrix": read_matrix,
}


@contextlib.contextmanager
def file_holding(data: bytes) -> Iterator[Path]:
    """A temporary file holding `data`."""
    with tempfile.TemporaryDirectory(prefix="hympi-bytes-") as tmp:
        path = Path(tmp) / "input"
        path.write_bytes(data)
        yield path


def _reader_property(kind: str, data: bytes) -> None:
    with file_holding(data) as path:
        try:
            READERS[kind](path)
        except UsageError as exc:
            assert "\n" not in str(exc), str(exc)


@pytest.mark.parametrize("kind", sorted(READERS))
def test_a_reader_returns_or_names_the_bad_input_in_one_line(kind: str):
    @PROPERTY
    @given(damaged(kind))
    @example(GOOD[kind])
    @example(GOOD[kind] + b"\n\xc3\x28\n")
    def check(data: bytes) -> None:
        _reader_property(kind, data)

    check()


@pytest.mark.parametrize("kind", sorted(READERS))
def test_a_byte_that_is_not_utf8_names_the_file_and_where(kind: str):
    with file_holding(GOOD[kind] + b"\n\xe9\n") as path, pytest.raises(UsageError) as caught:
        READERS[kind](path)
    assert str(path) in str(caught.value)
    if kind != "matrix":  # the matrix reader streams its lines and says only "not UTF-8 text"
        assert "is not UTF-8 text: byte 0xe9 on line" in str(caught.value)


# --- the whole command line, in this process: exit 0, or exit 2 with one line and nothing written ------------------
def _fake_bin(folder: Path) -> Path:
    """A bin dir whose hympi-rb3d is a script that accepts anything (tune run checks only that it is there)."""
    bin_dir = folder / "bin"
    bin_dir.mkdir()
    app = bin_dir / "hympi-rb3d"
    app.write_text("#!/bin/sh\nexit 0\n")
    app.chmod(0o755)
    (bin_dir / "hympi-info").symlink_to(BIN / "hympi-info")
    return bin_dir


COMMANDS: dict[str, Callable[[Path, Path], list[str]]] = {
    "config": lambda f, d: ["--config", str(f), "config"],
    # --max-runs 0: a space that parses is refused next (exit 2), so no tune is ever started.
    "space": lambda f, d: ["tune", "run", "rb3d", "--space", str(f), "--cvars", str(CVARS_FILE), "--max-runs", "0",
                           "--db", str(d / "r.db")],
    "rankfile": lambda f, d: ["layout", "--nodes", "1", "--ranks-per-node", "2", "--rankfile", str(f),
                              "--for", "openmpi4", "--topology", TOPOLOGY],
    "cvars": lambda f, d: ["tune", "params", "--json", "--cvars", str(f)],
    "nodes": lambda f, d: ["place", "--matrix", str(d / "m.txt"), "--node-topologies", str(f)],
    "matrix": lambda f, d: ["place", "--matrix", str(f), "--topology", TOPOLOGY],
}


def _tree(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file under `folder` with its size and modification time."""
    return {str(p.relative_to(folder)): (p.lstat().st_size, p.lstat().st_mtime_ns) for p in folder.rglob("*")}


def run_in_process(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, str]:
    """main(argv) in `cwd` with `env` added; (exit code, stderr). os.environ is restored (--config sets it)."""
    saved = dict(os.environ)
    err = io.StringIO()
    try:
        os.environ.update(env)
        with contextlib.chdir(cwd), contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = main(argv)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return code, err.getvalue()


# layout, place and the machine check of tune run read topologies with the built hympi-info.
needs_info = skips.needs(skips.Reason.NOT_BUILT, not skips.missing_binaries("hympi-info"), f"hympi-info in {BIN}")


def _cli_property(kind: str, data: bytes) -> None:
    with tempfile.TemporaryDirectory(prefix="hympi-cli-") as tmp:
        folder = Path(tmp)
        bin_dir = _fake_bin(folder)
        (folder / "m.txt").write_text("0 5\n5 0\n")
        marker = folder / "launched"
        launcher = folder / "mpirun"
        # A --version probe (which launcher is this?) is not a launch.
        launcher.write_text(f'#!/bin/sh\n[ "$1" = --version ] && echo "mpirun (Open MPI) 4.1.4" && exit 0\n'
                            f"touch {marker}\nexit 0\n")
        launcher.chmod(0o755)
        path = folder / "input"
        path.write_bytes(data)
        before = _tree(folder)
        code, stderr = run_in_process(COMMANDS[kind](path, folder), folder,
                                      {"HYMPI_BIN_DIR": str(bin_dir), "HYMPI_MPIRUN": str(launcher),
                                       "HYMPI_MPI_FLAVOR": "openmpi"})
        assert code in (0, 2), stderr
        assert not marker.exists(), "a launcher was started"
        if code == 2:
            lines = stderr.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith("hympi: error: "), stderr
            assert _tree(folder) == before, "bad input wrote a file"


@needs_info
@pytest.mark.parametrize("kind", sorted(COMMANDS))
def test_the_command_line_succeeds_or_refuses_in_one_line_and_writes_nothing(kind: str):
    @PROPERTY
    @given(damaged(kind))
    @example(GOOD[kind])
    @example(b"\xff" + GOOD[kind])
    def check(data: bytes) -> None:
        _cli_property(kind, data)

    check()


# --- the real entry point, as a user runs it -----------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["config", "cvars"])
def test_a_non_utf8_file_is_one_line_and_exit_2_not_a_traceback(kind: str, tmp_path: Path):
    bad = tmp_path / "bad"
    bad.write_bytes(GOOD[kind] + b"# caf\xe9\n")
    args = ["--config", str(bad), "config"] if kind == "config" else ["tune", "params", "--cvars", str(bad)]
    proc = hympi(*args)
    assert proc.returncode == 2, proc.stderr
    what = "config file" if kind == "config" else "control variables file"
    line = GOOD[kind].count(b"\n") + 1
    assert proc.stderr == f"hympi: error: {what} {bad} is not UTF-8 text: byte 0xe9 on line {line}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad"]


def test_an_apps_error_that_is_not_utf8_is_echoed_in_one_line(tmp_path: Path):
    """The app validates its own arguments (--validate-ranks) and echoes the user's bytes back in its error."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    app = bin_dir / "hympi-rb3d"
    app.write_bytes(b"#!/bin/sh\nprintf 'hympi-rb3d: error: --data /tmp/caf\\351.json: no such file\\n' >&2\nexit 2\n")
    app.chmod(0o755)
    (bin_dir / "hympi-info").symlink_to(BIN / "hympi-info")
    marker = tmp_path / "launched"
    launcher = tmp_path / "mpirun"
    launcher.write_text(f"#!/bin/sh\ntouch {marker}\nexit 0\n")
    launcher.chmod(0o755)
    proc = hympi("run", "rb3d", "--", "--data", "x", env={"HYMPI_BIN_DIR": str(bin_dir), "HYMPI_MPIRUN": str(launcher),
                                                          "HYMPI_MPI_FLAVOR": "openmpi"})
    if not (BIN / "hympi-info").is_file():
        skips.skip(skips.Reason.NOT_BUILT, f"hympi-info in {BIN}")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == "hympi: error: --data /tmp/caf\N{REPLACEMENT CHARACTER}.json: no such file"
    assert not marker.exists()


HYMPI = forkcli.command([])
PRINTING = {"layout": ["layout", "--nodes", "64", "--ranks-per-node", "2", "--for", "openmpi4", "--topology", TOPOLOGY],
            "tune-params-json": ["tune", "params", "--json", "--cvars", str(CVARS_FILE)],
            "sweep-dry-run": ["sweep", "rb3d", "--ranks", "1,2", "--threads", "1", "--repeat", "40", "--dry-run"],
            # A rich table: rich's own answer to a closed pipe is exit 1.
            "config": ["config"]}


@needs_info
@pytest.mark.parametrize("name", sorted(PRINTING))
def test_output_into_a_closed_pipe_ends_hympi_quietly_with_141(name: str, tmp_path: Path):
    """stdout is a pipe whose reader has already gone, so hympi's first write fails whatever the timing."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run([*HYMPI, *PRINTING[name]], stdout=write_end, stderr=subprocess.PIPE, text=True,
                              timeout=120, env={**os.environ, **fake_bin_dir(tmp_path)}, check=False)
    finally:
        os.close(write_end)
    assert (proc.returncode, proc.stderr) == (141, "")
    assert not (tmp_path / "launches.log").exists() and not (tmp_path / "hympi-results.db").exists()


@needs_info
def test_hympi_layout_piped_to_head_prints_no_traceback(tmp_path: Path):
    """The case of the issue as a shell runs it: head exits after one line. 2000 nodes print ~100 KB, more than a
    pipe holds, so hympi is still writing when head has gone."""
    head = subprocess.Popen(["head", "-1"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert head.stdin is not None and head.stdout is not None
    args = ["layout", "--nodes", "2000", "--ranks-per-node", "2", "--for", "openmpi4", "--topology", TOPOLOGY]
    proc = subprocess.run([*HYMPI, *args], stdout=head.stdin, stderr=subprocess.PIPE, text=True, timeout=120,
                          check=False)
    head.stdin.close()  # hympi is done: head sees the end of its input, if it is still reading
    first = head.stdout.read()
    head.wait(timeout=30)
    assert first.count(b"\n") == 1
    assert (proc.returncode, proc.stderr) == (141, "")


def test_an_unexpected_error_is_one_line_naming_a_bug(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture):
    def broken(args: object) -> int:
        raise ZeroDivisionError("division by zero\nsecond line")

    monkeypatch.setitem(tune_command.SUBCOMMANDS, "params", broken)
    monkeypatch.delenv("HYMPI_DEBUG", raising=False)
    assert main(["tune", "params", "--cvars", str(CVARS_FILE)]) == 1
    err = capsys.readouterr().err
    assert err == "hympi: internal error (bug): ZeroDivisionError: division by zero second line " \
                  "(HYMPI_DEBUG=1 shows the traceback)\n"
    monkeypatch.setenv("HYMPI_DEBUG", "1")
    assert main(["tune", "params", "--cvars", str(CVARS_FILE)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last):") and "in broken" in err
    assert err.splitlines()[-1] == "hympi: internal error (bug): ZeroDivisionError: division by zero second line"


def test_an_unexpected_error_in_a_real_process_prints_no_traceback(tmp_path: Path):
    """Through a real process: a subcommand that raises what nobody catches (injected by sitecustomize) is one line."""
    (tmp_path / "sitecustomize.py").write_text(
        "from hympi.cli import tune\n"
        "def _broken(args):\n    raise RuntimeError('injected')\n"
        "tune.SUBCOMMANDS['params'] = _broken\n")
    env = {"PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path]), "HYMPI_DEBUG": ""}
    proc = hympi("tune", "params", "--cvars", str(CVARS_FILE), env=env)
    assert proc.returncode == 1
    assert proc.stderr == "hympi: internal error (bug): RuntimeError: injected (HYMPI_DEBUG=1 shows the traceback)\n"
