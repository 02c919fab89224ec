"""RetrievalBundle: the governed output of every POST /retrieve (docs/architecture.md, Governed retrieval;
docs/conformance.md#bundle-schema).

A bundle accounts for every candidate the index returned: each is either in `selected` (with its scores
and why it was chosen) or in `rejected` (with the reason it was dropped). `warnings` always holds at least
one state; `healthy` only when no other state applies.
"""

from __future__ import annotations

import enum
from typing import Annotated, Literal

from pydantic import ConfigDict, Field, StringConstraints

from core.base_model import QuarryModel
from core.governance.overlay import SCHEMA_VERSION

NonEmpty = Annotated[str, StringConstraints(min_length=1)]
Mode = Literal["hybrid", "lexical_only", "lexical_degraded", "semantic_only"]
TrustLabel = Literal["high", "medium", "low", "unknown"]
Action = Literal["continue", "warn"]
PartRole = Literal["task", "context_summary", "mission"]
TrustPosture = Literal["high", "mixed", "low", "none"]
FreshnessPosture = Literal["fresh", "mixed", "stale", "unbounded", "none"]


class WarningState(enum.StrEnum):
    """Degradation signals of a bundle (each state with the action it asks for and when it is raised)."""

    HEALTHY = "healthy"
    NO_OVERLAY = "no_overlay"
    NO_STRONG_MATCH = "no_strong_match"
    STALE_DOMINANT = "stale_dominant"
    FORBIDDEN_HIT = "forbidden_hit"
    CONFLICTING = "conflicting"


class RejectReason(enum.StrEnum):
    """Why a candidate was dropped; checked in this order, the first that applies is reported."""

    FORBIDDEN_SOURCE = "forbidden_source"
    BELOW_MIN_TRUST = "below_min_trust"
    BELOW_MIN_SCORE = "below_min_score"
    STALE = "stale"
    NEAR_DUPLICATE = "near_duplicate"
    OVER_LIMIT = "over_limit"


class _Model(QuarryModel):
    model_config = ConfigDict(extra="forbid")


class SemanticPart(_Model):
    """One text embedded into the semantic query, with its weight in the weighted sum of vectors."""

    role: PartRole
    text: str
    weight: float


class QueryTrace(_Model):
    """How the query was built from the task, the overlay and the context (the audit trail)."""

    task_text: str
    context_summary: str | None
    mission: str | None
    mode: Mode
    task_terms: list[str]
    lexical_terms: list[str]
    boost_terms_added: list[str]
    suppress_terms_removed: list[str]
    penalised_terms: list[str]
    anti_goals: list[str]
    semantic_parts: list[SemanticPart]
    fusion: Literal["convex", "rrf"]
    semantic_weight: float


class ScoreBreakdown(_Model):
    """The signals behind a candidate's score, each in [0, 1]."""

    final: float = Field(description="Σ wᵢ·signalᵢ / Σ wᵢ × penalty: the ranking score")
    relevance: float = Field(description="α·vector + (1−α)·lexical: checked against min_score")
    lexical: float = Field(description="BM25 / max BM25 × share of task terms matched")
    vector: float = Field(description="cosine similarity to the semantic query (0 below the noise floor)")
    fused: float = Field(description="the ordering signal: relevance (convex) or max-normalised RRF")
    trust: float
    freshness: float = Field(description="1 / (1 + ln(1 + age_days)); 1 when the age is unknown")
    preference: float = Field(description="1 for a preferred source, else 0")
    penalty: float = Field(description="multiplier < 1 when a suppressed term or an anti-goal matches")
    mmr: float | None = Field(default=None, description="λ·final − (1−λ)·max similarity to chosen")


class RetrievedChunk(_Model):
    """One piece of selected evidence."""

    rank: int = Field(ge=1)
    chunk_id: NonEmpty
    document_id: NonEmpty
    chunk_no: int = Field(ge=0)
    title: str
    text: str
    source: str
    trust: TrustLabel
    created_at: str | None
    age_days: float | None
    stale: bool
    preferred: bool
    matched_terms: list[str]
    lexical_rank: int | None
    vector_rank: int | None
    scores: ScoreBreakdown
    reason: NonEmpty


class RejectedCandidate(_Model):
    """A candidate that was dropped, and why."""

    chunk_id: NonEmpty
    document_id: NonEmpty
    title: str
    source: str
    relevance: float
    final: float | None
    reason: RejectReason
    detail: NonEmpty


class RetrievalSummary(_Model):
    """Aggregate figures of the bundle."""

    status: Literal["ok", "warn"]
    states: list[WarningState]
    overlay_applied: bool
    candidates: int = Field(ge=0)
    selected: int = Field(ge=0)
    rejected: int = Field(ge=0)
    top_relevance: float
    mean_relevance: float
    strong_match: bool


class SourceShare(_Model):
    """How much of the selected evidence one source supplied."""

    source: str
    selected: int
    trust: TrustLabel
    preferred: bool


class ProvenanceSummary(_Model):
    """Trust and freshness posture of the selected evidence."""

    trust_posture: TrustPosture
    mean_trust: float | None
    freshness_posture: FreshnessPosture
    freshness_window_days: int | None
    stale_selected: int
    oldest_created_at: str | None
    newest_created_at: str | None
    sources: list[SourceShare]
    forbidden_sources_removed: list[str]


class RetrievalWarning(_Model):
    """One warning state, what the caller should do about it, and the evidence that raised it."""

    state: WarningState
    action: Action
    message: NonEmpty
    chunk_ids: list[str] = Field(default_factory=list)


class RetrievalDiagnostics(_Model):
    """Timings (ms) and counts of one retrieval."""

    timings_ms: dict[str, float]
    counts: dict[str, int]
    depth: int
    embedder: str | None
    degraded_reason: str | None = None


class RetrievalBundle(_Model):
    """The governed output of every retrieval operation (POST /retrieve)."""

    model_config = ConfigDict(extra="forbid", title="RetrievalBundle")

    version: Literal["1.0"] = SCHEMA_VERSION
    role_id: NonEmpty
    query: QueryTrace
    summary: RetrievalSummary
    selected: list[RetrievedChunk]
    rejected: list[RejectedCandidate]
    provenance: ProvenanceSummary
    warnings: list[RetrievalWarning] = Field(min_length=1)
    diagnostics: RetrievalDiagnostics
