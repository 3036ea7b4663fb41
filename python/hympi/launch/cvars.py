"""The MPI library's control variables (MPI_T cvars), as `hympi-mpit --json` lists them: what can be tuned."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from hympi.errors import HympiFatal, UsageError
from hympi.jsontypes import JsonObject
from hympi.launch.mpirun import LaunchSpec, build_command, mpi_env_name, run_command
from hympi.textfile import read_utf8

MPIT_BINARY = "hympi-mpit"
MPIT_FORMAT = "hympi-mpit"
# Shared-memory and collective components open only with more than one rank, and only open ones have cvars.
MPIT_RANKS = 2
LISTING_TIMEOUT_S = 60.0

# The value range of each integer datatype MPI_T reports (C int, unsigned, long, ... on LP64).
_INT_RANGES: dict[str, tuple[int, int]] = {
    "int": (-(2**31), 2**31 - 1),
    "unsigned": (0, 2**32 - 1),
    "long": (-(2**63), 2**63 - 1),
    "unsigned_long": (0, 2**64 - 1),
    "long_long": (-(2**63), 2**63 - 1),
    "unsigned_long_long": (0, 2**64 - 1),
}
# "other": a datatype hympi-mpit cannot print (listed, never set by hympi).
DATATYPES = (*_INT_RANGES, "double", "bool", "string", "other")
_TRUE = ("true", "1", "yes", "on", "enabled")
_FALSE = ("false", "0", "no", "off", "disabled")


@dataclass(frozen=True)
class Cvar:
    """One control variable: its name, MPI_T datatype, current value (as text; None if unreadable) and metadata."""

    name: str
    datatype: str
    count: int = 1
    value: str | None = None
    enum: tuple[str, ...] = ()
    scope: str = ""
    verbosity: str = ""
    description: str = ""
    bind: str = ""

    @property
    def kind(self) -> str:
        """'enum', 'bool', 'integer', 'double' or 'string': how values of this cvar are written and compared."""
        if self.datatype == "bool" or {item.lower() for item in self.enum} == {"false", "true"}:
            # Open MPI lists its booleans with the enum (false, true), some as datatype int: one kind for all.
            return "bool"
        if self.enum:
            return "enum"
        if self.datatype in _INT_RANGES:
            return "integer"
        return self.datatype

    def is_numeric(self) -> bool:
        """Whether values are numbers (integers or doubles), ordered and usually spread over orders of magnitude."""
        return self.kind in ("integer", "double")

    def canonical(self, text: str) -> str:
        """The value as the library reports it (enum item name, 'true'/'false', decimal number); raises UsageError
        naming the cvar and the value when `text` is outside the cvar's type."""
        raw = text.strip()
        if self.kind == "enum":
            if raw in self.enum:
                return raw
            folded = {item.lower(): item for item in self.enum}
            if raw.lower() in folded:
                return folded[raw.lower()]
            raise UsageError(f"{self.name}: '{text}' is not one of {', '.join(self.enum)}")
        if self.kind == "bool":
            if raw.lower() in _TRUE:
                return "true"
            if raw.lower() in _FALSE:
                return "false"
            raise UsageError(f"{self.name}: '{text}' is not a boolean (true or false)")
        if self.kind == "integer":
            low, high = _INT_RANGES[self.datatype]
            what = "an unsigned integer" if low == 0 else "an integer"
            try:
                number = int(raw, 10)
            except ValueError:
                raise UsageError(f"{self.name}: '{text}' is not {what}") from None
            if not low <= number <= high:
                raise UsageError(f"{self.name}: '{text}' is outside the range of {self.datatype} ({low} to {high})")
            return str(number)
        if self.kind == "double":
            try:
                real = float(raw)
            except ValueError:
                raise UsageError(f"{self.name}: '{text}' is not a number") from None
            if not math.isfinite(real):
                raise UsageError(f"{self.name}: '{text}' is not a finite number")
            return repr(real)
        if self.kind == "other":
            raise UsageError(f"{self.name}: its MPI datatype cannot be set through hympi")
        return text

    def as_dict(self) -> JsonObject:
        """The JSON form hympi-mpit prints (for --json output)."""
        return {"name": self.name, "datatype": self.datatype, "count": self.count, "value": self.value,
                "enum": list(self.enum), "scope": self.scope, "verbosity": self.verbosity,
                "description": self.description, "bind": self.bind}


