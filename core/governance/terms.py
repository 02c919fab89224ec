"""Term matching, trust, freshness and polarity helpers shared by the governance steps (pure functions).

Term matching compares light stems, so `rotate`, `rotates` and `rotated` match each other: the index's
Porter stemmer decides what BM25 retrieves; these stems only decide coverage, suppression, Jaccard
similarity and which sentences talk about the task.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from core.governance.bundle import TrustLabel
from core.text import STOPWORDS, tokens
from core.timestamps import parse_timestamp

MIN_STEM_CHARS = 3  # never cut a word below three letters (`uses` stays `use`, not `u`)
SECONDS_PER_DAY = 86400.0
# Trust labels ↔ scores. Corpora give trust as a label or a number in [0, 1].
TRUST_SCORES = {"high": 1.0, "medium": 0.6, "low": 0.3}
HIGH_TRUST = 0.8  # a number ≥ 0.8 reads as "high"
MEDIUM_TRUST = 0.5  # ≥ 0.5 "medium", below "low"
UNKNOWN_TRUST = 0.5  # no trust given: neither rewarded nor punished (the midpoint)
# Negation and reversal triggers: a reduced NegEx trigger list (Chapman et al. 2001) plus policy words
# that reverse a statement ("deprecated", "prohibited"); `n't` catches don't / isn't / won't.
_NEGATION = re.compile(
    r"\b(?:not|no|never|cannot|neither|nor|none|false|incorrect|deprecated|prohibited|forbidden|"
    r"disallowed|obsolete|avoid)\b|n't\b"
)
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|\n+")
_SUFFIXES = ("ing", "ed", "es", "s")


def stem(word: str) -> str:
    """A light English stem: ies→y, one of -ing/-ed/-es/-s stripped (not -ss), then a final -e dropped."""
    if len(word) <= MIN_STEM_CHARS or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) - 3 >= MIN_STEM_CHARS:
        return word[:-3] + "y"
    base = word
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and not word.endswith("ss") and len(word) - len(suffix) >= MIN_STEM_CHARS:
            base = word[: -len(suffix)]
            break
    if base.endswith("e") and len(base) - 1 >= MIN_STEM_CHARS:
        base = base[:-1]
    return base


def content_tokens(text: str) -> list[str]:
    """Lower-cased tokens of `text` without stop words, first occurrence order, no repeats."""
    seen: dict[str, None] = {}
    for token in tokens(text):
        if token not in STOPWORDS:
            seen.setdefault(token, None)
    return list(seen)


def stems(text: str) -> frozenset[str]:
    """The set of light stems of the content tokens of `text`."""
    return frozenset(stem(t) for t in content_tokens(text))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """|a ∩ b| / |a ∪ b| (0 for two empty sets)."""
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def sentences(text: str) -> list[str]:
    """`text` split after . ! ? ; and at line breaks, blanks dropped."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


def negated(sentence: str) -> bool:
    """True when the sentence carries a negation or reversal trigger."""
    return bool(_NEGATION.search(sentence.lower()))


def trust_score(value: Any) -> float:
    """A trust label or number → [0, 1]; anything else → UNKNOWN_TRUST."""
    if isinstance(value, bool):
        return UNKNOWN_TRUST
    if isinstance(value, (int, float)) and math.isfinite(value):
        return min(1.0, max(0.0, float(value)))
    if isinstance(value, str):
        return TRUST_SCORES.get(value.strip().lower(), UNKNOWN_TRUST)
    return UNKNOWN_TRUST


def trust_label(metadata: Mapping[str, Any]) -> TrustLabel:
    """high / medium / low from the `trust` metadata, `unknown` when absent or unreadable."""
    value = metadata.get("trust")
    if value is None or isinstance(value, bool):
        return "unknown"
    if isinstance(value, str) and value.strip().lower() not in TRUST_SCORES:
        return "unknown"
    score = trust_score(value)
    return "high" if score >= HIGH_TRUST else "medium" if score >= MEDIUM_TRUST else "low"


def age_days(created_at: str | None, now: float) -> float | None:
    """Days since `created_at` (never negative), or None when it is missing or unparseable."""
    stamp = parse_timestamp(created_at) if created_at else None
    if stamp is None:
        return None
    return max(0.0, (now - stamp) / SECONDS_PER_DAY)


def freshness(age: float | None) -> float:
    """Log decay 1/(1 + ln(1 + age_days)) (context assembly's recency boost, in days: docs/architecture.md,
    Context assembly); 1 when unknown."""
    if age is None:
        return 1.0
    return 1.0 / (1.0 + math.log1p(age))


def matched(words: Iterable[str], text_stems: frozenset[str]) -> list[str]:
    """The words whose stem occurs in `text_stems`, in order."""
    return [w for w in words if stem(w) in text_stems]
