"""hympi.numbers: numbers in ASCII only, as the C++ apps read them; and the parsers that use it; numbers as programs
print them."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hympi.errors import UsageError
from hympi.numbers import ascii_float, ascii_int, printed_float
from hympi.params import parse_int_list, parse_integer, parse_number
from hympi.settings import parse_seconds

# The cases the C++ apps are held to as well (src/core/tests/test_numbers.cpp).
CASES = json.loads((Path(__file__).parents[1] / "data" / "numbers.json").read_text())


@pytest.mark.parametrize(("text", "value"), CASES["integers"]["accepted"])
def test_ascii_integers_read_as_int_does(text: str, value: int):
    assert ascii_int(text) == value


@pytest.mark.parametrize("text", CASES["integers"]["refused"])
def test_what_int_also_takes_is_refused(text: str):
    # int() reads some of them (fullwidth 4, Arabic-Indic 12, ' 2', '1_000'): digits of other scripts, spaces, digit
    # separators.
    with pytest.raises(ValueError):
        ascii_int(text)


@pytest.mark.parametrize(("text", "value"), CASES["reals"]["accepted"])
def test_ascii_numbers_read_as_float_does(text: str, value: float | str):
    read = ascii_float(text)
    assert read == float(value) or (math.isnan(read) and value == "nan")


@pytest.mark.parametrize("text", CASES["reals"]["refused"])
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


@pytest.mark.parametrize(("text", "value"), [("42", 42.0), ("  1.5 ", 1.5), ("1,234.5", 1234.5),
                                             ("-12,345,678", -12345678.0), ("1.5D+03", 1500.0), ("2d-2", 0.02),
                                             (".5D0", 0.5), ("1.5E+03", 1500.0)])
def test_a_number_as_a_program_prints_it(text: str, value: float):
    assert printed_float(text) == value


@pytest.mark.parametrize("text", ["1,5", "12,34", "1,2345", ",123", "1,234,56", "1.5D", "D3", "1_000", "\uff11",
                                  "1 234", ""])
def test_what_a_program_may_print_that_is_no_one_number_is_refused(text: str):
    # '1,5' is a decimal comma and '12,34' two numbers, not 15 or 1234: read either way, a figure would be wrong
    # without a word.
    with pytest.raises(ValueError):
        printed_float(text)


@given(st.integers(min_value=-10**15, max_value=10**15), st.integers(min_value=0, max_value=6))
def test_thousands_as_python_groups_them_read_back(number: int, places: int):
    assert printed_float(f"{number / 10**places:,.{places}f}") == float(f"{number / 10**places:.{places}f}")


@given(st.floats(min_value=1e-300, max_value=1e300), st.sampled_from(["D", "d"]))
def test_a_fortran_double_reads_as_its_e_form(value: float, letter: str):
    printed = f"{value:.14E}"
    assert printed_float(printed.replace("E", letter)) == float(printed)
