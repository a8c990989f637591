"""The Campaigns page's write panel: a zipped folder imported as `python -m ingest DIR` imports a folder (one campaign
per MLPerf submitter's system and benchmark, one for its other logs); hidden when read-only, token-guarded when a
token is set."""

from __future__ import annotations

from typing import Any

import streamlit as st

from ingest import campaign_job, upload, worker
from perfledger import store
from perfledger.errors import PerfledgerError
from perfledger.views.registry import Page
from perfledger.views.upload import refusals_summary
from screens import _ui
from screens._upload import limits, token_unlocks_writing
from screens._upload_box import file_in_box


def campaign_upload_panel(page: Page[Any]) -> None:
    cfg = _ui.settings()
    if cfg.read_only:
        return
    with st.expander("Import a folder of runs as campaigns (zip)", icon=":material/upload:", expanded=False):
        if not token_unlocks_writing(_ui.key(page, "tok")):
            return
        try:
            zipped = file_in_box(st.session_state, _ui.key(page, "zip"), "A zip of the folder: an MLPerf submission, "
                                 f"a sweep's logs and configs, a job table (up to {cfg.max_upload_mb} MiB once "
                                 "unpacked)", cfg.max_upload_mb, accept=(".zip",))
            if zipped is None or not st.button("Import the folder", key=_ui.key(page, "go")):
                return
            done = imported(zipped, cfg.max_upload_bytes)
        except PerfledgerError as exc:
            st.error(_ui.plain(exc), icon=":material/error:")
            return
        _said(done)


def imported(zipped: upload.Spooled, limit: int) -> campaign_job.CampaignDone:
    """The zipped folder unpacked and imported by a worker process (the upload's time and memory limits, a crash
    ending only the worker); a rerun that interrupts the wait stops the worker, and nothing is stored."""
    db_url = store.url_of(_ui.engine())
    job = campaign_job.start_campaign(zipped.path, zipped.file_name, db_url, limit, limits())
    try:
        with st.spinner("Importing the folder in a worker process..."):
            worker.wait(job)
        return campaign_job.campaign_from(job)
    finally:
        job.cancel()  # stops it if it still runs; removes its folder


def _said(done: campaign_job.CampaignDone) -> None:
    if len(done.refusals) == 1:
        st.warning(_ui.plain(f"Refused: {done.refusals[0]}"), icon=":material/block:")
    elif done.refusals:  # one box, by reason: 10,000 boxes took 93 s to draw and slowed every other session
        said = [_ui.plain(f"Refused {len(done.refusals):,} files:"),
                *(f"- {_ui.plain(line)}" for line in refusals_summary(done.refusals))]
        st.warning("\n".join(said), icon=":material/block:")
    if not done.campaigns:
        st.error("Nothing stored: every file was refused.", icon=":material/error:")
        return
    for one in done.campaigns:  # numbers and a vocabulary word only: a name is the user's text
        how = "Stored" if one.created else "Already stored"
        st.success(f"{how} as campaign {one.campaign_id} ({one.kind}, {one.attempts} attempts): pick it below.",
                   icon=":material/check:")
