"""Command-line parameters, each declared once.

A declaration (Param) holds everything about one parameter: its flag, how its text becomes a value (the check that
names the flag and the value in one line, exit 2), its default, the options-layer key when hympi.toml and HYMPI_*
may set it too (contract.toml's options), and its help. A command lists the declarations it takes; from that list
come its argparse options (register), its values in the order flag > hympi.toml / HYMPI_* > default (resolve), the
check of a record built in code or read back from the database (check_text: the same parser on the value's text),
and the flags that give a value again in a command line hympi writes (spell, for sbatch scripts).

The records (SweepParams, TuneParams) are frozen dataclasses built by keyword; as_record / from_record turn them
into the JSON stored with a sweep or tune and back, field by field from the dataclass itself.
"""

from __future__ import annotations

import dataclasses
import math
import secrets
import types
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from hympi.contract import contract
from hympi.errors import UsageError, unknown_name
from hympi.jsontypes import JsonObject
from hympi.limits import MAX_ROW_ID, MAX_RUN_COUNT, Limit, check_path
from hympi.numbers import ascii_float, ascii_int
from hympi.settings import DEFAULT, parse_seconds, settings

Value = str | int | float | bool | tuple[Any, ...]
# A default: a value, or a function of the values resolved before it (the app, --quick) giving one; None = the
# options layer's value where the parameter has a setting, else no value.
Default = Value | Callable[[Mapping[str, Value]], Value | None] | None
Parse = Callable[[str, str], Value]

# A pair of layouts is never called separated while a side has fewer runs than this (stats.compare says why).
MIN_SEPARATE = 4
# --repeat auto: the measured rounds every layout gets before the first decision, and the default budget. As many as
# a separation needs, so that the first decision can decide (with 3, every layout always ran a 4th round, and
# --max-repeat 3 could never separate anything).
AUTO = "auto"
AUTO_MIN_REPEAT = MIN_SEPARATE
DEFAULT_MAX_REPEAT = 10
DEFAULT_CONFIDENCE = 0.95
DEFAULT_TIMEOUT_S = 600.0
# A run is disturbed when processes outside its tree used more than this many cores on its PUs, averaged over the
# run (hympi.busy): contract.toml's default, the one a record built in code takes.
DEFAULT_DISTURBED_ABOVE = float(str(contract().option("disturbed_above").default))  # type: ignore[union-attr]
SEED_LIMIT = 2**32


# Parsers: (flag, text) -> value, or UsageError naming the flag and the text.

def seconds_above_zero(option: str, text: str) -> float:
    """Seconds > 0 (a timeout)."""
    return parse_seconds(option, text, allow_zero=False)


def seconds_from_zero(option: str, text: str) -> float:
    """Seconds >= 0 (a minimum time; 0 = off)."""
    return parse_seconds(option, text, allow_zero=True)


def parse_number(option: str, text: str, what: str) -> float:
    """`text` as a number; UsageError naming `option`, the value and `what` it should be otherwise (the range is
    the caller's check, where the option's meaning is)."""
    try:
        return ascii_float(text)
    except ValueError:
        raise UsageError(f"{option}: '{text}' is not {what}") from None


def parse_integer(option: str, text: str, minimum: int, what: str = "an integer") -> int:
    """An integer >= minimum; UsageError naming `option` and the value otherwise ('what' says what was expected)."""
    try:
        value = ascii_int(text)
    except ValueError:
        raise UsageError(f"{option}: '{text}' is not {what}") from None
    if value < minimum:
        raise UsageError(f"{option} must be >= {minimum}, got {value}")
    return value


def integer_from(minimum: int, what: str = "an integer") -> Parse:
    """The parser of an integer >= minimum."""
    return lambda option, text: parse_integer(option, text, minimum, what)


