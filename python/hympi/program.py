"""A program of the user's own as the subject of a run, sweep, study or tune: an executable hympi did not build.

It is named by a path (anything containing '/': `./solver`, `/usr/bin/lmp`), so it can never be taken for one of
hympi's apps, whose names hold no '/'. Its arguments pass through unchanged but for `{threads}` and `{ranks}`, each
launch's figures, and `{run}`, a new empty directory of each launch's own (RUN_DIRS;
hympi.launch.mpirun.ARG_PLACEHOLDERS). Its figure of merit is the job's wall time as hympi measures it (lower is
better) unless --metric gives a regular expression whose first group captures a number from its output, with
--metric-unit and --better higher|lower, or whose groups named d, h, m and s capture the parts of a time printed in
parts ('1m12.34s'), in seconds, lower is better unless said otherwise. --verify gives an expression that must match
the output, else the run failed with that reason; without it, a zero exit status is the only check there is. A
program that writes its results into a file names it with --output-file: both expressions then search what each run
wrote into that file (hympi.filemark) before its output. A program whose input must match the layout (a case
decomposed for as many ranks) names a command that makes it before each launch with --prepare (hympi.prepare).

The database keys a program's sweeps by its absolute path, the sha256 of its file and its arguments: a rebuilt
binary is a new program, never resumed into the old one's runs.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import os
import re
import shlex
import shutil
import signal
import stat
import subprocess
import time
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hympi.apps import APPS
from hympi.capture import omitted_note, tail_lines
from hympi.errors import HympiError, UsageError
from hympi.filemark import FileText, mark_file, resolve_in, text_written_since
from hympi.jsontypes import JsonObject
from hympi.launch.mpirun import (
    MPI_FLAVORS,
    RUN_DIR_PLACEHOLDER,
    LaunchSpec,
    RunOutcome,
    mpi_env_name,
    run_command,
)
from hympi.limits import check_path
from hympi.numbers import printed_float
from hympi.outputs import write_problem
from hympi.params import Param, choice, refuse_repeated
from hympi.paths import program_named
from hympi.prepare import PREPARE, prepare_words, prepared_command
from hympi.probe import Env, ProbeProcess, apply_probe, launch_probed
from hympi.result import INVERSE_UNIT
from hympi.textfile import file_problem, read_utf8

# Which way a figure of merit improves.
BETTER = ("higher", "lower")
# The default figure of merit: the job's wall time in seconds, as hympi measured it, recorded like every
# lower-is-better figure as its inverse (hympi.result.INVERSE_UNIT) so that every rate grows with quality.
WALL_TIME_UNIT = INVERSE_UNIT.format("s")
# Output lines kept in the reason of a run whose metric or verification was not found.
SHOWN_LINES = 5
# What separates a failed run's reason from the program's last lines (SHOWN_LINES, joined by LINE_JOINT).
LAST_LINES = "; its last lines: "
LINE_JOINT = " | "
# The longest one search of --metric or --verify may take over a run's output. A plain expression searches the
# 3 x 32 MiB hympi keeps of an output in seconds (6.5 s for '(\d+)\s+\w+\s+ms' that finds nothing); one whose
# backtracking grows exponentially ('(a+)+b' over a line of 40 'a') would hold hympi for hours after the run ended,
# and --timeout bounds only the run.
SEARCH_SECONDS = 60.0
# The parts of a time a program prints in parts (Quantum ESPRESSO's '1m12.34s WALL', ' 2h 5m WALL', ' 1d 3h15m
# WALL'), named as --metric's groups that capture them, and their length in seconds: one group captures one number,
# and '([0-9.]+)s WALL' alone would read 1m12.34s as 12.34 without a word.
DURATION_PARTS = {"d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0}
DURATION_UNIT = "s"
# Units that make a --metric a time, which is better the shorter it is: without --better, the default 'higher' read
# NWChem's 'wall: 4.4s' as better than 'wall: 2.6s' and recommended the slowest layout.
TIME_UNITS = frozenset({"s", "sec", "secs", "second", "seconds", "ms", "us", "\u00b5s", "ns", "min", "mins", "minute",
                        "minutes", "h", "hr", "hrs", "hour", "hours"})


def refuse_program_flags(subject: str, values: Mapping[str, object]) -> None:
    """UsageError when any of PROGRAM's flags was given (`values`: the resolved ones) for `subject`, one of hympi's
    apps: they describe a program of the user's own."""
    given = [p.flag for p in PROGRAM if values.get(p.name) is not None]
    if given:
        raise UsageError(f"{given[0]} is for a program of your own (named by its path); {subject} is not one")


def quoted(pattern: str) -> str:
    """A regular expression as the user typed it, between single quotes (shell-quoted when it holds one), for
    messages: repr() would double every backslash ('\\\\s+' for '\\s+'), which reads as another expression."""
    return shlex.quote(pattern) if "'" in pattern else f"'{pattern}'"


def parse_pattern(option: str, text: str) -> str:
    """A regular expression that compiles (--verify)."""
    try:
        re.compile(text)
    except re.error as exc:
        raise UsageError(f"{option} '{text}' is not a regular expression: {exc}") from None
    return text


def parse_metric(option: str, text: str) -> str:
    """A regular expression that compiles, with a first group to capture the number, or groups named after
    DURATION_PARTS (--metric)."""
    if re.compile(parse_pattern(option, text)).groups < 1:
        raise UsageError(f"{option} '{text}' has no group: put the number it captures in parentheses, "
                         r"e.g. '([0-9.]+) timesteps/s', or a time's parts in groups named d, h, m and s, e.g. "
                         r"'(?:(?P<m>\d+)m)?(?P<s>[0-9.]+)s WALL'")
    return text


