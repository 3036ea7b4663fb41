"""Every option of every hympi subcommand, and every HYMPI_* variable, given values nobody should type: each call
must answer as the brief's bad input rule says, whatever the option. The tests of each option's own check name the
value and the words; this one finds the option whose check is missing: any value it does not refuse must still end
as a run or a failed run, never as a hang, a traceback or an "internal error (bug)" line, and any value it does
refuse must be one line, exit 2, with nothing launched or written. The odd values are the classes that found such
options before: empty, negative, zero, not a number, beyond 64 bits, longer than a file name, and special files
where a file is wanted."""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import resource
import shutil
import signal
from pathlib import Path

import psutil
import pytest

from clitree import subcommands
from conftest import REPO
from hympi.cli import main
from hympi.contract import contract

# One value per class that found a missing check before (infinities, non-ASCII text and /dev/full found nothing
# these did not, and each value costs ~1,000 calls of `make test`'s time).
ODD_VALUES = ("", "-1", "0", "nan", "99999999999999999999", "x" * 5000,
              # A file that is none where a file is wanted: a read of /dev/zero never ends (nor does that of a FIFO,
              # which each walk adds).
              "/dev/zero")

# What each subcommand needs besides the option under test to get past its own required arguments, and, for those
# that measure, to be quick when the value is taken: one round, no waiting for a quiet machine, only STREAM. The
# option under test comes last, so it overrides a base option of the same name.
BASE: dict[str, tuple[str, ...]] = {
    "run": ("stream",),
    "sweep": ("stream", "--repeat", "1", "--no-warmup", "--ignore-load"),
    "study": ("--quick", "--apps", "stream", "--repeat", "1", "--ignore-load"),
    "tune run": ("stream", "--repeat", "1"),
    "tune predict": ("stream",),
}

# Subcommands that see only hympi-info built: `hympi study` then skips its apps with a note and writes its report,
# 2 s where each taken value would otherwise sweep STREAM over four levels (its launches are sweep's, walked there).
ONLY_TOPOLOGY = ("study",)

# A launcher that fails at once and leaves a mark: a taken value ends as a failed run within a second, and a
# refused one can be shown to have launched nothing.
FAILING_LAUNCHER = "#!/bin/sh\ntouch '{marker}'\nexit 99\n"


def options_taking_values(parser: argparse.ArgumentParser) -> list[str]:
    """The long name of every option of `parser` that takes a value of its own making: not a flag without one, nor
    an option with argparse `choices`, which argparse itself refuses any other value of before hympi runs."""
    return [max(a.option_strings, key=len) for a in parser._actions
            if a.option_strings and a.nargs != 0 and not a.choices and not isinstance(a, argparse._HelpAction)]


SUBCOMMANDS = dict(subcommands())


def test_every_subcommand_is_walked():
    """The walk reaches the nested subcommands and options of each: a change to how they are registered that hid
    them from this test would otherwise leave it passing on nothing."""
    assert {"run", "sweep", "study", "tune run", "tune best", "tune predict", "layout"} <= set(SUBCOMMANDS)
    assert {"--timeout", "--repeat", "--db"} <= set(options_taking_values(SUBCOMMANDS["sweep"]))
    assert sum(len(options_taking_values(p)) for p in SUBCOMMANDS.values()) > 100


# How long one call may take before the walk calls it a hang, and how much more memory than the walk's process
# holds it may take: a read of /dev/zero without the check fills memory at GB/s, and in process it would take the
# test process (and what the OOM killer picks beside it) down; with the limit it is a MemoryError, a bug line.
HANG_S = 60
MEMORY_HEADROOM_BYTES = 2 << 30


class Hung(BaseException):
    """A call that outlived HANG_S. Not an Exception: hympi's entry point turns those into its one-line bug report."""


def in_this_process(args: tuple[str, ...], env: dict[str, str], timeout_s: int) -> tuple[int, str]:
    """hympi.cli.main(ARGS) in this process with `env` over the environment: (exit code, what it wrote to stderr).
    In process, not forked per call as conftest.hympi runs the CLI: the walk makes ~1,200 calls, and a fork costs
    ~30 ms of the 2-core machine's `make test` each. Hung after `timeout_s` (SIGALRM interrupts a blocked read too)."""
    def hung(signum: int, frame: object) -> None:
        raise Hung
    saved = dict(os.environ)
    previous = signal.signal(signal.SIGALRM, hung)
    data_limit = resource.getrlimit(resource.RLIMIT_DATA)
    stderr = io.StringIO()
    try:
        resource.setrlimit(resource.RLIMIT_DATA,
                           (psutil.Process().memory_info().data + MEMORY_HEADROOM_BYTES, data_limit[1]))
        os.environ.update(env)
        signal.alarm(timeout_s)
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(stderr):
            try:
                code = main(list(args))
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
        resource.setrlimit(resource.RLIMIT_DATA, data_limit)
        os.environ.clear()
        os.environ.update(saved)
    return code, stderr.getvalue()


