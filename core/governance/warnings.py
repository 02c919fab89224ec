"""Warning states of a bundle, each a crisp rule over the selected and rejected evidence.

| state           | action   | raised when                                                                    |
|-----------------|----------|--------------------------------------------------------------------------------|
| no_overlay      | continue | the request had no overlay and none is stored for the role                     |
| forbidden_hit   | continue | at least one candidate was rejected because its source is forbidden            |
| no_strong_match | warn     | no selected chunk is strong: lexical ≥ STRONG_LEXICAL or vector ≥ STRONG_VECTOR  |
| stale_dominant  | warn     | a freshness window is set and more than half of the selected chunks are stale   |
| conflicting     | warn     | two selected chunks, both high trust (≥ HIGH_TRUST) and from different sources, |
|                 |          | each have a sentence about the same task terms (≥ min(2, task terms) shared     |
|                 |          | stems) and exactly one of the two sentences is negated (see terms.negated)      |
| healthy         | continue | none of the above                                                              |
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

from core.governance.bundle import Action, RejectReason, RetrievalWarning, WarningState
from core.governance.screening import Rejection, Scored
from core.governance.terms import HIGH_TRUST, negated, sentences, stems

# A strong match is strong on either signal alone, so a paraphrase (no shared words) and an exact keyword
# hit both count. Lexical: the top BM25 chunk holding half the task's terms. Vector: measured with
# all-MiniLM-L6-v2 on tests/fixtures/governance_corpus.json — paraphrased on-topic tasks score 0.49-0.52
# against their documents, off-topic tasks ≤ 0.25 against anything.
STRONG_LEXICAL = 0.5
STRONG_VECTOR = 0.45
STALE_MAJORITY = 0.5  # docs/conformance.md#warning-states: strictly more than half outdated
MIN_SHARED_TASK_TERMS = 2  # two sentences "about the same thing" share at least two task terms

ACTIONS: dict[WarningState, Action] = {
    WarningState.HEALTHY: "continue",
    WarningState.NO_OVERLAY: "continue",
    WarningState.FORBIDDEN_HIT: "continue",
    WarningState.NO_STRONG_MATCH: "warn",
    WarningState.STALE_DOMINANT: "warn",
    WarningState.CONFLICTING: "warn",
}


@dataclass(frozen=True, slots=True)
class WarningInput:
    """What the rules look at."""

    overlay_applied: bool
    selected: Sequence[Scored]
    rejected: Sequence[Rejection]
    task_stems: frozenset[str]
    freshness_days: int | None


def _warning(state: WarningState, message: str, chunk_ids: Sequence[str] = ()) -> RetrievalWarning:
    return RetrievalWarning(state=state, action=ACTIONS[state], message=message, chunk_ids=list(chunk_ids))


def _claims(s: Scored, task_stems: frozenset[str]) -> list[tuple[frozenset[str], bool]]:
    """(task stems mentioned, negated?) for every sentence of the chunk that mentions a task term."""
    out = []
    for sentence in sentences(s.candidate.text):
        about = stems(sentence) & task_stems
        if about:
            out.append((about, negated(sentence)))
    return out


def is_strong(s: Scored) -> bool:
    """A strong match on either signal: lexical ≥ STRONG_LEXICAL or cosine ≥ STRONG_VECTOR."""
    return s.lexical >= STRONG_LEXICAL or s.vector >= STRONG_VECTOR


def find_conflict(selected: Sequence[Scored], task_stems: frozenset[str]) -> tuple[Scored, Scored] | None:
    """The first pair of selected chunks that disagree under the `conflicting` rule, or None."""
    need = min(MIN_SHARED_TASK_TERMS, len(task_stems))
    if need == 0:
        return None
    trusted = [s for s in selected if s.trust >= HIGH_TRUST]
    claims = {s.chunk_id: _claims(s, task_stems) for s in trusted}
    for a, b in combinations(trusted, 2):
        if a.candidate.source == b.candidate.source:
            continue
        for about_a, neg_a in claims[a.chunk_id]:
            if any(
                len(about_a & about_b) >= need and neg_a != neg_b for about_b, neg_b in claims[b.chunk_id]
            ):
                return a, b
    return None


def detect_warnings(w: WarningInput) -> list[RetrievalWarning]:
    """Every state whose rule holds, in table order; [healthy] when none does."""
    out: list[RetrievalWarning] = []
    if not w.overlay_applied:
        out.append(
            _warning(WarningState.NO_OVERLAY, "no overlay for this role: shared corpus, default policy")
        )
    forbidden = [r for r in w.rejected if r.reason is RejectReason.FORBIDDEN_SOURCE]
    if forbidden:
        sources = sorted({r.scored.candidate.source for r in forbidden})
        message = f"{len(forbidden)} candidate(s) from forbidden sources removed: {', '.join(sources)}"
        out.append(_warning(WarningState.FORBIDDEN_HIT, message, [r.scored.chunk_id for r in forbidden]))
    if not any(is_strong(s) for s in w.selected):
        message = (
            "nothing selected"
            if not w.selected
            else "no selected chunk is a strong lexical or semantic match"
        )
        out.append(_warning(WarningState.NO_STRONG_MATCH, message))
    stale = [s for s in w.selected if s.stale]
    if w.freshness_days is not None and w.selected and len(stale) > STALE_MAJORITY * len(w.selected):
        message = f"{len(stale)} of {len(w.selected)} selected chunks are older than {w.freshness_days} days"
        out.append(_warning(WarningState.STALE_DOMINANT, message, [s.chunk_id for s in stale]))
    conflict = find_conflict(w.selected, w.task_stems)
    if conflict is not None:
        a, b = conflict
        message = (
            f"high-trust sources disagree: {a.candidate.source} ({a.chunk_id}) and "
            f"{b.candidate.source} ({b.chunk_id}) make opposite statements about the task"
        )
        out.append(_warning(WarningState.CONFLICTING, message, [a.chunk_id, b.chunk_id]))
    return out or [_warning(WarningState.HEALTHY, "overlay applied; strong, fresh, consistent evidence")]
