"""The bundled demo logs (data/logs/manifest.csv), ingested with the configuration the manifest gives each."""

from __future__ import annotations

import csv
from pathlib import Path

from ingest.pipeline import ingest_path
from perfledger import store
from perfledger.records import RunConfig


def ingest_demo_runs(engine: store.Engine, data_dir: Path) -> int:
    """Ingest the sample logs listed in data_dir/logs/manifest.csv; how many were new (same bytes, same run)."""
    manifest = data_dir / "logs" / "manifest.csv"
    if not manifest.exists():
        return 0
    added = 0
    with manifest.open(newline="") as fh:
        for row in csv.DictReader(fh):
            overrides = RunConfig(model=row["model"] or None, accelerator=row["accelerator"] or None,
                                  n_devices=int(row["devices"]) if row["devices"] else None,
                                  precision=row["precision"] or None)
            added += ingest_path(engine, data_dir / "logs" / row["file"], overrides).created
    return added
