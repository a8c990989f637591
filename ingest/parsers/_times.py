"""Printed times as seconds: durations (`0:02:12`, `1 day, 0:08:23`, `1m 42s`) and timestamps in every common form
(epoch seconds or milliseconds, ISO-8601 with or without a zone, `20260725-13:51:09.653`, a time of day)."""

from __future__ import annotations

import re
from datetime import UTC, datetime

__all__ = ["duration_seconds", "timestamp_seconds"]

_HMS = re.compile(r"^\s*(?:(\d+) days?,\s*)?(\d+):(\d{1,2}):(\d{1,2}(?:\.\d+)?)\s*$")
_MS = re.compile(r"^\s*(\d+):(\d\d(?:\.\d+)?)\s*$")  # minutes:seconds, as tqdm prints its clock under an hour ("01:02")
_UNITS = re.compile(r"(\d+(?:\.\d+)?)\s*(d|days?|h|hours?|hr|m|min|mins|minutes?|s|secs?|seconds?|ms)\b")
_UNIT_SECONDS = {"d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3}


def duration_seconds(text: str | None) -> float | None:
    """A printed duration -> seconds: "0:02:12", "1 day, 0:08:23", "01:02" (tqdm's minutes:seconds), "1m 42s",
    "2h 3m 4s", "42s", "12.5"."""
    if text is None:
        return None
    if (m := _HMS.match(text)) is not None:
        days, h, mins, s = m.groups()
        return int(days or 0) * 86400.0 + int(h) * 3600.0 + int(mins) * 60.0 + float(s)
    if (m := _MS.match(text)) is not None:
        return int(m.group(1)) * 60.0 + float(m.group(2))
    parts = _UNITS.findall(text)
    if parts and not _UNITS.sub("", text).strip(" ,"):
        total = 0.0
        for number, unit in parts:
            key = "ms" if unit == "ms" else "m" if unit.startswith("m") else unit[0]
            total += float(number) * _UNIT_SECONDS[key]
        return total
    try:
        return float(text)
    except ValueError:
        return None


_DATE_TIME = re.compile(r"^(\d{4})-?(\d\d)-?(\d\d)[ T-](\d\d):(\d\d):(\d\d)(?:[.,](\d+))?\s*(Z|[+-]\d\d:?\d\d)?$")
_TIME_OF_DAY = re.compile(r"^(\d{1,2}):(\d\d):(\d\d)(?:[.,](\d+))?$")


def timestamp_seconds(text: str | None, factor: float = 1.0) -> float | None:
    """A printed time -> seconds: epoch seconds (x factor: 1e-3 for epoch ms), ISO-8601 ("2026-04-01T16:04:59.626Z",
    "2021-05-25 06:38:26,358"), "20260725-13:51:09.653", or a time of day ("13:51:09", seconds since midnight: a
    run that crosses midnight gives no step time there). UTC where no zone is printed."""
    if text is None:
        return None
    text = text.strip()
    try:
        return float(text) * factor
    except ValueError:
        pass
    if (m := _DATE_TIME.match(text)) is not None:
        year, month, day, hour, minute, second, fraction, zone = m.groups()
        try:
            when = datetime(int(year), int(month), int(day), int(hour), int(minute), int(second), tzinfo=UTC)
        except ValueError:
            return None
        offset = 0.0
        if zone and zone != "Z":
            sign = -1 if zone[0] == "-" else 1
            offset = sign * (int(zone[1:3]) * 3600 + int(zone[-2:]) * 60)
        return when.timestamp() - offset + float(f"0.{fraction}" if fraction else 0)
    if (m := _TIME_OF_DAY.match(text)) is not None:
        hour, minute, second, fraction = m.groups()
        return int(hour) * 3600 + int(minute) * 60 + int(second) + float(f"0.{fraction}" if fraction else 0)
    return None
