"""Steps past 32 bits store and read back on both engines, and a store made with 32-bit step columns (the release
before) is widened in place at its first write, its rows kept."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest
import sqlalchemy as sa

from ingest.pipeline import ingest_path
from perfledger import cli, schema, store

HUGE_STEPS = [2**31 + i for i in range(30)] + [2**40 + i for i in range(30)]


def megatron_log(path: Path, steps: list[int]) -> Path:
    """A Megatron-style log whose iterations carry `steps`."""
    lines = [f" iteration {s:>8}/ 2000000000000 | consumed samples: {s * 8} | elapsed time per iteration (ms): "
             f"1000.0 | learning rate: 1.000E-04 | global batch size:     8 | lm loss: 2.500000E+00 | "
             "loss scale: 1.0 | number of skipped iterations:   0 | number of nan iterations:   0 |" for s in steps]
    path.write_text("\n".join(lines) + "\n")
    return path


def exported_steps(url: str, run_id: int, capsysbinary: pytest.CaptureFixture[bytes]) -> list[int]:
    assert cli.main(["export", "runs", f"run={run_id}", "--db", url]) == 0
    return pl.read_csv(io.BytesIO(capsysbinary.readouterr().out))["step"].to_list()


def test_steps_of_2_to_the_31_and_40_store_and_read_back(new_store_url: Callable[..., str], tmp_path: Path,
                                                        capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    url = new_store_url("huge")
    engine = store.engine_from_url(url)
    store.create_schema(engine)
    outcome = ingest_path(engine, megatron_log(tmp_path / "huge.log", HUGE_STEPS))
    assert outcome.created and outcome.run_id is not None
    assert store.steps(engine, outcome.run_id)["step"].to_list() == HUGE_STEPS
    assert store.run(engine, outcome.run_id).n_steps == len(HUGE_STEPS)  # type: ignore[union-attr]
    assert exported_steps(url, outcome.run_id, capsysbinary) == HUGE_STEPS


def old_metadata() -> sa.MetaData:
    """The tables as the release before this one made them: 32-bit steps and step counts, the step index on every
    engine, and a result value that could not be null (a claims cell is now kept as printed, its value null)."""
    old = sa.MetaData()
    for table in schema.TABLES:
        if table in schema.CAMPAIGN_TABLES:  # they came later
            continue
        copy = table.to_metadata(old)
        for name in ("step", "n_steps", "skipped_lines"):
            if name in copy.c:
                copy.c[name].type = sa.Integer()
    for index in list(old.tables["step"].indexes):
        old.tables["step"].indexes.discard(index)
    sa.Index("ix_step_run", old.tables["step"].c.run_id, old.tables["step"].c.step)
    old.tables["result"].c.value.nullable = False
    return old


def test_a_store_with_32_bit_steps_is_widened_in_place_and_keeps_its_rows(
        backend: str, new_store_url: Callable[..., str], tmp_path: Path,
        capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    url = new_store_url("old")
    raw = sa.create_engine(url, poolclass=sa.pool.NullPool)
    with raw.begin() as conn:
        old_metadata().create_all(conn)
    raw.dispose()
    engine = store.engine_from_url(url)
    small = ingest_path(engine, megatron_log(tmp_path / "small.log", list(range(1, 41))))
    assert small.run_id is not None
    huge = ingest_path(engine, megatron_log(tmp_path / "huge.log", HUGE_STEPS))
    assert huge.created and huge.run_id is not None
    assert exported_steps(url, huge.run_id, capsysbinary) == HUGE_STEPS
    assert exported_steps(url, small.run_id, capsysbinary) == list(range(1, 41))
    with engine.connect() as conn:
        kinds = {(c["name"]): c["type"] for c in sa.inspect(conn).get_columns("step")}
        run_kinds = {(c["name"]): c["type"] for c in sa.inspect(conn).get_columns("run")}
    assert isinstance(kinds["step"], sa.BigInteger) and isinstance(run_kinds["n_steps"], sa.BigInteger)
    with engine.connect() as conn:
        values = next(c for c in sa.inspect(conn).get_columns("result") if c["name"] == "value")
        indexes = {ix["name"] for ix in sa.inspect(conn).get_indexes("result")}
    assert values["nullable"] and {ix.name for ix in schema.result.indexes} <= indexes  # relaxed, indexes kept


def before_added_columns() -> sa.MetaData:
    """The tables as a release before the columns of upgrade.ADDED (a model's shape detail, a result kept as
    printed, an accelerator's colour, a run's date) made them."""
    from perfledger.store.upgrade import ADDED

    old = sa.MetaData()
    for table in schema.TABLES:
        columns = [sa.Column(c.name, c.type, primary_key=c.primary_key, nullable=c.nullable)
                   for c in table.c if (table, c.name) not in ADDED]
        sa.Table(table.name, old, *columns)
    return old


def test_a_store_of_an_earlier_release_is_brought_up_to_date_by_its_first_read(
        backend: str, new_store_url: Callable[..., str], monkeypatch: pytest.MonkeyPatch,
        capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    """A dashboard never writes when it starts: the Accelerators page of a store made before result.printed had
    failed with the database's 'no such column' until something was uploaded. Read-only, the page says what to run."""
    url = new_store_url("before-added")
    raw = sa.create_engine(url, poolclass=sa.pool.NullPool)
    with raw.begin() as conn:
        before_added_columns().create_all(conn)
    raw.dispose()
    monkeypatch.setenv("PERFLEDGER_READ_ONLY", "1")
    assert cli.main(["export", "accelerators", "", "--db", url]) != 0
    assert "made by an earlier release of perfledger" in capsysbinary.readouterr().err.decode()
    monkeypatch.delenv("PERFLEDGER_READ_ONLY")
    assert cli.main(["export", "accelerators", "", "--db", url]) == 0
    with store.engine_from_url(url).connect() as conn:
        columns = {c["name"] for c in sa.inspect(conn).get_columns("result")}
    assert {"printed", "unread"} <= columns
