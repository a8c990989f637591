"""Scaling claims are recomputed from the throughput rows of their own series, on the seed data's published
NeMo launcher scaling table and the Emani et al. efficiencies."""

from __future__ import annotations

import polars as pl
import pytest
from sqlalchemy import Engine

from perfledger import store
from perfledger.calc import audit, audit_scaling

COLUMNS = (*audit.INPUT_COLUMNS, "note", "baseline")
README_2023 = "nemo_launcher_readme_2023"


@pytest.fixture(scope="module")
def rows(seeded_engine: Engine) -> pl.DataFrame:
    return store.results(seeded_engine, metric=[*audit_scaling.CLAIM_METRICS, *audit_scaling.THROUGHPUT_METRICS],
                         columns=COLUMNS)


def with_claim(rows: pl.DataFrame, model: str, devices: int, value: float) -> pl.DataFrame:
    """The seed rows plus one scaling-efficiency claim in the NeMo launcher README's A100 series."""
    base = rows.filter(pl.col("source_id") == README_2023, pl.col("model_id") == model,
                       pl.col("n_devices") == devices, pl.col("metric") == "tokens_per_s").head(1)
    claim = base.with_columns(metric=pl.lit("scaling_efficiency"), value=pl.lit(value), unit=pl.lit("fraction"),
                              id=pl.lit(-1, dtype=base.schema["id"]), baseline=pl.lit(None, dtype=pl.String))
    return pl.concat([rows, claim])


def claim_of(table: pl.DataFrame) -> dict[str, object]:
    return table.filter(pl.col("claim_id") == -1).row(0, named=True)


def test_every_published_speedup_of_the_nemo_launcher_table_follows_from_its_tokens_per_s(rows: pl.DataFrame) -> None:
    table = audit_scaling.audit_scaling(rows).filter(pl.col("source_id") == README_2023)
    assert table.height == 11 and set(table["verdict"]) == {"consistent"}
    gpt3 = table.filter(pl.col("model_id") == "gpt3-175b", pl.col("n_devices") == 1024).row(0, named=True)
    assert gpt3["reported"] == 14.62 and gpt3["recomputed"] == pytest.approx(14.6245, abs=1e-4)
    assert gpt3["unit"] == "x"


def test_efficiencies_without_a_throughput_series_are_unchecked_with_why(rows: pl.DataFrame) -> None:
    table = audit_scaling.audit_scaling(rows).filter(pl.col("metric") == "scaling_efficiency")
    assert table.height == 7 and set(table["verdict"]) == {"unchecked"}
    assert all(r.startswith("no tokens/s rows of the same source, model") for r in table["reason"])


def test_an_efficiency_is_measured_against_the_smallest_device_count_of_its_series(rows: pl.DataFrame) -> None:
    out = claim_of(audit_scaling.audit_scaling(with_claim(rows, "gpt3-5b", 256, 0.898)))
    assert out["verdict"] == "consistent" and out["recomputed"] == pytest.approx(0.897949, abs=1e-6)


def test_an_efficiency_against_another_base_names_the_base_that_reproduces_it(rows: pl.DataFrame) -> None:
    out = claim_of(audit_scaling.audit_scaling(with_claim(rows, "gpt3-5b", 128, 1.054)))  # 659,481 / 312,774 / 2
    assert out["verdict"] == "other convention" and out["convention"] == "base-64"
    assert "measuring against 64 devices gives 105.4%" in str(out["reason"])


def test_an_efficiency_nothing_reproduces_is_inconsistent_with_the_recomputed_figure(rows: pl.DataFrame) -> None:
    out = claim_of(audit_scaling.audit_scaling(with_claim(rows, "gpt3-175b", 1024, 0.5)))
    assert out["verdict"] == "inconsistent"
    assert str(out["reason"]).startswith("recomputed 91.4% from the series' throughput at 1,024 and 64 devices")


def test_a_claim_at_a_device_count_its_series_lacks_is_unchecked(rows: pl.DataFrame) -> None:
    edited = with_claim(rows, "gpt3-175b", 1024, 0.9).with_columns(
        n_devices=pl.when(pl.col("id") == -1).then(2048).otherwise(pl.col("n_devices")))
    out = claim_of(audit_scaling.audit_scaling(edited))
    assert out["verdict"] == "unchecked" and out["reason"] == "its series has no throughput row at the claim's 2,048 devices"


def test_the_stated_baseline_device_count_is_read_from_its_text() -> None:
    assert audit_scaling.stated_base("same model on 8 nodes (64 GPUs) in this table") == 64
    assert audit_scaling.stated_base("Baseline scale not stated") is None


def test_a_scaling_verdict_names_the_throughput_rows_it_used(rows: pl.DataFrame) -> None:
    seed = rows.filter(pl.col("source_id") == README_2023, pl.col("model_id") == "gpt3-5b",
                       pl.col("metric") == "tokens_per_s")
    at = {n: seed.filter(pl.col("n_devices") == n)["id"][0] for n in seed["n_devices"].unique()}
    default = claim_of(audit_scaling.audit_scaling(with_claim(rows, "gpt3-5b", 256, 0.898)))
    assert str(default["inputs"]).startswith(f"result {at[256]} ({README_2023}")
    assert f"; result {at[min(at)]} ({README_2023}" in str(default["inputs"])  # the base: the smallest count
    other = claim_of(audit_scaling.audit_scaling(with_claim(rows, "gpt3-5b", 128, 1.054)))  # base-64 reproduces it
    assert f"result {at[128]} " in str(other["inputs"]) and f"result {at[64]} " in str(other["inputs"])
    unchecked = claim_of(audit_scaling.audit_scaling(with_claim(rows, "gpt3-175b", 1024, 0.9).with_columns(
        n_devices=pl.when(pl.col("id") == -1).then(2048).otherwise(pl.col("n_devices")))))
    assert unchecked["inputs"] is None
