"""Which campaign each file of a folder belongs to: an MLPerf result file to its submitter's system and benchmark,
any other log (and a job table's rows) to the folder's own campaign; a folder's metadata to the campaign whose files
sit beside it, else to every campaign of the folder.

A submitter, system and benchmark are what the result file's submission keys state (`submission_org`,
`submission_platform`, `submission_benchmark`); where a key is missing, MLCommons' layout of a round says it
(`ORG/results/SYSTEM/BENCHMARK/result_N.txt`). So one AMD and one MangoBoost MI300X result in one folder are two
campaigns, each scored on its own, and a whole round is one campaign per system and benchmark.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from perfledger.campaigns import Attempt
from perfledger.vocabulary import LogFormat

GroupKey = tuple[str | None, str | None, str | None]  # (submitter, system, benchmark); the folder's own: NO_GROUP
NO_GROUP: GroupKey = (None, None, None)
RESULTS = "results"


@dataclass(slots=True)
class Group:
    """A campaign in the making: its attempts (in the folder's order), the digests of its files, its metadata and
    the refusals of files beside its own."""

    key: GroupKey
    attempts: list[Attempt] = field(default_factory=list)
    digests: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)  # its logs' names, relative to the folder
    meta: dict[str, Any] = field(default_factory=lambda: {"configs": {}, "systems": {}})
    refusals: list[str] = field(default_factory=list)

    @property
    def home(self) -> str:
        """The folder its logs share (relative to the imported folder; "" for the folder itself)."""
        parents = [posixpath.dirname(name) for name in self.files]
        return posixpath.commonpath(parents) if parents else ""


def group_key(attempt: Attempt, shown: str) -> GroupKey:
    """The campaign an attempt belongs to: an MLPerf result's (submitter, system, benchmark), else NO_GROUP."""
    prepared = attempt.prepared
    if prepared is None or prepared.format is not LogFormat.MLPERF:
        return NO_GROUP
    said = attempt.configuration
    laid = layout(shown)
    key = (said.get("submitter") or laid[0], said.get("system") or laid[1], said.get("benchmark") or laid[2])
    return key if key != NO_GROUP else NO_GROUP


def layout(shown: str) -> GroupKey:
    """(org, system, benchmark) as MLCommons' layout places a result file: ORG/results/SYSTEM/BENCHMARK/FILE."""
    parts = PurePosixPath(shown).parts
    if RESULTS not in parts[:-1]:
        return NO_GROUP
    at = parts.index(RESULTS)
    below = parts[at + 1:-1]
    return (parts[at - 1] if at > 0 else None, below[0] if below else None, below[1] if len(below) > 1 else None)


def system_description_for(shown: str, systems: Mapping[str, Any]) -> str | None:
    """The system description of a log: ORG/systems/SYSTEM.json beside its ORG/results/SYSTEM/..., else the folder's
    only one; None when neither."""
    parts = PurePosixPath(shown).parts
    if RESULTS in parts[:-2]:
        at = parts.index(RESULTS)
        beside = PurePosixPath(*parts[:at], "systems", f"{parts[at + 1]}.json").as_posix()
        if beside in systems:
            return beside
    return next(iter(systems)) if len(systems) == 1 else None


def campaign_name(key: GroupKey, folder: str, several: bool) -> str:
    """The folder's name for its only campaign (and for its own logs); a system's campaign names its submitter,
    system and benchmark."""
    if not several or key == NO_GROUP:
        return folder
    return " ".join(part for part in key if part)


def attached(groups: Sequence[Group], shown: str, homes: Mapping[int, str]) -> list[Group]:
    """The campaigns a metadata file (or a refused file) belongs to: those whose logs sit in its folder (`homes`:
    each group's home by id), else every campaign of the folder."""
    parent = posixpath.dirname(shown)
    beside = [g for g in groups if g.key != NO_GROUP and homes[id(g)] == parent]
    return beside or list(groups)
