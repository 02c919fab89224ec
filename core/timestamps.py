"""Timestamps: ISO-8601 in and out, and the recency decay over an age (shared by search, context
assembly, governance and the stores)."""

from __future__ import annotations

import math
import re
from datetime import UTC, date, datetime, time

# An ISO 8601 date, optionally with a time and a zone: the pattern /openapi.json publishes for date bounds
# (handlers/http_api/openapi.py). Its `^…$` means the whole text in ECMA-262; in Python `$` also matches before a
# final newline, so `is_date_bound` matches it with `fullmatch`, and then reads the date and time for real
# (no regular expression knows that 2026-02-30 or 25:99 is no moment).
DATE_PATTERN = (
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}"
    r"([T ][0-9]{2}:[0-9]{2}(:[0-9]{2}([.,][0-9]+)?)?(Z|[+-][0-9]{2}:?[0-9]{2})?)?$"
)
_DATE_BOUND = re.compile(DATE_PATTERN)
DATE_ONLY_CHARS = 10  # YYYY-MM-DD
_MAX_OFFSET_HOURS, _MAX_MINUTES = 23, 59  # a zone offset is at most 23:59 (ISO 8601; Python's timezone)

HOURS_PER_DAY = 24.0


def parse_timestamp(value: str) -> float | None:
    """Seconds since the epoch for an ISO-8601 timestamp (naive means UTC), or None if unparseable."""
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except (ValueError, AttributeError):
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


def is_date_bound(text: str) -> bool:
    """Whether `text` is, whole, an ISO 8601 date or date-time DATE_PATTERN describes, naming a real day,
    time of day and zone offset."""
    match = _DATE_BOUND.fullmatch(text)
    if match is None:
        return False
    clock, seconds, _, zone = match.groups()
    try:
        date.fromisoformat(text[:DATE_ONLY_CHARS])
        if clock:
            time(int(clock[1:3]), int(clock[4:6]), int(seconds[1:3]) if seconds else 0)
    except ValueError:  # day 30 of February, hour 25, minute 99…
        return False
    if zone and zone != "Z":
        hours, minutes = int(zone[1:3]), int(zone[-2:])
        return hours <= _MAX_OFFSET_HOURS and minutes <= _MAX_MINUTES
    return True


def iso_timestamp(epoch_seconds: float) -> str:
    """An ISO-8601 UTC timestamp (milliseconds, `Z`) for epoch seconds."""
    moment = datetime.fromtimestamp(epoch_seconds, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def recency_boost(created_at: float, now: float, floor: float = 0.0) -> float:
    """Log decay max(floor, 1/(1 + ln(1 + age_hours/24))): now = 1, a day ≈ 0.59, a week ≈ 0.32, a month ≈ 0.23.

    (docs/conformance.md#recency-decay: the specification's prose says a week ≈ 0.5 and a month ≈ 0.25;
    its formula, kept here, gives the values above.)
    """
    age_hours = max(0.0, (now - created_at) / 3600.0)
    return max(floor, 1.0 / (1.0 + math.log1p(age_hours / HOURS_PER_DAY)))
