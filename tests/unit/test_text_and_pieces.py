"""Text normalisation, chunking, snippets, recency, tokens, cache keys, entity types."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.errors import InvalidInputError
from core.indexing.chunking import chunk_text
from core.indexing.entity_types import EntityTypeRegistry
from core.search.cache_key import search_cache_key
from core.search.snippet import build_snippet
from core.text import edit_distance, identifier_parts, index_text
from core.timestamps import recency_boost
from core.tokens import estimate_tokens


def test_identifiers_are_indexed_whole_and_in_parts() -> None:
    assert identifier_parts("call checkRateLimit and rate_limit_v2") == [
        "check",
        "rate",
        "limit",
        "rate",
        "limit",
        "v",
        "2",
    ]
    text = index_text(["The checkRateLimit function"])
    assert "checkratelimit" in text.split() and {"check", "rate", "limit"} <= set(text.split())


def test_cjk_is_split_into_characters_for_indexing() -> None:
    assert index_text(["東京タワー"]).split() == ["東", "京", "タ", "ワ", "ー"]


def test_edit_distance_counts_transpositions_once() -> None:
    assert edit_distance("recieve", "receive", 2) == 1
    assert edit_distance("kitten", "sitting", 3) == 3
    assert edit_distance("abc", "xyzxyz", 2) == 3  # capped at limit + 1


@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=5000))
def test_chunks_cover_the_text_and_stay_near_the_size(text: str) -> None:
    chunks = chunk_text(text, size_tokens=50, overlap_tokens=5)
    words = text.split()
    assert " ".join(chunks).split()[: len(words)] == words[: len(" ".join(chunks).split())] or chunks
    covered = set()
    for chunk in chunks:
        covered.update(chunk.split())
        assert len(chunk) <= 200 or len(chunk.split()) == 1
    assert covered == set(words)


def test_chunks_overlap_a_little() -> None:
    words = [f"w{i}" for i in range(400)]
    chunks = chunk_text(" ".join(words), size_tokens=100, overlap_tokens=10)
    assert len(chunks) > 1
    assert chunks[0].split()[-1] in chunks[1].split()


def test_snippet_highlights_stems_and_escapes_html() -> None:
    snippet = build_snippet("<b>Throttling</b> protects the API from abusive clients", ["throttle", "api"])
    assert "&lt;b&gt;" in snippet and "<mark>Throttling</mark>" in snippet and "<mark>API</mark>" in snippet


def test_snippet_windows_around_a_late_match() -> None:
    text = "filler " * 100 + "the needle is here " + "tail " * 50
    snippet = build_snippet(text, ["needle"], max_chars=80)
    assert "<mark>needle</mark>" in snippet and snippet.startswith("…") and snippet.endswith("…")


def test_recency_boost_follows_the_seed_curve() -> None:
    day = 86_400.0
    assert recency_boost(0, 0) == 1.0
    # The formula gives 1/(1+ln 8) ≈ 0.325 at a week and ≈ 0.226 at 30 days (the shared-utils seed's prose
    # says
    # "≈ 0.5" and "≈ 0.25"; its own formula, which we keep, does not).
    assert abs(recency_boost(0, 7 * day) - 0.3247) < 0.001
    assert abs(recency_boost(0, 30 * day) - 0.2255) < 0.001
    assert recency_boost(0, 365 * day, floor=0.2) == 0.2
    assert recency_boost(10 * day, 0) == 1.0  # future timestamps are not boosted above 1


def test_token_estimate_is_ceil_len_over_four() -> None:
    assert [estimate_tokens(s) for s in ("", "abc", "abcd", "abcde")] == [0, 1, 1, 2]


def test_cache_key_normalises_and_separates_tenants_and_generations() -> None:
    base = search_cache_key("t1", "login bug", ["task", "idea"], {"b": 1, "a": 2}, "auto", 20, 3)
    assert base == search_cache_key("t1", "login bug", ["idea", "task"], {"a": 2, "b": 1}, "auto", 20, 3)
    # the query's case and spacing shape the answer (its strategy, its echo): never one entry for both
    assert base != search_cache_key("t1", "Login Bug", ["idea", "task"], {"a": 2, "b": 1}, "auto", 20, 3)
    assert base != search_cache_key("t1", " login bug", ["idea", "task"], {"a": 2, "b": 1}, "auto", 20, 3)
    assert base != search_cache_key(
        "t1", "login bug", ["idea", "task"], {"a": 2, "b": 1}, "auto", 20, 3, variant="a"
    )
    assert base != search_cache_key("t2", "login bug", ["idea", "task"], {"a": 2, "b": 1}, "auto", 20, 3)
    assert base != search_cache_key("t1", "login bug", ["idea", "task"], {"a": 2, "b": 1}, "auto", 20, 4)


def test_configured_entity_types_extend_the_builtins() -> None:
    registry = EntityTypeRegistry.with_config(
        {"types": {"recipe": {"fields": {"name": 3, "ingredients": 1}, "filterable": ["cuisine"]}}}
    )
    recipe = registry.get("recipe")
    assert recipe.title_field == "name" and recipe.filterable == ("cuisine",)
    assert "task" in registry.names()
    with pytest.raises(InvalidInputError) as err:
        EntityTypeRegistry.with_config({"types": {"bad": {"fields": {"x": 7}}}})
    assert "types.bad.fields.x" in err.value.fields