def count_within(limit: Limit) -> Parse:
    """The parser of a count (--nodes, --ranks-per-node): an integer >= 1 no larger than `limit` (its reason named)."""
    return lambda option, text: limit.check(option, parse_integer(option, text, 1))


def parse_run_count(option: str, text: str, what: str = "a number of runs") -> int:
    """A number of runs (`what` says which): an integer >= 1 up to MAX_RUN_COUNT."""
    return MAX_RUN_COUNT.check(option, parse_integer(option, text, 1, what))


def count_of_runs(what: str = "a number of runs") -> Parse:
    """The parser of a number of runs (--max-repeat, a tune's --max-runs)."""
    return lambda option, text: parse_run_count(option, text, what)


def parse_repeat(option: str, text: str) -> int | str:
    """--repeat N or auto: a number of measured runs, or AUTO."""
    if text.strip() == AUTO:
        return AUTO
    return parse_run_count(option, text, "a number of runs or 'auto'")


def parse_row_id(option: str, text: str, what: str) -> int:
    """An id of the results database (`what`: 'a sweep id'): an integer >= 1 that SQLite can hold."""
    return MAX_ROW_ID.check(option, parse_integer(option, text, 1, what))


def parse_seed(option: str, text: str) -> int:
    """--seed N: an integer in [0, SEED_LIMIT)."""
    seed = parse_integer(option, text, 0)
    if seed >= SEED_LIMIT:
        raise UsageError(f"{option} must be between 0 and {SEED_LIMIT - 1}, got {seed}")
    return seed


def parse_confidence(option: str, text: str) -> float:
    """--confidence C: a level in [0.5, 1)."""
    try:
        value = ascii_float(text)
    except ValueError:
        raise UsageError(f"{option}: '{text}' is not a number") from None
    if not (math.isfinite(value) and 0.5 <= value < 1.0):
        raise UsageError(f"{option} must be in [0.5, 1) (e.g. 0.95), got {text}")
    return value


def parse_cores(option: str, text: str) -> float:
    """A finite number of cores > 0 (a load threshold)."""
    value = parse_number(option, text, "a number of cores")
    if not (math.isfinite(value) and value > 0):
        raise UsageError(f"{option} must be a finite number of cores > 0, got {text}")
    return value


def refuse_repeated(option: str, names: Sequence[str]) -> None:
    """UsageError naming `option` and the first name given more than once (`--env A=1 --env A=2`): the last one
    would otherwise win unseen."""
    twice = next((name for name in names if names.count(name) > 1), None)
    if twice is not None:
        raise UsageError(f"{option} {twice} is given twice")


def parse_int_list(option: str, text: str) -> tuple[int, ...]:
    """'1,2,4' -> (1, 2, 4); raises UsageError naming `option` for empty, non-integer or < 1 entries."""
    parts = [p.strip() for p in text.split(",")]
    if not text.strip() or any(p == "" for p in parts):
        raise UsageError(f"{option} needs a comma-separated list of positive integers, got '{text}'")
    values: list[int] = []
    for part in parts:
        try:
            value = ascii_int(part)
        except ValueError:
            raise UsageError(f"{option}: '{part}' is not an integer") from None
        if value < 1:
            raise UsageError(f"{option}: {value} must be >= 1")
        if value not in values:
            values.append(value)
    return tuple(values)


def parse_choice_list(option: str, text: str, choices: tuple[str, ...], what: str = "value") -> tuple[str, ...]:
    """'core,none' -> ('core', 'none'); raises UsageError for empty lists or values not in `choices` (`what` names
    the kind: 'binding', 'memory policy')."""
    parts = [p.strip() for p in text.split(",")]
    if not text.strip() or any(p == "" for p in parts):
        raise UsageError(f"{option} needs a comma-separated list from {', '.join(choices)}, got '{text}'")
    values: list[str] = []
    for part in parts:
        if part not in choices:
            raise UsageError(f"{option}: {unknown_name(what, choices, part)}")
        if part not in values:
            values.append(part)
    return tuple(values)


