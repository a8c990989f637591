"""URL query <-> typed view state, generically, for frozen dataclasses whose fields say their URL key.

A field declares its short key (and optionally its allowed choices or bounds) with `key(...)`; its type
(str, int, float, bool, tuple[str, ...]) decides how it is written and read. Defaults are left out of the
URL; a malformed or unknown value falls back to the field's default and adds a sentence to `problems`.
Every value a link can carry is bounded: whole numbers within JavaScript's safe integers (the widgets' limit),
finite floats, text of at most MAX_TEXT characters without control characters, at most MAX_ITEMS list items.
A sentence in `problems` quotes the offending value shortened and with control characters escaped (`quoted`).
Pure: no Streamlit here.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import MISSING, Field, field, fields, replace
from typing import Any, TypeVar, get_type_hints
from urllib.parse import urlencode

T = TypeVar("T")

QueryLike = Mapping[str, str] | Mapping[str, list[str]] | Iterable[tuple[str, str]]

MAX_INT = 2**53 - 1  # JavaScript's Number.MAX_SAFE_INTEGER: what a Streamlit number widget accepts
MAX_ID = 2**31 - 1  # the largest run or result id the store's id columns hold (Integer)
MAX_TEXT = 200  # characters in one text value (an id, a filter)
MAX_ITEMS = 50  # items in one list value
QUOTE_CHARS = 40  # characters of an offending value quoted in a problem sentence


def key(
    short: str,
    default: Any,
    *,
    choices: tuple[str, ...] | None = None,
    low: float | None = None,
    high: float | None = None,
    label: str = "",
) -> Any:
    """A dataclass field stored under URL key `short` (choices/bounds are checked when read)."""
    meta = {"key": short, "choices": choices, "low": low, "high": high, "label": label or short}
    if isinstance(default, (list, dict, set)):
        raise TypeError("use a tuple for sequence defaults")
    return field(default=default, metadata=meta)


def problems_field() -> Any:
    """The `problems` field every view state carries: sentences about values that were ignored."""
    return field(default=(), compare=False, repr=False, metadata={"key": None})


def sort_field() -> Any:
    """The `sort` field every page state carries: the column its table is sorted by ("" keeps the table's order);
    the page's table and its CSV are sorted alike (perfledger.views.columns.sorted_rows)."""
    return key("sort", "", label="sorted by")


def descending_field() -> Any:
    """The `desc` field every page state carries: 1 sorts its `sort` column from the largest down."""
    return key("desc", False, label="descending")


def _url_fields(cls: type) -> list[tuple[Field[Any], Any]]:
    hints = get_type_hints(cls)
    return [(f, hints[f.name]) for f in fields(cls) if f.metadata.get("key")]


def normalise(query: QueryLike) -> dict[str, str]:
    """The last value per key, whatever shape the query arrived in (st.query_params, parse_qsl, dict)."""
    items = query.items() if isinstance(query, Mapping) else query
    out: dict[str, str] = {}
    for k, v in items:
        out[str(k)] = str(v[-1] if isinstance(v, list) and v else ("" if isinstance(v, list) else v))
    return out


def encode(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)
    if isinstance(value, tuple):
        return ",".join(str(v) for v in value)
    return str(value)


def decode(raw: str, typ: Any, low: float | None = None, high: float | None = None) -> Any:
    """The value of `raw` read as `typ`; ValueError with a plain reason when it is not one, naming the field's own
    bounds (`low`, `high`) where it has them."""
    if typ is bool:
        if raw.lower() in ("1", "true", "yes", "on"):
            return True
        if raw.lower() in ("0", "false", "no", "off"):
            return False
        raise ValueError("should be 1 or 0")
    if typ is int:
        whole = f"should be a whole number {between(low, high)}"
        if len(raw) > 20:  # int() of a 100 KB digit string is slow, and far out of range anyway
            raise ValueError(whole)
        try:
            number = int(raw)
        except ValueError:
            raise ValueError(whole) from None
        if abs(number) > MAX_INT:
            raise ValueError(whole)
        return number
    if typ is float:
        try:
            value = float(raw[:100])
        except ValueError:
            raise ValueError("should be a number") from None
        if len(raw) > 100 or not math.isfinite(value):
            raise ValueError("should be a finite number")
        return value
    if typ == tuple[str, ...]:
        items = tuple(raw.split(",")) if raw else ()
        if len(items) > MAX_ITEMS:
            raise ValueError(f"should list at most {MAX_ITEMS} items")
        for item in items:
            _check_text(item)
        return items
    _check_text(raw)
    return raw


def between(low: float | None, high: float | None) -> str:
    """The range a whole number may take, in words: the field's bounds, JavaScript's safe integers where it has none.

    >>> between(1, 1_000_000), between(0, None)
    ('from 1 to 1,000,000', 'from 0 to 9,007,199,254,740,991')
    """
    return f"from {_number(-MAX_INT if low is None else low)} to {_number(MAX_INT if high is None else high)}"


def _number(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,g}"


def _check_text(raw: str) -> None:
    if len(raw) > MAX_TEXT:
        raise ValueError(f"is longer than {MAX_TEXT} characters")
    if any(unicodedata.category(c) == "Cc" for c in raw):
        raise ValueError("holds control characters")


def quoted(value: str, limit: int = QUOTE_CHARS) -> str:
    """`value` in quotes for a sentence: shortened to `limit` characters, control characters escaped (repr)."""
    short = value if len(value) <= limit else value[:limit] + "…"
    return repr(short)


def _check(f: Field[Any], value: Any) -> None:
    choices = f.metadata.get("choices")
    items = value if isinstance(value, tuple) else (value,)
    if choices is not None and any(v not in choices for v in items):
        raise ValueError(f"should be one of {', '.join(choices)}")
    low, high = f.metadata.get("low"), f.metadata.get("high")
    if low is not None and value < low:
        raise ValueError(f"should be at least {_number(low)}")
    if high is not None and value > high:
        raise ValueError(f"should be at most {_number(high)}")


def from_query(cls: type[T], query: QueryLike) -> T:
    """An instance of `cls` from a URL query; bad values become defaults plus a sentence in `problems`."""
    q = normalise(query)
    values: dict[str, Any] = {}
    problems: list[str] = []
    for f, typ in _url_fields(cls):
        short = f.metadata["key"]
        if short not in q:
            continue
        try:
            value = decode(q[short], typ, f.metadata.get("low"), f.metadata.get("high"))
            _check(f, value)
        except ValueError as exc:
            default = f.default if f.default is not MISSING else None
            problems.append(f"{short}={quoted(q[short])} {exc}; showing {quoted(encode(default)) if encode(default) else 'the default'} instead.")
            continue
        values[f.name] = value
    known = {f.metadata["key"] for f, _ in _url_fields(cls)}
    unknown = sorted(k for k in q if k not in known)
    if unknown:
        names = ", ".join(quoted(k) for k in unknown[:5]) + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else "")
        problems.append(f"Ignored unknown link parameter{'s' if len(unknown) > 1 else ''}: {names}.")
    return replace(cls(), **values, problems=tuple(problems))  # type: ignore[type-var]


def to_query(state: Any) -> dict[str, str]:
    """The URL query for `state`: short keys, defaults left out, in field order."""
    out: dict[str, str] = {}
    for f, _ in _url_fields(type(state)):
        value = getattr(state, f.name)
        if value != f.default:
            out[f.metadata["key"]] = encode(value)
    return out


def query_string(state: Any) -> str:
    """`to_query` as an encoded query string (no leading '?'), for links and the CLI."""
    return urlencode(to_query(state), safe=",")


def url_keys(cls: type) -> dict[str, str]:
    """field name -> URL key, for tests and docs."""
    return {f.name: f.metadata["key"] for f, _ in _url_fields(cls)}
