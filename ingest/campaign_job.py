"""A zipped folder uploaded from the browser, imported by the upload worker (ingest.worker) as `python -m ingest DIR`
imports a folder (one campaign per MLPerf submitter's system and benchmark, one for its other logs), under the same
time and memory limits as a log's upload, for the whole folder: the dashboard's process never parses it."""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from ingest import upload
from ingest.streams import printable
from ingest.worker import Job
from ingest.worker_limits import LOADED, Limits
from perfledger.spools import spooling


@dataclasses.dataclass(frozen=True, slots=True)
class CampaignStored:
    """One campaign a worker's import stored (or found stored)."""

    campaign_id: int
    created: bool
    name: str
    kind: str
    attempts: int


@dataclasses.dataclass(frozen=True, slots=True)
class CampaignDone:
    """What a worker's folder import did: its campaigns (none when every file was refused) and the files refused."""

    campaigns: tuple[CampaignStored, ...]
    refusals: tuple[str, ...]


def start_campaign(zipped: Path, file_name: str, db_url: str, limit: int, limits: Limits) -> Job:
    """A worker that unpacks a zipped folder (a file on disk) and imports it as one campaign
    (ingest.campaign.import_folder)."""
    request = json.dumps({"file_name": printable(file_name), "limit": limit})
    with spooling(Path(tempfile.gettempdir())):  # a full disk under the job's folder is said as such
        folder = upload.job_folder(zipped, "", {"request.json": request})
    return Job("campaign", folder, db_url, limits)


def campaign_from(job: Job) -> CampaignDone:
    """The outcome of a finished campaign job (its folder is the caller's to remove: Job.cancel)."""
    ok = job.outcome()["ok"]
    stored = tuple(CampaignStored(campaign_id=int(c["campaign_id"]), created=bool(c["created"]), name=str(c["name"]),
                                  kind=str(c["kind"]), attempts=int(c["attempts"])) for c in ok["campaigns"])
    return CampaignDone(campaigns=stored, refusals=tuple(str(r) for r in ok["refusals"]))


def import_campaign(folder: Path) -> dict[str, Any]:
    """The worker's step: FOLDER/upload unpacked under FOLDER and imported into the store; what it did, as JSON."""
    # the child starts light: the campaign modules and the store's driver load here, then LOADED is touched
    from ingest.campaign import import_round
    from ingest.campaign_zip import unpack_zip
    from perfledger import store

    (folder / LOADED).touch()  # its modules loaded: a crash from here on is no longer the memory to start
    request = json.loads((folder / "request.json").read_text())
    tempfile.tempdir = str(folder)
    limit = int(request["limit"])
    unpacked = unpack_zip((folder / "upload").read_bytes(), request["file_name"], folder / "unpacked", limit=limit)
    (folder / "upload").unlink()
    done = import_round(store.engine_from_url(os.environ.get("PERFLEDGER_DB_URL")), unpacked, limit=limit)
    campaigns = [{"campaign_id": one.saved.campaign_id, "created": one.saved.created, "name": one.plan.name,
                  "kind": one.plan.kind.value, "attempts": len(one.plan.attempts)}
                 for one in done.imports if one.saved is not None]
    return {"ok": {"campaigns": campaigns,
                   "refusals": list(done.plan.refusals) + [one.error for one in done.imports if one.error]}}