def choice_list(choices: tuple[str, ...], what: str) -> Parse:
    """The parser of a comma-separated list from `choices` (`what` names the kind)."""
    return lambda option, text: parse_choice_list(option, text, choices, what)


def choice(choices: tuple[str, ...], what: str) -> Parse:
    """The parser of one of `choices` (`what` names the kind: 'launcher', 'strategy')."""
    def parse(option: str, text: str) -> str:
        if text not in choices:
            raise UsageError(f"{option}: {unknown_name(what, choices, text)}")
        return text
    return parse


def parse_path(option: str, text: str) -> str:
    """A path as given, refused when the system could not even look it up (hympi.limits.check_path); whether it
    must exist, or may be written, is the command's check, where the option's meaning is."""
    return check_path(option, text)


def random_seed() -> int:
    """A fresh seed for the run order (recorded with the sweep or tune, so a resumed one keeps its order)."""
    return secrets.randbelow(SEED_LIMIT)


def text_of(value: Value) -> str:
    """The command-line text that parses back to `value` (lists comma-separated; floats exactly)."""
    if isinstance(value, tuple):
        return ",".join(text_of(v) for v in value)
    return repr(value) if isinstance(value, float) else str(value)


@dataclass(frozen=True)
class Param:
    """One parameter of one or more commands: `name` is its argparse destination and its record field; `parse`
    turns the flag's text into the value (None: a switch, whose value is True when given, or False with `negate`);
    `setting` is its contract.toml option key, when hympi.toml and HYMPI_* may set it."""

    name: str
    flag: str
    help: str
    parse: Parse | None = None
    default: Default = None
    setting: str = ""
    metavar: str | None = None
    aliases: tuple[str, ...] = ()
    negate: bool = False
    # `repeated`: the flag may be given several times, its value the tuple of what each gave; `required`: argparse
    # refuses the command line without it.
    repeated: bool = False
    required: bool = False

    def value(self, given: object, values: Mapping[str, Value]) -> Value | None:
        """The value from the flag's text (`given`, None when absent), else the options layer where the user set it
        (hympi.toml or HYMPI_*), else the default (a function of the `values` resolved before this one), else the
        options layer's default."""
        if self.parse is None:
            if given:
                return not self.negate
        elif self.repeated and given:
            assert isinstance(given, list), given
            return tuple(self.parse(self.flag, str(text)) for text in given)
        elif given is not None and not self.repeated:
            return self.parse(self.flag, str(given))
        if self.setting and settings().get(self.setting).source != DEFAULT:
            return self._setting()
        default = self.default(values) if callable(self.default) else self.default
        if default is None and self.setting:
            return self._setting()
        if default is None and self.parse is None:
            return self.negate
        return default

    def _setting(self) -> Value:
        """The options layer's value (checked there, against contract.toml) in this parameter's form: a list
        parameter gets the one value as a list of one."""
        setting = settings().get(self.setting)
        # A bad value is named where the user set it (its variable, or "FILE: key"), not by a flag they did not type.
        return bool(setting.value) if self.parse is None else self.parse(setting.name, text_of(setting.value))

    def check_text(self, value: Value, option: str = "") -> None:
        """Checks a value built in code or read back from a record with the parser the command line uses (the same
        one line for the same bad value); `option` names it where no flag gave it (default: the flag)."""
        if self.parse is not None:
            for one in value if self.repeated and isinstance(value, tuple) else (value,):
                self.parse(option or self.flag, text_of(one))

    def spell(self, value: Value | None) -> list[str]:
        """The flags that give `value` again ([] for a switch that is off or no value)."""
        if self.parse is None:
            return [self.flag] if value is not None and bool(value) != self.negate else []
        if self.repeated and isinstance(value, tuple):
            return [part for one in value for part in (self.flag, text_of(one))]
        return [] if value is None else [self.flag, text_of(value)]

    def described(self, help: str, default: Default = None) -> Param:
        """This parameter with a command's own help (and default, where given)."""
        return dataclasses.replace(self, help=help, default=self.default if default is None else default)


