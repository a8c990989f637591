"""The Campaigns page's write panel: a zipped folder imported as one campaign, as `python -m ingest DIR` imports a
folder; hidden when read-only, token-guarded when a token is set."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import streamlit as st

from ingest.campaign import CampaignImport, import_folder
from ingest.campaign_zip import unpack_zip
from perfledger.errors import PerfledgerError
from perfledger.views.registry import Page
from screens import _ui
from screens._upload import token_unlocks_writing


def campaign_upload_panel(page: Page[Any]) -> None:
    cfg = _ui.settings()
    if cfg.read_only:
        return
    with st.expander("Import a folder as one campaign (zip)", icon=":material/upload:", expanded=False):
        if not token_unlocks_writing(_ui.key(page, "tok")):
            return
        f = st.file_uploader(f"A zip of the folder: an MLPerf submission, a sweep's logs and configs, a job table "
                             f"(up to {cfg.max_upload_mb} MB once unpacked)", type=["zip"], key=_ui.key(page, "zip"))
        if f is None or not st.button("Import as one campaign", key=_ui.key(page, "go")):
            return
        limit = cfg.max_upload_mb * 2**20
        try:
            with tempfile.TemporaryDirectory(prefix="perfledger-campaign-") as tmp:
                done = import_folder(_ui.engine(), unpack_zip(f.getvalue(), f.name, Path(tmp), limit=limit),
                                     limit=limit)
        except PerfledgerError as exc:
            st.error(_ui.plain(exc), icon=":material/error:")
            return
        _said(done)


def _said(done: CampaignImport) -> None:
    for refusal in done.plan.refusals:
        st.warning(_ui.plain(f"Refused: {refusal}"), icon=":material/block:")
    if done.saved is None:
        st.error("Nothing stored: every file was refused.", icon=":material/error:")
        return
    how = "Stored" if done.saved.created else "Already stored"
    st.success(f"{how} as campaign {done.saved.campaign_id} ({done.plan.kind.value}, {len(done.plan.attempts)} "
               "attempts): pick it below.", icon=":material/check:")  # numbers and a vocabulary word only