@dataclass(frozen=True)
class CvarListing:
    """What hympi-mpit reported: the MPI library's name and its control variables by name."""

    mpi_library: str
    cvars: dict[str, Cvar]

    @property
    def library(self) -> str:
        """The library's short name for messages ('Open MPI v4.1.4': its version string up to the first comma)."""
        return self.mpi_library.split(",")[0].strip() or "the MPI library"


def cvar_from_json(entry: object, index: int) -> Cvar:
    """One cvar from its JSON object; raises ValueError naming the entry when a field is missing or mistyped."""
    if not isinstance(entry, dict):
        raise ValueError(f"cvars[{index}] is not an object")
    name = entry.get("name")
    datatype = entry.get("datatype")
    if not isinstance(name, str) or not name:
        raise ValueError(f"cvars[{index}] has no name")
    if datatype not in DATATYPES:
        raise ValueError(f"cvar {name}: unknown datatype {datatype!r}")
    value = entry.get("value")
    if value is not None and not isinstance(value, str):
        raise ValueError(f"cvar {name}: value must be a string or null")
    enum = entry.get("enum", [])
    if not isinstance(enum, list) or not all(isinstance(item, str) for item in enum):
        raise ValueError(f"cvar {name}: enum must be a list of names")
    count = entry.get("count", 1)
    if not isinstance(count, int) or isinstance(count, bool):
        raise ValueError(f"cvar {name}: count must be an integer")
    return Cvar(name, str(datatype), count, value, tuple(enum), str(entry.get("scope", "")),
                str(entry.get("verbosity", "")), str(entry.get("description", "")), str(entry.get("bind", "")))


def _listing_from_json(json_text: str) -> CvarListing:
    """The listing in `json_text`; ValueError (json.JSONDecodeError is one) saying why it is not one."""
    try:
        data = json.loads(json_text)
    except RecursionError:  # JSON nested deeper than the parser's stack
        raise ValueError("JSON nested too deeply") from None
    if not isinstance(data, dict) or data.get("format") != MPIT_FORMAT:
        raise ValueError(f"not a {MPIT_FORMAT} document")
    entries = data.get("cvars")
    if not isinstance(entries, list):
        raise ValueError("no cvars list")
    cvars = [cvar_from_json(entry, i) for i, entry in enumerate(entries)]
    return CvarListing(str(data.get("mpi_library", "unknown")), {c.name: c for c in cvars})


def parse_listing(json_text: str) -> CvarListing:
    """The library name and cvars of one `hympi-mpit --json` output; raises HympiFatal when it is not that format."""
    try:
        return _listing_from_json(json_text)
    except ValueError as exc:
        raise HympiFatal(f"{MPIT_BINARY} printed no usable cvar list: {exc}") from None


def parse_cvars(json_text: str) -> dict[str, Cvar]:
    """The cvars of one `hympi-mpit --json` output by name; raises HympiFatal when it is not that format."""
    return parse_listing(json_text).cvars


def _json_part(stdout: str) -> str:
    """The JSON object of rank 0's output (launchers may add lines before it)."""
    start = stdout.find("{")
    return stdout[start:] if start >= 0 else stdout


def mpit_command() -> list[str]:
    """The launch of `hympi-mpit --json` at MPIT_RANKS ranks; raises HympiFatal if it or the launcher is missing."""
    spec = LaunchSpec(MPIT_BINARY, MPIT_RANKS, 1, "none", "compact", ("--json",), oversubscribe=True)
    return build_command(spec)


