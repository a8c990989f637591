"""The Accelerators catalog section: what is stored for each accelerator reads the same on every render."""

from __future__ import annotations

import polars as pl
from sqlalchemy import Engine

from perfledger import store
from perfledger.views.hardware import catalog_table


def test_equal_counts_are_listed_in_stored_order_on_every_render(seeded_engine: Engine) -> None:
    accelerators = store.accelerators(seeded_engine).head(1)
    acc = accelerators["id"][0]
    pairs = [(f"model-{i}", "tokens_per_s_per_device") for i in range(6)]
    results = pl.DataFrame([{"accelerator_id": acc, "model_id": m, "metric": k} for m, k in pairs * 3])
    shown = {catalog_table(accelerators, results)["what is stored"][0] for _ in range(20)}
    assert shown == {"; ".join(f"{m} {k} ×3" for m, k in pairs)}