def duration_parts(metric: str) -> tuple[str, ...]:
    """The groups of expression `metric` that capture the parts of a time (DURATION_PARTS), () for none: its first
    group captures the figure of merit then."""
    named = re.compile(metric).groupindex
    return tuple(part for part in DURATION_PARTS if part in named)


def captured_merit(metric: str, found: re.Match[str]) -> float:
    """The figure of merit a match `found` of --metric `metric` captured: the seconds its time's parts add up to, or
    the number its first group captured, as a program prints it (printed_float); ValueError saying what it captured
    otherwise."""
    parts = duration_parts(metric)
    pieces = [(part, found.group(part)) for part in parts] if parts else [("", found.group(1))]
    if all(text is None for _, text in pieces):
        raise ValueError(f"matched {found.group(0)[:200]!r} but captured nothing in "
                         + (f"its groups {', '.join(parts)}" if parts else "its first group"))
    seconds = 0.0
    for part, text in pieces:
        if text is None:
            continue
        try:
            number = printed_float(text)
        except ValueError:
            raise ValueError(f"captured {text!r}" + (f" in group {part}" if part else "") + ", not a number") from None
        if not parts:
            return number
        seconds += number * DURATION_PARTS[part]
    return seconds


def parse_unit(option: str, text: str) -> str:
    """A unit: printable, one line, not empty."""
    if not text.strip() or not text.isprintable():
        raise UsageError(f"{option} must be a printable unit such as 'timesteps/s', got {text!r}")
    return text.strip()


ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Variables a program's launch sets itself: the layout's (threads, places, binding) and hympi's own (HYMPI_*), the
# MPI library's parameters (--mpi-param: checked against the library's control variables) and the probe's preload.
LAUNCH_SETS = tuple(LaunchSpec("program", 1, 1, binder="launcher").app_env())
MPI_PARAM_PREFIXES = tuple(mpi_env_name("", flavor) for flavor in MPI_FLAVORS)


def _set_by_hympi(name: str) -> str | None:
    """Why hympi, not --env, sets variable `name` for a program's ranks; None when --env may."""
    if name in LAUNCH_SETS or name.startswith("HYMPI_"):
        return "hympi sets it for every launch (from --threads, --bind and its own settings)"
    if name.startswith(MPI_PARAM_PREFIXES):
        return "an MPI parameter: give it with --mpi-param, which checks it against the library"
    if name == "LD_PRELOAD":
        return "the probe preloads itself there; a preload exported before hympi runs is kept after it"
    return None


def parse_env(option: str, text: str) -> str:
    """'NAME=VALUE', a variable a program's ranks get: NAME a variable name hympi does not set itself, VALUE
    printable text on one line (possibly empty)."""
    name, equals, value = text.partition("=")
    if not equals or not ENV_NAME.fullmatch(name):
        raise UsageError(f"{option} needs NAME=VALUE, NAME a letter or _ then letters, digits or _, got {text!r}")
    if not value.isprintable():
        raise UsageError(f"{option} {name}: its value must be printable text on one line, got {value!r}")
    why = _set_by_hympi(name)
    if why is not None:
        raise UsageError(f"{option} {name}: {why}")
    return text


METRIC = Param("metric", "--metric", "a program's figure of merit: a regular expression whose first group captures "
               "a number from its output, or whose groups named d, h, m and s capture the parts of a time "
               "(default: the job's wall time)", parse_metric, metavar="REGEX")
METRIC_UNIT = Param("metric_unit", "--metric-unit", "the unit of --metric's number (e.g. timesteps/s)", parse_unit,
                    metavar="UNIT")
BETTER_WAY = Param("better", "--better", "whether a higher or a lower --metric is better (default higher; lower for "
                   "a time: --metric-unit s, ms, min or h, or groups named d, h, m and s)",
                   choice(BETTER, "direction"), metavar="higher|lower")
VERIFY = Param("verify", "--verify", "a program's verification: a regular expression its output must match, else the "
               r"run failed (e.g. 'Verification\s*=\s*SUCCESSFUL')", parse_pattern, metavar="REGEX")
OUTPUT_FILE = Param("output_file", "--output-file", "a file a program writes its results into (relative to where it "
                    "runs): --metric and --verify search what each run wrote into it, then the output",
                    check_path, metavar="FILE")
STDIN = Param("stdin", "--stdin", "a file every run of a program reads as its standard input (relative to where it "
              "runs), from its start (default: run and affinity pass hympi's own standard input on, as mpirun does; "
              "each run of a sweep, study or tune reads /dev/null)", check_path, metavar="FILE")
ENV = Param("env", "--env", "an environment variable every rank of a program gets (repeatable): recorded with the "
            "sweep, and set for ranks on other nodes too", parse_env, metavar="NAME=VALUE", repeated=True)
# Where the launches whose arguments name RUN_DIR_PLACEHOLDER get their own directories: in the program's working
# directory, beside what its runs write there by relative paths. Kept after the run: they hold its outputs.
RUN_DIRS = "hympi-runs"
# Which launches keep their RUN_DIRS directory: every one (the default), or only those that did not end ok. A
# preparation that copies a case into {run} leaves one copy a launch: a long tune of a large case fills the disk
# with copies of what the ok runs left, while a failed run's files are what its user will want to read (ReFrame
# keeps the stage directories of failed tests only, for the same reason).
KEEP_ALL_RUN_DIRS = "all"
KEEP_FAILED_RUN_DIRS = "failed"
KEEP_RUN_DIRS = Param("keep_run_dirs", "--keep-run-dirs", "which launches keep their {run} directory: all (default) "
                      "or failed (an ok run's is removed once it is recorded; a failed, timed-out or stopped launch "
                      "keeps its, with what the program wrote there)",
                      choice((KEEP_ALL_RUN_DIRS, KEEP_FAILED_RUN_DIRS), "choice"), metavar="all|failed")


