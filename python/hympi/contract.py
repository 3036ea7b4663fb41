"""contract.toml, the one declaration the C++ apps and this CLI share: apps, enum names, HYMPI_* options,
HYMPI_RESULT fields and STREAM's sizing rule (the apps see it through the generated hympi/contract.hpp)."""

from __future__ import annotations

import itertools
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from hympi.errors import HympiFatal

# Package data: in the repository a link to the root's contract.toml (the file CMake reads too), in an installed
# package its copy, so `pip install .` works away from the repository.
CONTRACT_PATH = Path(__file__).resolve().parent / "contract.toml"
FIELD_TYPES = ("string", "number", "integer", "boolean", "object", "array")
OPTION_TYPES = ("string", "path", "bool", "int", "seconds")


def enum_of(type_name: str) -> str | None:
    """'BindPolicy' for the type 'enum:BindPolicy', None for a plain type."""
    return type_name.removeprefix("enum:") if type_name.startswith("enum:") else None


@dataclass(frozen=True)
class AppEntry:
    """One launchable app; study_* are the study's problem-size arguments (None: the study skips the app);
    checkpoints: it writes checkpoints and restarts from them (--checkpoint, --checkpoint-every, --restart)."""

    name: str
    binary: str
    description: str
    study_quick: tuple[str, ...] | None
    study_full: tuple[str, ...] | None
    checkpoints: bool = False


class _Typed:
    """An entry with a type that may name an enum's values (enum:<Name>)."""

    type: str

    @property
    def enum(self) -> str | None:
        """The enum the entry names a value of, or None."""
        return enum_of(self.type)


@dataclass(frozen=True)
class OptionEntry(_Typed):
    """One HYMPI_* option: config key, variable, type (see OPTION_TYPES, or enum:<Name>), default and users."""

    key: str
    env: str
    type: str
    default: str | int | float | bool
    used_by: tuple[str, ...]
    meaning: str


@dataclass(frozen=True)
class FieldEntry(_Typed):
    """One HYMPI_RESULT field: type (see FIELD_TYPES, or enum:<Name>), whether required, unit and meaning."""

    name: str
    type: str
    required: bool
    unit: str
    written_by: str
    meaning: str


@dataclass(frozen=True)
class StreamSizing:
    """STREAM's array sizing rule (contract.toml [stream])."""

    llc_multiple: int
    min_elements: int
    memory_fraction: float

    def elements(self, llc_bytes: int, ranks_on_node: int) -> int:
        """Doubles per array per rank so that each array over `ranks_on_node` ranks holds llc_multiple x the
        last-level caches, at least min_elements (the same arithmetic as C++ stream_elements_for)."""
        total = self.llc_multiple * llc_bytes // 8
        return max(total // max(ranks_on_node, 1) + 1, self.min_elements)


@dataclass(frozen=True)
class Contract:
    """The whole contract file, parsed."""

    apps: tuple[AppEntry, ...]
    enums: dict[str, tuple[str, ...]]
    enum_what: dict[str, str]
    options: tuple[OptionEntry, ...]
    fields: tuple[FieldEntry, ...]
    stream: StreamSizing
    profile_size_bins: tuple[int, ...]
    max_seconds: float  # the largest value of a seconds option ([seconds])
    max_seconds_reason: str
    max_node_pus: int  # the most PUs of one node ([node_pus])
    max_node_pus_reason: str

    def app(self, name: str) -> AppEntry | None:
        """The app called `name`, or None."""
        return next((a for a in self.apps if a.name == name), None)

    def option(self, key: str) -> OptionEntry | None:
        """The option with config key `key`, or None."""
        return next((o for o in self.options if o.key == key), None)


def _args(value: Any) -> tuple[str, ...] | None:
    """A study argument list, or None when the app declares none."""
    return None if value is None else tuple(str(v) for v in value)


def parse_contract(data: dict[str, Any]) -> Contract:
    """The Contract of a loaded contract file; raises ValueError naming the entry that does not fit."""
    enums = {name: tuple(str(text) for _, text in spec["values"]) for name, spec in data["enum"].items()}
    what = {name: str(spec["what"]) for name, spec in data["enum"].items()}
    for label, types, entries in (("option", OPTION_TYPES, [(o["key"], o["type"]) for o in data["option"]]),
                                  ("result field", FIELD_TYPES,
                                   [(n, f["type"]) for n, f in data["result"]["field"].items()])):
        for name, type_name in entries:
            if type_name not in types and type_name.removeprefix("enum:") not in enums:
                raise ValueError(f"{label} '{name}': unknown type '{type_name}'")
    for a in data["app"]:
        if not isinstance(a.get("checkpoints", False), bool):
            raise ValueError(f"app '{a['name']}': checkpoints must be true or false, got {a['checkpoints']!r}")
    apps = tuple(AppEntry(a["name"], a["binary"], a["description"], _args(a.get("study_quick")),
                          _args(a.get("study_full")), bool(a.get("checkpoints", False))) for a in data["app"])
    options = tuple(OptionEntry(o["key"], o["env"], o["type"], o["default"], tuple(o["used_by"]), o["meaning"])
                    for o in data["option"])
    fields = tuple(FieldEntry(n, f["type"], bool(f["required"]), str(f.get("unit", "")), f["written_by"],
                              f["meaning"]) for n, f in data["result"]["field"].items())
    s = data["stream"]
    bins = tuple(int(edge) for edge in data["profile"]["size_bins"])
    if not bins or bins[0] != 0 or any(b <= a for a, b in itertools.pairwise(bins)):
        raise ValueError(f"[profile] size_bins must ascend from 0, got {list(bins)}")
    seconds = data["seconds"]
    node_pus = data["node_pus"]
    return Contract(apps, enums, what, options, fields,
                    StreamSizing(int(s["llc_multiple"]), int(s["min_elements"]), float(s["memory_fraction"])), bins,
                    float(seconds["max"]), str(seconds["reason"]), int(node_pus["max"]), str(node_pus["reason"]))


@lru_cache(maxsize=1)
def contract() -> Contract:
    """The repository's contract.toml, parsed once; raises HympiFatal when it is missing or malformed."""
    return load_contract(CONTRACT_PATH)


def load_contract(path: Path) -> Contract:
    """The contract at `path`; raises HympiFatal naming the file and the problem."""
    try:
        return parse_contract(tomllib.loads(path.read_text()))
    except (OSError, tomllib.TOMLDecodeError, KeyError, TypeError, ValueError) as exc:
        raise HympiFatal(f"contract {path} is unusable: {exc!r}") from None


def enum_names(name: str) -> tuple[str, ...]:
    """The text names of enum `name` (e.g. 'BindPolicy'), in the C++ declaration order."""
    return contract().enums[name]
