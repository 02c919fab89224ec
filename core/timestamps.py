"""Timestamps: ISO-8601 in and out, and the recency decay over an age (shared by search, context
assembly, governance and the stores)."""

from __future__ import annotations

import math
from datetime import UTC, datetime

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


def iso_timestamp(epoch_seconds: float) -> str:
    """An ISO-8601 UTC timestamp (milliseconds, `Z`) for epoch seconds."""
    moment = datetime.fromtimestamp(epoch_seconds, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def recency_boost(created_at: float, now: float, floor: float = 0.0) -> float:
    """Log decay max(floor, 1/(1 + ln(1 + age_hours/24))): now = 1, a day ≈ 0.59, a week ≈ 0.32, a month ≈ 0.23.

    (The shared-utils seed's prose says a week ≈ 0.5 and a month ≈ 0.25; its formula, kept here, gives the
    values above.)
    """
    age_hours = max(0.0, (now - created_at) / 3600.0)
    return max(floor, 1.0 / (1.0 + math.log1p(age_hours / HOURS_PER_DAY)))