def _named(param: Param, source: str) -> str:
    """How a message names `param`: by its flag, or by its key when a programs file's entry (`source`) declared it."""
    return f"'{param.name}'" if source else param.flag


# The parameters every command that runs a program takes.
PROGRAM = (METRIC, METRIC_UNIT, BETTER_WAY, VERIFY, OUTPUT_FILE, STDIN, ENV, PREPARE, KEEP_RUN_DIRS)


@dataclass(frozen=True)
class Program:
    """One program: `name` labels it in tables, `path` is its absolute path and `sha256` its file's digest; `metric`
    ("" = wall time), `metric_unit` and `better` say what is measured, `verify` ("" = none) what must be printed;
    `workdir` ("" = hympi's) is where it runs (a programs file's directory, where its inputs are); `output_file`
    ("" = none), relative to it, is a file whose new text each run is judged on before its output; `stdin` ("" =
    none: /dev/null), relative to it too, the file each run reads as its standard input; `env` the variables
    ('NAME=VALUE') every rank of it gets; `prepare` ("" = none) the command run before each launch (hympi.prepare);
    `keep_run_dirs` which launches keep their {run} directory (KEEP_RUN_DIRS)."""

    name: str
    path: str
    sha256: str
    metric: str = ""
    metric_unit: str = ""
    better: str = "higher"
    verify: str = ""
    workdir: str = ""
    output_file: str = ""
    stdin: str = ""
    env: tuple[str, ...] = ()
    prepare: str = ""
    keep_run_dirs: str = KEEP_ALL_RUN_DIRS

    def check(self, source: str = "") -> None:
        """Checks the figure of merit's declarations together (UsageError): a unit or a direction needs --metric;
        an output file needs an expression to search it, and a place where the program can write it. `source`: the
        programs file and entry that declared them ('p.toml: program 'q''), named with their keys instead of the
        flags the user never typed."""
        def named(param: Param) -> str:
            return _named(param, source)

        at = f"{source}: " if source else ""
        if not self.metric and (self.metric_unit or self.better != "higher"):
            given = METRIC_UNIT if self.metric_unit else BETTER_WAY
            raise UsageError(f"{at}{named(given)} needs {named(METRIC)}: without it the figure of merit is the wall "
                             "time")
        for param in PROGRAM:
            value = getattr(self, param.name)
            if value:
                param.check_text(value, at + named(param))
        if self.metric and duration_parts(self.metric) and self.metric_unit not in ("", DURATION_UNIT):
            raise UsageError(f"{at}{named(METRIC_UNIT)} '{self.metric_unit}': {named(METRIC)} {quoted(self.metric)} "
                             f"captures a time in parts (groups {', '.join(duration_parts(self.metric))}), which "
                             f"hympi adds up in seconds: give {DURATION_UNIT} or no unit")
        refuse_repeated(at + named(ENV), [text.partition("=")[0] for text in self.env])
        if self.prepare:
            self.check_prepare(at + named(PREPARE))
        if self.stdin:
            source_file = resolve_in(self.workdir, self.stdin)
            problem = file_problem(source_file)  # a FIFO would be drained by the first run, /dev/null is none
            if problem is not None and source_file == Path(os.devnull):
                problem += f": leave {named(STDIN)} out, every run reads {os.devnull} without it"
            if problem is not None:
                raise UsageError(f"{at}{named(STDIN)} {source_file} {problem}")
        if self.output_file:
            if not (self.metric or self.verify):
                raise UsageError(f"{at}{named(OUTPUT_FILE)} needs {named(METRIC)} or {named(VERIFY)}: they search "
                                 "the file")
            path = self.output_path()
            problem = file_problem(path)
            if RUN_DIR_PLACEHOLDER in self.output_file:
                pass  # in the launch's own directory, made just before it: nothing there to check yet
            elif problem not in (None, "does not exist"):  # a FIFO or a device would be read for ever
                raise UsageError(f"{at}{named(OUTPUT_FILE)} {path} {problem}")
            elif not path.parent.is_dir():
                raise UsageError(f"{at}{named(OUTPUT_FILE)} {path}: directory {path.parent} does not exist")

    def check_prepare(self, option: str) -> None:
        """Checks the program the preparation runs, a path (relative to the working directory) as the program itself
        is checked, or a name on PATH (UsageError naming `option`)."""
        name = prepare_words(option, self.prepare)[0]
        if not program_named(name):
            if shutil.which(name) is None:
                raise UsageError(f"{option}: program {name} is not on PATH")
            return
        try:
            locate(name, Path(self.workdir) if self.workdir else None)
        except UsageError as exc:
            raise UsageError(f"{option}: {exc}") from None

    def prepared(self, ranks: int, threads: int, run_dir: str | None) -> list[str]:
        """The preparation's command for one launch at `ranks` x `threads` with directory `run_dir` (None: {run} as
        typed), its program by its absolute path where a path names it (relative to where it runs, whatever Popen
        would make of a relative name and a working directory)."""
        command = prepared_command(self.prepare, ranks, threads, run_dir)
        if program_named(command[0]):
            command[0] = str(resolve_in(self.workdir, command[0]))
        return command

    def flags(self) -> list[str]:
        """The flags that declare this program again: its figure of merit, check, output file, standard input,
        variables, preparation and the run directories kept (PROGRAM's; a direction only with its metric, the run
        directories only when not all kept), as `hympi run PATH` and `hympi sweep PATH` take them."""
        return [part for param in PROGRAM if (value := getattr(self, param.name))
                and (self.metric or param is not BETTER_WAY)
                and (param is not KEEP_RUN_DIRS or value != KEEP_ALL_RUN_DIRS) for part in param.spell(value)]

    def environment(self) -> tuple[tuple[str, str], ...]:
        """`env` as (name, value) pairs, as a launch sets them."""
        return tuple((name, value) for name, _, value in (text.partition("=") for text in self.env))

    def output_path(self) -> Path:
        """The output file where the program writes it (relative to its working directory)."""
        return resolve_in(self.workdir, self.output_file)

    def new_run_dir(self, ranks: int, threads: int) -> Path:
        """A new, empty directory for one launch at `ranks` x `threads`: RUN_DIRS/<program>-<R>x<T>-<UTC time>, with
        -2, -3, ... after a name already taken (a second launch in the same second). HympiError when it cannot be
        made (a full disk)."""
        root = resolve_in(self.workdir, RUN_DIRS)
        stem = f"{Path(self.path).name}-{ranks}x{threads}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}"
        try:
            root.mkdir(exist_ok=True)
            for number in itertools.count(1):
                path = root / (stem if number == 1 else f"{stem}-{number}")
                try:
                    path.mkdir()
                    return path
                except FileExistsError:
                    continue
        except OSError as exc:
            raise HympiError(f"cannot make the run's directory ({RUN_DIR_PLACEHOLDER}) in {root}: "
                             f"{exc.strerror or exc}") from None
        raise AssertionError("itertools.count ended")

    def run_dir_namers(self, args: Sequence[str], source: str = "") -> list[str]:
        """What names RUN_DIR_PLACEHOLDER for a launch with arguments `args`: 'the arguments', --output-file,
        --prepare, in that order (by their keys when a programs file's entry, `source`, declared them); [] for
        none."""
        sources = (("the arguments", tuple(args)), (_named(OUTPUT_FILE, source), (self.output_file,)),
                   (_named(PREPARE, source), (self.prepare,)))
        return [what for what, texts in sources if any(RUN_DIR_PLACEHOLDER in text for text in texts)]

    def names_run_dir(self, args: Sequence[str]) -> bool:
        """Whether a launch with arguments `args` gets a directory of its own: they, the output file or the preparation
        name RUN_DIR_PLACEHOLDER (`-o {run}/out.log --output-file {run}/out.log`: each run's output in a file of its
        own)."""
        return bool(self.run_dir_namers(args))

    def launch_dir(self, args: Sequence[str], ranks: int, threads: int) -> str | None:
        """The directory of one launch with arguments `args` at `ranks` x `threads`: a new one (new_run_dir) when it
        names one (names_run_dir), else None."""
        return str(self.new_run_dir(ranks, threads)) if self.names_run_dir(args) else None

    def after_launch(self, run_dir: str | None, ok: bool) -> None:
        """Removes the directory `run_dir` of a launch that ended `ok` when the program keeps only failed launches'
        (KEEP_RUN_DIRS). One it cannot remove stays, as every one would without the option: nothing is lost by
        it."""
        if run_dir is not None and ok and self.keep_run_dirs == KEEP_FAILED_RUN_DIRS:
            shutil.rmtree(run_dir, ignore_errors=True)

    def in_run_dir(self, run_dir: str | None) -> Program:
        """The program as one launch sees it: its output file in that launch's directory `run_dir`, when it names
        RUN_DIR_PLACEHOLDER."""
        if run_dir is None or RUN_DIR_PLACEHOLDER not in self.output_file:
            return self
        return dataclasses.replace(self, output_file=self.output_file.replace(RUN_DIR_PLACEHOLDER, run_dir))

    def check_run_dirs(self, args: Sequence[str], source: str = "") -> None:
        """UsageError naming what names RUN_DIR_PLACEHOLDER (the arguments, the output file or the preparation) when
        its directories cannot be made in the program's working directory, or, when nothing names it, for a
        KEEP_RUN_DIRS other than the default (checked before anything is launched or recorded); `source`: the
        programs file's entry that declared them, named with their keys (as Program.check)."""
        namers = self.run_dir_namers(args, source)
        at = f"{source}: " if source else ""
        if not namers:
            if self.keep_run_dirs != KEEP_ALL_RUN_DIRS:
                raise UsageError(f"{at}{_named(KEEP_RUN_DIRS, source)} {self.keep_run_dirs}: neither the arguments, "
                                 f"{_named(OUTPUT_FILE, source)} nor {_named(PREPARE, source)} name "
                                 f"{RUN_DIR_PLACEHOLDER}, so no launch has a directory of its own")
            return
        named = namers[0]
        root = resolve_in(self.workdir, RUN_DIRS)
        if root.exists() and not root.is_dir():
            raise UsageError(f"{at}{RUN_DIR_PLACEHOLDER} in {named}: {root} is not a directory")
        where = root if root.is_dir() else root.parent
        if (why := write_problem(where)) is not None:
            raise UsageError(f"{at}{RUN_DIR_PLACEHOLDER} in {named}: no directory can be made in {where} ({why})")

    def prepare_path(self) -> Path | None:
        """The file of the preparation's program when a path names it (`./decompose {ranks}`), None for none or a
        name on PATH (`decomposePar`, `sh -c '...'`: the system's, not the user's to edit)."""
        if not self.prepare:
            return None
        name = prepare_words(PREPARE.flag, self.prepare)[0]
        return resolve_in(self.workdir, name) if program_named(name) else None

    def stdin_path(self) -> Path | None:
        """The file every run reads as its standard input (relative to its working directory), None for none."""
        return resolve_in(self.workdir, self.stdin) if self.stdin else None

    @property
    def unit(self) -> str:
        """The unit of the rate the run's record carries (larger is better, as for every app)."""
        if not self.metric:
            return WALL_TIME_UNIT
        unit = self.metric_unit or "units"
        return unit if self.better == "higher" else INVERSE_UNIT.format(unit)

    def summary(self) -> str:
        """One line for a sweep's header: what is measured and checked."""
        merit = (f"figure of merit {quoted(self.metric)} ({self.metric_unit or 'no unit'}, {self.better} is better)"
                 if self.metric else "figure of merit: wall time")
        check = f"verified by {quoted(self.verify)}" if self.verify else "verified by its exit status only"
        where = f", searched in {self.output_file} first" if self.output_file else ""
        reads = f", reading {self.stdin} as its standard input" if self.stdin else ""
        env = f", with {' '.join(self.env)}" if self.env else ""
        prepared = f", prepared by {quoted(self.prepare)} before each launch" if self.prepare else ""
        return f"{self.path} (sha256 {self.sha256[:12]}): {merit}, {check}{where}{reads}{env}{prepared}"


