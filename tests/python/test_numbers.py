"""hympi.numbers: numbers in ASCII only, as the C++ apps read them; and the parsers that use it."""

from __future__ import annotations

import pytest

from hympi.errors import UsageError
from hympi.numbers import ascii_float, ascii_int
from hympi.params import parse_int_list, parse_integer, parse_number
from hympi.settings import parse_seconds


@pytest.mark.parametrize(("text", "value"), [("0", 0), ("42", 42), ("-7", -7), ("+3", 3), ("007", 7)])
def test_ascii_integers_read_as_int_does(text: str, value: int):
    assert ascii_int(text) == value


@pytest.mark.parametrize("text", ["\uff14", "\u0661\u0662", " 2", "2 ", "1_000", "", "-", "1.0", "0x10", "2\n"])
def test_what_int_also_takes_is_refused(text: str):
    # int() reads the first five (4, 12, 2, 2, 1000): digits of other scripts, spaces, digit separators.
    with pytest.raises(ValueError):
        ascii_int(text)


@pytest.mark.parametrize(("text", "value"), [("1", 1.0), ("-2.5", -2.5), (".5", 0.5), ("5.", 5.0), ("1e3", 1000.0),
                                             ("1.5E-2", 0.015), ("inf", float("inf")), ("-Infinity", float("-inf"))])
def test_ascii_numbers_read_as_float_does(text: str, value: float):
    assert ascii_float(text) == value


@pytest.mark.parametrize("text", ["\uff11.5", " 1.5", "1_000.0", "1e", ".", "e5", "1.2.3", "0x1p3", ""])
def test_what_float_also_takes_is_refused(text: str):
    with pytest.raises(ValueError):
        ascii_float(text)


def test_the_option_parsers_refuse_them_naming_the_value():
    with pytest.raises(UsageError, match="--nodes: '\uff14' is not an integer"):
        parse_integer("--nodes", "\uff14", 1)
    with pytest.raises(UsageError, match="--threads: '1_0' is not an integer"):
        parse_int_list("--threads", "1,1_0")
    with pytest.raises(UsageError, match=r"' 0\.95' is not a number"):
        parse_number("--confidence", " 0.95", "a number")
    with pytest.raises(UsageError, match="is not a number of seconds"):
        parse_seconds("--timeout", "1_0", allow_zero=False)
