"""`hympi ARGS` in a process forked from one that has imported hympi already: how conftest.hympi runs the CLI.

Started as `python -c ...`, a call spends ~0.5 s of CPU importing Python, hympi, rich and, for most subcommands,
numpy before it reads its arguments; `make test` makes some 580 such calls, and on two cores its time is CPU
(docs/performance.md, "make test from fresh clones"). A fork server (multiprocessing's, one per pytest worker)
imports the CLI and every subcommand once; each call is then a new process forked from it, with the call's own
arguments, environment, working directory, stdout and stderr, and its exit code (or -signal) as the process's, as
subprocess.run reports them. What a fork cannot show, a fresh interpreter's start-up, test_startup.py checks with
real interpreters; so does any call here that sets Python's own variables (PYTHON*, the locale's LANG and LC_*),
which a forked interpreter has already read.
"""

from __future__ import annotations

import functools
import multiprocessing
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from multiprocessing.context import ForkServerContext
from pathlib import Path

import hympi.cli

PRELOAD = ["hympi.cli", *(f"hympi.cli.{name}" for name in hympi.cli.COMMANDS)]
# Read by the interpreter as it starts (encodings, hash seed, paths, warnings): a call setting one starts a real one.
INTERPRETER_VARIABLES = ("PYTHON", "LANG", "LC_")


def command(args: Sequence[str]) -> list[str]:
    """The command line of a fresh interpreter running `hympi ARGS`, as a user's shell would run it."""
    return [sys.executable, "-c", "import sys; from hympi.cli import main; sys.exit(main())", *args]


@functools.cache
def _context() -> ForkServerContext:
    """This worker's fork server, started at its first call with the CLI imported."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    return context


def _call(args: list[str], env: dict[str, str], cwd: str, stdout: str, stderr: str) -> None:
    """In the forked process: the call's environment, directory and output files, standard input from /dev/null (as
    from a terminal nobody types into, whatever the test harness's standard input is), then the CLI's exit."""
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    nothing = os.open(os.devnull, os.O_RDONLY)
    os.dup2(nothing, 0)
    os.close(nothing)
    for path, fd in ((stdout, 1), (stderr, 2)):
        opened = os.open(path, os.O_WRONLY)
        os.dup2(opened, fd)
        os.close(opened)
    sys.argv = ["-c", *args]
    sys.exit(hympi.cli.main(args))


def _needs_fresh_interpreter(env: dict[str, str]) -> bool:
    """Whether `env` differs from this process's in a variable the interpreter reads as it starts."""
    keys = set(env) | set(os.environ)
    return any(k.startswith(INTERPRETER_VARIABLES) and env.get(k) != os.environ.get(k) for k in keys)


def run(args: Sequence[str], env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    """Runs `hympi ARGS` with environment `env` in this process's working directory, as subprocess.run(...,
    capture_output=True, text=True, timeout=timeout) would: the completed process, or TimeoutExpired after the call
    is killed."""
    cmd = command(args)
    if _needs_fresh_interpreter(env):
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, check=False,
                              stdin=subprocess.DEVNULL)
    with tempfile.TemporaryDirectory(prefix="hympi-call-") as tmp:
        out, err = Path(tmp, "stdout"), Path(tmp, "stderr")
        out.touch()
        err.touch()
        process = _context().Process(target=_call, args=(list(args), env, os.getcwd(), str(out), str(err)))
        process.start()
        process.join(timeout)
        if process.exitcode is None:
            process.kill()
            process.join()
            raise subprocess.TimeoutExpired(cmd, timeout, output=out.read_text(), stderr=err.read_text())
        code = process.exitcode
        process.close()
        # Decoded as text=True decodes a pipe: the locale's encoding, universal newlines.
        return subprocess.CompletedProcess(cmd, code, out.read_text(), err.read_text())
