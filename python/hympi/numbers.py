"""Numbers as a command line, a config file or a matrix file writes them: ASCII digits only.

Python's int() and float() also take other scripts' digits (fullwidth, Arabic-Indic), spaces around the number
and '_' between digits ('1_000'); none of them is what a user typing an option or writing a file means, and a value
read one way here and another way by the C++ apps (std::from_chars, CLI11) would be two different settings.
"""

from __future__ import annotations

import re

_INTEGER = re.compile(r"[+-]?[0-9]+")
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]?(?:inf|infinity|nan)",
                     re.IGNORECASE)


def ascii_int(text: str) -> int:
    """`text` as an integer written in ASCII digits with an optional sign; ValueError otherwise (as int())."""
    if _INTEGER.fullmatch(text) is None:
        raise ValueError(f"not an integer: {text!r}")
    return int(text)


def ascii_float(text: str) -> float:
    """`text` as a number written in ASCII (digits, point, exponent; inf and nan as float() spells them, for the
    callers' own range checks); ValueError otherwise (as float())."""
    if _NUMBER.fullmatch(text) is None:
        raise ValueError(f"not a number: {text!r}")
    return float(text)
