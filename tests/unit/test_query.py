"""Query parsing: terms, phrases, prefixes, mentions, shapes, sanitising."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.errors import InvalidInputError
from core.indexing.entity_types import EntityTypeRegistry
from core.search.query import MAX_TERMS, QueryShape, parse_query

REGISTRY = EntityTypeRegistry()


def test_terms_are_lower_cased_unique_and_stop_words_dropped() -> None:
    parsed = parse_query("The Login login BUG of the day", REGISTRY)
    assert parsed.terms == ("login", "bug", "day")


def test_only_stop_words_are_kept_rather_than_searching_nothing() -> None:
    assert parse_query("what is it", REGISTRY).terms == ("what", "is", "it")


def test_quoted_phrases_are_separate_from_terms() -> None:
    parsed = parse_query('"exact phrase" other', REGISTRY)
    assert parsed.phrases == ("exact phrase",)
    assert parsed.terms == ("other",)


@pytest.mark.parametrize(
    ("query", "prefix", "terms"),
    [
        ("task: fix bug", "task", ("fix", "bug")),
        ("tasks: fix bug", "task", ("fix", "bug")),
        ("people: ann", "person", ("ann",)),
        ("@john", "person", ("john",)),
        ("meet @john tomorrow", None, ("meet", "john", "tomorrow")),
        ("unknown: thing", None, ("unknown", "thing")),
        ("task:", None, ("task",)),
    ],
)
def test_entity_prefixes_and_lone_mentions(query: str, prefix: str | None, terms: tuple[str, ...]) -> None:
    parsed = parse_query(query, REGISTRY)
    assert (parsed.entity_prefix, parsed.terms) == (prefix, terms)


def test_at_most_twenty_terms_and_truncation_is_reported() -> None:
    parsed = parse_query(" ".join(f"word{i}" for i in range(30)), REGISTRY)
    assert len(parsed.terms) == MAX_TERMS and parsed.truncated


def test_single_character_cjk_terms_are_kept() -> None:
    assert parse_query("東", REGISTRY).terms == ("東",)
    assert parse_query("東京 tower", REGISTRY).terms == ("東", "京", "tower")


@pytest.mark.parametrize(
    ("query", "shape"),
    [
        ("how do I deploy the api?", QueryShape.QUESTION),
        ("why does login fail", QueryShape.QUESTION),
        ("checkRateLimit", QueryShape.IDENTIFIER),
        ("rate_limit config", QueryShape.IDENTIFIER),
        ("src/api/rate.ts", QueryShape.IDENTIFIER),
        ("TypeError: Cannot read property", QueryShape.IDENTIFIER),
        ("mRNA expression in siRNA knockdown", QueryShape.PLAIN),
        ("grocery list", QueryShape.PLAIN),
    ],
)
def test_query_shape_picks_the_auto_strategy(query: str, shape: QueryShape) -> None:
    assert parse_query(query, REGISTRY).shape is shape


@given(st.text(max_size=300))
def test_no_query_syntax_survives_into_terms(raw: str) -> None:
    parsed = parse_query(raw, REGISTRY)
    assert len(parsed.terms) + sum(len(p.split()) for p in parsed.phrases) <= MAX_TERMS
    for token in parsed.terms + parsed.phrases:
        assert not set(token) & set('"*()^:-+{}[]\\'), token


@pytest.mark.parametrize("query", ["dose of 1/2000 units", "Arp2/3 complex activation", "TCR/CD8 signalling"])
def test_a_single_slash_is_prose_not_a_path(query: str) -> None:
    assert parse_query(query, REGISTRY).shape is QueryShape.PLAIN


def test_repeated_words_keep_their_count_and_single_letters_are_noise() -> None:
    parsed = parse_query("rate limiter: the rate of e.g. login rate limiting", EntityTypeRegistry())
    assert dict(zip(parsed.terms, parsed.weights, strict=True)) == {
        "rate": 3,
        "limiter": 1,
        "login": 1,
        "limiting": 1,
    }
    assert parse_query("x", EntityTypeRegistry()).terms == ("x",)  # nothing else: kept, not emptied
    assert parse_query("维 生素 c", EntityTypeRegistry()).terms[:2] == (
        "维",
        "生",
    )  # CJK characters are words


def test_the_term_cap_is_the_search_boxs_and_can_be_lifted() -> None:
    words = " ".join(f"word{i}" for i in range(60))
    assert len(parse_query(words, EntityTypeRegistry()).terms) == MAX_TERMS
    lifted = parse_query(words, EntityTypeRegistry(), max_terms=1000)
    assert len(lifted.terms) == 60 and not lifted.truncated


def words_searched(query: str) -> int:
    parsed = parse_query(query, REGISTRY)
    return len(parsed.terms) + sum(len(p.split()) for p in parsed.phrases)


def test_phrase_words_count_toward_the_term_cap() -> None:
    # five quoted phrases of 30 words each were 150 words searched beside a cap of 20
    long_phrases = " ".join('"' + " ".join(f"p{i}w{j}" for j in range(30)) + '"' for i in range(5))
    parsed = parse_query(long_phrases + " alpha beta", REGISTRY)
    assert words_searched(long_phrases + " alpha beta") == MAX_TERMS and parsed.truncated
    assert parsed.phrases == (" ".join(f"p0w{j}" for j in range(MAX_TERMS)),)
    mixed = parse_query('"rate limiter config" ' + " ".join(f"word{i}" for i in range(30)), REGISTRY)
    assert mixed.phrases == ("rate limiter config",) and len(mixed.terms) == MAX_TERMS - 3 and mixed.truncated
    small = parse_query('"rate limiter" login', REGISTRY)
    assert (small.phrases, small.terms, small.truncated) == (("rate limiter",), ("login",), False)


def test_the_fields_a_search_may_filter_on_are_every_named_types_together() -> None:
    registry = EntityTypeRegistry.with_config(
        {"types": {"ticket": {"fields": {"title": 3}, "filterable": ["priority"]},
                   "invoice": {"fields": {"title": 3}, "filterable": ["currency", "priority"]}}}
    )  # fmt: skip
    assert registry.filterable(["ticket"]) == {"priority"}
    assert registry.filterable(["ticket", "invoice"]) == {"priority", "currency"}
    assert registry.filterable(["ticket", "invoice"]) == {"priority", "currency"}  # asked again: the same
    with pytest.raises(InvalidInputError) as refused:
        registry.filterable(["ticket", "nope"])
    assert "unknown entity type 'nope'" in str(refused.value)
