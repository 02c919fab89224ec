"""Snippets with the matched terms highlighted (DESIGN.md §3 step 7).

The snippet is HTML-escaped and matches are wrapped in <mark>…</mark>, so it is safe to render as HTML.
"""

from __future__ import annotations

import functools
import html
import re
from collections.abc import Sequence

from core.text import CJK_CHAR, MIN_STEM_CHARS, light_stem

SNIPPET_CHARS = 200  # about two lines of a results page


def _stem(word: str) -> str:
    """Suffix-stripped and without a final 'e', so throttle / throttling / throttled meet."""
    stem = light_stem(word)
    return stem[:-1] if stem.endswith("e") and len(stem) > MIN_STEM_CHARS + 1 else stem


PREFIX_MATCH_CHARS = 4  # stems this long also match as prefixes (throttl → throttling); shorter need a suffix


@functools.lru_cache(maxsize=256)
def _highlighter(terms: tuple[str, ...]) -> re.Pattern[str] | None:
    """One compiled pattern for all of a query's terms (built once per query, reused for every result).

    The word-start look-behind is written once, outside the alternation, so each position of the text
    costs one check instead of one per term (most positions fail it and no term is tried there).
    """
    words, cjk = [], []
    for term in sorted(set(terms), key=len, reverse=True):
        if CJK_CHAR.fullmatch(term):
            cjk.append(re.escape(term))
            continue
        stem = _stem(term.lower())
        tail = r"[^\W_]*" if len(stem) >= PREFIX_MATCH_CHARS else r"(?:s|es|e|ed|ing)?(?![^\W_])"
        words.append(re.escape(stem) + tail)
    alternatives = cjk + ([r"(?<![^\W_])(?:" + "|".join(words) + ")"] if words else [])
    return re.compile("|".join(alternatives), re.IGNORECASE) if alternatives else None


SEARCH_SLACK = 60  # characters past the window still scanned, so a word crossing its end is not cut


def build_snippet(text: str, terms: Sequence[str], max_chars: int = SNIPPET_CHARS) -> str:
    """A window of `text` around the first matched term, matches highlighted, HTML-escaped.

    Only the first match is searched for in the whole text; highlights are found inside the window.
    """
    pattern = _highlighter(tuple(terms))
    first = pattern.search(text) if pattern is not None else None
    start = 0
    if first is not None and first.start() > max_chars // 3:
        start = text.rfind(" ", 0, first.start() - max_chars // 4) + 1
    end = min(len(text), start + max_chars)
    if end < len(text):
        cut = text.rfind(" ", start, end)
        end = cut if cut > start else end
    spans = (
        [m.span() for m in pattern.finditer(text, start, min(len(text), end + SEARCH_SLACK))]
        if first is not None and pattern is not None
        else []
    )
    out: list[str] = ["…" if start > 0 else ""]
    pos = start
    for s, e in spans:
        if s < start or e > end:
            continue
        out.append(html.escape(text[pos:s]))
        out.append(f"<mark>{html.escape(text[s:e])}</mark>")
        pos = e
    out.append(html.escape(text[pos:end]))
    out.append("…" if end < len(text) else "")
    return "".join(out)
