"""Tantivy queries for sanitised lexical queries, built with tantivy's Query constructors only (nothing a
user types is parsed as tantivy query syntax, so nothing can become an operator).

The same semantics as the FTS5 expression (fts.py): phrases ANDed, at least one term, terms ranked by BM25
with query-term frequency (a clause boosted by how often the query holds the term, capped like FTS5's
repeats) and FTS5's idf (fts5_idf_boost), the tiers weighted 3/2/1 (TIER_REPEATS), and the
type/source/owner/namespace/metadata filters as zero-scoring required clauses inside the query (never a
post-filter of the top k; the tenant is the index itself: keyword_index.py). Unlike FTS5 the index leaves
Lucene's 33 English stop words out (measured: keyword nDCG@10 up on SciFact train and test, Cranfield and
the long queries; bench/QUALITY.md §7) and keeps them in a field of their own for queries of nothing else;
a phrase keeps their places, and a phrase of stop words only goes to FTS5 (QueryBuilder.needs_fts5).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import tantivy
from tantivy import Occur, Query

from core.models import Filters, LexicalQuery, MatchMode
from infra.local.keywords.fts import MAX_TERM_WEIGHT, PRESENCE_KEYS, presence_token, scope_token

# The boost tiers (3 = title-like, 2 = strong, 1 = body) go into one field, each added as many times as its
# weight: the weighted term frequency FTS5's bm25() sums over its columns before saturating, under one
# length norm (measured: separate fields with boosted scores ranked worse, SciFact keyword nDCG@10 0.615,
# Cranfield 0.362, long queries 0.590, against 0.690 / 0.372 / 0.651 this way; bench/QUALITY.md).
TIER_REPEATS = (3, 2, 1)
TEXT = "text"
# The copies of the tiers go into the field as one text, each pair apart by this many stop words: they take
# positions but no place in the length norm (the analyzer drops them), so a phrase, whose stop words are
# gaps too ("cat in the hat" is cat, two places, hat), never joins the end of one copy to the start of the
# next. A phrase spanning more places than this is left to FTS5 (QueryBuilder.needs_fts5).
PHRASE_GAP = 64
_GAP_TEXT = " " + " ".join(["a"] * PHRASE_GAP) + " "
ANALYZER = "quarry_en"
MAX_PREFIX_TERMS = 16  # index terms one prefix may expand to (the most frequent first)
PREFIX_SCAN = 256  # index terms per field read to choose them


def analyzer(stop_words: bool = True) -> tantivy.TextAnalyzer:
    """English: simple tokenizer, long tokens dropped, lower case, diacritics folded (like FTS5's
    remove_diacritics), Lucene's 33 English stop words left out (`stop_words`), Snowball English stemming
    (tantivy's `en_stem` plus the folding and the stop words: Lucene's English analyzer)."""
    builder = (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(40))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.ascii_fold())
    )
    if stop_words:
        builder = builder.filter(tantivy.Filter.stopword("english"))
    return builder.filter(tantivy.Filter.stemmer("english")).build()


_TOKENS = tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple()).build()  # the positions the analyzer keeps

# The stop words the analyzer leaves out, kept in a field of their own (counts, no positions) so that a
# query of nothing else ("the", "these", "to be or not to be" as words) is still ranked by the index with
# block-max WAND instead of FTS5 scoring every chunk (500 ms at 1M chunks). Lucene's English list, as
# tantivy's Filter.stopword("english").
STOP = "stop"
STOP_ANALYZER = "quarry_stop"
STOP_WORDS = (
    "a an and are as at be but by for if in into is it no not of on or such that the their then there "
    "these they this to was will with"
).split()


def stop_analyzer() -> tantivy.TextAnalyzer:
    """The stop words of a text and nothing else, written in lower case, Capitalised or in CAPITALS (the
    forms text has; a case-insensitive pattern tokenizes 3.5x slower, which doubled a rebuild)."""
    forms = {f for w in STOP_WORDS for f in (w, w.capitalize(), w.upper())}
    pattern = r"(?-u)\b(?:" + "|".join(sorted(forms, key=len, reverse=True)) + r")\b"
    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.regex(pattern))
        .filter(tantivy.Filter.lowercase())
        .build()
    )


def tier_texts(tiers: Sequence[str | None]) -> tuple[str, str]:
    """The indexed texts of one chunk, each tier TIER_REPEATS times: for the text field with the copies
    PHRASE_GAP places apart, and for the stop-word field (no positions, no gaps)."""
    copies = [text for repeats, text in zip(TIER_REPEATS, tiers, strict=True) if text for _ in range(repeats)]
    return _GAP_TEXT.join(copies), " ".join(copies)


def fts5_idf_boost(docs: int, df: int) -> float:
    """The factor turning tantivy's idf, ln(1 + (N − n + ½)/(n + ½)), into FTS5's, ln((N − n + ½)/(n + ½))
    floored at 10⁻⁶: a word in more than half the chunks then adds (almost) nothing, as with FTS5, and the
    scores of both engines share a scale (a search merges FTS5's ranking of the newest chunks, `search`).
    `df` may count deleted documents not merged away yet, so it is capped at `docs`."""
    if docs <= 0:
        return 1.0
    df = min(max(df, 0), docs)
    odds = (docs - df + 0.5) / (df + 0.5)
    return max(math.log(odds), 1e-6) / math.log1p(odds)


def schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_unsigned_field("chunk", indexed=True, fast=True)
    builder.add_text_field("scope", tokenizer_name="raw", index_option="basic")
    builder.add_text_field(TEXT, tokenizer_name=ANALYZER, index_option="position")
    builder.add_text_field(STOP, tokenizer_name=STOP_ANALYZER, index_option="freq")
    return builder.build()


def _metadata_value(value: Any) -> str | None:
    """One metadata value as SQLite's json_each compares it: true = 1, 2.0 = 2, text apart from numbers."""
    if value is None or isinstance(value, (dict, list)):
        return None
    if isinstance(value, bool):
        value = int(value)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str):
        return "s" + value
    return "n" + json.dumps(value)


