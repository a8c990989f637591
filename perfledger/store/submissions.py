"""Who submitted a stored run, and on which system: what an MLPerf result file states of its submission
(format_meta.submission_org, system_name or submission_platform), read for many runs in one query."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy import Engine

from perfledger import schema
from perfledger.store.engine import connection


def submission_of(config: Mapping[str, Any]) -> dict[str, str]:
    """{"submitter", "system"} as a run's configuration states them (empty for a run that states neither).

    >>> submission_of({"format_meta": {"submission_org": "AMD", "system_name": "MI300X"}})
    {'submitter': 'AMD', 'system': 'MI300X'}
    """
    meta = config.get("format_meta") or {}
    found = {"submitter": meta.get("submission_org"), "system": meta.get("system_name") or meta.get("submission_platform")}
    return {k: str(v) for k, v in found.items() if v}


def submissions(engine: Engine, run_ids: Sequence[int]) -> dict[int, dict[str, str]]:
    """submission_of() of each stored run among `run_ids` (runs that state none left out)."""
    if not run_ids:
        return {}
    r = schema.run
    with connection(engine, write=False) as conn:
        rows = conn.execute(sa.select(r.c.id, r.c.config).where(r.c.id.in_(list(run_ids)))).all()
    found = {int(rid): submission_of(json.loads(config or "{}")) for rid, config in rows}
    return {rid: sub for rid, sub in found.items() if sub}
