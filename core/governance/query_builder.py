"""Overlay-aware query building (docs/conformance.md#governed-query): the task's terms, plus the role's boost
vocabulary, minus its suppressed vocabulary, for BM25; the task, the context summary and the mission,
weighted, for the semantic query."""

from __future__ import annotations

from dataclasses import dataclass

from core.governance.bundle import PartRole
from core.governance.overlay import RoleOverlay
from core.governance.terms import content_tokens, stem
from core.models import LexicalQuery
from core.search.query import MAX_TERMS
from core.text import tokens

# Weights of the semantic parts in the query vector (normalised Σ wᵢ·embed(partᵢ)). The task is what was
# asked, so it dominates; the packet's context summary narrows it; the mission only nudges toward the
# role's domain (at equal weight a long mission would drown a short task).
TASK_WEIGHT = 1.0
CONTEXT_WEIGHT = 0.5
MISSION_WEIGHT = 0.25


@dataclass(frozen=True, slots=True)
class BuiltQuery:
    """Everything retrieval and governance need to know about the query, and how it was derived."""

    task_text: str
    context_summary: str | None
    mission: str | None
    task_terms: tuple[str, ...]
    lexical: LexicalQuery
    boost_added: tuple[str, ...]
    suppress_removed: tuple[str, ...]
    suppress_stems: frozenset[str]
    suppress_terms: tuple[str, ...]
    anti_goals: tuple[str, ...]
    semantic_parts: tuple[tuple[PartRole, str, float], ...]

    @property
    def task_stems(self) -> frozenset[str]:
        """Stems of the task's own, unsuppressed terms (coverage is measured against these)."""
        return frozenset(stem(t) for t in self.task_terms) - self.suppress_stems


def _task_terms(task_text: str) -> tuple[str, ...]:
    """Content terms of the task; its plain tokens when it has nothing but stop words."""
    terms = content_tokens(task_text)
    if not terms:
        terms = list(dict.fromkeys(tokens(task_text)))
    return tuple(terms)


def _vocabulary_tokens(phrases: list[str]) -> list[str]:
    """Each vocabulary entry's tokens (an entry may be several words), in order, no repeats."""
    out: dict[str, None] = {}
    for phrase in phrases:
        for token in tokens(phrase):
            out.setdefault(token, None)
    return list(out)


def build_query(task_text: str, overlay: RoleOverlay | None, context_summary: str | None) -> BuiltQuery:
    """Build the lexical and semantic query for a task under an overlay (None: the task alone)."""
    task_terms = _task_terms(task_text)
    boost = _vocabulary_tokens(overlay.vocabulary.boost) if overlay else []
    suppress = _vocabulary_tokens(overlay.vocabulary.suppress) if overlay else []
    suppress_stems = frozenset(stem(t) for t in suppress)
    kept = [t for t in task_terms if stem(t) not in suppress_stems]
    removed = [t for t in task_terms if stem(t) in suppress_stems]
    present = {stem(t) for t in kept}
    added = [t for t in boost if stem(t) not in present and stem(t) not in suppress_stems]
    # Task terms first, so the cap never drops what was asked in favour of role vocabulary.
    lexical_terms = (kept + added)[:MAX_TERMS]
    added = [t for t in added if t in lexical_terms]
    mission = overlay.mission if overlay else None
    parts: list[tuple[PartRole, str, float]] = [("task", task_text, TASK_WEIGHT)]
    if context_summary and context_summary.strip():
        parts.append(("context_summary", context_summary.strip(), CONTEXT_WEIGHT))
    if mission:
        parts.append(("mission", mission, MISSION_WEIGHT))
    return BuiltQuery(
        task_text=task_text,
        context_summary=context_summary,
        mission=mission,
        task_terms=task_terms,
        lexical=LexicalQuery(terms=tuple(lexical_terms)),
        boost_added=tuple(added),
        suppress_removed=tuple(removed),
        suppress_stems=suppress_stems,
        suppress_terms=tuple(suppress),
        anti_goals=tuple(overlay.anti_goals) if overlay else (),
        semantic_parts=tuple(parts),
    )
