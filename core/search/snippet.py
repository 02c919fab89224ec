"""Snippets with the matched terms highlighted (docs/architecture.md, Read path).

The snippet is HTML-escaped and matches are wrapped in <mark>…</mark>, so it is safe to render as HTML.
"""

from __future__ import annotations

import functools
import html
import re
from collections.abc import Iterator, Sequence
from typing import NamedTuple

from core.text import CJK_CHAR, MIN_STEM_CHARS, light_stem

SNIPPET_CHARS = 200  # about two lines of a results page


def _stem(word: str) -> str:
    """Suffix-stripped and without a final 'e', so throttle / throttling / throttled meet."""
    stem = light_stem(word)
    return stem[:-1] if stem.endswith("e") and len(stem) > MIN_STEM_CHARS + 1 else stem


PREFIX_MATCH_CHARS = 4  # stems this long also match as prefixes (throttl → throttling); shorter need a suffix
SHORT_SUFFIXES = (
    "s",
    "es",
    "e",
    "ed",
    "ing",
)  # what may follow a shorter stem to the word's end (cats, cated)
SHORT_TAIL = "(?:" + "|".join(SHORT_SUFFIXES) + r")?(?![^\W_])"


def _word_patterns(terms: tuple[str, ...]) -> list[tuple[str, str]]:
    """(escaped stem, tail) per non-CJK term, longest term first (the alternation's order)."""
    words = []
    for term in sorted(set(terms), key=len, reverse=True):
        if CJK_CHAR.fullmatch(term):
            continue
        stem = _stem(term.lower())
        tail = r"[^\W_]*" if len(stem) >= PREFIX_MATCH_CHARS else SHORT_TAIL
        words.append((re.escape(stem), tail))
    return words


# Compiled patterns kept per process: a query's own, and one per term (matched terms look for each term on
# its own). A search of 10 terms fills 11 entries: 4,096 hold the last few hundred queries' terms.
PATTERN_CACHE = 4096


@functools.lru_cache(maxsize=PATTERN_CACHE)
def _highlighter(terms: tuple[str, ...]) -> re.Pattern[str] | None:
    """One compiled pattern for all of a query's terms (built once per query, reused for every result).

    The word-start look-behind is written once, outside the alternation, so each position of the text
    costs one check instead of one per term (most positions fail it and no term is tried there).
    """
    cjk = [re.escape(t) for t in sorted(set(terms), key=len, reverse=True) if CJK_CHAR.fullmatch(t)]
    words = [stem + tail for stem, tail in _word_patterns(terms)]
    alternatives = cjk + ([r"(?<![^\W_])(?:" + "|".join(words) + ")"] if words else [])
    return re.compile("|".join(alternatives), re.IGNORECASE) if alternatives else None


try:  # the characters IGNORECASE equates beyond lower-casing (ſ with s, ı with i, ς with σ…): Python 3.11+
    from re._casefix import _EXTRA_CASES as CASE_FIXES
except ImportError:  # pragma: no cover - another Python: every text takes the general pattern
    CASE_FIXES = None


class _Lowered(NamedTuple):
    """The case-sensitive pattern for lower-cased text, the characters that rule it out, and the literal
    every match of it starts with (each term's stem, or the CJK character itself)."""

    pattern: re.Pattern[str]
    others: str
    literals: tuple[str, ...]