def file_digest(path: Path) -> str:
    """sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# What changes when a file is rewritten or replaced: device, inode, size and modification and change times.
Signature = tuple[int, int, int, int, int]


def file_signature(path: Path) -> Signature:
    """`path`'s Signature (OSError when it is gone)."""
    info = os.stat(path)
    return info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns


def watch_file(path: Path, sha256: str) -> Callable[[], str | None]:
    """A check, for before each launch of a sweep, that says how file `path` is no longer the file of digest
    `sha256` ('has changed', 'is gone'), None while it is: a binary rebuilt, or an input edited, while a sweep goes
    on would have its later runs recorded as measurements of the old one. It reads the digest again only when a
    stat says the file was touched (the first check reads it), so a check costs a stat."""
    seen: list[Signature] = []

    def check() -> str | None:
        try:
            now = file_signature(path)
        except OSError:
            return "is gone"
        if seen and seen[0] == now:
            return None
        try:
            same = file_digest(path) == sha256
        except OSError as exc:
            return f"cannot be read ({exc.strerror or exc})"
        if not same:
            return f"has changed (its sha256 is no longer {sha256[:12]}...)"
        seen[:] = [now]
        return None

    return check


def locate(text: str, base: Path | None = None) -> Path:
    """The absolute path of program `text` (relative to `base`, else to the working directory); UsageError when it is
    longer than Linux allows (hympi.limits.check_path: a stat of it raised ENAMETOOLONG, an internal error), missing,
    not a regular file, or not executable."""
    check_path("program", text)
    path = Path(text).expanduser()
    if not path.is_absolute():
        path = (base or Path.cwd()) / path
    path = Path(os.path.normpath(path))
    check_path(f"program {text}", str(path))  # where it is: the working directory's path counts too
    if not path.exists():
        raise UsageError(f"program {text}: no such file")
    if not path.is_file():
        raise UsageError(f"program {text} is not a file")
    if not os.access(path, os.X_OK):
        raise UsageError(f"program {text} is not executable (chmod +x {path})")
    problem = interpreter_problem(path)
    if problem is not None:
        raise UsageError(f"program {text}: {problem}")
    return path


