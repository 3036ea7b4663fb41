"""The files a program's arguments name (`-in in.melt`, `cavity.ctl`, `script.py`), watched while a sweep runs.

A sweep's identity holds the program's file and its standard input's contents, not the files its arguments name:
an input edited while a sweep runs (the next experiment set up in the same file) or before it is resumed would have
the later runs measure another problem under the same arguments, pooled with the earlier ones. Which named files
are inputs the first launches tell: a file that one of them changes (its preparation included), up to the first
that ends ok (one that failed early may not have written its outputs yet), is the program's output (`-log
log.lammps`, `-o out.txt` left by an earlier run) and is watched no longer; with a preparation (hympi.prepare),
which may make a file the arguments name anew for each layout, so is a file any launch changes, and no digest
recorded before holds the runs to come (earlier_inputs). After that, an input that changes between launches stops
the sweep before the next one, and one that changes during a launch fails that run too (which of its contents the
program read cannot be known). Each run's record keeps the digests of the inputs it read (metrics.inputs):
resuming the sweep refuses an input changed since its last run, and its first launches cannot take those files for
outputs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from hympi.errors import UsageError
from hympi.filemark import resolve_in
from hympi.launch.mpirun import ARG_PLACEHOLDERS, RunOutcome
from hympi.program import Program, Signature, file_digest, file_signature
from hympi.store import Run

# The run record's key (under metrics) for the inputs a run read: {absolute path: sha256}.
INPUTS_KEY = "inputs"
# Files whose contents are the kernel's, not an input anyone edits (a program may well read /proc/cpuinfo).
_KERNEL_TREES = (Path("/proc"), Path("/sys"), Path("/dev"))


def named_files(program: Program, args: Sequence[str]) -> list[Path]:
    """The regular files that `args` (the layout's figures in place: launch.mpirun.with_placeholders) name where the
    program runs: an argument, or what follows the '=' of one (`--input=case.inp`), that is a file. Not the output
    file or the standard input (watched as those), not an argument still holding a placeholder ({run}: each launch's
    own directory), nothing under /proc, /sys or /dev."""
    placeholders = tuple(f"{{{name}}}" for name in ARG_PLACEHOLDERS)
    left_out = {program.output_path() if program.output_file else None, program.stdin_path()}
    found: dict[Path, None] = {}
    for arg in args:
        if not arg or any(mark in arg for mark in placeholders):
            continue
        for text in (arg, arg.partition("=")[2]) if "=" in arg else (arg,):
            if not text:
                continue
            try:
                path = resolve_in(program.workdir, text)
                if path.is_file() and path not in left_out and \
                        not any(path.is_relative_to(tree) for tree in _KERNEL_TREES):
                    found[path] = None
            except (OSError, ValueError):  # too long a name, a NUL: no file the program can open either
                continue
    return list(found)


# The signature of a file not yet seen: the first check reads its digest.
_UNSEEN: Signature = (0, 0, 0, 0, 0)


class InputWatch:
    """The files of named_files a sweep watches as its program's inputs, each with its signature and digest as last
    seen. `known`: the inputs earlier runs read (earlier_inputs: the sweep's, or its tune's), compared with their
    recorded digests at the first check and never turned into outputs by a launch; nor are the `declared` ones (a
    programs file's `inputs`, which the arguments need not name: HPC Challenge reads hpccinf.txt unnamed)."""

    def __init__(self, paths: Iterable[Path], known: Mapping[str, str] | None = None,
                 declared: Iterable[Path] = ()) -> None:
        self._files: dict[Path, tuple[Signature, str]] = {}
        declared = list(declared)
        self._known = {Path(text) for text in known or {}} | set(declared)
        for path in dict.fromkeys([*paths, *declared]):
            if str(path) in (known or {}):
                self._files[path] = (_UNSEEN, (known or {})[str(path)])
                continue
            try:
                self._files[path] = (file_signature(path), file_digest(path))
            except OSError:  # unreadable now: nothing the program reads either, nothing to compare with
                continue
        self._named = bool(self._files)

    @property
    def paths(self) -> list[Path]:
        """The files watched now."""
        return list(self._files)

    def _now(self, path: Path) -> tuple[Signature, str] | None:
        """`path`'s signature and digest now, the digest read again only when the signature moved; None when it is
        gone or cannot be read. A check of files nobody touched costs a stat each."""
        signature, digest = self._files[path]
        try:
            now = file_signature(path)
            return now, digest if now == signature else file_digest(path)
        except OSError:
            return None

    def _changes(self) -> list[tuple[Path, str]]:
        """The watched files that changed since last seen, each with how ('has changed (...)', 'is gone or cannot
        be read'); the others are marked seen as they are now."""
        changes = []
        for path, (_, digest) in list(self._files.items()):
            now = self._now(path)
            if now is None:
                changes.append((path, "is gone or cannot be read"))
            elif now[1] != digest:
                changes.append((path, f"has changed (its sha256 is no longer {digest[:12]}...)"))
            else:
                self._files[path] = now
        return changes

    def changed(self) -> str | None:
        """Before a launch: how a watched input changed since it was last seen ('PATH has changed (...)'), None while
        none did."""
        return next((f"{path} {how}" for path, how in self._changes()), None)

    def settle(self, first: bool) -> tuple[list[Path], str | None]:
        """After a launch: the files it changed that are taken from now on for the program's outputs and watched no
        longer (all but the `known` inputs, while outputs are still told apart: `first`), and how an input changed
        during it, or None."""
        written: list[Path] = []
        for path, how in self._changes():
            if not first or path in self._known:
                return written, f"{path} {how}"
            written.append(path)
            del self._files[path]
        return written, None

    def digests(self) -> dict[str, str]:
        """The watched inputs' digests by path, as a run's record keeps them (INPUTS_KEY)."""
        return {str(path): digest for path, (_, digest) in self._files.items()}

    def recorded(self, outcome: RunOutcome) -> RunOutcome:
        """The outcome with the inputs its run read ({path: sha256}, digests) in its record's metrics (INPUTS_KEY),
        when it has a record and its arguments named files: {} once they all proved outputs, so that the latest
        record says what is an input now."""
        if outcome.record is None or not self._named:
            return outcome
        metrics = outcome.record.get("metrics")
        record = {**outcome.record,
                  "metrics": {**(metrics if isinstance(metrics, dict) else {}), INPUTS_KEY: self.digests()}}
        return replace(outcome, record=record)




def recorded_inputs(run: Run) -> dict[str, str] | None:
    """The inputs a run's record says it read ({path: sha256}), None for a record without them (a failed run, a
    sweep of one of hympi's apps, a run recorded before they were kept)."""
    metrics = (run.record or {}).get("metrics")
    inputs = metrics.get(INPUTS_KEY) if isinstance(metrics, dict) else None
    if not isinstance(inputs, dict):
        return None
    return {str(path): str(digest) for path, digest in inputs.items()}


def latest_inputs(runs: Iterable[Run]) -> dict[str, str]:
    """The inputs the latest of `runs` (oldest first) that kept them read (recorded_inputs), {} for none; `runs` are
    read one at a time (store.iter_runs: a large sweep's records need not all be in memory)."""
    latest: dict[str, str] = {}
    for run in runs:
        if (inputs := recorded_inputs(run)) is not None:
            latest = inputs
    return latest


def earlier_inputs(program: Program, runs: Iterable[Run]) -> dict[str, str]:
    """The inputs that earlier `runs` of `program` read and the runs to come are held to (latest_inputs); none for a
    program with a preparation, which may make a file its arguments name anew at any launch (a digest recorded
    before it says nothing of an edit)."""
    return {} if program.prepare else latest_inputs(runs)


def check_inputs_since(program: Program, runs: Iterable[Run], what: str) -> None:
    """UsageError, before `what` ('sweep 3') is resumed, when an input its latest run that kept them read
    (earlier_inputs) is gone or has changed since: the runs left would measure another input under the same
    arguments."""
    for text, digest in earlier_inputs(program, runs).items():
        path = Path(text)
        try:
            same = file_digest(path) == digest
        except OSError as exc:
            raise UsageError(f"{path}, an input the program's arguments name, cannot be read since {what}'s last run "
                             f"({exc.strerror or exc}): the runs left would measure another input; start a new "
                             "sweep") from None
        if not same:
            raise UsageError(f"{path}, an input the program's arguments name, has changed since {what}'s last run "
                             f"(sha256 {digest[:12]}...): the runs left would measure another input; start a new "
                             "sweep")
