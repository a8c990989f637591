"""One upload limit, in MiB, for the browser and the CLI: Streamlit's own limits follow PERFLEDGER_MAX_UPLOAD_MB
(raised or lowered), let every file of the limit through, and the ingest path says the limit past it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from streamlit import config
from streamlit.testing.v1 import AppTest

from ingest.pipeline import ingest_path
from perfledger import store
from perfledger.errors import FileTooLarge
from perfledger.settings import browser_upload_mb
from tests.conftest import LOGS

MEGATRON = LOGS / "cscs_gh200_gated_attn_te_1gpu_rankprefix.out"
MIB = 2**20


def padded_log(folder: Path, size: int) -> Path:
    """The Megatron log padded with skipped lines to exactly `size` bytes."""
    raw = MEGATRON.read_bytes()
    pad = size - len(raw)
    path = folder / f"megatron_{size}.out"
    path.write_bytes(raw + (b"#" * (pad - 1) + b"\n" if pad else b""))
    assert path.stat().st_size == size
    return path


@pytest.mark.parametrize(("mib", "streamlit_mb"), [(1, 2), (200, 210), (300, 315)])
def test_streamlit_lets_through_every_file_of_the_limit_in_mib(
        seeded_url: str, open_page: Callable[..., AppTest], monkeypatch: pytest.MonkeyPatch,
        mib: int, streamlit_mb: int) -> None:
    monkeypatch.setenv("PERFLEDGER_MAX_UPLOAD_MB", str(mib))
    at = open_page("runs")
    assert browser_upload_mb(mib) == streamlit_mb
    assert streamlit_mb * 10**6 >= mib * MIB  # the browser counts decimal MB: the whole MiB limit passes it
    assert at.get("file_uploader")[0].proto.max_upload_size_mb == streamlit_mb
    assert config.get_option("server.maxUploadSize") == streamlit_mb  # the server's check (MiB) follows too


def test_a_file_of_the_limit_is_previewed_and_one_byte_more_is_refused_as_the_cli_refuses_it(
        seeded_url: str, open_page: Callable[..., AppTest], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PERFLEDGER_MAX_UPLOAD_MB", "1")
    at = open_page("runs")
    fits, over = padded_log(tmp_path, MIB), padded_log(tmp_path, MIB + 1)
    at.file_uploader(key="ru_file").set_value((fits.name, fits.read_bytes(), "text/plain")).run()
    assert not at.exception and not at.error and any("megatron" in m.value for m in at.markdown)
    at.file_uploader(key="ru_file").set_value((over.name, over.read_bytes(), "text/plain")).run()
    said = f"{over.name}: larger than the 1 MiB limit once decompressed; nothing was stored"
    assert [e.value.replace("\\", "") for e in at.error] == [said]  # shown escaped: it names a file
    with pytest.raises(FileTooLarge) as refused:
        ingest_path(store.engine_from_url(seeded_url), over, limit=MIB)
    assert str(refused.value) == f"{over}: larger than the 1 MiB limit once decompressed; nothing was stored"