# The most of a script's first line the kernel reads for its interpreter (Linux's BINPRM_BUF_SIZE).
SHEBANG_BYTES = 256


def interpreter_problem(path: Path) -> str | None:
    """Why the kernel could not start script `path` ('its interpreter /usr/bin/pyhton3 (line 1) does not exist'),
    None for a script whose interpreter is there or a file that is no script: the launcher would only report it
    after starting the job, in an exit code that reads as a signal (launch.mpirun._NOT_STARTED)."""
    try:
        with path.open("rb") as handle:
            head = handle.read(SHEBANG_BYTES)
    except OSError:  # unreadable: the digest's read names it
        return None
    if not head.startswith(b"#!"):
        return None
    words = head[2:].split(b"\n", 1)[0].split()
    if not words:
        return "its line 1 '#!' names no interpreter"
    interpreter = Path(os.fsdecode(words[0]))
    if not interpreter.is_absolute():  # found from the launch's working directory, if at all: the kernel's to say
        return None
    if not interpreter.is_file():
        return f"its interpreter {interpreter} (line 1) does not exist"
    if not os.access(interpreter, os.X_OK):
        return f"its interpreter {interpreter} (line 1) is not executable"
    return None


# The most of a script hympi reads for a launcher it starts itself: wrappers are a few lines.
WRAPPER_BYTES = 64 * 1024
# A launcher called by a script's line (not its comments): Debian's /usr/bin/mb-mpi (MrBayes) is `exec mpirun
# $MPI_OPTIONS /usr/lib/mrbayes-mpi/mb-mpi "$@"`. Under hympi's launcher each rank starts a job of its own, which Open
# MPI refuses ('mpirun does not support recursive calls') and MPICH runs beside the others.
_LAUNCHER_CALL = re.compile(r"(?:^|[\s;&|`(])(mpirun|mpiexec(?:\.\w+)?|orterun|srun)(?=\s|$)")


