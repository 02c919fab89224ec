"""Bundle assembly (docs/conformance.md#bundle-assembly): selected evidence with scores and reasons,
rejections, the query trace, provenance posture, warnings and diagnostics, as one RetrievalBundle."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from core.governance.bundle import (
    FreshnessPosture,
    Mode,
    ProvenanceSummary,
    QueryTrace,
    RejectedCandidate,
    RejectReason,
    RetrievalBundle,
    RetrievalDiagnostics,
    RetrievalSummary,
    RetrievedChunk,
    ScoreBreakdown,
    SemanticPart,
    SourceShare,
    TrustLabel,
    TrustPosture,
)
from core.governance.overlay import RetrievalPolicy
from core.governance.query_builder import BuiltQuery
from core.governance.screening import Rejection, Scored
from core.governance.terms import HIGH_TRUST, MEDIUM_TRUST
from core.governance.warnings import WarningInput, detect_warnings, is_strong

DIGITS = 4  # scores are reported to 4 decimals: enough to order, short to read


@dataclass(frozen=True, slots=True)
class AssemblyInput:
    """Everything the bundle is made of."""

    role_id: str
    overlay_applied: bool
    built: BuiltQuery
    mode: Mode
    policy: RetrievalPolicy
    chosen: Sequence[tuple[Scored, float]]
    rejected: Sequence[Rejection]
    retrieved: Mapping[str, int]
    timings_ms: Mapping[str, float]
    depth: int
    embedder: str | None
    degraded_reason: str | None


def _r(value: float) -> float:
    return round(value, DIGITS)


def _label(score: float) -> TrustLabel:
    return "high" if score >= HIGH_TRUST else "medium" if score >= MEDIUM_TRUST else "low"


def _reason(rank: int, s: Scored, mmr: float) -> str:
    parts = [f"relevance {s.relevance:.2f}"]
    if s.matched_terms:
        parts.append("matches " + ", ".join(s.matched_terms[:6]))
    if s.vector > 0:
        parts.append(f"semantic similarity {s.vector:.2f}")
    if s.preferred:
        parts.append(f"preferred source '{s.candidate.source}'")
    parts.append(f"{s.trust_label} trust")
    if s.age_days is not None:
        parts.append(f"stale, {s.age_days:.0f} days old" if s.stale else f"{s.age_days:.0f} days old")
    if s.penalty < 1:
        parts.append(f"penalised ×{s.penalty}: {s.penalty_reason}")
    return f"rank {rank} by MMR {mmr:.3f}: " + "; ".join(parts)


def _display_text(s: Scored) -> str:
    """The chunk's text without the title the index prefixes to every chunk."""
    c = s.candidate
    prefix = c.title + " "
    return c.text[len(prefix) :] if c.title and c.text.startswith(prefix) else c.text


def _chunk(rank: int, s: Scored, mmr: float) -> RetrievedChunk:
    c = s.candidate
    scores = ScoreBreakdown(
        final=_r(s.final),
        relevance=_r(s.relevance),
        lexical=_r(s.lexical),
        vector=_r(s.vector),
        fused=_r(s.fused),
        trust=_r(s.trust),
        freshness=_r(s.freshness),
        preference=s.preference,
        penalty=s.penalty,
        mmr=_r(mmr),
    )
    return RetrievedChunk(
        rank=rank,
        chunk_id=s.chunk_id,
        document_id=c.key.entity_id,
        chunk_no=c.chunk_no,
        title=c.title,
        text=_display_text(s),
        source=c.source,
        trust=s.trust_label,
        created_at=c.created_at or None,
        age_days=None if s.age_days is None else round(s.age_days, 1),
        stale=s.stale,
        preferred=s.preferred,
        matched_terms=list(s.matched_terms),
        lexical_rank=s.lexical_rank,
        vector_rank=s.vector_rank,
        scores=scores,
        reason=_reason(rank, s, mmr),
    )


def _rejected(r: Rejection) -> RejectedCandidate:
    s = r.scored
    return RejectedCandidate(
        chunk_id=s.chunk_id,
        document_id=s.candidate.key.entity_id,
        title=s.candidate.title,
        source=s.candidate.source,
        relevance=_r(s.relevance),
        final=_r(s.final),
        reason=r.reason,
        detail=r.detail,
    )


def _trust_posture(selected: Sequence[Scored]) -> TrustPosture:
    if not selected:
        return "none"
    if all(s.trust >= HIGH_TRUST for s in selected):
        return "high"
    mean = sum(s.trust for s in selected) / len(selected)
    return "low" if mean < MEDIUM_TRUST else "mixed"


