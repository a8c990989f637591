"""The one link builder: every internal link is a page's typed state, written to the URL by perfledger.urlstate,
so a link always carries a complete, valid state (defaults left out, every value one the page reads back).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from perfledger import urlstate
from perfledger.views.accelerators import AcceleratorView
from perfledger.views.audit import AuditView
from perfledger.views.registry import Page, page, page_of
from perfledger.views.runs import RunsView
from perfledger.views.scaling import ScalingView
from perfledger.views.sources import SourcesView
from perfledger.views.speedups import SpeedupView
from perfledger.views.time_to_train import TimeToTrainView


@dataclass(frozen=True)
class Link:
    """Where a link goes: the page, and the state it opens there."""

    page: Page[Any]
    state: Any

    @property
    def query(self) -> dict[str, str]:
        """The URL query of the state (st.page_link's query_params)."""
        return urlstate.to_query(self.state)

    @property
    def href(self) -> str:
        """A relative URL: `/speedups?p=fsdp`, or `/speedups` for the default view."""
        qs = urlstate.query_string(self.state)
        return f"/{self.page.slug}{'?' + qs if qs else ''}"


def to(state: Any) -> Link:
    """The link that opens `state` on its page."""
    return Link(page_of(state), state)


def link(slug: str, state: Any | None = None, **changes: Any) -> str:
    """`to(...).href` for a page's state (its default view when none is given), with fields changed."""
    base = state if state is not None else page(slug).state()
    return to(replace(base, **changes) if changes else base).href


def source(source_id: str) -> Link:
    """The Sources page showing the rows one source backs."""
    return to(SourcesView(source=source_id))


def result(result_id: int) -> Link:
    """A result's permalink: every field, the note, locator, source link, audit verdict and the views showing it."""
    return to(SourcesView(result=result_id))


def run(run_id: int) -> Link:
    """The Runs page showing one run's steps and steady state."""
    return to(RunsView(run=run_id))


@dataclass(frozen=True)
class Headline:
    title: str
    state: Any

    @property
    def link(self) -> Link:
        return to(self.state)


HEADLINES: tuple[Headline, ...] = (
    Headline("NeMo: H200 vs A100 on Llama 2 (3.7x, 4.0x, 4.2x)", SpeedupView()),
    Headline("FSDP vs 3D parallelism, GPT-20B on 8-128 H100", SpeedupView(preset="fsdp")),
    Headline("RLHF with vs without TensorRT-LLM", SpeedupView(preset="rlhf")),
    Headline("Llama 2 70B across accelerators, as MFU", AcceleratorView(norm="mfu")),
    Headline("Emani et al.: GPT-2 XL scaling efficiency", ScalingView(models=("gpt2-xl",), chart="stored")),
    Headline("GPT-3 175B, 300B tokens on 1024 A800 at 50%", TimeToTrainView()),
    Headline("Llama 2 70B, 1B tokens on 8 H200 (measured)",
             TimeToTrainView(model="llama2-70b", tokens=1e9, accelerator="h200", devices=8, mode="measured",
                             usd_per_hour=4.0)),
    Headline("Every claim audited", AuditView()),
)

TIME_TO_TRAIN_PRESETS: tuple[Headline, ...] = (
    Headline("GPT-3 175B · 300B tokens · 1024 A800 at 50%", HEADLINES[5].state),
    Headline("Llama 2 70B · 1B tokens · 8 H200 (measured 1880 tok/s)", HEADLINES[6].state),
)
