"""FTS5 query syntax for sanitised lexical queries: every term and phrase is double-quoted, so nothing a
user types can become FTS5 operators (the seed's buildFts5Query did the same by stripping characters)."""

from __future__ import annotations

from core.models import LexicalQuery, MatchMode


def _quote(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def fts5_expression(query: LexicalQuery, expansions: dict[str, list[str]] | None = None) -> str:
    """The MATCH expression: phrases ANDed, terms ORed (BM25 ranks by how many match and how rare)."""
    terms: list[str] = []
    for term in query.terms:
        if query.mode is MatchMode.PREFIX:
            terms.append(_quote(term) + "*")
        elif query.mode is MatchMode.FUZZY:
            terms.extend(_quote(t) for t in (expansions or {}).get(term, []))
        else:
            terms.append(_quote(term))
    phrases = [_quote(p) for p in query.phrases]
    parts = list(phrases)
    if terms:
        parts.append("(" + " OR ".join(terms) + ")")
    return " AND ".join(parts)
