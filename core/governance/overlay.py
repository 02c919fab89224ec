"""RoleOverlay: the declarative, per-role retrieval configuration (docs/architecture.md, Governed retrieval;
docs/conformance.md#bundle-schema).

An overlay says what a role retrieves for (mission), what it must not drift into (anti_goals), which words
matter (vocabulary), which sources it prefers or may never see (source_policy), how candidates are scored
and cut (retrieval_policy), how a caller should synthesise from the evidence (synthesis_policy), and a
golden set that checks the whole configuration (eval_profile). Every model forbids unknown fields, so a
typo is reported as a bad field rather than silently ignored.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field, StrictBool, StringConstraints, model_validator

from core.base_model import JSON_INTEGER, JSON_NUMBER, JsonFloat, JsonInt, QuarryModel
from core.indexing.entity_validation import NONBLANK_PATTERN

SCHEMA_VERSION: Literal["1.0"] = "1.0"  # the bundle's; overlays share it (docs/conformance.md#bundle-schema)
ROLE_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$"  # a key in URLs and state stores
MAX_LIST_ITEMS = 100  # terms, sources, anti-goals, instructions: configuration, not corpora
MAX_GOLDEN_QUERIES = 200  # a golden set runs every query through retrieval; keep the nightly run short
MAX_TEXT_CHARS = 4000  # mission, task texts, context summaries: a paragraph or two
MAX_CHUNKS_LIMIT = 50  # a bundle is evidence for one LLM call, not a result page
# ~8 × 300-token chunks ≈ 2400 tokens: the order of context assembly's default budget (docs/architecture.md)
DEFAULT_MAX_CHUNKS = 8
DEFAULT_MIN_SCORE = 0.1  # relevance floor; measured on tests/fixtures/governance_corpus.json: junk < 0.06
DEFAULT_DIVERSITY = 0.7  # MMR λ (Carbonell & Goldstein 1998): 0.7 keeps relevance first, trims repeats
DEFAULT_SEMANTIC_WEIGHT = 0.6  # α of the convex fusion (docs/conformance.md#convex-fusion)
# Default score weights: relevance decides, trust / freshness / preferred source break near-ties.
DEFAULT_RELEVANCE_WEIGHT = 0.7
DEFAULT_SIGNAL_WEIGHT = 0.1

Term = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=100, pattern=NONBLANK_PATTERN)
]
SourceName = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200, pattern=NONBLANK_PATTERN)
]
LongText = Annotated[
    str,
    StringConstraints(
        strip_whitespace=True, min_length=1, max_length=MAX_TEXT_CHARS, pattern=NONBLANK_PATTERN
    ),
]
TrustLevel = Literal["high", "medium", "low"]
FusionName = Literal["convex", "rrf"]


class _Strict(QuarryModel):
    model_config = ConfigDict(extra="forbid")


class RoleVocabulary(_Strict):
    """Terms added to the lexical query (boost) and terms removed from it and penalised (suppress)."""

    boost: list[Term] = Field(default_factory=list, max_length=MAX_LIST_ITEMS)
    suppress: list[Term] = Field(default_factory=list, max_length=MAX_LIST_ITEMS)


class SourcePolicy(_Strict):
    """Sources to favour, sources never to show, and the least trust a source must carry."""

    preferred: list[SourceName] = Field(default_factory=list, max_length=MAX_LIST_ITEMS)
    forbidden: list[SourceName] = Field(default_factory=list, max_length=MAX_LIST_ITEMS)
    min_trust: TrustLevel | None = Field(
        default=None, description="Candidates whose trust is below this level are rejected"
    )

    @model_validator(mode="after")
    def _disjoint(self) -> SourcePolicy:
        both = sorted(set(self.preferred) & set(self.forbidden))
        if both:
            raise ValueError(f"sources cannot be both preferred and forbidden: {', '.join(both)}")
        return self


class ScoreWeights(_Strict):
    """Weights of the final score: Σ wᵢ·signalᵢ / Σ wᵢ over relevance, trust, freshness and preference."""

    relevance: JsonFloat = Field(default=DEFAULT_RELEVANCE_WEIGHT, gt=0.0, le=1.0)
    trust: JsonFloat = Field(default=DEFAULT_SIGNAL_WEIGHT, ge=0.0, le=1.0)
    freshness: JsonFloat = Field(default=DEFAULT_SIGNAL_WEIGHT, ge=0.0, le=1.0)
    preference: JsonFloat = Field(default=DEFAULT_SIGNAL_WEIGHT, ge=0.0, le=1.0)


class RetrievalPolicy(_Strict):
    """How candidates are scored, cut and diversified."""

    max_chunks: JsonInt = Field(default=DEFAULT_MAX_CHUNKS, ge=1, le=MAX_CHUNKS_LIMIT)
    min_score: JsonFloat = Field(
        default=DEFAULT_MIN_SCORE, ge=0.0, le=1.0, description="Least relevance (0..1) a candidate needs"
    )
    freshness_days: Annotated[int, Field(ge=1, le=36500), JSON_INTEGER] | None = Field(
        default=None, description="Older evidence is stale; null = no freshness window"
    )
    reject_stale: StrictBool = Field(
        default=False, description="Reject stale candidates instead of flagging them"
    )
    diversity: JsonFloat = Field(
        default=DEFAULT_DIVERSITY, ge=0.0, le=1.0, description="MMR λ: 1 = relevance only, 0 = diversity only"
    )
    semantic_weight: JsonFloat = Field(
        default=DEFAULT_SEMANTIC_WEIGHT, ge=0.0, le=1.0, description="α: share of semantic similarity"
    )
    fusion: FusionName = Field(default="convex", description="How the two retrievers' lists are ordered")
    weights: ScoreWeights = Field(default_factory=ScoreWeights)


class SynthesisPolicy(_Strict):
    """Guidance for whoever writes from the bundle (returned to the caller, not enforced here)."""

    format: Annotated[str, StringConstraints(max_length=200)] | None = None
    citation_required: StrictBool = True
    max_tokens: Annotated[int, Field(ge=1, le=16000), JSON_INTEGER] | None = None
    instructions: list[LongText] = Field(default_factory=list, max_length=MAX_LIST_ITEMS)


class GoldenQuery(_Strict):
    """One golden-set query: a task and the document ids a good retrieval returns for it."""

    id: Annotated[str, StringConstraints(min_length=1, max_length=200)]
    task_text: LongText
    expected_ids: list[SourceName] = Field(min_length=1, max_length=MAX_LIST_ITEMS)
    context_summary: LongText | None = None


class EvalProfile(_Strict):
    """The overlay's golden set and the nDCG@10 it must reach to pass."""

    golden_set: list[GoldenQuery] = Field(default_factory=list, max_length=MAX_GOLDEN_QUERIES)
    min_ndcg_at_10: Annotated[float, Field(ge=0.0, le=1.0), JSON_NUMBER] | None = None

    @model_validator(mode="after")
    def _unique_ids(self) -> EvalProfile:
        ids = [q.id for q in self.golden_set]
        repeated = sorted({i for i in ids if ids.count(i) > 1})
        if repeated:
            raise ValueError(f"golden query ids must be unique; repeated: {', '.join(repeated)}")
        return self


class RoleOverlay(_Strict):
    """Declarative per-role retrieval configuration (PUT /overlays/{role_id})."""

    model_config = ConfigDict(extra="forbid", title="RoleOverlay")

    version: Literal["1.0"] = SCHEMA_VERSION
    role_id: Annotated[str, StringConstraints(pattern=ROLE_ID_PATTERN)]
    mission: LongText
    anti_goals: list[Annotated[str, StringConstraints(min_length=1, max_length=500)]] = Field(
        default_factory=list, max_length=MAX_LIST_ITEMS
    )
    vocabulary: RoleVocabulary = Field(default_factory=RoleVocabulary)
    source_policy: SourcePolicy = Field(default_factory=SourcePolicy)
    retrieval_policy: RetrievalPolicy = Field(default_factory=RetrievalPolicy)
    synthesis_policy: SynthesisPolicy = Field(default_factory=SynthesisPolicy)
    eval_profile: EvalProfile = Field(default_factory=EvalProfile)
