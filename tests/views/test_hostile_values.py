"""Every URL key of every page, given hostile values, falls back with one plain, short, printable sentence;
and the CSV both the Download button and `perfledger export` give is safe to open in a spreadsheet."""

from __future__ import annotations

import csv
import io
import math
from typing import Any

import polars as pl
import pytest
from sqlalchemy import Engine

from perfledger import urlstate
from perfledger.views import registry
from perfledger.views.output import render, spreadsheet_safe
from tests.cli_runner import run

HOSTILE = (
    "x" * 100_000, "99999999999999999999999", "1e309", "-1", "nan", "inf", "no-such-choice",
    "[x](http://evil/phish)", "![q](http://host/b.png)", "<img src=x onerror=alert(1)>", "<script>",
    "a\x00b", "\x1b[31m", "a\nb",
)
KEYS = [(p.slug, k) for p in registry.PAGES for k in urlstate.url_keys(p.state).values()]
FORMULA = "@SUM(1+1)*cmd|' /C calc'!A0"


def _bounded(value: Any) -> bool:
    if isinstance(value, bool):
        return True
    if isinstance(value, int):
        return abs(value) <= urlstate.MAX_INT
    if isinstance(value, float):
        return math.isfinite(value)
    items = value if isinstance(value, tuple) else (value,)
    return len(items) <= urlstate.MAX_ITEMS and all(
        len(i) <= urlstate.MAX_TEXT and not any(ord(c) < 32 or ord(c) == 127 for c in i) for i in items)


@pytest.mark.parametrize(("slug", "key"), KEYS)
def test_a_hostile_value_becomes_a_bounded_state_and_a_short_printable_sentence(slug: str, key: str) -> None:
    cls = registry.page(slug).state
    for raw in HOSTILE:
        state = urlstate.from_query(cls, {key: raw})
        names = urlstate.url_keys(cls)
        assert all(_bounded(getattr(state, name)) for name in names), (key, raw[:40])
        for sentence in state.problems:
            assert len(sentence) < 400 and sentence.isprintable(), sentence[:80]
            assert sentence.startswith(f"{key}=")


def test_huge_numbers_and_long_text_are_refused_not_kept() -> None:
    """A 23-digit run id reached the store (DuckDB overflow) and the Tokens widget (above its maximum)."""
    assert urlstate.from_query(registry.page("runs").state, {"run": "99999999999999999999999"}).run == 0
    assert urlstate.from_query(registry.page("time-to-train").state, {"tok": "99999999999999999999999"}).tokens == 300e9
    src = urlstate.from_query(registry.page("sources").state, {"src": "x" * 100_000, "k": "foo"})
    assert (src.source, src.kinds) == ("", ())
    assert any("k='foo' should be one of" in p for p in src.problems)


def test_unknown_parameter_names_are_quoted_short_and_printable() -> None:
    state = urlstate.from_query(registry.page("overview").state, {"\x1b[31m" + "y" * 500: "1"})
    assert len(state.problems) == 1 and state.problems[0].isprintable() and len(state.problems[0]) < 200


def _cells(data: bytes) -> list[list[str]]:
    return list(csv.reader(io.StringIO(data.decode())))


def test_csv_cells_a_spreadsheet_would_run_are_prefixed_with_a_quote_and_numbers_stay_numbers() -> None:
    frame = pl.DataFrame({
        "text": [FORMULA, "=1+1", "+cmd", "-x", "\tx", "\rx", "-3.5", "+1e9", "-inf", "plain", None],
        "value": [-1.5, 2.0, -3.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
        "n": [-7, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
    })
    rows = _cells(render(frame))
    assert [r[0] for r in rows[1:]] == [
        "'" + FORMULA, "'=1+1", "'+cmd", "'-x", "'\tx", "'\rx", "-3.5", "+1e9", "'-inf", "plain", ""]
    assert [r[1] for r in rows[1:3]] == ["-1.5", "2.0"] and rows[1][2] == "-7"
    assert spreadsheet_safe(frame.select("value", "n")).equals(frame.select("value", "n"))


def _store_formula_locator(engine: Engine) -> str:
    import sqlalchemy as sa

    with engine.begin() as conn:
        source = conn.execute(sa.text("SELECT source_id FROM result ORDER BY id LIMIT 1")).scalar_one()
        conn.execute(sa.text("UPDATE result SET locator = :loc WHERE source_id = :src"), {"loc": FORMULA, "src": source})
    return str(source)


def test_perfledger_export_neutralises_a_formula_stored_in_a_result_row(writable_engine: Engine) -> None:
    from pathlib import Path

    source = _store_formula_locator(writable_engine)
    url = str(writable_engine.url)
    writable_engine.dispose()
    out = run("perfledger", "export", "sources", f"src={source}", "--db", url, cwd=Path(__file__).resolve().parents[2], check=True)
    rows = _cells(out.stdout.encode())
    locators = {r[rows[0].index("locator")] for r in rows[1:]}
    assert locators == {"'" + FORMULA}
    assert all(float(r[rows[0].index("value")]) == float(r[rows[0].index("value")]) for r in rows[1:])