def launcher_in_script(path: str) -> str | None:
    """'line 6: exec mpirun ...' where script `path` calls an MPI launcher itself, None for a binary, an unreadable
    file or a script that calls none."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(WRAPPER_BYTES)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    for number, line in enumerate(head.decode(errors="replace").splitlines()[1:], 2):
        code = line.split("#", 1)[0]
        if _LAUNCHER_CALL.search(code):
            return f"line {number}: {code.strip()[:120]}"
    return None


def program_of(text: str, merit: Mapping[str, object] | None = None, name: str = "", base: Path | None = None,
               workdir: str = "", source: str = "") -> Program:
    """The checked Program at path `text` (UsageError naming the bad value before anything runs); `merit` holds the
    values of PROGRAM's declarations given (metric, metric_unit, better, verify, output_file, stdin, env; absent:
    the default); `source`: the programs file's entry that gave them (Program.check)."""
    try:
        path = locate(text, base)
    except UsageError as exc:  # a programs file's entry: named with it, as its keys' values are
        raise UsageError(f"{source}: {exc}" if source else str(exc)) from None
    try:
        digest = file_digest(path)
    except OSError as exc:
        raise UsageError(f"program {text} cannot be read ({exc.strerror or exc})") from None
    given: dict[str, Any] = {}
    for param in PROGRAM:
        value = merit.get(param.name) if merit else None
        if value:
            given[param.name] = tuple(map(str, value)) if isinstance(value, tuple) else str(value)
    program = Program(name=name or path.name, path=str(path), sha256=digest, workdir=workdir, **given)
    program.check(source)
    if duration_parts(program.metric):  # a time in parts: added up in seconds
        program = dataclasses.replace(program, metric_unit=DURATION_UNIT)
    if program.metric_unit in TIME_UNITS and "better" not in given:  # a time: shorter is better unless said otherwise
        program = dataclasses.replace(program, better="lower")
    return program


def refuse_redirected_stdin(program: Program) -> None:
    """UsageError for a program that a command runs many times (sweep, study, tune) while hympi's own standard input
    is redirected from a file and --stdin names none: only the first run would read it (`lmp < in.melt`: every
    other LAMMPS run would read nothing, run nothing and exit 0, an ok run of nothing)."""
    if program.stdin:
        return
    try:
        redirected = stat.S_ISREG(os.fstat(0).st_mode)
    except OSError:  # closed
        redirected = False
    if redirected:
        raise UsageError(f"standard input is a file, but each run of {program.name} reads /dev/null: name the file "
                         f"with {STDIN.flag} FILE (every run reads it from its start)")


def launch_stdin(program: Program | None) -> Path | int:
    """What each launch of a command that runs many reads as standard input: the program's --stdin file, else
    /dev/null (never hympi's own: only one run would get it, and mpirun in the background would stop on a
    terminal's)."""
    path = program.stdin_path() if program is not None else None
    return path if path is not None else subprocess.DEVNULL


@dataclass(frozen=True)
class ProgramRun:
    """A program with the arguments one entry of a programs file gives it, and the input files it names (relative to
    the program's working directory)."""

    program: Program
    args: tuple[str, ...]
    inputs: tuple[str, ...] = ()


# The keys of a [[program]] table in a programs file, and what each must be.
PROGRAM_KEYS = {"name": "a name", "command": "a list of strings: the program, then its arguments",
                "inputs": "a list of files the program reads",
                **{p.name: "a table of NAME = \"VALUE\" strings" if p.repeated else "a string" for p in PROGRAM}}


def _strings(value: object) -> tuple[str, ...] | None:
    """A list of strings as a tuple, else None."""
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    return None


def _entry(table: object, number: int, base: Path, origin: str) -> ProgramRun:
    """One [[program]] table, checked (UsageError naming the file, the entry and the key)."""
    where = f"{origin}: program {number}"
    if not isinstance(table, dict):
        raise UsageError(f"{where} is not a table")
    unknown = sorted(set(table) - set(PROGRAM_KEYS))
    if unknown:
        raise UsageError(f"{where}: unknown key '{unknown[0]}' (known: {', '.join(PROGRAM_KEYS)})")
    name = table.get("name")
    if not isinstance(name, str) or not name.strip() or "/" in name or not name.isprintable():
        raise UsageError(f"{where}: 'name' must be a name without '/', got {name!r}")
    where = f"{origin}: program '{name}'"
    if name in APPS:
        raise UsageError(f"{where}: '{name}' is one of hympi's apps; give the program another name")
    command = _strings(table.get("command"))
    if not command:
        raise UsageError(f"{where}: 'command' must be {PROGRAM_KEYS['command']}")
    inputs = _strings(table.get("inputs", []))
    if inputs is None:
        raise UsageError(f"{where}: 'inputs' must be {PROGRAM_KEYS['inputs']}")
    for name_of_input in inputs:
        problem = file_problem(base / name_of_input)
        if problem is not None:
            raise UsageError(f"{where}: input {name_of_input} {problem} (inputs are relative to {base})")
    texts: dict[str, object] = {}
    for param in PROGRAM:
        value = table.get(param.name, {} if param.repeated else "")
        if param.repeated and isinstance(value, dict) and all(isinstance(v, str) for v in value.values()):
            value = tuple(f"{name}={text}" for name, text in value.items())  # a table: NAME = "VALUE"
        elif not isinstance(value, str) or param.repeated:
            raise UsageError(f"{where}: '{param.name}' must be {PROGRAM_KEYS[param.name]}")
        if not value or param.parse is None:
            texts[param.name] = value
        elif isinstance(value, str):
            texts[param.name] = param.parse(f"{where}: '{param.name}'", value)
        else:
            texts[param.name] = tuple(param.parse(f"{where}: '{param.name}'", one) for one in value)
    # A bare command name is looked up on PATH (it cannot be taken for an app here: the entry has a name).
    found = command[0] if program_named(command[0]) else shutil.which(command[0])
    if found is None:
        raise UsageError(f"{where}: program {command[0]} is not on PATH")
    program = program_of(found, texts, name=name, base=base, workdir=str(base), source=where)
    program.check_run_dirs(command[1:], where)
    return ProgramRun(program, command[1:], inputs)


