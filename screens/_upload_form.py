"""The upload's annotation: model, accelerator, devices and precision, chosen from the store's catalog and
prefilled from what the log states. A choice that differs from the log is an override: the upload is prepared
again with it (once per choice, kept in the session like the first preparation) and that run is what is stored."""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any

import streamlit as st

from ingest import pipeline
from perfledger import store
from perfledger.records import PreparedRun, RunConfig
from perfledger.vocabulary import Precision
from screens import _ui

HELD = "ru_annotated"  # session key of ((SHA-256, overrides), the PreparedRun prepared with those overrides)
PRECISIONS = [p.value for p in Precision if p is not Precision.UNSTATED]


def _or_unstated(value: str) -> str:
    return value or "— not stated —"


def overrides(stated: Mapping[str, Any], engine: store.Engine) -> RunConfig:
    """Four selectors prefilled from `stated` (the config the log states); the fields the user changed."""
    models, accelerators = store.catalog(engine)
    st.caption("What the log states; correct it here (catalog ids) and the preview is computed again.")
    c = st.columns(4)
    model = _ui.choose("Model", ["", *models["id"].to_list()], str(stated.get("model") or ""), key="ru_model",
                       fmt=_or_unstated, where=c[0])
    accelerator = _ui.choose("Accelerator", ["", *accelerators["id"].to_list()], str(stated.get("accelerator") or ""),
                             key="ru_acc", fmt=_or_unstated, where=c[1])
    devices = int(c[2].number_input("Devices (0 = not stated)", 0, value=int(stated.get("n_devices") or 0),
                                    key="ru_dev"))
    precision = _ui.choose("Precision", ["", *PRECISIONS], str(stated.get("precision") or "").replace("unstated", ""),
                           key="ru_prec", fmt=_or_unstated, where=c[3])
    chosen = RunConfig(model=model or None, accelerator=accelerator or None, n_devices=devices or None,
                       precision=precision or None)
    return RunConfig(**{k: v for k, v in chosen.stated().items() if v != stated.get(k)})


def annotated_upload(state: MutableMapping[Any, Any], prepared: PreparedRun, raw: bytes, file_name: str,
                     engine: store.Engine, limit: int) -> PreparedRun:
    """`prepared` (the log as it states itself) when the selectors keep what it states, else the upload prepared
    with the user's overrides (held in `state` until the choice or the file changes)."""
    chosen = overrides(prepared.config, engine)
    if not chosen.stated():
        drop_annotated(state)
        return prepared
    key = (prepared.content_sha256, chosen)
    held = state.get(HELD)
    if held is not None and held[0] == key:
        return held[1]  # type: ignore[no-any-return]
    drop_annotated(state)
    annotated = pipeline.prepare(raw, file_name, chosen, engine=engine, limit=limit)
    state[HELD] = (key, annotated)
    return annotated


def drop_annotated(state: MutableMapping[Any, Any]) -> None:
    held = state.pop(HELD, None)
    if held is not None:
        held[1].close()
