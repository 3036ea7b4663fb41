"""The options layer the CLI shares with the apps: defaults < config file (hympi.toml in the working directory, or
--config / HYMPI_CONFIG) < HYMPI_* environment < command line, over the options contract.toml declares.

Every HYMPI_* variable the CLI reads goes through load_settings; the apps resolve the same layers in C++
(include/hympi/app/settings.hpp) and name sources with the same words.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hympi.contract import OptionEntry, contract
from hympi.errors import UsageError, unknown_name
from hympi.numbers import ascii_float, ascii_int
from hympi.textfile import file_problem, read_toml

CONFIG_KEY = "config"
DEFAULT = "default"
COMMAND_LINE = "command line"

Value = str | int | float | bool


@dataclass(frozen=True)
class Setting:
    """One option's effective value, where it came from ('default', 'config file PATH', 'env VAR' or
    'command line') and how errors name it (the variable, the --flag, 'FILE: key' or the key)."""

    key: str
    value: Value
    source: str
    name: str


def parse_seconds(name: str, text: str, allow_zero: bool) -> float:
    """A finite number of seconds (> 0, or >= 0 with allow_zero) up to the contract's largest ([seconds] max, which
    the apps hold to as well): an option's value here and a command-line duration in hympi.params; UsageError naming
    `name` and the value otherwise."""
    try:
        value = ascii_float(text)
    except ValueError:
        raise UsageError(f"{name}: '{text}' is not a number of seconds") from None
    if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise UsageError(f"{name} must be a finite number of seconds {bound}, got {text}")
    limit = contract()
    if value > limit.max_seconds:
        raise UsageError(f"{name} {value:.10g} exceeds hympi's limit of {limit.max_seconds:.10g} seconds "
                         f"({limit.max_seconds_reason})")
    return value


def _check(option: OptionEntry, value: object, name: str) -> Value:
    """`value` as the option's type (text from the environment is converted); UsageError naming `name`."""
    kind = option.type
    if kind == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value in ("0", "1", "true", "false", ""):
            return value in ("1", "true")
        raise UsageError(f"{name} must be 0 or 1, got '{value}'")
    if kind == "int":
        try:
            number = value if isinstance(value, int) and not isinstance(value, bool) else \
                ascii_int(value) if isinstance(value, str) else None
        except ValueError:
            number = None
        if number is None or number < 1:
            raise UsageError(f"{name} must be a positive integer, got '{value}'")
        return number
    if kind == "seconds":
        if not isinstance(value, (int, float, str)) or isinstance(value, bool):
            raise UsageError(f"{name} must be a finite number of seconds >= 0, got {value}")
        return parse_seconds(name, str(value), allow_zero=True)
    if not isinstance(value, str):
        raise UsageError(f"{name} must be a string, got {value!r}")
    enum = option.enum
    if enum is not None:
        names = contract().enums[enum]
        if value not in names:
            raise UsageError(f"{name}: {unknown_name(contract().enum_what[enum], names, value)}")
    return value


def _flatten(table: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """A TOML table as dotted keys ('a.b'), so a section is reported by its full key; an empty section by its own
    (a table is never an option's value: read_config refuses it as an unknown key)."""
    out: dict[str, Any] = {}
    for key, value in table.items():
        if isinstance(value, dict) and value:
            out.update(_flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def _file_text(value: object) -> str | None:
    """A config file's value as the text the apps read (CLI11 hands them each value's text, and the options layer
    converts text to the option's type on either side): a string as it is, true and false, an integer or a number
    in digits; None for anything else."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    return None  # a list, a date, a time


def read_config(path: Path) -> dict[str, str]:
    """key -> text of each value of the config file at `path` (_file_text); UsageError naming the file and the first
    key that is no single value of a declared option (a section, even an empty one, is no option)."""
    entries: dict[str, str] = {}
    for key, value in _flatten(read_toml(path, "config file")).items():
        if contract().option(key) is None or key == CONFIG_KEY or isinstance(value, dict):
            raise UsageError(f"config file {path}: unknown key '{key}'")
        text = _file_text(value)
        if isinstance(value, list):  # the apps' words (src/app/settings.cpp)
            raise UsageError(f"config file {path}: {key} must be a single value")
        if text is None:  # a date or a time
            raise UsageError(f"config file {path}: {key} must be a string, a number, true or false, got {value}")
        entries[key] = text
    return entries


@dataclass(frozen=True)
class Settings:
    """Every declared option, resolved."""

    values: tuple[Setting, ...]

    def get(self, key: str) -> Setting:
        """The setting of `key` (KeyError only for a key the contract does not declare: a programming error)."""
        for setting in self.values:
            if setting.key == key:
                return setting
        raise KeyError(key)

    def value(self, key: str) -> Value:
        """The effective value of `key`."""
        return self.get(key).value

    def text(self, key: str) -> str:
        """The effective value of a string, path or enum option."""
        return str(self.get(key).value)

    def override(self, key: str, value: object, flag: str) -> Settings:
        """These settings with `key` taken from the command line (`flag` names it); UsageError for a bad value.
        None leaves the lower layers' value."""
        if value is None:
            return self
        option = contract().option(key)
        assert option is not None, key
        setting = Setting(key, _check(option, value, flag), COMMAND_LINE, flag)
        return Settings(tuple(setting if s.key == key else s for s in self.values))


def load_settings(config: str | None = None, environ: Mapping[str, str] | None = None) -> Settings:
    """Resolves every option from its default, the config file and the environment. `config` is --config's value;
    a config file named by it or by HYMPI_CONFIG must exist, ./hympi.toml is read only when present. Raises
    UsageError naming the file for an unreadable or malformed one, the key for an unknown one, the variable or
    key for a bad value."""
    env = os.environ if environ is None else environ
    config_option = contract().option(CONFIG_KEY)
    assert config_option is not None
    if config:
        chosen = Setting(CONFIG_KEY, config, COMMAND_LINE, "--config")
    elif env.get(config_option.env):
        chosen = Setting(CONFIG_KEY, env[config_option.env], f"env {config_option.env}", config_option.env)
    else:
        chosen = Setting(CONFIG_KEY, str(config_option.default), DEFAULT, CONFIG_KEY)
    path = Path(str(chosen.value))
    # Named by the flag or variable that gave it (the apps' Settings::load words it alike); a directory, FIFO or
    # device is said to be one, not to be missing.
    if chosen.source != DEFAULT:
        if (problem := file_problem(path)) is not None:
            raise UsageError(f"config file {path} ({chosen.name}) {problem}")
    elif os.path.lexists(path) and (problem := file_problem(path)) is not None:
        # Present but no file (a directory, a FIFO, a link to nothing): the user meant a config, which would be
        # ignored without a word. The apps' words (src/app/settings.cpp).
        problem = "is a link to a file that does not exist" if problem == "does not exist" else problem
        raise UsageError(f"config file {path} (read when present) {problem}")
    file = read_config(path) if path.is_file() else {}
    values: list[Setting] = []
    for option in contract().options:
        if option.key == CONFIG_KEY:
            values.append(chosen)
            continue
        setting = Setting(option.key, option.default, DEFAULT, option.key)
        if option.key in file:
            name = f"{path}: {option.key}"
            setting = Setting(option.key, _check(option, file[option.key], name), f"config file {path}", name)
        text = env.get(option.env)
        if text:
            setting = Setting(option.key, _check(option, text, option.env), f"env {option.env}", option.env)
        values.append(setting)
    return Settings(tuple(values))


def settings() -> Settings:
    """The settings of this process (os.environ; `hympi --config PATH` sets HYMPI_CONFIG for itself and the apps)."""
    return load_settings()
