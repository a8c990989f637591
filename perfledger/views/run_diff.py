"""The config diff of overlaid runs: every configuration setting and steady-state figure across the runs, one column
per run, the settings that differ first; each named and each value written as a reader reads them (a nested block
of the file, such as what an MLPerf result states of its submission, one row per entry, never JSON)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import polars as pl
from sqlalchemy import Engine

from perfledger import names, numbers, store
from perfledger.errors import InvalidQuery
from perfledger.views.upload import for_the_form

GROUPS = (("config", "configuration"), ("summary", "steady state"))


def config_diff(engine: Engine, *run_ids: int) -> pl.DataFrame:
    """Settings (and steady-state figures) across runs, one column per run; `differs` marks the settings whose
    values are not all the same, listed first, each group in the order of its settings' names."""
    flat = [dict(_entries(_stored(engine, i))) for i in run_ids]
    keys = sorted(set().union(*flat)) if flat else []
    columns = [f"run {i}" for i in run_ids]
    data = [{"key": _key_words(k), **{c: _value_text(k, f.get(k)) for c, f in zip(columns, flat, strict=True)},
             "differs": len({json.dumps(f.get(k), sort_keys=True, default=str) for f in flat}) > 1} for k in keys]
    schema = {"key": pl.String(), **{c: pl.String() for c in columns}, "differs": pl.Boolean()}
    frame = pl.DataFrame(data, schema=schema)
    return frame.sort(["differs", "key"], descending=[True, False], maintain_order=True)  # what moved on top


def _stored(engine: Engine, run_id: int) -> dict[str, Any]:
    row = store.run(engine, run_id)
    if row is None:
        raise InvalidQuery(f"there is no run {run_id}: it was never ingested, or it was deleted")
    return {"config": row.config, "summary": row.summary or {}}


def _entries(blocks: dict[str, Any]) -> Iterator[tuple[tuple[str, ...], Any]]:
    """(path of keys, value) of every leaf of the run's configuration and summary: a nested block is walked, a list
    of blocks (a file's launches) counted."""
    def walk(path: tuple[str, ...], value: Any) -> Iterator[tuple[tuple[str, ...], Any]]:
        if isinstance(value, dict):
            for key, inner in value.items():
                yield from walk((*path, str(key)), inner)
        elif isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value):
            yield path, f"{len(value)} entries"
        else:
            yield path, value

    for block, _ in GROUPS:
        yield from walk((block,), blocks[block])


def _key_words(path: tuple[str, ...]) -> str:
    """A setting's path as a reader reads it: "configuration · devices", "steady state · MFU (%)"."""
    group = dict(GROUPS)[path[0]]
    return " · ".join([group, *(_word(part) for part in path[1:])])


def _word(key: str) -> str:
    label = names.column_label(key)
    return label if label != key else names.in_words(key).replace("_", " ")


def _value_text(path: tuple[str, ...], value: Any) -> str | None:
    """A value as the diff shows it: a share in %, a computed figure at the rule's precision, a list as a list;
    a stored reason's command-line advice ("pass --model") read as the upload form's selectors."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        return numbers.percent_text(value) if names.is_share(path[-1]) else numbers.text(value)
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return for_the_form(str(value))