@functools.lru_cache(maxsize=PATTERN_CACHE)
def _lowercase_highlighter(terms: tuple[str, ...]) -> _Lowered | None:
    """`_highlighter`'s pattern without IGNORECASE, for text lower-cased, and the characters whose presence
    in the lower-cased text would make it match differently (IGNORECASE equates them with a stem's); None
    when no such pattern exists. Case-sensitive matching runs 1.2-1.6× faster and compiles no slower."""
    if CASE_FIXES is None:
        return None
    cjk = [re.escape(t) for t in sorted(set(terms), key=len, reverse=True) if CJK_CHAR.fullmatch(t)]
    words = _word_patterns(terms)
    literal = "".join(_stem(t.lower()) for t in terms if not CJK_CHAR.fullmatch(t))
    if not words and not cjk or any(ch.lower() != ch for ch in literal):
        return None
    # What IGNORECASE could match differently: the stems' letters and, after a short stem, its suffixes'
    folded = set(literal) | (
        set("".join(SHORT_SUFFIXES)) if any(t == SHORT_TAIL for _, t in words) else set()
    )
    others = "".join(chr(x) for ch in folded for x in CASE_FIXES.get(ord(ch), ()))
    alternatives = cjk + ([r"(?<![^\W_])(?:" + "|".join(s + t for s, t in words) + ")"] if words else [])
    starts = tuple(t for t in terms if CJK_CHAR.fullmatch(t)) + tuple(_stem(t.lower()) for t in terms
                                                                      if not CJK_CHAR.fullmatch(t))  # fmt: skip
    return _Lowered(re.compile("|".join(alternatives)), others, tuple(dict.fromkeys(starts)))


class _Scan(NamedTuple):
    """What to search a text with: the pattern, the text to search it in, and (on lower-cased text) the
    literals every match starts with; None where the pattern must try every position."""

    pattern: re.Pattern[str] | None
    haystack: str
    literals: tuple[str, ...] | None


def _pattern_for(text: str, terms: tuple[str, ...]) -> _Scan:
    """The pattern to search and the text to search it in: the lower-cased text with the case-sensitive
    pattern when that matches exactly what IGNORECASE would (same length, no specially folded character),
    else the text itself with the general pattern."""
    fast = _lowercase_highlighter(terms)
    if fast is not None:
        lowered = text.lower()
        if len(lowered) == len(text) and not any(ch in lowered for ch in fast.others):
            return _Scan(fast.pattern, lowered, fast.literals)
    return _Scan(_highlighter(terms), text, None)


# How far the pattern itself is tried before the literals take over: a result's first match is most often
# near its start (it was retrieved for these words), where trying the pattern at each position costs least;
# a text without an early match is then searched from its literals.
PROBE_CHARS = 256


def first_match(scan: _Scan, pos: int = 0) -> re.Match[str] | None:
    """`scan.pattern.search(scan.haystack, pos)`. With literals (lower-cased text), the pattern is tried on
    the first PROBE_CHARS only, then only where one of them occurs (str.find runs in C), since every match
    starts with one; the leftmost wins, as in search."""
    pattern, haystack = scan.pattern, scan.haystack
    if pattern is None or scan.literals is None:
        return pattern.search(haystack, pos) if pattern is not None else None
    end = pos + PROBE_CHARS
    probe = pattern.search(haystack, pos, end)
    if end >= len(haystack) or (probe is not None and probe.end() < end):
        return probe  # a match that reaches the probe's end may be cut there: it is looked for again
    best: re.Match[str] | None = None
    for literal in scan.literals:
        at = haystack.find(literal, pos)
        while at != -1 and (best is None or at < best.start()):
            found = pattern.match(haystack, at)
            if found is not None:
                best = found
                break
            at = haystack.find(literal, at + 1)
    return best


SEARCH_SLACK = 60  # characters past the window still scanned, so a word crossing its end is not cut


def matched_terms(texts: Sequence[str], terms: Sequence[str]) -> list[str]:
    """The query terms found in any of `texts` as the snippet highlights them (stems, prefixes), in query
    order: empty when no query word is there (a result only the vector retriever found)."""
    unique = tuple(dict.fromkeys(terms))
    return _matched((_pattern_for(text, unique) for text in texts), unique)


def highlight(
    title: str, text: str, terms: Sequence[str], max_chars: int = SNIPPET_CHARS
) -> tuple[str, list[str]]:
    """`build_snippet(text, terms)` and `matched_terms((title, text), terms)` of one result, the text
    lower-cased and its pattern chosen once for both."""
    unique = tuple(dict.fromkeys(terms))
    scan = _pattern_for(text, unique)
    return _snippet(text, scan, max_chars), _matched(iter((_pattern_for(title, unique), scan)), unique)