def metadata_token(key: str, value: Any) -> str | None:
    """The scope token standing for `metadata[key] == value` (or `value in metadata[key]`)."""
    canonical = _metadata_value(value)
    if canonical is None:
        return None
    digest = hashlib.sha256(f"{key}\x00{canonical}".encode()).hexdigest()[:15]
    return f"qm{int(digest, 16)}"


def metadata_tokens(metadata: Mapping[str, Any]) -> list[str]:
    out: list[str] = [presence_token(k) for k in sorted(PRESENCE_KEYS) if metadata.get(k) not in (None, [])]
    for key, value in metadata.items():
        for item in value if isinstance(value, list) else [value]:
            token = metadata_token(key, item)
            if token is not None:
                out.append(token)
    return out


class QueryBuilder:
    """Lexical queries and filters → one tantivy Query over a schema."""

    def __init__(self, schema: tantivy.Schema, text: tantivy.TextAnalyzer) -> None:
        """`text`: the analyzer the index was written with (stop words left out)."""
        self._schema = schema
        self._text = text
        self._plain = analyzer(stop_words=False)
        self._stop = stop_analyzer()

    def _positioned(self, text: str) -> list[tuple[int, str]]:
        """The analysed words of `text` with their positions: a phrase keeps the gaps its stop words left
        in the index ("cat in the hat" matches cat, two words, hat)."""
        out: list[tuple[int, str]] = []
        for position, token in enumerate(_TOKENS.analyze(text)):
            out.extend((position, word) for word in self._text.analyze(token))
        return out

    def needs_fts5(self, query: LexicalQuery) -> bool:
        """True when the index cannot answer `query` and FTS5, which keeps every word, must: a phrase of
        stop words only ("not to be": the stop-word field has no positions), or a phrase spanning more
        than PHRASE_GAP places."""
        if query.mode is not MatchMode.EXACT:
            return False
        return any(
            (not self._text.analyze(p) and bool(self._plain.analyze(p)))
            or len(_TOKENS.analyze(p)) > PHRASE_GAP
            for p in query.phrases
        )

    def _match(
        self, words: Sequence[tuple[int, str]], boost: float, searcher: tantivy.Searcher, field: str = TEXT
    ) -> Query | None:
        """One word (or a phrase of several, with positions), its BM25 weighted by `boost` (the query-term
        frequency) and, for a word, by FTS5's idf (fts5_idf_boost)."""
        if not words:
            return None
        if len(words) == 1:
            word = words[0][1]
            q = Query.term_query(self._schema, field, word)
            boost *= fts5_idf_boost(searcher.num_docs, searcher.doc_freq(field, word))
        else:
            q = Query.phrase_query(self._schema, field, list(words))
        return q if boost == 1.0 else Query.boost_query(q, boost)

    def _prefixed(self, searcher: tantivy.Searcher, prefix: str) -> list[str]:
        """Index terms starting with `prefix` (analysed without stemming), the most frequent first."""
        folded = self._plain.analyze(prefix)  # "the*" asks for there, theory…: a stop word is a prefix too
        if len(folded) != 1:
            return []
        seen: dict[str, int] = {}
        raw = prefix.lower()
        for start in {raw, folded[0]}:
            for term, docs in searcher.terms_with_prefix(TEXT, start, limit=PREFIX_SCAN):
                seen[term] = docs
        return sorted(seen, key=lambda t: -seen[t])[:MAX_PREFIX_TERMS]

    def text_query(
        self, query: LexicalQuery, expansions: Mapping[str, Sequence[str]] | None, searcher: tantivy.Searcher
    ) -> Query | None:
        """The ranked part: phrases required, terms ORed (at least one), or None when nothing is left."""
        terms: list[Query] = []
        exact = [self._positioned(t) for t in query.terms] if query.mode is MatchMode.EXACT else []
        stop_words_only = bool(exact) and not any(exact)  # ranked on the stop words' own field
        weights = query.term_weights()
        for i, term in enumerate(query.terms):
            if query.mode is MatchMode.PREFIX:
                words = [[(0, t)] for t in self._prefixed(searcher, term)]
            elif query.mode is MatchMode.FUZZY:
                words = [self._positioned(t) for t in (expansions or {}).get(term, [])]
            else:
                words = [[(0, w)] for w in self._stop.analyze(term)] if stop_words_only else [exact[i]]
            boost = float(min(weights[i], MAX_TERM_WEIGHT)) if exact else 1.0
            field = STOP if stop_words_only else TEXT
            terms.extend(q for w in words if (q := self._match(w, boost, searcher, field)) is not None)
        phrases = [
            q for p in query.phrases if (q := self._match(self._positioned(p), 1.0, searcher)) is not None
        ]
        if len(phrases) < len(query.phrases) or (query.terms and not terms):
            return None  # a phrase or every term analyses to nothing: FTS5 matches no row either
        parts = [(Occur.Must, q) for q in phrases]
        if terms:
            any_term = (
                terms[0] if len(terms) == 1 else Query.boolean_query([(Occur.Should, q) for q in terms])
            )
            if not parts:
                return any_term
            parts.append((Occur.Must, any_term))
        return Query.boolean_query(parts) if parts else None

    def _any_of(self, tokens: Iterable[str]) -> Query:
        values = sorted(set(tokens))
        if len(values) == 1:
            q = Query.term_query(self._schema, "scope", values[0], index_option="basic")
        else:
            q = Query.term_set_query(self._schema, "scope", values)
        return Query.const_score_query(q, 0.0)

    def scoped(self, text: Query, filters: Filters) -> Query:
        """`text` restricted to the filters, which add nothing to the score (no tenant clause: each tenant
        has an index of its own, keyword_index.py); `text` alone when there are none."""
        parts = [(Occur.Must, text)]
        for kind, values in (
            ("type", filters.entity_types),
            ("source", filters.sources),
            ("namespace", filters.namespaces),
            ("owner", filters.owners),
            ("owner", (filters.owner,) if filters.owner is not None else ()),
        ):
            if values:
                parts.append((Occur.Must, self._any_of(scope_token(kind, v) for v in values)))
        for key, wanted in sorted(filters.metadata.items()):
            tokens = [t for v in wanted if (t := metadata_token(key, v)) is not None]
            parts.append((Occur.Must, self._any_of(tokens) if tokens else Query.empty_query()))
        if filters.exclude_owner is not None:
            parts.append((Occur.MustNot, self._any_of([scope_token("owner", filters.exclude_owner)])))
        for condition in filters.conditions:  # only those `states` accepts reach the engine
            present = self._any_of([presence_token(condition.field)])
            parts.append((Occur.Must if condition.values[0] else Occur.MustNot, present))
        return text if len(parts) == 1 else Query.boolean_query(parts)
