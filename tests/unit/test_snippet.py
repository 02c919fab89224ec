"""Snippets: text is highlighted on its lower-cased copy by a case-sensitive pattern (faster than IGNORECASE)
whenever that marks exactly what the general, IGNORECASE pattern marks; other text keeps the general one."""

from __future__ import annotations

import re

from hypothesis import example, given
from hypothesis import strategies as st

from core.search.snippet import (
    _highlighter,
    _pattern_for,
    _scan_words,
    build_snippet,
    first_match,
    highlight,
    matched_terms,
)


def test_ascii_text_is_highlighted_whatever_its_case_at_word_starts_only() -> None:
    # an underscore separates words (identifiers' parts are words too)
    snippet = build_snippet("THROTTLED requests; unthrottled ones, x_Throttle", ["throttle"])
    assert snippet == "<mark>THROTTLED</mark> requests; unthrottled ones, x_<mark>Throttle</mark>"


def test_short_terms_take_only_the_listed_suffixes() -> None:
    assert (
        build_snippet("Cats and CATS, catalog", ["cat"]) == "<mark>Cats</mark> and <mark>CATS</mark>, catalog"
    )


def test_text_beyond_ascii_is_highlighted_by_the_general_pattern() -> None:
    snippet = build_snippet("Café API: throttling at 5 µs", ["throttle", "api"])
    assert snippet == "Café <mark>API</mark>: <mark>throttling</mark> at 5 µs"


def test_a_term_beyond_ascii_matches_its_upper_case() -> None:
    assert (
        build_snippet("CAFÉ opens; café closes", ["café"])
        == "<mark>CAFÉ</mark> opens; <mark>café</mark> closes"
    )


# ASCII and the characters where lower-casing and IGNORECASE part ways (ſ ~ s, ı ~ i, İ lower-cases to two
# characters, final Σ lower-cases to ς, µ ~ μ), in text and in terms
text_chars = "abcdeginostuABCDEGINOSTU_0 -.,'ſıİΣσςµμÉé"
some_text = st.text(alphabet=text_chars, max_size=120)
some_terms = st.lists(
    st.sampled_from(["a", "be", "cat", "dead", "sting", "aed", "i", "0", "ing", "sigσ", "μg", "ſs", "été"]),
    min_size=1,
)


@given(some_text, some_terms)
@example("Aſ", ["a"])  # ſ folds to s, a letter of a short stem's suffixes (not of the stem itself)
def test_the_chosen_highlighter_marks_what_the_general_one_marks(text: str, terms: list[str]) -> None:
    pattern, haystack, _ = _pattern_for(text, tuple(terms))
    general = _highlighter(tuple(terms))
    assert pattern is not None and general is not None and len(haystack) == len(text)
    assert [m.span() for m in pattern.finditer(haystack)] == [m.span() for m in general.finditer(text)]


def test_a_short_stems_suffix_is_matched_as_ignorecase_matches_it() -> None:
    # 'a' may be followed by s, es, e, ed or ing; IGNORECASE also takes ſ (long s) for s there
    assert build_snippet("Aſ and as", ["a"]) == "<mark>Aſ</mark> and <mark>as</mark>"


def test_plain_text_takes_the_case_sensitive_pattern() -> None:
    pattern, haystack, _ = _pattern_for("Rate LIMITS", ("limit",))
    assert haystack == "rate limits" and pattern is not None and not pattern.flags & re.IGNORECASE


# Words of a few stems and their neighbours, CJK characters, separators: where a stem occurs inside a word,
# at a word start, twice, or not at all.
word_text = st.text(alphabet="abcdeginorstuABCDEGINORSTU_0 -.,'学習", max_size=160)
word_terms = st.lists(
    st.sampled_from(["a", "be", "cat", "dead", "sting", "rate", "rates", "ratelimit", "ing", "0", "学", "i"]),
    min_size=1,
    max_size=5,
)


@given(word_text, word_terms, st.integers(0, 40))
def test_the_first_match_from_the_literals_is_the_one_a_full_scan_finds(
    text: str, terms: list[str], pos: int
) -> None:
    scan = _pattern_for(text, tuple(terms))
    expected = scan.pattern.search(scan.haystack, pos) if scan.pattern is not None else None
    got = first_match(scan, pos)
    assert (got.span(), got.group()) == (expected.span(), expected.group()) if expected else got is None


@given(st.lists(word_text, min_size=1, max_size=3), word_terms)
def test_matched_terms_finds_what_one_scan_per_text_finds(texts: list[str], terms: list[str]) -> None:
    unique = tuple(dict.fromkeys(terms))
    found: set[str] = set()
    for text in texts:
        scan = _pattern_for(text, unique)
        if scan.pattern is not None:
            _scan_words(scan, unique, found)
    assert matched_terms(texts, terms) == [t for t in unique if t in found]


@given(word_text, word_text, word_terms)
def test_one_result_highlighted_at_once_is_its_snippet_and_matched_terms(
    title: str, text: str, terms: list[str]
) -> None:
    assert highlight(title, text, terms) == (build_snippet(text, terms), matched_terms((title, text), terms))
