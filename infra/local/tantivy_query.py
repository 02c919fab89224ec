"""Tantivy queries for sanitised lexical queries, built with tantivy's Query constructors only (nothing a
user types is parsed as tantivy query syntax, so nothing can become an operator).

The same semantics as the FTS5 expression (fts.py): phrases ANDed, at least one term, terms ranked by BM25
with query-term frequency (a clause boosted by how often the query holds the term, capped like FTS5's
repeats), the tiers weighted 3/2/1 (TIER_REPEATS), and the tenant and type/source/owner/namespace/metadata filters as
zero-scoring required clauses inside the query (never a post-filter of the top k).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import tantivy
from tantivy import Occur, Query

from core.models import Filters, LexicalQuery, MatchMode
from infra.local.fts import MAX_TERM_WEIGHT, scope_token

# The boost tiers (3 = title-like, 2 = strong, 1 = body) go into one field, each added as many times as its
# weight: the weighted term frequency FTS5's bm25() sums over its columns before saturating, under one
# length norm (measured: separate fields with boosted scores ranked worse, SciFact keyword nDCG@10 0.615,
# Cranfield 0.362, long queries 0.590, against 0.690 / 0.372 / 0.651 this way; bench/QUALITY.md).
TIER_REPEATS = (3, 2, 1)
TEXT = "text"
ANALYZER = "quarry_en"
MAX_PREFIX_TERMS = 16  # index terms one prefix may expand to (the most frequent first)
PREFIX_SCAN = 256  # index terms per field read to choose them


def analyzer() -> tantivy.TextAnalyzer:
    """English: simple tokenizer, long tokens dropped, lower case, diacritics folded (like FTS5's
    remove_diacritics), Snowball English stemming (tantivy's `en_stem` plus the folding)."""
    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(40))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.ascii_fold())
        .filter(tantivy.Filter.stemmer("english"))
        .build()
    )


def schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_unsigned_field("chunk", indexed=True, fast=True)
    builder.add_text_field("scope", tokenizer_name="raw", index_option="basic")
    builder.add_text_field(TEXT, tokenizer_name=ANALYZER, index_option="position")
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
    out: list[str] = []
    for key, value in metadata.items():
        for item in value if isinstance(value, list) else [value]:
            token = metadata_token(key, item)
            if token is not None:
                out.append(token)
    return out


class QueryBuilder:
    """Lexical queries and filters → one tantivy Query over a schema."""

    def __init__(self, schema: tantivy.Schema, text: tantivy.TextAnalyzer) -> None:
        self._schema = schema
        self._text = text

    def _words(self, text: str) -> list[str]:
        return self._text.analyze(text)

    def _match(self, words: Sequence[str], boost: float) -> Query | None:
        """One word (or a phrase of several), its BM25 weighted by `boost` (the query-term frequency)."""
        if not words:
            return None
        if len(words) == 1:
            q = Query.term_query(self._schema, TEXT, words[0])
        else:
            q = Query.phrase_query(self._schema, TEXT, list(words))
        return q if boost == 1.0 else Query.boost_query(q, boost)

    def _prefixed(self, searcher: tantivy.Searcher, prefix: str) -> list[str]:
        """Index terms starting with `prefix` (analysed without stemming), the most frequent first."""
        folded = [w for w in self._words(prefix)]
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
        for i, term in enumerate(query.terms):
            if query.mode is MatchMode.PREFIX:
                words = [[t] for t in self._prefixed(searcher, term)]
                boost = 1.0
            elif query.mode is MatchMode.FUZZY:
                words = [self._words(t) for t in (expansions or {}).get(term, [])]
                boost = 1.0
            else:
                words = [self._words(term)]
                boost = float(min(query.weight(i), MAX_TERM_WEIGHT))
            terms.extend(q for w in words if (q := self._match(w, boost)) is not None)
        phrases = [q for p in query.phrases if (q := self._match(self._words(p), 1.0)) is not None]
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

    def scoped(self, text: Query, tenant_id: str, filters: Filters) -> Query:
        """`text` restricted to the tenant and the filters, which add nothing to the score."""
        parts = [(Occur.Must, text), (Occur.Must, self._any_of([scope_token("tenant", tenant_id)]))]
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
        return Query.boolean_query(parts)
