"""Frozen records of a campaign between ingest and the store: a folder of attempts, each a stored run or a failure
kept with its reason, the folder's metadata, and the campaign's score with the rule that gave it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from perfledger.records import PreparedRun
from perfledger.vocabulary import CampaignKind, OutcomeKind


@dataclass(frozen=True, slots=True)
class Attempt:
    """One attempt in a campaign: how it ended, where that was read, its configuration and headline figure, and the
    run to store (None for a failure with no steps, or a job-table row)."""

    file_name: str
    kind: OutcomeKind
    configuration: Mapping[str, Any]
    reason: str | None = None
    line: int | None = None
    metric: str | None = None
    value: float | None = None
    unit: str | None = None
    prepared: PreparedRun | None = field(default=None, compare=False)

    def as_row(self) -> dict[str, Any]:
        return {"file_name": self.file_name, "line": self.line, "kind": self.kind.value, "reason": self.reason,
                "metric": self.metric, "value": self.value, "unit": self.unit}


@dataclass(frozen=True, slots=True)
class CampaignScore:
    """The campaign's score under its rule; value None when the rule cannot score the campaign (note says why)."""

    value: float | None
    unit: str | None
    rule: str
    note: str | None = None


@dataclass(frozen=True, slots=True)
class CampaignPlan:
    """A folder read and ready to store whole: nothing is written until store.save_campaign."""

    name: str
    kind: CampaignKind
    content_sha256: str
    meta: Mapping[str, Any]
    attempts: tuple[Attempt, ...]
    score: CampaignScore
    refusals: tuple[str, ...] = ()  # "FILE:LINE: reason" for each file that could not be read

    def close(self) -> None:
        """Remove the prepared runs' step files."""
        for attempt in self.attempts:
            if attempt.prepared is not None:
                attempt.prepared.close()


@dataclass(frozen=True, slots=True)
class CampaignSaved:
    campaign_id: int
    created: bool
    run_ids: tuple[int, ...]  # the stored runs of its attempts, in attempt order