class Registry(Protocol):
    """What register needs of an argparse parser."""

    def add_argument(self, *names: str, **options: Any) -> Any:
        """argparse.ArgumentParser.add_argument."""


def register(parser: Registry, params: Iterable[Param]) -> None:
    """Adds each parameter's flag to `parser`, with no argparse default: resolve decides what an absent flag means."""
    for p in params:
        if p.parse is None:
            parser.add_argument(p.flag, *p.aliases, dest=p.name, action="store_true", default=None, help=p.help)
        else:
            parser.add_argument(p.flag, *p.aliases, dest=p.name, default=None, metavar=p.metavar, help=p.help,
                                action="append" if p.repeated else "store", required=p.required)


def resolve(args: object, params: Iterable[Param], known: Mapping[str, Value] | None = None) -> dict[str, Value]:
    """Every declared parameter's value from the parsed arguments (argparse.Namespace), in declaration order (a
    default may depend on the values before it, and on the `known` ones: the app); parameters without a value are
    left out."""
    values: dict[str, Value] = dict(known or {})
    for p in params:
        value = p.value(getattr(args, p.name, None), values)
        if value is not None:
            values[p.name] = value
    return values


# The parameters several commands share, with one meaning in each.
REPEAT = Param("repeat", "--repeat", "measured runs per layout, or auto", parse_repeat, metavar="N|auto")
MAX_REPEAT = Param("max_repeat", "--max-repeat", f"--repeat auto: at most N measured rounds (default "
                   f"{DEFAULT_MAX_REPEAT})", count_of_runs("a number of rounds"), metavar="N")
CONFIDENCE = Param("confidence", "--confidence",
                   "--repeat auto and the verdicts: confidence level of the intervals (default 0.95)",
                   parse_confidence, DEFAULT_CONFIDENCE, metavar="C")
MIN_TIME = Param("min_time", "--min-time", "minimum seconds of each run's timed region; apps scale their "
                 "iterations to reach it (default $HYMPI_MIN_TIME or 1; 0 = off)", seconds_from_zero,
                 setting="min_time", metavar="S")
SEED = Param("seed", "--seed", "seed of the randomised run order (default: drawn at random; recorded)", parse_seed,
             lambda _: random_seed(), metavar="N")
TIMEOUT = Param("timeout", "--timeout", f"seconds before a run is killed and recorded as timeout (default "
                f"{DEFAULT_TIMEOUT_S:g})", seconds_above_zero, DEFAULT_TIMEOUT_S, metavar="S")
WARMUP = Param("warmup", "--no-warmup", "skip the uncounted warm-up run per layout", negate=True)
WAIT_QUIET = Param("wait_quiet", "--wait-quiet", "when the quiet check finds the machine busy, wait up to S seconds "
                   "for it to calm down before measuring (default 0: measure at once, saying so)", seconds_from_zero,
                   0.0, metavar="S")
IGNORE_LOAD = Param("ignore_load", "--ignore-load", "skip the quiet check before measuring", setting="ignore_load")
# The quiet check before a sweep or study measures (hympi.busy.quiet): not part of what the measurements are.
QUIET_CHECK = (WAIT_QUIET, IGNORE_LOAD)
DISTURBED_ABOVE = Param("disturbed_above", "--disturbed-above", "a run is disturbed (marked, left out of the "
                        "verdicts) when processes outside it used more than this many cores on its PUs on average "
                        f"(default $HYMPI_DISTURBED_ABOVE or {DEFAULT_DISTURBED_ABOVE:g}; recorded with the sweep)",
                        parse_cores, setting="disturbed_above", metavar="CORES")
