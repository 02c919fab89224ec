"""QUARRY_CACHE_TTL_SECONDS=0 turns the search cache off: every search is answered from the index and
nothing is stored (before, each search still wrote its whole response to the cache, to expire at once)."""

from __future__ import annotations

import dataclasses
import sqlite3
from typing import Any

from tests.conftest import api_event, invoke


def cache_rows(local: Any) -> int:
    with sqlite3.connect(local.settings.sqlite_path) as conn:
        return int(conn.execute("SELECT count(*) FROM cache_entries").fetchone()[0])


def test_with_ttl_zero_searches_are_answered_and_nothing_is_cached(local: Any) -> None:
    local.search.settings = dataclasses.replace(local.search.settings, cache_ttl_seconds=0)
    assert invoke(api_event("put_entity", body={"content": "rate limiter notes"}))[0] in (200, 201)
    before = cache_rows(local)
    answers = [invoke(api_event("search", body={"query": "limiter"})) for _ in range(2)]
    assert [status for status, _ in answers] == [200, 200]
    assert [body["query_info"]["cache"] for _, body in answers] == ["miss", "miss"]
    assert [r["snippet"] for r in answers[1][1]["results"]] == ["rate <mark>limiter</mark> notes"]
    assert cache_rows(local) == before


def test_with_a_ttl_the_second_search_is_a_hit(local: Any) -> None:
    assert invoke(api_event("put_entity", body={"content": "rate limiter notes"}))[0] in (200, 201)
    answers = [invoke(api_event("search", body={"query": "limiter"}))[1] for _ in range(2)]
    assert [body["query_info"]["cache"] for body in answers] == ["miss", "hit"]
    assert answers[0]["results"] == answers[1]["results"]
