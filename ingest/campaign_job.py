"""A zipped folder uploaded from the browser, imported as one campaign by the upload worker (ingest.worker), under
the same time and memory limits as a log's upload, for the whole folder: the dashboard's process never parses it."""

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
class CampaignDone:
    """What a worker's campaign import did: the campaign (None when every file was refused) and what it read."""

    campaign_id: int | None
    created: bool
    kind: str
    attempts: int
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
    return CampaignDone(campaign_id=ok["campaign_id"], created=bool(ok["created"]), kind=str(ok["kind"]),
                        attempts=int(ok["attempts"]), refusals=tuple(str(r) for r in ok["refusals"]))


def import_campaign(folder: Path) -> dict[str, Any]:
    """The worker's step: FOLDER/upload unpacked under FOLDER and imported into the store; what it did, as JSON."""
    from ingest.campaign import import_folder
    from ingest.campaign_zip import unpack_zip
    from perfledger import store

    (folder / LOADED).touch()  # its modules loaded: a crash from here on is no longer the memory to start
    request = json.loads((folder / "request.json").read_text())
    tempfile.tempdir = str(folder)
    limit = int(request["limit"])
    unpacked = unpack_zip((folder / "upload").read_bytes(), request["file_name"], folder / "unpacked", limit=limit)
    (folder / "upload").unlink()
    done = import_folder(store.engine_from_url(os.environ.get("PERFLEDGER_DB_URL")), unpacked, limit=limit)
    saved = done.saved
    return {"ok": {"campaign_id": saved.campaign_id if saved else None, "created": bool(saved and saved.created),
                   "kind": done.plan.kind.value, "attempts": len(done.plan.attempts),
                   "refusals": list(done.plan.refusals)}}