JSON = Param("json", "--json", "print the result as JSON")
OVERSUBSCRIBE = Param("oversubscribe", "--oversubscribe", "allow layouts with ranks x threads > PUs",
                      setting="oversubscribe")


@dataclass(frozen=True)
class Rounds:
    """How many measured rounds: `repeat` (with `auto`, the rounds before the first decision) up to `max_repeat`."""

    repeat: int
    auto: bool
    max_repeat: int


def rounds(values: Mapping[str, Value]) -> Rounds:
    """The rounds --repeat, --max-repeat resolved to (UsageError for --max-repeat without auto, or below the rounds
    auto always runs)."""
    auto = values[REPEAT.name] == AUTO
    if MAX_REPEAT.name in values and not auto:
        raise UsageError(f"{MAX_REPEAT.flag} {values[MAX_REPEAT.name]} applies only with {REPEAT.flag} auto")
    repeat = AUTO_MIN_REPEAT if auto else _integer(values[REPEAT.name])
    max_repeat = _integer(values[MAX_REPEAT.name]) if MAX_REPEAT.name in values else max(DEFAULT_MAX_REPEAT, repeat)
    if auto and max_repeat < AUTO_MIN_REPEAT:
        raise UsageError(f"{MAX_REPEAT.flag} must be >= {AUTO_MIN_REPEAT} (the rounds {REPEAT.flag} auto always "
                         f"runs), got {max_repeat}")
    return Rounds(repeat=repeat, auto=auto, max_repeat=max_repeat)


def ints(values: Mapping[str, Value], name: str, default: tuple[int, ...] = (1,)) -> tuple[int, ...]:
    """A resolved list of integers (`default` when it has no value)."""
    value = values.get(name, default)
    return tuple(int(v) for v in value) if isinstance(value, tuple) else (_integer(value),)


def texts(values: Mapping[str, Value], name: str, default: tuple[str, ...] = ()) -> tuple[str, ...]:
    """A resolved list of names (`default` when it has no value)."""
    value = values.get(name, default)
    return tuple(str(v) for v in value) if isinstance(value, tuple) else (str(value),)


def disturbed_above_of(args: object) -> float:
    """DISTURBED_ABOVE (or a command's own description of it) for a command's parsed arguments: its flag where the
    command has one, else the setting ($HYMPI_DISTURBED_ABOVE, hympi.toml), else the default."""
    value = resolve(args, (DISTURBED_ABOVE,))[DISTURBED_ABOVE.name]
    assert isinstance(value, float), value
    return value


def seconds_of(args: object, param: Param) -> float | None:
    """The resolved value of one seconds parameter (--timeout) from the parsed arguments; None when it has none."""
    value = resolve(args, (param,)).get(param.name)
    assert value is None or isinstance(value, float), value
    return value


def _integer(value: Value) -> int:
    """A resolved integer value (the parser made it one)."""
    assert isinstance(value, int), value
    return value


# Records: frozen dataclasses <-> the JSON stored with them.

Record = TypeVar("Record")


class DataclassInstance(Protocol):
    """Any dataclass instance."""

    __dataclass_fields__: typing.ClassVar[dict[str, Any]]


def as_record(record: DataclassInstance, optional: Iterable[str] = ()) -> JsonObject:
    """Every field of `record` as JSON (tuples as lists); the `optional` fields only when not at their default, so
    a record keeps the identity it had before they existed."""
    out: JsonObject = {}
    skip = set(optional)
    for field in dataclasses.fields(record):
        value = getattr(record, field.name)
        if field.name in skip and value == field.default:
            continue
        out[field.name] = _json(value)
    return out


