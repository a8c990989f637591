"""to_float / to_int / json_number: the one way parsers read numbers; nothing non-finite or past 64 bits gets out."""

from __future__ import annotations

import math

import pytest
from hypothesis import example, given
from hypothesis import strategies as hs

from ingest.parsers._common import INT64_MAX, INT64_MIN, json_number, to_float, to_int


@pytest.mark.parametrize("text", ["1e309", "-1e309", "1" * 400, "nan", "NaN", "inf", "-INF", "x", "", None, True])
def test_numbers_beyond_range_nan_and_infinities_read_as_none(text: object) -> None:
    assert to_float(text) is None
    assert to_int(text) is None


@pytest.mark.parametrize(("text", "value"), [("12", 12), ("8.0", 8), ("1e3", 1000), (" 42 ", 42), ("12%", 12),
                                             (str(INT64_MAX), INT64_MAX), (str(INT64_MIN), INT64_MIN)])
def test_printed_integers_read_as_int(text: str, value: int) -> None:
    assert to_int(text) == value


@pytest.mark.parametrize("value", [str(INT64_MAX + 1), "2e19", 2**70, "9" * 5000, "1.5"])
def test_integers_past_64_bits_or_not_whole_read_as_none(value: object) -> None:
    assert to_int(value) is None


def test_thousands_separators_are_read_only_when_asked() -> None:
    assert to_float("1,234", thousands=True) == 1234.0
    assert to_float("1,234") is None


def test_json_number_takes_numbers_only() -> None:
    assert json_number(1) == 1.0 and json_number(2.5) == 2.5
    assert json_number("3") is None and json_number(True) is None and json_number(float("nan")) is None
    assert json_number(10**400) is None


@given(hs.one_of(hs.text(max_size=60), hs.integers(), hs.floats(), hs.none(), hs.booleans()))
@example("1" * 5000)
@example(10**400)
def test_never_raises_and_never_returns_a_non_finite_or_out_of_range_value(value: object) -> None:
    number = to_float(value)
    assert number is None or math.isfinite(number)
    whole = to_int(value)
    assert whole is None or INT64_MIN <= whole <= INT64_MAX
