"""Scoring and governance filters: every candidate gets its signals, then is kept or rejected with a reason.

Signals (each in [0, 1]):
- lexical   = BM25 / max BM25 over the list × share of the task's terms the chunk contains (coverage), so
              the best of a bad lexical list is not "strong" just for being first;
- vector    = cosine similarity to the semantic query (hits below the noise floor are dropped);
- relevance = α·vector + (1−α)·lexical with α = retrieval_policy.semantic_weight (0 lexical-only, 1
              semantic-only): an absolute strength, compared with min_score and the strong-match bar;
- fused     = the ordering signal: relevance (fusion "convex") or max-normalised weighted RRF ("rrf");
- trust (label or number), freshness 1/(1 + ln(1 + age_days)), preference (1 for a preferred source);
- final     = (w_r·fused + w_t·trust + w_f·freshness + w_p·preference) / Σw, × SUPPRESS_PENALTY when a
              suppressed term or every word of an anti-goal occurs in the chunk.

Rejections, first that applies: forbidden source (whatever its score), trust below source_policy.min_trust,
relevance below min_score, stale when retrieval_policy.reject_stale.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from core.governance.bundle import Mode, RejectReason, TrustLabel
from core.governance.overlay import RetrievalPolicy, SourcePolicy
from core.governance.query_builder import BuiltQuery
from core.governance.terms import (
    TRUST_SCORES,
    age_days,
    freshness,
    matched,
    stem,
    stems,
    trust_label,
    trust_score,
)
from core.models import Candidate, EntityKey
from core.search.fusion import RRF_K, fuse_rrf, normalise_max

SUPPRESS_PENALTY = 0.5  # a suppressed term halves the score: demoted below clean peers, still findable
# Cosine below this is noise for all-MiniLM-L6-v2 (unrelated sentences score ~-0.1..0.15); the same floor
# as core.search.search_service.MIN_VECTOR_SIMILARITY, measured on SciFact/Cranfield in bench/.
VECTOR_NOISE_FLOOR = 0.2


@dataclass(frozen=True, slots=True)
class Scored:
    """A candidate with its governance signals."""

    candidate: Candidate
    chunk_id: str
    stems: frozenset[str]
    lexical_rank: int | None
    vector_rank: int | None
    lexical: float
    vector: float
    relevance: float
    fused: float
    trust: float
    trust_label: TrustLabel
    freshness: float
    age_days: float | None
    stale: bool
    preferred: bool
    preference: float
    penalty: float
    penalty_reason: str | None
    final: float
    matched_terms: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Rejection:
    """A dropped candidate, the reason and a readable detail."""

    scored: Scored
    reason: RejectReason
    detail: str


@dataclass(frozen=True, slots=True)
class Screening:
    """Kept candidates (best final score first) and the rejected ones."""

    kept: tuple[Scored, ...]
    rejected: tuple[Rejection, ...]


def chunk_id(candidate: Candidate) -> str:
    """`<document id>#<chunk no>`: the id of the chunk a candidate stands for."""
    return f"{candidate.key.entity_id}#{candidate.chunk_no}"


def alpha_for(mode: Mode, policy: RetrievalPolicy) -> float:
    """The share of semantic similarity in relevance for a retrieval mode."""
    if mode == "semantic_only":
        return 1.0
    if mode in ("lexical_only", "lexical_degraded"):
        return 0.0
    return policy.semantic_weight


def _penalty(text_stems: frozenset[str], built: BuiltQuery) -> tuple[float, str | None]:
    hit = sorted(built.suppress_stems & text_stems)
    if hit:
        words = [t for t in built.suppress_terms if stem(t) in hit]
        return SUPPRESS_PENALTY, "mentions suppressed " + ", ".join(f"'{w}'" for w in words)
    for goal in built.anti_goals:
        goal_stems = stems(goal)
        if goal_stems and goal_stems <= text_stems:
            return SUPPRESS_PENALTY, f"matches anti-goal '{goal}'"
    return 1.0, None


@dataclass(frozen=True, slots=True)
class _Context:
    built: BuiltQuery
    policy: RetrievalPolicy
    preferred: frozenset[str]
    alpha: float
    now: float
    lex_rank: dict[EntityKey, int]
    lex_norm: dict[EntityKey, float]
    vec: dict[EntityKey, tuple[int, float]]
    fused: dict[EntityKey, float] | None


def _score(c: Candidate, ctx: _Context) -> Scored:
    text_stems = stems(f"{c.title} {c.text}")
    task = ctx.built.task_stems
    coverage = len(task & text_stems) / len(task) if task else 0.0
    lexical = ctx.lex_norm.get(c.key, 0.0) * coverage
    vec_rank, vector = ctx.vec.get(c.key, (None, 0.0))
    relevance = ctx.alpha * vector + (1 - ctx.alpha) * lexical
    fused = relevance if ctx.fused is None else ctx.fused.get(c.key, 0.0)
    trust = trust_score(c.metadata.get("trust"))
    age = age_days(c.created_at, ctx.now)
    window = ctx.policy.freshness_days
    fresh = freshness(age)
    preferred = c.source in ctx.preferred
    penalty, why = _penalty(text_stems, ctx.built)
    w = ctx.policy.weights
    total = w.relevance + w.trust + w.freshness + w.preference
    blended = w.relevance * fused + w.trust * trust + w.freshness * fresh + w.preference * float(preferred)
    words = list(ctx.built.task_terms) + list(ctx.built.boost_added)
    return Scored(
        candidate=c,
        chunk_id=chunk_id(c),
        stems=text_stems,
        lexical_rank=ctx.lex_rank.get(c.key),
        vector_rank=vec_rank,
        lexical=lexical,
        vector=vector,
        relevance=relevance,
        fused=fused,
        trust=trust,
        trust_label=trust_label(c.metadata),
        freshness=fresh,
        age_days=age,
        stale=window is not None and age is not None and age > window,
        preferred=preferred,
        preference=float(preferred),
        penalty=penalty,
        penalty_reason=why,
        final=blended / total * penalty,
        matched_terms=tuple(matched(words, text_stems)),
    )


def _rejection(s: Scored, policy: RetrievalPolicy, sources: SourcePolicy) -> Rejection | None:
    src = s.candidate.source
    if src in sources.forbidden:
        return Rejection(s, RejectReason.FORBIDDEN_SOURCE, f"source '{src}' is forbidden by source_policy")
    if sources.min_trust is not None and s.trust < TRUST_SCORES[sources.min_trust]:
        return Rejection(
            s, RejectReason.BELOW_MIN_TRUST, f"trust {s.trust_label} is below min_trust {sources.min_trust}"
        )
    if s.relevance < policy.min_score:
        return Rejection(
            s,
            RejectReason.BELOW_MIN_SCORE,
            f"relevance {s.relevance:.3f} is below min_score {policy.min_score}",
        )
    if s.stale and policy.reject_stale:
        return Rejection(
            s,
            RejectReason.STALE,
            f"{s.age_days:.0f} days old, outside the {policy.freshness_days}-day window",
        )
    return None


def _context(
    lexical: Sequence[Candidate],
    vector: Sequence[Candidate],
    built: BuiltQuery,
    policy: RetrievalPolicy,
    sources: SourcePolicy,
    alpha: float,
    now: float,
) -> _Context:
    fused = None
    if policy.fusion == "rrf":
        fused = normalise_max({f.candidate.key: f.score for f in fuse_rrf(lexical, vector, RRF_K, alpha)})
    return _Context(
        built=built,
        policy=policy,
        preferred=frozenset(sources.preferred),
        alpha=alpha,
        now=now,
        lex_rank={c.key: r for r, c in reversed(list(enumerate(lexical)))},
        lex_norm=normalise_max({c.key: c.score for c in lexical}),
        vec={c.key: (r, c.score) for r, c in reversed(list(enumerate(vector)))},
        fused=fused,
    )


def _union(lexical: Sequence[Candidate], vector: Sequence[Candidate]) -> list[Candidate]:
    """Each entity once; the lexical candidate's chunk wins (it holds the matched terms)."""
    out: dict[EntityKey, Candidate] = {}
    for c in (*lexical, *vector):
        out.setdefault(c.key, c)
    return list(out.values())


def screen(
    lexical: Sequence[Candidate],
    vector: Sequence[Candidate],
    built: BuiltQuery,
    policy: RetrievalPolicy,
    sources: SourcePolicy,
    mode: Mode,
    now: float,
) -> Screening:
    """Score every candidate of both lists and split them into kept (best first) and rejected."""
    # Vector hits under the noise floor are not candidates at all (as in core.search.search_service): k-NN always
    # returns k neighbours, however unrelated.
    vector = [c for c in vector if c.score >= VECTOR_NOISE_FLOOR]
    ctx = _context(lexical, vector, built, policy, sources, alpha_for(mode, policy), now)
    kept: list[Scored] = []
    rejected: list[Rejection] = []
    for candidate in _union(lexical, vector):
        scored = _score(candidate, ctx)
        refusal = _rejection(scored, policy, sources)
        if refusal is None:
            kept.append(scored)
        else:
            rejected.append(refusal)
    kept.sort(key=lambda s: (-s.final, -s.relevance, s.chunk_id))
    return Screening(tuple(kept), tuple(rejected))
