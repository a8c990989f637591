"""Whatever bytes arrive, ingest answers with records or a ParseError naming the file, never anything else."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as hs
from sqlalchemy import Engine

from ingest.pipeline import ingest_bytes, preview
from perfledger import store
from perfledger.errors import FileTooLarge, ParseError
from tests.ingest.golden import fixtures

REAL = [p for p in fixtures() if p.stat().st_size < 400_000]
HEADS = {p.name: p.read_bytes()[:20_000] for p in REAL}


def _outcome_or_parse_error(raw: bytes, name: str) -> None:
    try:
        preview(raw, name)
    except ParseError as exc:
        assert str(exc).startswith(name)
        assert exc.file_name == name


@settings(deadline=None)
@given(hs.binary(max_size=4096))
@example(b"")
@example(b"\x1f\x8b\x08\x00garbage")
@example(b"\xff\xfe\x00iteration 1/ 10 | elapsed time per iteration (ms): nan |")
def test_any_bytes_give_records_or_a_parse_error_naming_the_file(raw: bytes) -> None:
    _outcome_or_parse_error(raw, "fuzz.log")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hs.sampled_from(sorted(HEADS)), hs.integers(min_value=1, max_value=20_000), hs.binary(max_size=64))
def test_truncated_or_corrupted_real_logs_never_raise_anything_else(name: str, cut: int, noise: bytes) -> None:
    head = HEADS[name]
    _outcome_or_parse_error(head[:cut] + noise, name)


def test_truncated_gzip_is_refused_with_the_file_name() -> None:
    raw = gzip.compress(REAL[0].read_bytes())
    with pytest.raises(ParseError, match=r"^broken\.log\.gz: "):
        preview(raw[: len(raw) // 2], "broken.log.gz")


def test_upload_limit_applies_after_gunzip(tmp_path: Path) -> None:
    log_head = next(p for p in REAL if "cscs_gh200_gated" in p.name).read_bytes()[:60_000]
    bomb = gzip.compress(log_head + b"0" * (8 * 2**20))
    assert len(bomb) < 100_000
    with pytest.raises(FileTooLarge, match="limit once decompressed"):
        preview(bomb, "bomb.gz", limit=2**20)


def test_a_write_that_fails_halfway_leaves_no_rows(writable_engine: Engine) -> None:
    log = next(p for p in REAL if "cscs_gh200_gated" in p.name)
    before = store.counts(writable_engine)
    with pytest.raises(FileTooLarge):
        ingest_bytes(writable_engine, log.read_bytes(), log.name, limit=log.stat().st_size // 2)
    assert store.counts(writable_engine) == before
