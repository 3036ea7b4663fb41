"""A program's preparation (--prepare): a command hympi runs before each launch of the program, untimed.

Some programs run only on an input made for the layout: OpenFOAM's solvers on a case that decomposePar split into
as many subdomains as there are ranks, HPL on the P x Q process grid its HPL.dat names. A sweep over rank counts
then needs a step between the layouts that no argument of the program can stand in for (a wrapper can pick a case
prepared by hand for each count, but the preparation is left to the user and unrecorded). The command's words may
name the launch's figures and directory as the program's arguments do (hympi.launch.mpirun.ARG_PLACEHOLDERS:
`foamDictionary -entry numberOfSubdomains -set {ranks} system/decomposeParDict`), and it runs as one process in
the program's working directory, with the program's --env variables, reading /dev/null; its time is not the
run's. Its words are split as a POSIX shell splits them, but no shell runs it: `sh -c '...'` chains two commands.
"""

from __future__ import annotations

import shlex

from hympi.errors import UsageError
from hympi.launch.mpirun import ARG_PLACEHOLDERS, with_placeholders
from hympi.params import Param

# The flag, and a programs file's key without its dashes.
PREPARE_FLAG = "--prepare"


def prepare_words(option: str, text: str) -> tuple[str, ...]:
    """The words of command line `text`, split as a POSIX shell splits them (UsageError naming `option` and the
    text for unbalanced quotes, no words, a character that is not printable text on one line, or a placeholder in
    the command's name, which must name one program for every launch)."""
    if not text.isprintable():
        raise UsageError(f"{option} must be a command on one line of printable text, got {text!r}")
    try:
        words = tuple(shlex.split(text))
    except ValueError as exc:
        raise UsageError(f"{option} {text!r} cannot be split into words: {exc}") from None
    if not words:
        raise UsageError(f"{option} needs a command, got {text!r}")
    named = [f"{{{name}}}" for name in ARG_PLACEHOLDERS if f"{{{name}}}" in words[0]]
    if named:
        raise UsageError(f"{option} {text!r}: the command's name {words[0]!r} names {named[0]}, which only its "
                         "arguments may name (the command must be one program, checked before anything runs)")
    return words


def parse_prepare(option: str, text: str) -> str:
    """A command line that splits into words (prepare_words); kept as typed, the sweep's identity."""
    prepare_words(option, text)
    return text


def prepared_command(text: str, ranks: int, threads: int, run_dir: str | None) -> list[str]:
    """The words of preparation `text` for one launch at `ranks` x `threads` with directory `run_dir`."""
    return list(with_placeholders(prepare_words(PREPARE_FLAG, text), ranks, threads, run_dir))


PREPARE = Param(PREPARE_FLAG.removeprefix("--"), PREPARE_FLAG,
                "a command run before each launch of a program, untimed, in its working directory with its --env "
                "variables (one process, no shell; {ranks}, {threads} and {run} replaced as in its arguments): e.g. "
                "the decomposition of an OpenFOAM case into {ranks} subdomains; a preparation that fails fails the "
                "run, which is not launched", parse_prepare, metavar="COMMAND")
