"""FakeSearchIndex's keyword scoring: BM25 (Robertson & Zaragoza, "The Probabilistic Relevance Framework:
BM25 and Beyond", k1 1.2, b 0.75) over a chunk's boost tiers weighted 3/2/1 (the title^3, strong^2, body^1
of infra/local/sqlite/index.py BM25_WEIGHTS), on light stems (core.text.light_stem)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence

from core.models import Chunk, LexicalQuery, MatchMode
from core.text import edit_distance, fuzzy_budget, light_stem, tokens

K1, B = 1.2, 0.75  # BM25's usual constants (Lucene's defaults)
TIER_WEIGHTS = (3, 2, 1)  # a chunk's tiers: title, strong fields, body


def stems(text: str) -> list[str]:
    """The light stems of a text's tokens, in order."""
    return [light_stem(t) for t in tokens(text)]


def index_chunk(chunk: Chunk) -> tuple[Counter[str], list[str]]:
    """A chunk's stems with their tier-weighted frequencies, and all its stems in order (for phrases)."""
    weighted: Counter[str] = Counter()
    sequence: list[str] = []
    for weight, tier in zip(TIER_WEIGHTS, chunk.tiers, strict=True):
        found = stems(tier)
        sequence += found
        for stem in found:
            weighted[stem] += weight
    return weighted, sequence


def wanted_terms(query: LexicalQuery, vocabulary: Iterable[str]) -> list[tuple[str, int]]:
    """(stem, query weight) to score: the terms' stems, or the words of `vocabulary` they prefix or nearly
    spell (within core.text.fuzzy_budget edits, as Lucene's AUTO fuzziness)."""
    if query.mode is MatchMode.EXACT:
        return [(light_stem(t.lower()), query.weight(i)) for i, t in enumerate(query.terms)]
    words = sorted(set(vocabulary))
    out: list[tuple[str, int]] = []
    for term in (t.lower() for t in query.terms):
        if query.mode is MatchMode.PREFIX:
            out += [(w, 1) for w in words if w.startswith(term)]
            continue
        budget = fuzzy_budget(term)
        out += [
            (w, 1)
            for w in words
            if budget
            and min(edit_distance(term, w, budget), edit_distance(light_stem(term), w, budget)) <= budget
        ]
    return list(dict.fromkeys(out))


def has_phrases(sequence: list[str], phrases: Sequence[str]) -> bool:
    """Whether every phrase occurs, word after word, in a chunk's stems."""
    for phrase in phrases:
        words = stems(phrase)
        if not any(sequence[i : i + len(words)] == words for i in range(len(sequence) - len(words) + 1)):
            return False
    return True


def bm25(
    words: Counter[str],
    length: float,
    average: float,
    wanted: Sequence[tuple[str, int]],
    df: dict[str, int],
    n: int,
) -> float:
    """One chunk's BM25 over `wanted` (stem, query weight) among `n` chunks (idf floored at 0 by the +1,
    Lucene's form)."""
    norm = K1 * (1 - B + B * length / average)
    return sum(
        weight
        * math.log(1 + (n - df[stem] + 0.5) / (df[stem] + 0.5))
        * words[stem]
        * (K1 + 1)
        / (words[stem] + norm)
        for stem, weight in wanted
        if stem in words
    )
