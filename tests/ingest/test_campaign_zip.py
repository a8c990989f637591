"""A zipped folder unpacks to the same campaign as the folder; an archive that would write outside its folder, holds
a link, a name too long or too deep for the disk, or unpacks past the limit is refused whole, in one sentence, and
an archive named with dots unpacks into a folder of perfledger's choosing. A job table in it is read only as a real
table, within bounds (a view that never ends filled $TMPDIR)."""

from __future__ import annotations

import io
import shutil
import sqlite3
import stat
import time
import zipfile
from contextlib import closing
from pathlib import Path

import pytest
from sqlalchemy import Engine

from ingest import campaign_files
from ingest.campaign import plan_folder
from ingest.campaign_job import CampaignDone, campaign_from, start_campaign
from ingest.campaign_zip import unpack_zip
from ingest.worker import Limits, wait
from perfledger import store
from perfledger.errors import FileTooLarge, ParseError, PerfledgerError
from tests.faults import volume

CAMPAIGNS = Path(__file__).parents[1] / "fixtures" / "campaigns"
MLPERF = CAMPAIGNS / "mlperf_v4.0_asustek_esc_n8a_e12_llama2_70b_lora"
JOBS = CAMPAIGNS / "dgxc_llama31_405b_gb200_jobs"


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
# ------------------------------------------------------------------------------ hostile archives, one sentence each

NO_STORE = "duckdb:///:memory:"


def imported_by_worker(tmp_path: Path, raw: bytes, name: str, db_url: str = NO_STORE,
                       environ: dict[str, str] | None = None) -> CampaignDone:
    """The archive imported as the Campaigns page imports it: by the upload worker, under its limits."""
    zipped = tmp_path / "upload.zip"
    zipped.write_bytes(raw)
    with pytest.MonkeyPatch.context() as mp:
        for key, value in (environ or {}).items():
            mp.setenv(key, value)
        job = start_campaign(zipped, name, db_url, 64 * 2**20, Limits(120, 2048))
    try:
        return campaign_from(wait(job))
    finally:
        job.cancel()


def test_a_member_with_a_name_too_long_for_the_disk_refuses_the_archive_in_one_sentence(tmp_path: Path) -> None:
    member = "run_" + "a" * 296 + ".log"
    with pytest.raises(PerfledgerError) as refused:
        imported_by_worker(tmp_path, archive_of(member, b"iteration 1\n"), "long.zip")
    assert str(refused.value) == (f"long.zip: member 'run_{'a' * 46}…{'a' * 16}.log' has a name of 304 bytes; a file "
                                  "or folder name may have 255, a whole path 1,024")


def test_a_member_2000_folders_deep_refuses_the_archive_in_one_sentence(tmp_path: Path) -> None:
    with pytest.raises(PerfledgerError) as refused:
        imported_by_worker(tmp_path, archive_of("a/" * 2000 + "x.log", b"iteration 1\n"), "deep.zip")
    assert str(refused.value) == (f"deep.zip: member '{'a/' * 25}…{'/a' * 7}/x.log' is 2,000 folders deep; an archive "
                                  "may nest 32 folders")


@pytest.mark.parametrize("name", ["...zip", "..zip", ".zip", "../../x.zip"])
def test_an_archive_named_with_dots_unpacks_into_a_folder_of_perfledgers_choosing(tmp_path: Path, name: str) -> None:
    folder = unpack_zip(archive_of("result_0.txt", b"x"), name, tmp_path / "unpacked", limit=2**20)
    assert folder.parent == tmp_path / "unpacked" and folder.name in ("campaign", "x")
    assert (folder / "result_0.txt").read_bytes() == b"x"


def test_an_archive_named_dots_imports_its_members_only_not_the_workers_files(tmp_path: Path,
                                                                             writable_engine: Engine) -> None:
    url = writable_engine.url.render_as_string(hide_password=False)
    done = imported_by_worker(tmp_path, zipped(MLPERF), "...zip", url)
    assert len(done.campaigns) == 1 and done.refusals == ()  # the worker's stderr.log was read as a member
    assert store.campaigns(writable_engine)["name"].to_list() == ["campaign"]


def test_a_job_table_whose_jobs_is_an_endless_view_is_refused_at_once_without_filling_tmpdir(tmp_path: Path) -> None:
    """405 bytes zipped; sorted by the old reader, it spilled to $TMPDIR at about 475 MiB/s until the disk was full."""
    table = tmp_path / "jobs.sqlite3"
    with closing(sqlite3.connect(table)) as conn:
        conn.execute("CREATE VIEW jobs AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT i AS "
                     "job_id, 'COMPLETED' AS slurm_state, 'm' AS model_name, 'bf16' AS dtype, 8 AS scale, 1.0 AS "
                     "train_step_time_seconds, randomblob(1000) AS pad FROM n")
    raw = archive_of("jobs.sqlite3", table.read_bytes())
    with volume(tmp_path / "tmp", "64m") as small:
        started = time.monotonic()
        done = imported_by_worker(tmp_path, raw, "jobs.zip", environ={"SQLITE_TMPDIR": str(small)})
        assert time.monotonic() - started < 60 and shutil.disk_usage(small).used < 2**20
    assert not done.campaigns and done.refusals == (
        "jobs.sqlite3: its jobs is a view, not a table: only llmb-run's jobs table is read",)


def test_a_job_table_past_its_row_cap_or_step_budget_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    table = JOBS / "jobs.sqlite3"
    monkeypatch.setattr(campaign_files, "MAX_JOB_ROWS", 5)
    with pytest.raises(ParseError, match="the job table holds more than 5 rows"):
        list(campaign_files.job_rows(table, "jobs.sqlite3"))
    monkeypatch.setattr(campaign_files, "MAX_JOB_ROWS", 100)
    monkeypatch.setattr(campaign_files, "_STEPS_PER_CHECK", 10)
    monkeypatch.setattr(campaign_files, "JOB_TABLE_STEPS", 20)
    with pytest.raises(ParseError, match="the job table cannot be read: it takes too long to read"):
        list(campaign_files.job_rows(table, "jobs.sqlite3"))