def _freshness_posture(selected: Sequence[Scored], window: int | None) -> FreshnessPosture:
    if not selected:
        return "none"
    if window is None:
        return "unbounded"
    stale = sum(s.stale for s in selected)
    return "fresh" if stale == 0 else "stale" if 2 * stale > len(selected) else "mixed"


def _provenance(a: AssemblyInput, selected: Sequence[Scored]) -> ProvenanceSummary:
    dated = sorted((s for s in selected if s.age_days is not None), key=lambda s: s.age_days or 0.0)
    by_source = Counter(s.candidate.source for s in selected)
    shares = []
    for source, count in by_source.most_common():
        mine = [s for s in selected if s.candidate.source == source]
        shares.append(
            SourceShare(
                source=source,
                selected=count,
                trust=_label(sum(s.trust for s in mine) / len(mine)),
                preferred=mine[0].preferred,
            )
        )
    forbidden = {r.scored.candidate.source for r in a.rejected if r.reason is RejectReason.FORBIDDEN_SOURCE}
    return ProvenanceSummary(
        trust_posture=_trust_posture(selected),
        mean_trust=_r(sum(s.trust for s in selected) / len(selected)) if selected else None,
        freshness_posture=_freshness_posture(selected, a.policy.freshness_days),
        freshness_window_days=a.policy.freshness_days,
        stale_selected=sum(s.stale for s in selected),
        oldest_created_at=dated[-1].candidate.created_at if dated else None,
        newest_created_at=dated[0].candidate.created_at if dated else None,
        sources=shares,
        forbidden_sources_removed=sorted(forbidden),
    )


def _trace(a: AssemblyInput) -> QueryTrace:
    b = a.built
    return QueryTrace(
        task_text=b.task_text,
        context_summary=b.context_summary,
        mission=b.mission,
        mode=a.mode,
        task_terms=list(b.task_terms),
        lexical_terms=list(b.lexical.terms) if a.mode != "semantic_only" else [],
        boost_terms_added=list(b.boost_added),
        suppress_terms_removed=list(b.suppress_removed),
        penalised_terms=list(b.suppress_terms),
        anti_goals=list(b.anti_goals),
        semantic_parts=[]
        if a.mode in ("lexical_only", "lexical_degraded")
        else [SemanticPart(role=r, text=t, weight=w) for r, t, w in b.semantic_parts],
        fusion=a.policy.fusion,
        semantic_weight=a.policy.semantic_weight,
    )


def _counts(a: AssemblyInput) -> dict[str, int]:
    counts = dict(a.retrieved)
    counts["candidates"] = len(a.chosen) + len(a.rejected)
    counts["selected"] = len(a.chosen)
    for reason in RejectReason:
        counts[reason.value] = sum(1 for r in a.rejected if r.reason is reason)
    return counts


def assemble_bundle(a: AssemblyInput) -> RetrievalBundle:
    """The RetrievalBundle for a finished selection."""
    selected = [s for s, _ in a.chosen]
    warnings = detect_warnings(
        WarningInput(a.overlay_applied, selected, a.rejected, a.built.task_stems, a.policy.freshness_days)
    )
    relevances = [s.relevance for s in selected]
    top = max(relevances, default=0.0)
    summary = RetrievalSummary(
        status="warn" if any(w.action == "warn" for w in warnings) else "ok",
        states=[w.state for w in warnings],
        overlay_applied=a.overlay_applied,
        candidates=len(selected) + len(a.rejected),
        selected=len(selected),
        rejected=len(a.rejected),
        top_relevance=_r(top),
        mean_relevance=_r(sum(relevances) / len(relevances)) if relevances else 0.0,
        strong_match=any(is_strong(s) for s in selected),
    )
    return RetrievalBundle(
        role_id=a.role_id,
        query=_trace(a),
        summary=summary,
        selected=[_chunk(rank, s, mmr) for rank, (s, mmr) in enumerate(a.chosen, start=1)],
        rejected=[_rejected(r) for r in a.rejected],
        provenance=_provenance(a, selected),
        warnings=warnings,
        diagnostics=RetrievalDiagnostics(
            timings_ms={k: round(v, 3) for k, v in a.timings_ms.items()},
            counts=_counts(a),
            depth=a.depth,
            embedder=a.embedder,
            degraded_reason=a.degraded_reason,
        ),
    )