def _matched(scans: Iterator[_Scan], unique: tuple[str, ...]) -> list[str]:
    found: set[str] = set()
    for scan in scans:
        if scan.pattern is None:
            return []
        each = _term_scans(unique) if scan.literals is not None else None
        if each is None:
            _scan_words(scan, unique, found)
        else:  # each term tried only where its stem occurs: a term absent from the text costs one find
            _find_words(scan.haystack, each, found)
        if len(found) == len(unique):
            return list(unique)
    return [t for t in unique if t in found]


def _find_words(lowered: str, each: tuple[tuple[str, str, bool], ...], found: set[str]) -> None:
    """The terms whose word occurs in lower-cased text, by string search alone: a stem at a word start
    (no letter or digit before it) followed, to the word's end, by anything (a long stem) or by one of
    SHORT_SUFFIXES or nothing (a short one) — what each term's pattern matches, without compiling it."""
    for term, stem, prefix in each:
        at = -1 if term in found else lowered.find(stem)
        while at != -1:
            if not (at and lowered[at - 1].isalnum()) and (prefix or _short_tail(lowered, at + len(stem))):
                found.add(term)
                break
            at = lowered.find(stem, at + 1)


def _short_tail(lowered: str, end: int) -> bool:
    """Whether the letters and digits from `end` to the word's end are one of SHORT_SUFFIXES, or none."""
    stop = end
    while stop < len(lowered) and lowered[stop].isalnum():
        stop += 1
        if stop - end > MAX_SHORT_SUFFIX:
            return False
    return stop == end or lowered[end:stop] in SHORT_SUFFIXES


MAX_SHORT_SUFFIX = max(map(len, SHORT_SUFFIXES))


@functools.lru_cache(maxsize=256)
def _term_scans(unique: tuple[str, ...]) -> tuple[tuple[str, str, bool], ...] | None:
    """(term, stem, whether the stem matches as a prefix) per term of a query, for lower-cased text; None
    when the query has a CJK term (a CJK match inside a word can hide a word match: one scan decides)."""
    if any(CJK_CHAR.fullmatch(t) for t in unique):
        return None
    stems = [(term, _stem(term.lower())) for term in unique]
    return tuple((term, stem, len(stem) >= PREFIX_MATCH_CHARS) for term, stem in stems)


def _scan_words(scan: _Scan, unique: tuple[str, ...], found: set[str]) -> None:
    """One scan of the text with the query's pattern; each word it finds is told apart by term. (Every
    word match spans a whole run of letters and digits, so on lower-cased text without CJK terms this
    finds what looking for each term on its own finds.)"""
    assert scan.pattern is not None
    for match in scan.pattern.finditer(scan.haystack):
        word = match.group()
        found.update(t for t in unique if t not in found and _term_pattern(t).fullmatch(word))
        if len(found) == len(unique):
            return


@functools.lru_cache(maxsize=1024)
def _term_pattern(term: str) -> re.Pattern[str]:
    """One term's highlight pattern (never None: a term is a word or a CJK character)."""
    return _highlighter((term,)) or re.compile(re.escape(term), re.IGNORECASE)


def build_snippet(text: str, terms: Sequence[str], max_chars: int = SNIPPET_CHARS) -> str:
    """A window of `text` around the first matched term, matches highlighted, HTML-escaped.

    Only the first match is searched for in the whole text; highlights are found inside the window.
    """
    return _snippet(text, _pattern_for(text, tuple(dict.fromkeys(terms))), max_chars)


def _snippet(text: str, scan: _Scan, max_chars: int) -> str:
    pattern, haystack = scan.pattern, scan.haystack
    first = first_match(scan)
    start = 0
    if first is not None and first.start() > max_chars // 3:
        start = text.rfind(" ", 0, first.start() - max_chars // 4) + 1
    end = min(len(text), start + max_chars)
    if end < len(text):
        cut = text.rfind(" ", start, end)
        end = cut if cut > start else end
    spans = (
        [m.span() for m in pattern.finditer(haystack, start, min(len(text), end + SEARCH_SLACK))]
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