def from_record(cls: type[Record], data: Mapping[str, Any], before: Mapping[str, Any] | None = None) -> Record:
    """The `cls` record stored as `data` (as_record's inverse; also the values a command resolved), each value
    converted to its field's type and keys that are no field left out; a field missing from `data` takes its value
    from `before` (what records written before the field existed ran with: a value, or a function of `data`), else
    the field's default."""
    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = {}
    for field in dataclasses.fields(cls):  # type: ignore[arg-type]
        if field.name in data:
            values[field.name] = _typed(hints[field.name], data[field.name])
        elif before is not None and field.name in before:
            past = before[field.name]
            values[field.name] = _typed(hints[field.name], past(data) if callable(past) else past)
    return cls(**values)


def _json(value: object) -> Any:
    """`value` with tuples as lists, recursively."""
    return [_json(v) for v in value] if isinstance(value, tuple) else value


def _typed(hint: Any, value: Any) -> Any:
    """`value` (JSON) as type `hint`: int, float, bool, str, tuple[X, ...] or tuple[X, Y]; a dataclass field takes
    an instance as it is (a record built in code, never stored)."""
    if isinstance(hint, type) and dataclasses.is_dataclass(hint) and isinstance(value, hint):
        return value
    origin = typing.get_origin(hint)
    if origin is tuple:
        items = typing.get_args(hint)
        if len(items) == 2 and items[1] is Ellipsis:
            return tuple(_typed(items[0], v) for v in value)
        return tuple(_typed(h, v) for h, v in zip(items, value, strict=True))
    if origin in (typing.Union, types.UnionType):
        return value
    return hint(value)


# A differing value longer than this is named, not quoted (differing_params).
_SHOWN_VALUE_CHARS = 40


def _shown(value: object) -> str:
    """A recorded value as the user types it: lists comma-separated, a pair of counts as RxT."""
    if isinstance(value, list):
        if value and all(isinstance(v, int) for v in value):
            return "x".join(map(str, value))
        return ",".join(map(_shown, value))
    return "-" if value is None or value == "" else str(value)


def differing_keys(there: Mapping[str, object], here: Mapping[str, object]) -> list[str]:
    """The keys whose values two records (as_record) differ in, sorted."""
    return [key for key in sorted(there.keys() | here.keys()) if there.get(key) != here.get(key)]


def closest(records: Iterable[tuple[Record, Mapping[str, object]]],
            here: Mapping[str, object]) -> tuple[Record, Mapping[str, object]] | None:
    """Of (thing, its record) pairs, the first whose record differs from `here` in the fewest keys; None for none
    (what `--resume` names when nothing had the parameters given)."""
    return min(records, key=lambda pair: len(differing_keys(pair[1], here)), default=None)


def differing_params(there: Mapping[str, object], here: Mapping[str, object], spelled: Mapping[str, str]) -> str:
    """Each parameter in which two records (as_record) differ, as the user spells it (`spelled`, else its field
    name) with both values: '--ranks (1,2 there, 1 here); --timeout (600.0 there, 30.0 here)'; a digest or a long
    value is named, not quoted."""
    parts = []
    for key in differing_keys(there, here):
        values = [_shown(there.get(key)), _shown(here.get(key))]
        if key.endswith("sha256") or max(map(len, values)) > _SHOWN_VALUE_CHARS:
            parts.append(spelled.get(key, key))
        else:
            parts.append(f"{spelled.get(key, key)} ({values[0]} there, {values[1]} here)")
    return "; ".join(parts)


def check_fields(record: DataclassInstance, params: Iterable[Param]) -> None:
    """Checks each field of `record` that a declaration in `params` names, with that declaration's parser; a field
    at its default (which may mean 'none': no checkpoint directory) is the record's own business."""
    defaults = {field.name: field.default for field in dataclasses.fields(record)}
    for p in params:
        if p.name in defaults and p.parse is not None:
            value = getattr(record, p.name)
            if value != defaults[p.name]:
                p.check_text(value)


def declared_default(option: str) -> float:
    """contract.toml's default of a numeric option (the value a record takes without the options layer)."""
    entry = contract().option(option)
    assert entry is not None, option
    return float(entry.default)
