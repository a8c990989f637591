"""A zipped folder unpacks to the same campaign as the folder; an archive that would write outside its folder, holds
a link, or unpacks past the limit is refused whole."""

from __future__ import annotations

import io
import stat
import zipfile
from pathlib import Path

import pytest

from ingest.campaign import plan_folder
from ingest.campaign_zip import unpack_zip
from perfledger.errors import FileTooLarge, ParseError

MLPERF = Path(__file__).parents[1] / "fixtures" / "campaigns" / "mlperf_v4.0_asustek_esc_n8a_e12_llama2_70b_lora"


def zipped(folder: Path) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(folder).as_posix())
    return buffer.getvalue()


def archive_of(name: str, data: bytes = b"x", mode: int | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        info = zipfile.ZipInfo(name)
        if mode is not None:
            info.external_attr = mode << 16
        archive.writestr(info, data)
    return buffer.getvalue()


def test_a_zipped_submission_plans_as_the_folder_does(tmp_path: Path) -> None:
    folder = unpack_zip(zipped(MLPERF), "submission.zip", tmp_path, limit=2**30)
    from_zip, from_folder = plan_folder(folder), plan_folder(MLPERF)
    from_zip.close()
    from_folder.close()
    assert folder == tmp_path / "submission"
    assert (from_zip.content_sha256, from_zip.score) == (from_folder.content_sha256, from_folder.score)


@pytest.mark.parametrize("name", ["../escape.txt", "/etc/escape.txt", "a/../../escape.txt", "C:/escape.txt",
                                  "a\\..\\escape.txt"])
def test_a_member_outside_the_folder_refuses_the_archive(tmp_path: Path, name: str) -> None:
    with pytest.raises(ParseError, match="would be written outside the folder"):
        unpack_zip(archive_of(name), "evil.zip", tmp_path / "in", limit=2**20)
    assert not (tmp_path / "escape.txt").exists()


def test_a_link_member_refuses_the_archive(tmp_path: Path) -> None:
    with pytest.raises(ParseError, match="is a link"):
        unpack_zip(archive_of("link", b"/etc/passwd", stat.S_IFLNK | 0o777), "links.zip", tmp_path, limit=2**20)


def test_an_archive_past_the_limit_once_unpacked_is_refused(tmp_path: Path) -> None:
    bomb = archive_of("zeros.log", bytes(3 * 2**20))
    with pytest.raises(FileTooLarge, match="limit of 1 MiB"):
        unpack_zip(bomb, "bomb.zip", tmp_path, limit=2**20)


def test_bytes_that_are_not_a_zip_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ParseError, match="not a zip archive"):
        unpack_zip(b"plain text", "notes.zip", tmp_path, limit=2**20)


def test_a_zip_of_two_submitters_results_imports_as_two_campaigns_in_the_upload_worker(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import json
    import shutil
    import tempfile

    from ingest.campaign_job import import_campaign
    from perfledger import store

    logs = Path(__file__).parents[1] / "fixtures" / "logs"
    folder = tmp_path / "mi300x"
    folder.mkdir()
    for name in ("amd_mi300x_llama2_70b_lora_v5.1_result_0.txt", "mangoboost_mi300x_1node_llama2_70b_lora_v5.1_result_0.txt"):
        shutil.copy(logs / name, folder)
    job = tmp_path / "job"
    job.mkdir()
    (job / "request.json").write_text(json.dumps({"file_name": "mi300x.zip", "limit": 2**30}))
    (job / "upload").write_bytes(zipped(folder))
    url = f"duckdb:///{tmp_path / 's.duckdb'}"
    store.create_schema(store.engine_from_url(url))  # the dashboard's store
    monkeypatch.setenv("PERFLEDGER_DB_URL", url)
    monkeypatch.setattr(tempfile, "tempdir", tempfile.tempdir)  # the worker's step sets it to its folder
    done = import_campaign(job)["ok"]
    assert sorted(c["name"] for c in done["campaigns"]) == ["AMD 1xMI300X llama2_70b_lora",
                                                            "MangoBoost 1xMI300X llama2_70b_lora"]
    assert all(c["created"] and c["attempts"] == 1 for c in done["campaigns"]) and done["refusals"] == []