def load_programs(path: str) -> tuple[ProgramRun, ...]:
    """The programs of a programs file (TOML: one [[program]] table each with the PROGRAM_KEYS); paths in it are
    relative to its directory, where the programs run. UsageError, one line naming the file and the entry, for
    anything wrong in it, and for a standard input redirected from a file while a program names none
    (refuse_redirected_stdin)."""
    problem = file_problem(path)
    if problem is not None:
        raise UsageError(f"programs file {path} {problem}")
    try:
        data = tomllib.loads(read_utf8(path, "programs file"))
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"programs file {path} is not valid TOML: {exc}") from None
    except OSError as exc:
        raise UsageError(f"programs file {path} cannot be read ({exc.strerror or exc})") from None
    unknown = sorted(set(data) - {"program"})
    if unknown:
        raise UsageError(f"programs file {path}: unknown table '{unknown[0]}' (expected [[program]] entries)")
    tables = data.get("program")
    if not isinstance(tables, list) or not tables:
        raise UsageError(f"programs file {path} names no program (expected [[program]] entries)")
    base = Path(path).expanduser().absolute().parent
    runs = tuple(_entry(table, number, base, path) for number, table in enumerate(tables, 1))
    names = [r.program.name for r in runs]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise UsageError(f"programs file {path}: program name '{twice[0]}' is used twice")
    for run in runs:
        refuse_redirected_stdin(run.program)
    return runs


def prepare_launch(program: Program, ranks: int, threads: int, run_dir: str | None,
                   timeout: float | None) -> tuple[RunOutcome | None, str | None]:
    """Runs the program's preparation (--prepare) for one launch at `ranks` x `threads` in directory `run_dir`, as
    one process in its working directory with its variables, within `timeout` seconds; returns its outcome (None for
    a program without one) and None when it succeeded, else why it failed, naming the command as typed (with the
    launch's figures: short enough that a sweep's progress line keeps the program's last words) and saying that the
    program was not launched: it could not start, it ended non-zero (with its last lines) or it was still running
    at `timeout` (then stopped, with every process it started)."""
    if not program.prepare:
        return None, None
    command = program.prepared(ranks, threads, run_dir)
    what = f"{PREPARE.flag} {shlex.join(prepared_command(program.prepare, ranks, threads, run_dir))}"
    try:
        outcome = run_command(command, timeout, env=dict(program.environment()), cwd=program.workdir or None,
                              stdin=subprocess.DEVNULL)
    except OSError as exc:
        return (RunOutcome("failed", None, 0.0, command),
                f"{what} could not start ({exc.strerror or exc}): {program.name} not launched")
    if outcome.status == "timeout":
        return outcome, f"{what} was still running after {timeout:g} s and was stopped: {program.name} not launched"
    if outcome.returncode != 0:
        return outcome, (f"{what} ended with {outcome.exit_text()}: {program.name} not launched{LAST_LINES}"
                         f"{last_words(outcome)}")
    return outcome, None


def probed_program_run(program: Program, launch: Callable[[Env, str | None], RunOutcome], ranks: int, threads: int,
                       args: tuple[str, ...], timeout: float | None,
                       shown: bool = False) -> tuple[RunOutcome, tuple[ProbeProcess, ...], str | None]:
    """One launch of a program of the user's own (`launch` given the probe's environment for its ranks and the
    launch's own directory, made when `args`, its output file or its preparation name RUN_DIR_PLACEHOLDER, else
    None), after its preparation (prepare_launch, within `timeout`: one that fails is the run's failure, and nothing
    is launched), judged on its output and output file (hympi.program.judge; `shown`: that output went to the
    terminal as it came) and on what the probe saw (hympi.probe.apply_probe); with the probed processes. The sweep
    and `hympi run` / `affinity` both launch programs through it. Returns the judged outcome, the probed processes
    and the launch's directory (None: none made), which the caller hands to Program.after_launch once the run is
    recorded as it ended."""
    run_dir = program.launch_dir(args, ranks, threads)
    program = program.in_run_dir(run_dir)
    prepared, unprepared = prepare_launch(program, ranks, threads, run_dir, timeout)
    if prepared is not None and unprepared is not None:
        return failed_run(prepared, unprepared), (), run_dir
    mark = mark_file(program.output_path()) if program.output_file else None
    launched, processes = launch_probed(lambda env: launch(env, run_dir))
    written = text_written_since(mark) if mark is not None else None
    judged = judge(program, launched, ranks, threads, args, written, shown, prepared)
    return apply_probe(judged, processes, ranks, threads), processes, run_dir


# A launcher's own notices on a failed run's stderr, framed by lines of dashes (Open MPI's help messages) or of equal
# signs (MPICH's BAD TERMINATION): 20-odd lines saying that a rank ended, never why, which push the program's own
# last words out of a run's last lines.
_LAUNCHER_NOTICE = re.compile(r"(?ms)^([-=])\1{19,}[ \t]*\n.*?^\1{20,}[ \t]*(?:\n|\Z)")


def _last_lines(text: str) -> str:
    """The last lines of a program's output, for a reason that says what it printed instead."""
    lines = [line for line in tail_lines(text, 4 * SHOWN_LINES) if line.strip()][-SHOWN_LINES:]
    return LINE_JOINT.join(line.strip()[:200] for line in lines) or "(no output)"


def last_words(outcome: RunOutcome) -> str:
    """A failed launch's last lines of output, its stdout's then its stderr's, less the launcher's notices."""
    return _last_lines(outcome.stdout + "\n" + _LAUNCHER_NOTICE.sub("", outcome.stderr))


def failed_run(outcome: RunOutcome, reason: str) -> RunOutcome:
    """The outcome as a failed run whose stderr ends with hympi's reason (so it is recorded and shown)."""
    return dataclasses.replace(outcome, status="failed", record=None, result=None,
                               stderr=f"{outcome.stderr.rstrip()}\nhympi: {reason}".lstrip())


