"""Snippets with the matched terms highlighted (DESIGN.md §3 step 7).

The snippet is HTML-escaped and matches are wrapped in <mark>…</mark>, so it is safe to render as HTML.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

from core.text import MIN_STEM_CHARS, light_stem

SNIPPET_CHARS = 200  # about two lines of a results page
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def _stem(word: str) -> str:
    """Suffix-stripped and without a final 'e', so throttle / throttling / throttled meet."""
    stem = light_stem(word)
    return stem[:-1] if stem.endswith("e") and len(stem) > MIN_STEM_CHARS + 1 else stem


def _matches(word: str, stems: frozenset[str]) -> bool:
    low = word.lower()
    return low in stems or _stem(low) in stems or any(low.startswith(s) for s in stems if len(s) >= 4)


def build_snippet(text: str, terms: Sequence[str], max_chars: int = SNIPPET_CHARS) -> str:
    """A window of `text` around the first matched term, matches highlighted, HTML-escaped."""
    stems = frozenset(_stem(t) for t in terms) | frozenset(terms)
    spans = [m.span() for m in _WORD.finditer(text) if _matches(m.group(), stems)]
    if not spans and any(len(t) == 1 for t in terms):
        spans = [(m.start(), m.end()) for t in terms for m in re.finditer(re.escape(t), text, re.I)]
        spans.sort()
    start = 0
    if spans and spans[0][0] > max_chars // 3:
        start = text.rfind(" ", 0, spans[0][0] - max_chars // 4) + 1
    end = min(len(text), start + max_chars)
    if end < len(text):
        cut = text.rfind(" ", start, end)
        end = cut if cut > start else end
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
