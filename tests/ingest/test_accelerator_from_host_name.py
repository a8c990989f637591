"""An accelerator named only in a host or node name (Composer's `node_name: a100-80sxm-h9-01`) is read when the
name's words name exactly one catalog accelerator, and the run's warnings say where it was read from; a name whose
words name none, or two, leaves the accelerator unstated: never a guess stored as if stated."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import Engine

from ingest.pipeline import ingest_bytes
from perfledger import store
from perfledger.catalog import accelerator_in_name

FOUNDRY = Path(__file__).resolve().parents[1] / "fixtures" / "heldout" / "llm_foundry_mpt_1b_8gpu_logs.txt"
NODE_LINE = "node_name: a100-80sxm-h9-01\n"


@pytest.mark.parametrize(("host", "expected"), [
    ("a100-80sxm-h9-01", "a100-80gb"), ("gpu-h100-sxm-017", "h100-sxm"), ("mi300x-node-3", "mi300x"),
    ("a100-40gb-rack2", "a100-40gb"), ("gpu-node-01", None), ("a100-h100-mixed-01", None), ("t4-runner", None),
    ("iv-yciahk518y7gra5t8xgs", None)])
def test_an_accelerator_is_read_from_a_host_name_only_when_its_words_name_one(host: str,
                                                                             expected: str | None) -> None:
    found = accelerator_in_name(host)
    assert (found.id if found is not None else None) == expected


def _stored(engine: Engine, text: str, name: str) -> tuple[dict[str, object], list[str]]:
    outcome = ingest_bytes(engine, text.encode(), name)
    assert outcome.run_id is not None
    row = store.run(engine, outcome.run_id)
    assert row is not None
    return dict(row.config), list(row.warnings)


@pytest.mark.parametrize(("spelling", "expected"), [
    ("node_name: h100-sxm-node-07\n", "h100-sxm"), ("hostname: a100-80sxm-h9-01\n", "a100-80gb")])
def test_a_node_name_gives_the_run_its_accelerator_with_a_warning_saying_so(
        writable_engine: Engine, spelling: str, expected: str) -> None:
    text = FOUNDRY.read_text(encoding="utf-8")
    assert NODE_LINE in text
    config, warnings = _stored(writable_engine, text.replace(NODE_LINE, spelling), "host_" + FOUNDRY.name)
    assert config["accelerator"] == expected
    assert config["identity"]["accelerator"]["read_from"] == "host name"  # type: ignore[index]
    assert any("read from a host name" in w and spelling.split(": ")[1].strip() in w for w in warnings)


def test_a_node_name_naming_two_accelerators_leaves_it_unstated(writable_engine: Engine) -> None:
    text = FOUNDRY.read_text(encoding="utf-8").replace(NODE_LINE, "node_name: a100-h100-mixed-01\n")
    config, warnings = _stored(writable_engine, text, "two_" + FOUNDRY.name)
    assert config.get("accelerator") is None
    assert not any("host name" in w for w in warnings)
