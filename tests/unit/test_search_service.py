"""The search use case (core/search/search_service.py) through the composition root with every port a fake
(tests/fakes): no SQLite, no OpenSearch, no model. Assertions are on the answer and on what the fakes hold
(the cache's entries and generation counters), never on which calls were made."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from core.errors import CursorExpiredError
from core.search.cache_key import generation_key, search_key_prefix
from core.search.planning import DEFAULT_ALPHA, LEXICAL_LEAN
from core.search.search_api import SearchRequest, SearchResponse
from tests.conftest import FakeEmbedder
from tests.fakes import FakeCache, FakeSearchIndex, RaisingEmbedder, fake_container


class SynonymEmbedder(FakeEmbedder):
    """The hashing embedder, reading each synonym as its head word: "automobile" embeds like "car", so a
    document can be found by meaning (the vector leg) without sharing a word with the query."""

    SYNONYMS = {"automobile": "car", "vehicle": "car"}

    def embed(self, texts: Any) -> list[np.ndarray]:
        return super().embed([" ".join(self.SYNONYMS.get(w, w) for w in t.lower().split()) for t in texts])


@pytest.fixture
def c(tmp_path: Path) -> Any:
    return fake_container(tmp_path, embedder=SynonymEmbedder())


def write(c: Any, *items: dict[str, Any], tenant: str = "acme") -> None:
    report = c.indexing.bulk(tenant, list(items), c.clock.now())
    assert not report.errors, report.errors


def memory(eid: str, content: str, **extra: Any) -> dict[str, Any]:
    return {"type": "memory", "id": eid, "content": content, **extra}


def search(c: Any, query: str, tenant: str = "acme", **request: Any) -> SearchResponse:
    return c.search.search(tenant, SearchRequest(query=query, **request))


def ids(answer: SearchResponse) -> list[str]:
    return [r.entity_id for r in answer.results]


def cached(c: Any, tenant: str = "acme") -> list[str]:
    cache: FakeCache = c.cache
    return cache.keys(search_key_prefix(tenant))


# strategy


@pytest.mark.parametrize(
    ("query", "strategy", "alpha"),
    [
        ("rotate the database keys", "hybrid", DEFAULT_ALPHA),
        (
            "how do I rotate database keys?",
            "hybrid",
            DEFAULT_ALPHA,
        ),  # questions do not lean (SEMANTIC_LEAN 0)
        ("checkRateLimit", "hybrid:lexical-leaning", DEFAULT_ALPHA - LEXICAL_LEAN),
        ("src/limits/rate.ts", "hybrid:lexical-leaning", DEFAULT_ALPHA - LEXICAL_LEAN),
    ],
)
def test_auto_leans_toward_keywords_for_identifiers_only(
    c: Any, query: str, strategy: str, alpha: float
) -> None:
    write(c, memory("m-1", "rotate the database keys with checkRateLimit in src/limits/rate.ts"))
    answer = search(c, query, explain=True)
    assert answer.query_info.strategy == strategy
    assert ids(answer) == ["m-1"] and answer.results[0].explanation.alpha == round(alpha, 6)


def test_a_keyword_search_never_embeds_the_query(c: Any) -> None:
    write(c, memory("m-1", "car insurance renewal"), memory("m-2", "automobile repair shop"))
    embedded = len(c.embedder.texts)
    answer = search(c, "car", strategy="keyword")
    assert ids(answer) == ["m-1"]  # the synonym is the vector leg's find alone
    assert c.embedder.texts[embedded:] == []


# fusion


def test_hybrid_fuses_a_keyword_only_and_a_meaning_only_match(c: Any) -> None:
    write(c, memory("m-word", "car insurance renewal"), memory("m-meaning", "automobile repair"))
    answer = search(c, "car", strategy="hybrid", explain=True)
    by_id = {r.entity_id: r.explanation for r in answer.results}
    assert set(by_id) == {"m-word", "m-meaning"}
    assert by_id["m-word"].lexical.rank == 0  # ranks count from 0
    assert by_id["m-meaning"].lexical.rank is None and by_id["m-meaning"].vector.rank is not None
    assert search(c, "car", strategy="semantic").results  # the meaning alone finds something


def test_filters_restrict_both_legs(c: Any) -> None:
    write(
        c,
        {"type": "task", "id": "t-open", "title": "car service", "status": "open"},
        {"type": "task", "id": "t-done", "title": "car service", "status": "done"},
        {"type": "task", "id": "t-done-synonym", "title": "automobile service", "status": "done"},
    )
    answer = search(c, "car", strategy="hybrid", filters={"status": "open"}, explain=True)
    assert ids(answer) == ["t-open"]
    only = answer.results[0].explanation
    assert only.lexical.rank == 0 and only.vector.rank == 0  # each leg ranked within the filter
    assert set(ids(search(c, "car", filters={"status": "done"}))) == {"t-done", "t-done-synonym"}


# the cache


def test_an_answer_is_cached_until_a_write_moves_the_tenants_generation(c: Any) -> None:
    write(c, memory("m-1", "harbour crane schedule"))
    generation = c.cache.counter(generation_key("acme"))
    first = search(c, "crane")
    assert first.query_info.cache == "miss" and len(cached(c)) == 1
    assert search(c, "crane").query_info.cache == "hit"

    write(c, memory("m-2", "crane maintenance log"))
    assert c.cache.counter(generation_key("acme")) > generation
    after = search(c, "crane")
    assert after.query_info.cache == "miss" and set(ids(after)) == {"m-1", "m-2"}
    assert len(cached(c)) == 2  # the old entry is unreachable under the old generation, never served


def test_min_score_keeps_what_scores_at_least_it_and_is_never_served_the_uncut_answer(c: Any) -> None:
    write(c, memory("m-1", "crane crane schedule"), memory("m-2", "crane and other words here"))
    everything = search(c, "crane", strategy="keyword")
    assert ids(everything) == ["m-1", "m-2"] and len(cached(c)) == 1
    kept = search(c, "crane", strategy="keyword", min_score=everything.results[0].score)
    assert kept.query_info.cache == "miss" and ids(kept) == ["m-1"] and kept.total == 1


class RefreshingIndex(FakeSearchIndex):
    """An index whose writes show in search only after a refresh (OpenSearch without `refresh`)."""

    visibility_delay_seconds = 1.0


def test_answers_are_not_cached_while_a_write_may_still_be_invisible(tmp_path: Path) -> None:
    c = fake_container(tmp_path, index=RefreshingIndex())
    write(c, memory("m-1", "harbour crane schedule"))
    assert ids(search(c, "crane")) == ["m-1"] and cached(c) == []  # answered, not kept
    c.clock.advance(60)  # the write has settled
    assert search(c, "crane").query_info.cache == "miss" and len(cached(c)) == 1
    assert search(c, "crane").query_info.cache == "hit"


# degraded answers


def test_an_embedder_outage_answers_keyword_only_says_so_and_caches_nothing(c: Any) -> None:
    write(c, memory("m-1", "car insurance renewal"), memory("m-2", "automobile repair"))
    c.override(embedder=RaisingEmbedder())
    for _ in range(2):  # the second answer is computed again, not served from the cache
        answer = search(c, "car")
        assert answer.query_info.degraded and answer.query_info.strategy == "keyword"
        assert answer.query_info.cache == "miss" and ids(answer) == ["m-1"]
    assert cached(c) == []


def test_an_empty_query_answers_nothing_and_caches_nothing(c: Any) -> None:
    write(c, memory("m-1", "harbour crane schedule"))
    answer = search(c, "   ")
    assert answer.results == [] and answer.total == 0 and answer.next_cursor is None
    assert cached(c) == []


# tenants


def test_another_tenant_never_sees_the_data_nor_the_cached_answer(c: Any) -> None:
    write(c, memory("m-1", "acquisition plans for globex"), tenant="acme")
    assert ids(search(c, "acquisition", tenant="acme")) == ["m-1"]
    other = search(c, "acquisition", tenant="initech")
    assert other.results == [] and other.query_info.cache == "miss"
    assert c.cache.counter(generation_key("initech")) == 0  # acme's write moved acme's generation only
    assert len(cached(c, "acme")) == 1 and len(cached(c, "initech")) == 1


# paging


def test_pages_show_every_match_once_and_a_write_before_page_two_expires_the_cursor(c: Any) -> None:
    write(c, *[memory(f"m-{i:02d}", f"crane log entry {i}") for i in range(25)])
    seen: list[str] = []
    cursor = None
    for _ in range(5):
        page = search(c, "crane", strategy="keyword", limit=10, cursor=cursor)
        seen += ids(page)
        if (cursor := page.next_cursor) is None:
            break
    assert sorted(seen) == sorted(f"m-{i:02d}" for i in range(25)) and len(seen) == 25

    first = search(c, "crane", strategy="keyword", limit=10)
    write(c, memory("m-new", "crane log entry new"))
    with pytest.raises(CursorExpiredError):
        search(c, "crane", strategy="keyword", limit=10, cursor=first.next_cursor)
