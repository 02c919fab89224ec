"""Date bounds (core/timestamps.py, is_date_bound): the whole text, a real day, time of day and zone offset."""

from __future__ import annotations

import pytest

from core.timestamps import is_date_bound

REAL = ["2026-01-31", "2024-02-29", "2026-01-31T00:00", "2026-01-31 23:59:59", "2026-01-31T09:30:00.125Z",
        "2026-01-31T09:30:00,5+01:00", "2026-01-31T09:30-0530", "2026-01-31T09:30:00+23:59"]  # fmt: skip
NOT_REAL = ["2026-01-31\n", "2026-01-31T09:30Z\n", "\n2026-01-31", " 2026-01-31", "2026-01-31T25:99",
            "2026-01-31T24:00", "2026-01-31T23:60", "2026-01-31T23:59:60", "2026-02-30", "2025-02-29",
            "2026-00-10", "2026-13-01", "2026-01-00", "2026-01-31T09:30+24:00", "2026-01-31T09:30+01:60",
            "2026-01-31T09", "26-01-31", "2026-1-31", ""]  # fmt: skip


@pytest.mark.parametrize("text", REAL)
def test_a_real_date_or_date_time_is_a_bound(text: str) -> None:
    assert is_date_bound(text)


@pytest.mark.parametrize("text", NOT_REAL)
def test_text_that_is_not_wholly_a_real_moment_is_not_a_bound(text: str) -> None:
    assert not is_date_bound(text)
