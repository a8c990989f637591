"""Hostile input: markup stays text, query strings stay bound parameters, a gzip bomb is refused cheaply."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlencode

import pytest
from sqlalchemy import Engine

from ingest.pipeline import ingest_bytes
from perfledger import store, urlstate, views
from perfledger.errors import FileTooLarge, PerfledgerError
from tests.conftest import LOGS, ROOT

SCRIPT = "<script>alert('perfledger')</script>"
NAME = "<b onmouseover=alert(1)>.csv"  # a path's last part: no "/" (a "</b>" would make it a folder)
IMG = '<img src=x onerror="alert(1)">&amp;'
INJECTIONS = ("'; DROP TABLE result; --", "1 OR 1=1", "\x00", "%' UNION SELECT * FROM run --" * 400)


def claims_csv(note: str, title: str) -> bytes:
    header = "metric,value,unit,source_id,source_title,model,accelerator,n_devices,precision,note\n"
    row = f'tokens_per_s_per_device,1234,tokens/s/device,hostile_src,"{title}",llama2-7b,h100-sxm,8,bf16,"{note}"\n'
    return (header + row).encode()


def test_markup_in_names_and_notes_is_stored_and_returned_verbatim(seeded_store: Engine) -> None:
    outcome = ingest_bytes(seeded_store, claims_csv(SCRIPT, IMG.replace('"', '""')), NAME)
    row = store.results(seeded_store, source_ids=["hostile_src"]).row(0, named=True)
    assert row["note"] == SCRIPT and row["source_title"] == IMG
    assert store.run(seeded_store, outcome.run_id).file_name == NAME  # type: ignore[union-attr]
    exported = views.export("sources", "", seeded_store)
    assert IMG.replace('"', '""').encode() in exported


def test_no_page_renders_unsafe_html() -> None:
    """Pages show stored text with Streamlit's escaping; `unsafe_allow_html` would hand markup to the browser."""
    scripts = [ROOT / "app.py", ROOT / "dashboard.py", *(ROOT / "screens").glob("*.py"), *(ROOT / "pages").glob("*.py")]
    offenders = [p.name for p in scripts if p.exists() and re.search(r"unsafe_allow_html\s*=\s*True|st\.html\(",
                                                                       p.read_text())]
    assert offenders == []


def test_query_string_values_never_reach_sql_unbound(seeded_store: Engine) -> None:
    """Every URL key of every page, given injection strings: a PerfledgerError at most, and nothing changed."""
    before = store.counts(seeded_store)
    for slug, state_cls in views.PAGE_STATES.items():
        keys = list(urlstate.url_keys(state_cls).values())
        for payload in INJECTIONS:
            try:
                views.export(slug, urlencode(dict.fromkeys(keys, payload)), seeded_store)
            except PerfledgerError:
                pass  # a sentence for the person; any other exception fails the test
    assert store.counts(seeded_store) == before


_BOMB = r"""
import gzip, resource, sys
from ingest.pipeline import ingest_bytes, preview
from perfledger import store
from perfledger.errors import FileTooLarge
head = open(sys.argv[1], "rb").read()
# A gzip file may hold many members, read one after another (RFC 1952): the log's head, then one member of
# 1 MiB of zeros (about 1 KiB packed) repeated 1024 times. 1 GiB once gunzipped; it never sits in memory here.
zeros = gzip.compress(bytes(2**20), compresslevel=9)
bomb = gzip.compress(head) + zeros * 1024
engine = store.engine_from_url(sys.argv[2])
store.create_schema(engine)
preview(head, "warm.out")  # the parsers' own imports and buffers, so the baseline holds them
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    ingest_bytes(engine, bomb, "bomb.log.gz", limit=16 * 2**20)
    print("stored")
except FileTooLarge as exc:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print("refused", len(bomb), store.counts(engine)["run"], base, peak, exc)
"""


def test_gzip_bomb_is_refused_after_gunzip_without_filling_memory(tmp_path: Path) -> None:
    """1 GiB of zeros behind a real log's head, gzipped to about 1 MB, with a 16 MiB limit."""
    out = subprocess.run([sys.executable, "-c", _BOMB, str(LOGS / "cscs_gh200_gated_attn_te_1gpu_rankprefix.out"),
                          f"duckdb:///{tmp_path / 'bomb.duckdb'}"], cwd=ROOT, capture_output=True, text=True,
                         timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    verdict, compressed, runs, base_kib, peak_kib, *message = out.stdout.split()
    assert verdict == "refused" and int(runs) == 0
    assert int(compressed) < 16 * 2**20  # small on the wire: only the limit after gunzip can catch it
    assert "larger than the 16 MiB limit once decompressed; nothing was stored" in " ".join(message)
    grew_mib = (int(peak_kib) - int(base_kib)) // 1024
    assert grew_mib < 128, f"peak RSS grew by {grew_mib} MiB while reading the bomb"
    print(f"gzip bomb: {int(compressed) / 2**20:.1f} MiB packed; peak RSS +{grew_mib} MiB over {int(base_kib) // 1024}")


def test_a_file_over_the_limit_once_gunzipped_is_refused_in_process(store_engine: Engine) -> None:
    import gzip

    raw = (LOGS / "cscs_gh200_gated_attn_te_1gpu_rankprefix.out").read_bytes()
    packed = gzip.compress(raw * 8)
    with pytest.raises(FileTooLarge, match="once decompressed"):
        ingest_bytes(store_engine, packed, "big.log.gz", limit=len(raw) * 4)
    assert len(packed) < len(raw) * 4 and store.counts(store_engine)["run"] == 0


def test_nul_characters_are_dropped_so_every_backend_stores_the_same_text(seeded_store: Engine) -> None:
    """A crashed node leaves NULs in its log; PostgreSQL refuses them in text, so they never reach the store."""
    outcome = ingest_bytes(seeded_store, claims_csv("a\x00b", "ti\x00tle"), "nul\x00.csv")
    row = store.results(seeded_store, source_ids=["hostile_src"]).row(0, named=True)
    assert (row["note"], row["source_title"]) == ("ab", "title")
    assert store.run(seeded_store, outcome.run_id).file_name == "nul.csv"  # type: ignore[union-attr]
