"""Text normalisation shared by indexing and querying, so both sides see the same tokens.

- CJK characters are split into single-character tokens (docs/conformance.md#lexical-escaping: dropping
  1-character terms loses CJK recall; a unigram split keeps them searchable on every backend).
- Identifiers (camelCase, snake_case, kebab-case, paths) are kept whole and also expanded into their parts,
  so `checkRateLimit` matches exactly and `rate limit` still finds it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

# CJK Unified Ideographs (+ext A), Hiragana, Katakana, Hangul syllables, CJK compatibility ideographs.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
CJK_CHAR = re.compile(f"[{_CJK}]")
_CJK_RUN = re.compile(f"([{_CJK}])")
# A token is a run of letters/digits (underscore is a separator, as in SQLite's unicode61 tokenizer).
TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
_CAMEL_PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_IDENTIFIER = re.compile(r"[A-Za-z0-9]+(?:[_\-./:][A-Za-z0-9]+)+|[a-z]+[A-Z][A-Za-z0-9]*")

# A short English stop list (the classic Lucene/Snowball core set): dropped from lexical queries only.
STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "if",
        "in",
        "into",
        "is",
        "it",
        "no",
        "not",
        "of",
        "on",
        "or",
        "such",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "will",
        "with",
        "what",
        "which",
        "who",
        "whom",
        "how",
        "does",
        "do",
        "did",
        "from",
        "has",
        "have",
        "had",
        "were",
        "been",
        "being",
        "can",
        "could",
        "should",
        "would",
        "may",
        "might",
        "its",
        "our",
        "your",
        "we",
        "you",
        "i",
        "me",
        "my",
        "he",
        "she",
        "his",
        "her",
        "them",
        "than",
        "so",
    ]
)


def segment_cjk(text: str) -> str:
    """Surround every CJK character with spaces so it becomes a token of its own."""
    if not CJK_CHAR.search(text):
        return text
    return _CJK_RUN.sub(r" \1 ", text)


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens of `text`, CJK split into characters."""
    return [t.lower() for t in TOKEN.findall(segment_cjk(text))]


def identifier_parts(text: str) -> list[str]:
    """The parts of every identifier in `text`: `checkRateLimit` → check, rate, limit."""
    parts: list[str] = []
    for ident in _IDENTIFIER.findall(text):
        for piece in re.split(r"[_\-./:]", ident):
            found = _CAMEL_PART.findall(piece)
            if len(found) > 1 or piece != ident:
                parts.extend(p.lower() for p in found)
    return parts


# Code-like tokens for the query shape: camelCase (≥ 2 humps, so "mRNA" is not), PascalCase, snake_case,
# dotted names with ≥ 2-letter parts (rate.ts, os.path), paths of ≥ 2 slashes ("1/2000", "Arp2/3" are
# prose: measured +0.003 nDCG@10 on SciFact). Hyphenated words are ordinary prose.
_CODE_TOKEN = re.compile(
    r"[a-z]+(?:[A-Z][a-z0-9]+)+|(?:[A-Z][a-z0-9]+){2,}|\w+_\w+|[A-Za-z_]\w+\.[A-Za-z_]\w+|\w*(?:/[\w.-]+){2,}"
)


def is_identifier(token: str) -> bool:
    """True for code-like tokens: camelCase, PascalCase, snake_case, dotted names and paths."""
    return bool(_CODE_TOKEN.search(token))


def has_identifier(words: Sequence[str]) -> bool:
    """Whether any of `words` is code-like (`is_identifier`), asked of a query's words in one call."""
    return any(is_identifier(w) for w in words)


def flatten(value: object) -> str:
    """A field value as text: strings as they are, lists joined by spaces, other scalars stringified."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        return " ".join(flatten(v) for v in value)
    return str(value)


def flatten_all(values: Sequence[object]) -> list[str]:
    """`flatten` of each value, in order: a record's fields (or a batch's titles) in one call."""
    return [flatten(v) for v in values]


def index_text(parts: Iterable[str]) -> str:
    """Search text for the lexical index: joined, lower-cased, CJK segmented, identifier parts appended."""
    joined = " ".join(p for p in parts if p)
    extra = identifier_parts(joined)
    text = segment_cjk(joined).lower()
    if extra:
        text = f"{text} {' '.join(extra)}"
    return " ".join(text.split())


def index_texts(texts: Sequence[str]) -> list[str]:
    """`index_text` of each text on its own, in order: a chunk's tiers in one call."""
    return [index_text([t]) for t in texts]


def edit_distance(a: str, b: str, limit: int) -> int:
    """Optimal-string-alignment distance (Levenshtein + adjacent transpositions), capped at limit + 1."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    before: list[int] = []
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            cost = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                cost = min(cost, before[j - 2] + 1)
            current.append(cost)
        if min(current) > limit:
            return limit + 1
        before, previous = previous, current
    return min(previous[-1], limit + 1)


_SUFFIXES = ("ies", "ing", "es", "ed", "s")
MIN_STEM_CHARS = 3  # shorter stems match too much


def light_stem(word: str) -> str:
    """Strip one common English suffix (a cheap stand-in for Porter when comparing against stems)."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= MIN_STEM_CHARS:
            return word[: -len(suffix)]
    return word


def fuzzy_budget(term: str) -> int:
    """Edits allowed for a term, as Lucene's AUTO fuzziness: 0 up to 2 chars, 1 up to 5, else 2."""
    return 0 if len(term) <= 2 else 1 if len(term) <= 5 else 2
