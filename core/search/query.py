"""Query parsing (docs/architecture.md, Read path; docs/conformance.md#query-parsing): terms, quoted phrases,
an entity prefix (`task: fix bug`), a lone `@name` (people search), sanitised for any backend.

Terms are plain lower-cased tokens with no syntax left in them, so no backend query language can be
injected; adapters quote them in their own syntax.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from core.indexing.entity_types import EntityTypeRegistry
from core.text import CJK_CHAR, STOPWORDS, has_identifier, tokens

# At most 20 words searched, a quoted phrase's words included: nothing searched escapes the cap (as in
# the specification, which quoted every word it kept: docs/conformance.md#max-terms).
MAX_TERMS = 20
MAX_PHRASES = 5  # phrases are ANDed: more than a handful only empties the result
_PHRASE = re.compile(r'"([^"]*)"')
_PREFIX = re.compile(r"^\s*([A-Za-z_]+)\s*:\s*(.*)$", re.DOTALL)
_MENTION = re.compile(r"^\s*@([\w.\-]+)\s*$", re.UNICODE)
_QUESTION_START = frozenset(
    [
        "who",
        "what",
        "when",
        "where",
        "why",
        "how",
        "which",
        "whom",
        "whose",
        "is",
        "are",
        "was",
        "were",
        "do",
        "does",
        "did",
        "can",
        "could",
        "should",
        "would",
        "will",
        "explain",
        "describe",
    ]
)
_ERROR_LIKE = re.compile(r"\b\w*(Error|Exception|Errno|Traceback)\b|\w+::\w+|\w+\(\)|[\w.-]*(?:/[\w.-]+){2,}")


class QueryShape(enum.Enum):
    """What the query looks like, which picks the `auto` strategy (docs/architecture.md, Read path)."""

    QUESTION = "question"
    IDENTIFIER = "identifier"
    PLAIN = "plain"


@dataclass(frozen=True, slots=True)
class ParsedQuery:
    """A query taken apart: what to match lexically, what to embed, which types it targets."""

    original: str
    text: str
    terms: tuple[str, ...]
    phrases: tuple[str, ...]
    entity_prefix: str | None
    shape: QueryShape
    truncated: bool
    # How often each term occurs in the query (aligned with `terms`): BM25 weighs a term the query
    # repeats that many times (Lucene and bm25s do; long questions repeat their key words).
    weights: tuple[int, ...] = ()

    def describe(self) -> str:
        """A readable rendering of the parse for `query_info.parsed_query`."""
        parts = [f'"{p}"' for p in self.phrases] + list(self.terms)
        prefix = f"{self.entity_prefix}: " if self.entity_prefix else ""
        return prefix + " ".join(parts)


def _shape(text: str) -> QueryShape:
    stripped = text.strip()
    words = stripped.split()
    if stripped.endswith("?") or (words and words[0].lower() in _QUESTION_START and len(words) > 2):
        return QueryShape.QUESTION
    if _ERROR_LIKE.search(stripped) or has_identifier([w.strip(",;()[]{}'\"`") for w in words]):
        return QueryShape.IDENTIFIER
    return QueryShape.PLAIN


def _is_noise(term: str) -> bool:
    """A stop word, or one Latin letter or digit (the `e` and `g` of "e.g."); a CJK character is a word."""
    return term in STOPWORDS or (len(term) == 1 and not CJK_CHAR.match(term))


def _terms(text: str, max_terms: int) -> tuple[dict[str, int], bool]:
    """Tokens in order with their counts, noise dropped unless nothing else is left, capped at max_terms."""
    counts: dict[str, int] = {}
    for tok in tokens(text):
        counts[tok] = counts.get(tok, 0) + 1
    content = {t: n for t, n in counts.items() if not _is_noise(t)}
    chosen = content or counts
    kept = dict(list(chosen.items())[:max_terms])
    return kept, len(chosen) > max_terms


def _split_prefix(text: str, registry: EntityTypeRegistry) -> tuple[str | None, str]:
    mention = _MENTION.match(text)
    if mention and "person" in registry:
        return "person", mention.group(1)
    match = _PREFIX.match(text)
    if match:
        entity_type = registry.resolve_prefix(match.group(1))
        if entity_type is not None and match.group(2).strip():
            return entity_type, match.group(2)
    return None, text


def _phrases(quoted: list[list[str]], max_words: int) -> tuple[list[str], bool]:
    """Multi-word phrases in order, at most MAX_PHRASES, their words within `max_words` (a phrase that
    does not fit whole is cut to the words that do, while at least two remain); True when any were cut."""
    phrases: list[str] = []
    room = max_words
    multi = [words for words in quoted if len(words) > 1]
    for words in multi[:MAX_PHRASES]:
        kept = words[:room]
        if len(kept) < 2:
            break
        phrases.append(" ".join(kept))
        room -= len(kept)
    used = sum(len(p.split()) for p in phrases)
    return phrases, used < sum(len(w) for w in multi)


def parse_query(query: str, registry: EntityTypeRegistry, max_terms: int = MAX_TERMS) -> ParsedQuery:
    """Parse a raw query string into terms (with their counts), phrases, an optional entity prefix and its
    shape. `max_terms` is the search box's cap (20, docs/conformance.md#max-terms) on every word searched,
    phrases' words first; evaluation of long queries lifts it."""
    entity_prefix, rest = _split_prefix(query, registry)
    quoted = [tokens(raw) for raw in _PHRASE.findall(rest)]
    phrases, phrases_cut = _phrases(quoted, max_terms)
    room = max_terms - sum(len(p.split()) for p in phrases)
    unquoted = _PHRASE.sub(" ", rest).replace('"', " ")
    counts, truncated = _terms(unquoted, room)
    # A single-word "phrase" is just a term.
    for words in quoted:
        if len(words) == 1 and words[0] not in counts:
            if len(counts) >= room:
                truncated = True
                break
            counts[words[0]] = 1
    text = " ".join(rest.replace('"', " ").split())
    return ParsedQuery(
        original=query,
        text=text,
        terms=tuple(counts),
        weights=tuple(counts.values()),
        phrases=tuple(phrases),
        entity_prefix=entity_prefix,
        shape=_shape(rest),
        truncated=truncated or phrases_cut,
    )