def read_listing(timeout: float = LISTING_TIMEOUT_S) -> CvarListing:
    """Runs hympi-mpit under the launcher and parses its listing; raises HympiFatal when it fails or times out."""
    cmd = mpit_command()
    outcome = run_command(cmd, timeout)
    if outcome.status == "timeout":
        raise HympiFatal(f"{MPIT_BINARY} timed out after {timeout:g} s")
    if outcome.returncode != 0:
        raise HympiFatal(f"{MPIT_BINARY} failed (exit code {outcome.returncode}): {outcome.stderr_tail(3)}")
    return parse_listing(_json_part(outcome.stdout))


def env_name(name: str, flavor: str) -> str:
    """The environment variable that sets cvar `name` for the flavour (see launch.mpirun.mpi_env_name); raises
    ValueError for an unknown flavour."""
    return mpi_env_name(name, flavor)


def check_params(params: dict[str, str] | list[tuple[str, str]] | tuple[tuple[str, str], ...],
                 cvars: dict[str, Cvar], library: str = "the MPI library") -> tuple[tuple[str, str], ...]:
    """The parameters with canonical values, sorted by name; raises UsageError for a name that is not a cvar or a
    value outside its type."""
    items = params.items() if isinstance(params, dict) else params
    out: dict[str, str] = {}
    for name, value in items:
        cvar = cvars.get(name)
        if cvar is None:
            raise UsageError(f"unknown MPI parameter '{name}' (not a control variable of {library})")
        out[name] = cvar.canonical(value)
    return tuple(sorted(out.items()))


def parse_assignment(text: str) -> tuple[str, str]:
    """'NAME=VALUE' -> (NAME, VALUE); raises UsageError for text without '=' or with an empty name."""
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise UsageError(f"--mpi-param needs NAME=VALUE, got '{text}'")
    return name.strip(), value.strip()


def _same_text(a: str, b: str) -> bool:
    """Whether two values are equal as text or, both numbers, as numbers ('1000' and '1000.0')."""
    if a.strip() == b.strip():
        return True
    try:
        return float(a) == float(b)
    except ValueError:
        return False


def ignored(set_params: tuple[tuple[str, str], ...] | dict[str, str], read_back: dict[str, str | None] | None,
            cvars: dict[str, Cvar] | None = None) -> list[str]:
    """The names of parameters the library did not take: read back as null, missing, or with another value than
    set (both compared in canonical form when the cvar is known). No read-back at all means nothing is known:
    every parameter counts as ignored."""
    items = set_params.items() if isinstance(set_params, dict) else set_params
    out = []
    for name, value in items:
        back = read_back.get(name) if read_back else None
        if back is None:
            out.append(name)
            continue
        cvar = (cvars or {}).get(name)
        if cvar is not None:
            try:
                same = cvar.canonical(back) == cvar.canonical(value)
            except UsageError:
                same = False
        else:
            same = _same_text(back, value)
        if not same:
            out.append(name)
    return sorted(out)


def ignored_texts(set_params: tuple[tuple[str, str], ...], read_back: dict[str, str | None] | None) -> list[str]:
    """One sentence per parameter the library did not take ('btl_vader_eager_limit set 8192, library reports 4096:
    ignored'); nothing when the app read nothing back (an app without MPI_T read-back cannot tell)."""
    if read_back is None:
        return []
    values = dict(set_params)
    return [f"{name} set {values[name]}, library reports {read_back.get(name) or 'no such variable'}: ignored"
            for name in ignored(set_params, read_back)]


def load_listing(path: str | None, timeout: float = LISTING_TIMEOUT_S) -> CvarListing:
    """The cvars from a saved `hympi tune params --json` / `hympi-mpit --json` file when `path` is given, else from
    the installed library (read_listing); UsageError for an unreadable file, HympiFatal for an unusable listing."""
    if path is None:
        return read_listing(timeout)
    try:
        text = read_utf8(path, "control variables file")
    except OSError as exc:
        raise UsageError(f"cannot read control variables from {path}: {exc.strerror or exc}") from None
    try:
        return _listing_from_json(text)
    except ValueError as exc:
        # The user's file, not the library's output: bad input that names the file (exit 2).
        raise UsageError(f"control variables file {path} is not a 'hympi tune params --json' listing: {exc}"
                         ) from None
