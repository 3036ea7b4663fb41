"""The search space of a tune, read from a TOML file: layout axes, MPI parameters with values or ranges, constraints.

Format (docs/tune.md; a commented example is bench/tune/example-space.toml):

    [layout]
    ranks = [1, 2, 4]
    threads = [1]
    bind = ["core", "none"]
    default = { ranks = 2, threads = 1, bind = "core" }

    [mpi.btl_vader_eager_limit]
    values = [4096, 16384, 65536]             # or range = { from = 1024, to = 65536, factor = 4 } (or step = N)
    unset = true                              # also try the library's own default (parameter not set)

    [mpi.coll_tuned_alltoall_algorithm]
    values = ["linear", "pairwise"]
    requires = { coll_tuned_use_dynamic_rules = "true" }   # set only where that parameter has that value

    [[constraint]]
    max_cpus = 4                              # ranks x threads <= 4
    [[constraint]]
    exclude = { bind = "none", btl_vader_single_copy_mechanism = "none" }

The space is the cross product of every axis, with a parameter whose `requires` is not met left unset (duplicates
dropped), then the constraints applied. The default configuration (the default layout, every MPI parameter at the
library's default) always belongs to the space, first: speedups are measured against it.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from hympi.errors import UsageError, unknown_name
from hympi.jsontypes import JsonObject
from hympi.launch.cvars import Cvar, CvarListing, load_listing
from hympi.launch.mpirun import BIND_POLICIES
from hympi.textfile import read_toml

LAYOUT_KEYS = ("ranks", "threads", "bind")
# A range that would expand past this many values is a typo (a step of 1 over bytes), not a search space.
MAX_RANGE_VALUES = 1000
MAX_CONFIGURATIONS = 100_000
UNSET_LABEL = "(default)"


@dataclass(frozen=True, order=True)
class Configuration:
    """One point of the space: a ranks x threads layout, a binding and the MPI parameters set (sorted by name;
    a parameter not listed keeps the library's default)."""

    ranks: int
    threads: int
    bind: str
    mpi_params: tuple[tuple[str, str], ...] = ()

    def key(self) -> str:
        """Canonical text identifying the configuration (equal configurations, equal keys)."""
        return json.dumps([self.ranks, self.threads, self.bind, [list(p) for p in self.mpi_params]],
                          separators=(",", ":"))

    @classmethod
    def from_key(cls, key: str) -> Configuration:
        """The inverse of key(); raises ValueError for text key() cannot have written."""
        ranks, threads, bind, params = json.loads(key)
        return cls(int(ranks), int(threads), str(bind), tuple((str(n), str(v)) for n, v in params))

    def label(self) -> str:
        """'2x1 core btl_vader_eager_limit=16384' ('2x1 core (MPI defaults)' without parameters)."""
        params = " ".join(f"{n}={v}" for n, v in self.mpi_params) or "(MPI defaults)"
        return f"{self.ranks}x{self.threads} {self.bind} {params}"

    def params(self) -> dict[str, str]:
        """The MPI parameters as a dict."""
        return dict(self.mpi_params)

    def as_dict(self) -> JsonObject:
        """JSON-ready form."""
        return {"ranks": self.ranks, "threads": self.threads, "bind": self.bind,
                "mpi_params": dict(self.mpi_params)}


def make_configuration(ranks: int, threads: int, bind: str, params: Mapping[str, str | None]) -> Configuration:
    """A Configuration with the parameters that are set (None = unset) sorted by name."""
    return Configuration(ranks, threads, bind, tuple(sorted((n, v) for n, v in params.items() if v is not None)))


@dataclass(frozen=True)
class Parameter:
    """One MPI parameter of the space: its cvar, the candidate values (canonical; None = unset) and its
    requirement (set only where every named parameter has the named value)."""

    cvar: Cvar
    values: tuple[str | None, ...]
    requires: tuple[tuple[str, str], ...] = ()

    @property
    def name(self) -> str:
        """The cvar's name."""
        return self.cvar.name


@dataclass(frozen=True)
class Constraint:
    """Excludes configurations: more than max_cpus PUs (ranks x threads), or matching every entry of `exclude`
    (layout keys or parameter names; a parameter's value '(default)' matches it unset)."""

    max_cpus: int | None = None
    exclude: tuple[tuple[str, str], ...] = ()

    def allows(self, config: Configuration) -> bool:
        """Whether `config` passes this constraint."""
        if self.max_cpus is not None and config.ranks * config.threads > self.max_cpus:
            return False
        if not self.exclude:
            return True
        values = _layout_values(config)
        params = config.params()
        for key, want in self.exclude:
            have = values[key] if key in values else params.get(key, UNSET_LABEL)
            if have != want:
                return True
        return False

    def may_exclude(self, layout: Configuration) -> bool:
        """Whether this constraint excludes `layout`'s ranks x threads x bind with some MPI parameters' values (its
        own parameters are not read): too many PUs, or every layout entry of `exclude` matched."""
        if self.max_cpus is not None and layout.ranks * layout.threads > self.max_cpus:
            return True
        values = _layout_values(layout)
        return bool(self.exclude) and all(values[key] == want for key, want in self.exclude if key in values)


def _layout_values(config: Configuration) -> dict[str, str]:
    """A configuration's layout as a constraint's exclude entries write it."""
    return {"ranks": str(config.ranks), "threads": str(config.threads), "bind": config.bind}


@dataclass(frozen=True)
class SearchSpace:
    """Layout axes, MPI parameters and constraints; `default` is the reference configuration (default layout,
    MPI parameters unset)."""

    ranks: tuple[int, ...]
    threads: tuple[int, ...]
    binds: tuple[str, ...]
    default: Configuration
    parameters: tuple[Parameter, ...] = ()
    constraints: tuple[Constraint, ...] = ()
    source: JsonObject = field(default_factory=dict, hash=False, compare=False)

    def as_stored(self) -> JsonObject:
        """What a tune records of its space: the TOML data, its size, the default, and the parameters' cvars (so the
        space is rebuilt later, by the predictor or the report, without asking the MPI library)."""
        return {"source": self.source, "configurations": len(self.configurations()), "default": self.default.key(),
                "cvars": [p.cvar.as_dict() for p in self.parameters]}

    def configurations(self) -> tuple[Configuration, ...]:
        """Every configuration: the default first, then the cross product (ranks, threads, bind, then parameters in
        name order, each in its listed order) with unmet requirements unset, duplicates and constrained ones
        dropped. Deterministic."""
        out: dict[Configuration, None] = {self.default: None}
        names = [p.name for p in self.parameters]
        requires = {p.name: p.requires for p in self.parameters}
        for ranks, threads, bind in itertools.product(self.ranks, self.threads, self.binds):
            for combo in itertools.product(*(p.values for p in self.parameters)):
                chosen: dict[str, str | None] = dict(zip(names, combo, strict=True))
                # A requirement names parameters that may themselves be unset by theirs: settle them in order.
                for _ in names:
                    changed = False
                    for name in names:
                        if chosen[name] is not None and any(chosen.get(n) != v for n, v in requires[name]):
                            chosen[name] = None
                            changed = True
                    if not changed:
                        break
                config = make_configuration(ranks, threads, bind, chosen)
                if config not in out and all(c.allows(config) for c in self.constraints):
                    out[config] = None
                if len(out) > MAX_CONFIGURATIONS:
                    raise UsageError(f"the search space has more than {MAX_CONFIGURATIONS} configurations")
        return tuple(out)

    def layouts(self) -> tuple[tuple[int, int, str], ...]:
        """The distinct (ranks, threads, bind) layouts of the configurations, in space order."""
        return tuple(dict.fromkeys((c.ranks, c.threads, c.bind) for c in self.configurations()))

    def _categories(self, param: Parameter) -> list[str]:
        """The one-hot columns of a categorical parameter: its values, plus UNSET_LABEL when it can be unset."""
        cats = [v for v in param.values if v is not None]
        if None in param.values or param.requires:
            cats.append(UNSET_LABEL)
        return cats

    def feature_names(self) -> list[str]:
        """Names of the columns encode() returns: ranks_log2, threads_log2, bind=B..., then per parameter NAME_log2
        (numeric) or NAME=VALUE (categorical, one-hot)."""
        names = ["ranks_log2", "threads_log2", *(f"bind={b}" for b in self.binds)]
        for param in self.parameters:
            if param.cvar.is_numeric():
                names.append(f"{param.name}_log2")
            else:
                names += [f"{param.name}={v}" for v in self._categories(param)]
        return names

    def encode(self, config: Configuration) -> list[float]:
        """Numeric features of a configuration for surrogate and predictor models: ranks and threads as log2,
        binding one-hot, numeric parameters as a signed log2 (unset = the library's default value), categorical
        ones one-hot."""
        row = [math.log2(config.ranks), math.log2(config.threads), *(float(config.bind == b) for b in self.binds)]
        params = config.params()
        for param in self.parameters:
            value = params.get(param.name)
            if param.cvar.is_numeric():
                row.append(_signed_log2(value if value is not None else param.cvar.value))
            else:
                chosen = value if value is not None else UNSET_LABEL
                row += [float(chosen == c) for c in self._categories(param)]
        return row


def _signed_log2(text: str | None) -> float:
    """sign(x) * log2(1 + |x|): orders of magnitude, defined at 0 and below (0 when the value is unknown)."""
    try:
        value = float(text) if text is not None else 0.0
    except ValueError:
        return 0.0
    return math.copysign(math.log2(1.0 + abs(value)), value) if math.isfinite(value) else 0.0


def _text(where: str, value: object) -> str:
    """A TOML scalar as the text a cvar value is written in; UsageError for tables and lists."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        return str(value)
    raise UsageError(f"{where}: {value!r} is not a single value")


def _positive_ints(where: str, value: object) -> tuple[int, ...]:
    """A non-empty list of positive integers, duplicates dropped; UsageError otherwise."""
    if not isinstance(value, list) or not value:
        raise UsageError(f"{where} must be a non-empty list of positive integers, got {value!r}")
    out: list[int] = []
    for item in value:
        if not isinstance(item, int) or isinstance(item, bool) or item < 1:
            raise UsageError(f"{where}: {item!r} is not a positive integer")
        if item not in out:
            out.append(item)
    return tuple(out)


def _binds(value: object) -> tuple[str, ...]:
    """The binding axis; UsageError for an empty list or an unknown policy."""
    if not isinstance(value, list) or not value:
        raise UsageError(f"layout.bind must be a non-empty list of {', '.join(BIND_POLICIES)}, got {value!r}")
    for item in value:
        if item not in BIND_POLICIES:
            raise UsageError(f"layout.bind: {unknown_name('binding', BIND_POLICIES, str(item))}")
    return tuple(dict.fromkeys(str(b) for b in value))


def _unknown_keys(where: str, table: Mapping[str, Any], allowed: tuple[str, ...]) -> None:
    """UsageError naming the first key of `table` not in `allowed`."""
    for key in table:
        if key not in allowed:
            raise UsageError(f"{where}: {unknown_name('key', allowed, key)}")


def _range_values(name: str, spec: object, cvar: Cvar) -> list[str]:
    """The values of `range = { from, to, factor | step }`, as text; UsageError for a malformed or huge range."""
    where = f"mpi.{name}.range"
    if not isinstance(spec, dict):
        raise UsageError(f"{where} must be a table {{ from, to, factor or step }}")
    _unknown_keys(where, spec, ("from", "to", "factor", "step"))
    if not cvar.is_numeric():
        raise UsageError(f"{where}: {name} is not numeric ({cvar.datatype}); list its values instead")
    integral = cvar.kind == "integer"
    for key, value in spec.items():
        # TOML reads nan and inf as floats; an integer parameter's values are never rounded into place.
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
            raise UsageError(f"{where}: {key} must be a finite number, got {value!r}")
        if integral and not float(value).is_integer():
            raise UsageError(f"{where}: {key} must be an integer ({name} is an integer parameter), got {value!r}")
    start, stop = spec.get("from"), spec.get("to")
    numbers = (int, float)
    if not isinstance(start, numbers) or not isinstance(stop, numbers) or stop < start:
        raise UsageError(f"{where} needs numbers from <= to, got from={start!r} to={stop!r}")
    if ("factor" in spec) == ("step" in spec):
        raise UsageError(f"{where} needs exactly one of factor or step")
    values: list[float] = []
    current: float = start
    if "factor" in spec:
        factor = spec["factor"]
        if not isinstance(factor, numbers) or isinstance(factor, bool) or factor <= 1 or start <= 0:
            raise UsageError(f"{where}: factor must be > 1 and from > 0, got factor={factor!r} from={start!r}")
        while current <= stop * (1 + 1e-12):
            values.append(current)
            current *= factor
            if len(values) > MAX_RANGE_VALUES:
                break
    else:
        step = spec["step"]
        if not isinstance(step, numbers) or isinstance(step, bool) or step <= 0:
            raise UsageError(f"{where}: step must be > 0, got {step!r}")
        count = 0
        while current <= stop * (1 + 1e-12) + 1e-12 and count <= MAX_RANGE_VALUES:
            values.append(current)
            count += 1
            current = start + count * step
    if len(values) > MAX_RANGE_VALUES:
        raise UsageError(f"{where} expands to more than {MAX_RANGE_VALUES} values")
    return [str(round(v)) if integral else repr(float(v)) for v in values]


def _parameter(name: str, table: object, cvars: Mapping[str, Cvar], library: str) -> Parameter:
    """One [mpi.NAME] table, checked against the cvars; UsageError naming the parameter or value."""
    cvar = cvars.get(name)
    if cvar is None:
        raise UsageError(f"unknown MPI parameter '{name}' (not a control variable of {library})")
    if not isinstance(table, dict):
        raise UsageError(f"mpi.{name} must be a table with values or range")
    _unknown_keys(f"mpi.{name}", table, ("values", "range", "unset", "requires"))
    if ("values" in table) == ("range" in table):
        raise UsageError(f"mpi.{name} needs exactly one of values or range")
    if "values" in table:
        raw = table["values"]
        if not isinstance(raw, list) or not raw:
            raise UsageError(f"mpi.{name}.values must be a non-empty list")
        texts = [_text(f"mpi.{name}.values", v) for v in raw]
    else:
        texts = _range_values(name, table["range"], cvar)
    values: list[str | None] = []
    unset = table.get("unset", False)
    if not isinstance(unset, bool):
        raise UsageError(f"mpi.{name}.unset must be true or false, got {unset!r}")
    if unset:
        values.append(None)
    for text in texts:
        value = cvar.canonical(text)
        if value not in values:
            values.append(value)
    requires = table.get("requires", {})
    if not isinstance(requires, dict):
        raise UsageError(f"mpi.{name}.requires must be a table NAME = VALUE")
    return Parameter(cvar, tuple(values), tuple(sorted((str(k), _text(f"mpi.{name}.requires", v))
                                                       for k, v in requires.items())))


def _constraint(index: int, table: object, layout_and_params: set[str]) -> Constraint:
    """One [[constraint]] table; UsageError for unknown keys or names."""
    where = f"constraint[{index}]"
    if not isinstance(table, dict):
        raise UsageError(f"{where} must be a table")
    _unknown_keys(where, table, ("max_cpus", "exclude"))
    if not table:
        raise UsageError(f"{where} is empty (give max_cpus or exclude)")
    max_cpus = table.get("max_cpus")
    if max_cpus is not None and (not isinstance(max_cpus, int) or isinstance(max_cpus, bool) or max_cpus < 1):
        raise UsageError(f"{where}.max_cpus must be a positive integer, got {max_cpus!r}")
    exclude = table.get("exclude", {})
    if not isinstance(exclude, dict):
        raise UsageError(f"{where}.exclude must be a table NAME = VALUE")
    for key in exclude:
        if key not in layout_and_params:
            raise UsageError(f"{where}.exclude: '{key}' is neither a layout axis nor a parameter of the space")
    return Constraint(max_cpus, tuple(sorted((str(k), _text(f"{where}.exclude", v)) for k, v in exclude.items())))


def _layout_axes(data: Mapping[str, Any]) -> tuple[tuple[int, ...], tuple[int, ...], tuple[str, ...], Configuration]:
    """The space's ranks, threads and bind axes and its default layout; UsageError naming a bad key or value."""
    _unknown_keys("space", data, ("layout", "mpi", "constraint"))
    layout = data.get("layout", {})
    if not isinstance(layout, dict):
        raise UsageError("[layout] must be a table")
    _unknown_keys("layout", layout, (*LAYOUT_KEYS, "default"))
    ranks = _positive_ints("layout.ranks", layout.get("ranks", [1]))
    threads = _positive_ints("layout.threads", layout.get("threads", [1]))
    binds = _binds(layout.get("bind", ["core"]))
    default_table = layout.get("default", {})
    if not isinstance(default_table, dict):
        raise UsageError("layout.default must be a table { ranks, threads, bind }")
    _unknown_keys("layout.default", default_table, LAYOUT_KEYS)
    d_ranks = _positive_ints("layout.default.ranks", [default_table.get("ranks", ranks[0])])[0]
    d_threads = _positive_ints("layout.default.threads", [default_table.get("threads", threads[0])])[0]
    d_bind = _binds([default_table.get("bind", binds[0])])[0]
    return ranks, threads, binds, Configuration(d_ranks, d_threads, d_bind)


def _mpi_tables(data: Mapping[str, Any]) -> dict[str, Any]:
    """The [mpi.NAME] tables by name; UsageError when [mpi] is not a table."""
    mpi = data.get("mpi", {})
    if not isinstance(mpi, dict):
        raise UsageError("[mpi] must hold one table per parameter: [mpi.NAME]")
    return mpi


def _constraints(data: Mapping[str, Any], names: set[str]) -> tuple[Constraint, ...]:
    """The [[constraint]] tables, their exclude keys among the layout axes and `names`; UsageError otherwise."""
    raw_constraints = data.get("constraint", [])
    if not isinstance(raw_constraints, list):
        raise UsageError("constraints are written as [[constraint]] tables")
    return tuple(_constraint(i, c, {*LAYOUT_KEYS, *names}) for i, c in enumerate(raw_constraints))


def certain_layouts(data: Mapping[str, Any]) -> tuple[tuple[int, int, str], ...]:
    """The layouts every reading of space `data` holds, known without the MPI library's control variables (which
    cost a launch of hympi-mpit): the default's, and each one no constraint can exclude. A constraint that names
    an MPI parameter excludes a layout it matches only for some of the parameter's values, so such layouts are
    left to parse_space. UsageError as parse_space for a bad layout or constraint."""
    ranks, threads, binds, default = _layout_axes(data)
    constraints = _constraints(data, set(_mpi_tables(data)))
    out = {(default.ranks, default.threads, default.bind): None}
    for layout in itertools.product(ranks, threads, binds):
        if not any(c.may_exclude(Configuration(*layout)) for c in constraints):
            out[layout] = None
    return tuple(out)


def parse_space(data: Mapping[str, Any], cvars: Mapping[str, Cvar], library: str = "the MPI library") -> SearchSpace:
    """A SearchSpace from a decoded TOML document; raises UsageError (one line naming the key or value) for an
    unknown parameter, a value outside a cvar's type, a bad layout or an empty space."""
    ranks, threads, binds, default = _layout_axes(data)
    mpi = _mpi_tables(data)
    parameters = tuple(_parameter(name, mpi[name], cvars, library) for name in sorted(mpi))
    names = {p.name for p in parameters}
    for param in parameters:
        for other, value in param.requires:
            if other not in names:
                raise UsageError(f"mpi.{param.name}.requires: '{other}' is not a parameter of the space")
            target = next(p for p in parameters if p.name == other)
            canonical = target.cvar.canonical(value)
            if canonical not in target.values:
                raise UsageError(f"mpi.{param.name}.requires: {other} = '{value}' is not among its values")
    parameters = tuple(Parameter(p.cvar, p.values, tuple((n, next(q for q in parameters if q.name == n)
                                                         .cvar.canonical(v)) for n, v in p.requires))
                       for p in parameters)
    constraints = _constraints(data, names)
    space = SearchSpace(ranks, threads, binds, default, parameters, constraints, dict(data))
    if len(space.configurations()) < 2:
        raise UsageError("the search space is empty: it holds no configuration besides the default")
    return space


# Where the control variables of a space's MPI parameters come from: a saved listing or a launch of hympi-mpit, asked
# only for a space with [mpi.NAME] tables (library_space).
CvarSource = Callable[[], CvarListing]


def listing_source(cvars_file: str | None) -> CvarSource:
    """The listing in `cvars_file` (`hympi tune params --json`), read now: a file the user named is checked whether
    or not a space needs it (UsageError naming it); else the installed library's, read when first asked and at most
    once however many spaces ask for it."""
    if cvars_file is not None:
        listing = load_listing(cvars_file)
        return lambda: listing
    return cache(lambda: load_listing(None))


def library_space(data: Mapping[str, Any], cvars: CvarSource) -> SearchSpace:
    """parse_space against the MPI library's control variables, asked of `cvars` only for a space with [mpi] tables:
    a layout-only space needs none."""
    if not _mpi_tables(data):
        return parse_space(data, {})
    listing = cvars()
    return parse_space(data, listing.cvars, listing.library)


def read_space(path: str | Path) -> dict[str, Any]:
    """The TOML table of search space file `path`, not yet checked against the control variables (so a command can
    refuse a missing or malformed file before it asks the MPI library for them); UsageError naming the file."""
    return read_toml(path, "search space")


def load_space(path: str | Path, cvars: Mapping[str, Cvar], library: str = "the MPI library") -> SearchSpace:
    """The search space in TOML file `path` (see parse_space); raises UsageError for a missing or malformed file."""
    return parse_space(read_space(path), cvars, library)
