"""What a search answer tells an app beyond the ranking: `min_score` cuts on the fused score,
`matched_terms` tells a lexical hit from a vector-only one, and explain keeps the keyword leg's own BM25."""

from __future__ import annotations

import hashlib
from typing import Any

from tests.conftest import api_event, invoke

DIM = 64  # FakeEmbedder's default dimension


def _bucket(word: str) -> int:
    return int(hashlib.md5(word.encode()).hexdigest(), 16) % DIM  # FakeEmbedder's hashing


def _twin(word: str) -> str:
    """A different word the fake embedder maps to the same vector as `word` (no shared letters needed)."""
    return next(f"w{i}" for i in range(10_000) if _bucket(f"w{i}") == _bucket(word))


def _search(body: dict[str, Any], tenant: str = "acme") -> dict[str, Any]:
    status, answer = invoke(api_event("search", tenant=tenant, body=body))
    assert status == 200, answer
    return answer


def _write(items: list[dict[str, Any]], tenant: str = "acme") -> None:
    status, body = invoke(api_event("bulk_entities", tenant=tenant, body={"items": items}))
    assert status == 200 and not body["errors"], body


def test_matched_terms_tell_a_lexical_hit_from_a_vector_only_one(local: Any) -> None:
    _write(
        [
            {"type": "task", "id": "login", "title": "Fix the login page", "status": "open"},
            {"type": "task", "id": "twin", "title": _twin("zzqxv"), "status": "open"},
        ]
    )
    hits = {r["entity_id"]: r for r in _search({"query": "login zzqxv", "strategy": "hybrid"})["results"]}
    assert hits["login"]["matched_terms"] == ["login"]
    assert hits["twin"]["matched_terms"] == []  # found by its vector alone: no query word is in it
    miss = _search({"query": "zzqxv", "strategy": "hybrid"})["results"]
    assert [r["entity_id"] for r in miss] == ["twin"] and miss[0]["matched_terms"] == []


def test_min_score_cuts_on_the_fused_score_and_total_counts_what_is_left(local: Any) -> None:
    _write(
        [
            {"type": "task", "id": f"t{i}", "title": "report " + "words " * i, "status": "open"}
            for i in range(8)
        ]
    )
    everything = _search({"query": "report", "strategy": "hybrid"})
    scores = [r["score"] for r in everything["results"]]
    cut = scores[3]
    kept = _search({"query": "report", "strategy": "hybrid", "min_score": cut})
    assert [r["score"] for r in kept["results"]] == [s for s in scores if s >= cut]
    assert kept["total"] == len(kept["results"]) < everything["total"]
    for bad in (-1, 1.5, "0.5"):
        status, body = invoke(api_event("search", body={"query": "report", "min_score": bad}))
        assert status == 400 and "min_score" in body["error"]["fields"], bad


def test_explain_keeps_the_keyword_legs_own_bm25_score(local: Any) -> None:
    _write(
        [{"type": "task", "id": f"t{i}", "title": "report " * (i + 1), "status": "open"} for i in range(3)]
    )
    results = _search({"query": "report", "strategy": "keyword", "explain": True})["results"]
    assert results[0]["score"] == 1.0  # fused scores are relative to the best hit
    bm25 = [r["explanation"]["lexical"]["score"] for r in results]
    assert bm25 == sorted(bm25, reverse=True) and bm25[0] != 1.0 and bm25[-1] > 0
