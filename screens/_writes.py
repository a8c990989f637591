"""Who may write from the browser, and the server options that follow perfledger's settings.

A dashboard other machines can reach (bound to any address but loopback) writes nothing without an upload token,
nor does one on loopback for a page opened by any other name than localhost or 127.0.0.1 (a web page of another
site that rebinds its name to this machine, a proxy): the write panels say so, and the sidebar says how to enable
writing. With a token, each write panel asks for it;
wrong tokens are slowed for the whole server (perfledger.wrong_tokens), not per browser session.
"""

from __future__ import annotations

import hashlib
import math
import time

import streamlit as st
from streamlit import config

from perfledger import wrong_tokens
from perfledger.settings import browser_upload_mb
from screens import _ui

SEEN = "wrong_token_seen"  # session key: {panel key: hash of the wrong token still in its box}


def writes_refused() -> str | None:
    """Why this server must not write for this browser session (its bind address and token settings, and the name
    the page was opened by: the Host and Origin of the session's connection), or None."""
    headers = st.context.headers
    return _ui.settings().browser_writes_refused(config.get_option("server.address"), host=headers.get("host"),
                                                 origin=headers.get("origin"))


def follow_upload_limit() -> int:
    """Set Streamlit's upload limit from PERFLEDGER_MAX_UPLOAD_MB (the one limit): its server counts MiB, the
    browser decimal MB; both let through every file of the limit in MiB, which the ingest path then checks.
    Read by the server on each upload, so setting it here (app.py, every run) works under `streamlit run app.py`."""
    mb = browser_upload_mb(_ui.settings().max_upload_mb)
    if config.get_option("server.maxUploadSize") != mb:
        config.set_option("server.maxUploadSize", mb, "PERFLEDGER_MAX_UPLOAD_MB")
    return mb


def token_unlocks_writing(key: str) -> bool:
    """Inside a write panel: whether this browser may write now. Refused (said) on a reachable server without a
    token; True without a token on a local one; else when the token typed matches (said when not)."""
    refused = writes_refused()
    if refused:
        st.caption(refused)
        return False
    cfg = _ui.settings()  # read on every run: a module is imported once, a page script runs every time
    if not cfg.upload_token:
        return True
    typed = st.text_input("Upload token", type="password", key=key)
    if typed and _token_is_right(key, typed):
        return True
    st.caption("Writing is protected: enter the upload token.")
    return False


def _token_is_right(key: str, typed: str) -> bool:
    """Check a typed token against the server's record of wrong ones: after wrong tokens (from any session) the
    check waits, counted down on screen; a rerun with the same wrong token in the box is not a new try."""
    seen = st.session_state.setdefault(SEEN, {})
    digest = hashlib.sha256(typed.encode()).hexdigest()
    tries = wrong_tokens.SERVER
    if seen.get(key) == digest:
        st.error(f"Wrong upload token ({tries.wrong} in a row).", icon=":material/lock:")
        return False
    wait = st.empty()
    while not (attempt := tries.attempt(typed, _ui.settings().may_write_with)).checked:
        wait.caption(f"After {attempt.wrong} wrong tokens, this one is checked in {math.ceil(attempt.wait_s)} s.")
        time.sleep(min(1.0, attempt.wait_s))
    wait.empty()
    if attempt.right:
        seen.pop(key, None)
        return True
    seen[key] = digest
    st.error(f"Wrong upload token ({attempt.wrong} in a row); the next one is checked after "
             f"{tries.next_wait_s():g} s.", icon=":material/lock:")
    return False
