"""Snippets: ASCII text takes a faster highlighter (the text lower-cased, literal-first alternatives) that
must mark exactly what the general one marks; other text keeps the general one."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from core.snippet import _ascii_highlighter, _highlighter, build_snippet


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


ascii_text = st.text(alphabet="abcdeginostABCDEGINOST_0 -.,'", max_size=120)
ascii_terms = st.lists(
    st.sampled_from(["a", "be", "cat", "dead", "sting", "aed", "i", "_", "0", "ing"]), min_size=1
)


@given(ascii_text, ascii_terms)
def test_the_ascii_highlighter_marks_what_the_general_one_marks(text: str, terms: list[str]) -> None:
    fast, general = _ascii_highlighter(tuple(terms)), _highlighter(tuple(terms))
    assert fast is not None and general is not None
    assert [m.span() for m in fast.finditer(text.lower())] == [m.span() for m in general.finditer(text)]