class Walk:
    """Calls of hympi in an empty working directory with the failing launcher, and what was odd about them."""

    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bin_dir: Path) -> None:
        self.marker = tmp_path / "launched"
        launcher = tmp_path / "mpirun"
        launcher.write_text(FAILING_LAUNCHER.format(marker=self.marker))
        launcher.chmod(0o755)
        self.env = {"HYMPI_MPIRUN": str(launcher), "HYMPI_MPI_FLAVOR": "openmpi", "HYMPI_BIN_DIR": str(bin_dir)}
        self.work = tmp_path / "work"
        self.work.mkdir()
        fifo = tmp_path / "fifo"
        os.mkfifo(fifo)
        self.values = (*ODD_VALUES, str(fifo))
        monkeypatch.chdir(self.work)  # each call runs in the caller's directory: what a refusal writes lands here
        self.odd: list[str] = []

    def call(self, said: str, args: tuple[str, ...], env: dict[str, str]) -> None:
        """Runs `hympi ARGS` with `env` over the walk's; notes a hang, a bug, or a refusal that launched or wrote."""
        try:
            code, stderr = in_this_process(args, {**self.env, **env}, HANG_S)
        except Hung:
            self.odd.append(f"{said}: still running after {HANG_S} s")
            return
        lines = stderr.strip().splitlines()
        written = sorted(p.name for p in self.work.iterdir())
        if code not in (0, 1, 2) or "Traceback" in stderr or "internal error" in stderr:
            self.odd.append(f"{said}: exit {code}, {stderr.strip()[-300:]!r}")
        elif code == 2 and (len(lines) != 1 or self.marker.exists() or written):
            self.odd.append(f"{said}: refused with {len(lines)} lines, launched {self.marker.exists()}, "
                            f"wrote {written[:3]}")
        self.marker.unlink(missing_ok=True)
        for path in self.work.iterdir():
            shutil.rmtree(path) if path.is_dir() else path.unlink()


def built_bin_dir() -> Path:
    """Where the apps under test are (HYMPI_BIN_DIR when a test run points elsewhere, as the MPICH pass does)."""
    return Path(os.environ.get("HYMPI_BIN_DIR") or REPO / "build" / "bin")


@pytest.mark.parametrize("command", sorted(SUBCOMMANDS))
def test_no_odd_value_of_any_option_is_a_bug_a_hang_or_a_refusal_that_acted(command: str, tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch):
    bin_dir = built_bin_dir()
    if command in ONLY_TOPOLOGY:
        (tmp_path / "bin").mkdir()
        (tmp_path / "bin" / "hympi-info").symlink_to(bin_dir / "hympi-info")
        bin_dir = tmp_path / "bin"
    walk = Walk(tmp_path, monkeypatch, bin_dir)
    for option in options_taking_values(SUBCOMMANDS[command]):
        for value in walk.values:
            walk.call(f"hympi {command} {option}={value[:20]!r}",
                      (*command.split(), *BASE.get(command, ()), f"{option}={value}"), {})
    assert not walk.odd, "\n".join(walk.odd)


# Every command checks every variable before it does anything (hympi.cli's dispatch loads the settings); `hympi run`
# then also uses them to launch an app.
ENV_COMMANDS = (("run", "stream"),)


@pytest.mark.parametrize("variable", sorted(o.env for o in contract().options))
def test_no_odd_value_of_any_variable_is_a_bug_a_hang_or_a_refusal_that_acted(variable: str, tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch):
    """The same for the HYMPI_* variables contract.toml declares (the config file's keys take the same checks)."""
    walk = Walk(tmp_path, monkeypatch, built_bin_dir())
    for value in walk.values:
        for args in ENV_COMMANDS:
            walk.call(f"{variable}={value[:20]!r} hympi {' '.join(args)}", args, {variable: value})
    assert not walk.odd, "\n".join(walk.odd)
