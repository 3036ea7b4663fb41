"""Numbers as a command line, a config file or a matrix file writes them (ASCII digits only), and as a program prints
them in its output (printed_float).

Python's int() and float() also take other scripts' digits (fullwidth, Arabic-Indic), spaces around the number
and '_' between digits ('1_000'); none of them is what a user typing an option or writing a file means, and a value
read one way here and another way by the C++ apps (std::from_chars, CLI11) would be two different settings.
"""

from __future__ import annotations

import re

_INTEGER = re.compile(r"[+-]?[0-9]+")
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]?(?:inf|infinity|nan)",
                     re.IGNORECASE)
# How programs print numbers that float() does not take: a Fortran double's exponent (1.5D+03, from a D edit
# descriptor) and thousands separated by commas (1,234,567.5). Only whole groups of three count as thousands: '1,5'
# (a decimal comma) or '12,34' is refused, not read as 15 or 1234.
_FORTRAN_DOUBLE = re.compile(r"([+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+))[dD]([+-]?[0-9]+)")
_THOUSANDS = re.compile(r"[+-]?[0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]*)?")


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


def printed_float(text: str) -> float:
    """A number as a program prints it in its output: what ascii_float takes, a Fortran double's exponent (1.5D+03)
    or thousands separated by commas (1,234.5), with blanks around it (a fixed-width field); ValueError otherwise."""
    text = text.strip(" \t")
    if (fortran := _FORTRAN_DOUBLE.fullmatch(text)) is not None:
        return float(f"{fortran[1]}e{fortran[2]}")
    if _THOUSANDS.fullmatch(text) is not None:
        return float(text.replace(",", ""))
    return ascii_float(text)