class _SearchExpired(Exception):
    """Raised by the timer's signal handler inside a search that outlasted SEARCH_SECONDS."""


def _expire(signum: int, frame: object) -> None:
    raise _SearchExpired


def _search(kind: str, pattern: str, text: str) -> re.Match[str] | None:
    """re.search, or _SearchExpired naming the `kind` of expression after SEARCH_SECONDS: Python's matcher checks for
    signals as it backtracks, so a real-time timer's SIGALRM ends it. Runs are judged in the main thread, the only one
    Python delivers signals to."""
    previous = signal.signal(signal.SIGALRM, _expire)
    try:
        signal.setitimer(signal.ITIMER_REAL, SEARCH_SECONDS)
        try:
            return re.search(pattern, text)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except _SearchExpired:
        raise _SearchExpired(f"{kind} {quoted(pattern)}") from None
    finally:
        signal.signal(signal.SIGALRM, previous)


def problem_label(program: Program, args: tuple[str, ...]) -> str:
    """What a run of `program` with `args` computed, as its record's problem names it: the arguments, then
    '< FILE' for the file it reads as its standard input (`pw.x < si.scf.in`: a program whose input is all there
    would otherwise be '(no arguments)' whatever it read); '(no arguments)' for neither."""
    return " ".join([*args, *(["<", program.stdin] if program.stdin else [])]) or "(no arguments)"


def judge(program: Program, outcome: RunOutcome, ranks: int, threads: int, args: tuple[str, ...],
          written: FileText | None = None, shown: bool = False, prepared: RunOutcome | None = None) -> RunOutcome:
    """The outcome of one launch of `program` as hympi records it: a timeout or a cancelled step stays so; a non-zero
    exit, an output file not written, a verification not found or a metric not found (or not a number) is a failed
    run with that reason; otherwise an ok run whose record holds the figure of merit as its rate (larger is better),
    the wall time and the layout. The text searched is what the run wrote into its output file (`written`, for a
    program with one), then its output as it wrote it, stdout then stderr. The reason of a non-zero exit ends with
    the program's last lines, less the launcher's notices, unless its output was `shown` as it came (`hympi run`):
    a program that says why on stdout (Elk's 'Error(readinput): error opening elk.in') has nothing of it in a
    sweep's record otherwise. `prepared`: the preparation that ran before the launch (prepare_launch), its command and
    seconds kept in the record beside the run's own time, which never includes them."""
    if outcome.status in ("timeout", "cancelled"):
        return dataclasses.replace(outcome, record=None, result=None)
    if outcome.returncode != 0:
        ending = outcome.ending(program.name)
        if (call := launcher_in_script(program.path)) is not None:
            ending += (f" (it is a script that starts an MPI launcher itself, {call}: under hympi's launch each rank "
                       "started a job of its own; give hympi the program the script runs)")
        if shown or outcome.not_started() is not None:
            return failed_run(outcome, ending)
        return failed_run(outcome, f"{ending}{LAST_LINES}{last_words(outcome)}")
    if written is not None and written.problem:
        return failed_run(outcome, f"output file {program.output_path()} {written.problem}")
    text = f"{outcome.stdout}\n{outcome.stderr}"
    searched = "the output"
    if written is not None:
        text = f"{written.text}\n{text}"
        searched = f"what the run wrote into {program.output_path()} or its output"
    searched += omitted_note(text)
    try:
        if program.verify and _search("verification", program.verify, text) is None:
            return failed_run(outcome, f"verification {quoted(program.verify)} not found in {searched}{LAST_LINES}"
                                       f"{_last_lines(text)}")
        found = _search("metric", program.metric, text) if program.metric else None
    except _SearchExpired as expired:
        return failed_run(outcome, f"{expired} was still searching {searched} ({len(text)} characters) after "
                                   f"{SEARCH_SECONDS:g} s and was stopped: nested repeats such as '(a+)+b' backtrack "
                                   "without end; anchor the expression to the text around what it finds")
    if program.metric:
        if found is None:
            return failed_run(outcome, f"metric {quoted(program.metric)} not found in {searched}{LAST_LINES}"
                                       f"{_last_lines(text)}")
        try:
            value = captured_merit(program.metric, found)
        except ValueError as exc:
            return failed_run(outcome, f"metric {quoted(program.metric)} {exc}")
        if not (value > 0 and value < float("inf")):
            return failed_run(outcome, f"metric {quoted(program.metric)} captured {value:g}: a figure of merit must "
                                       "be a positive number")
        rate = value if program.better == "higher" else 1.0 / value
        merit: JsonObject = {"value": value, "unit": program.metric_unit, "better": program.better}
    else:
        if outcome.seconds <= 0:
            return failed_run(outcome, "the run took no measurable time")
        rate = 1.0 / outcome.seconds
        merit = {"value": outcome.seconds, "unit": "s", "better": "lower"}
    record: JsonObject = {
        "app": program.name, "problem": problem_label(program, args), "time_s": outcome.seconds,
        "rate": rate, "rate_unit": program.unit, "verified": True, "ranks": ranks, "threads": threads,
        "metrics": {"merit": merit, "verification": f"matched {quoted(program.verify)}" if program.verify else
                    "exit status 0", "program": program.path, "sha256": program.sha256,
                    **({"output_file": str(program.output_path())} if program.output_file else {}),
                    **({"stdin": str(stdin)} if (stdin := program.stdin_path()) is not None else {}),
                    **({"prepare": shlex.join(prepared.command), "prepare_s": prepared.seconds}
                       if prepared is not None else {})}}
    return dataclasses.replace(outcome, status="ok", record=record, result=None)
