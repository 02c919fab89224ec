"""Request and response models of the /context routes (pydantic, so they publish JSON Schema / OpenAPI)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, ConfigDict, Field, StrictBool, StringConstraints, field_validator

from core.base_model import JSON_INTEGER, JSON_NUMBER, QuarryModel
from core.conformance import INTEGER_ASSEMBLY_ID
from core.context.budget import MAX_TOKEN_BUDGET
from core.context.learning import TOKEN_SHARE_MAX, WEIGHT_MAX
from core.context.links import MAX_LINKS
from core.context.sources import MAX_SOURCES
from core.errors import InvalidInputError
from core.indexing.entity_validation import NONBLANK_PATTERN, caller_schema, validate_caller

MAX_NAME_CHARS = 128  # caller and namespace names: identifiers, not prose


def _caller_name(value: str) -> str:
    try:
        return validate_caller(value)
    except InvalidInputError as exc:
        raise ValueError(exc.fields["caller"]) from exc


MAX_USED_IDS = 1000  # feedback can name at most this many ids (an assembly returns far fewer)
MAX_LOG_PAGE = 100  # GET /context/log returns at most this many rows per page
DEFAULT_LOG_PAGE = 20
# GET /context/weights pages: a row is ~150 bytes of JSON, so 1,000 rows stay far below Lambda's 6 MB
# response limit (a tenant with 38k rows answered 5.2 MB in one piece before paging).
DEFAULT_WEIGHTS_PAGE = 200
MAX_WEIGHTS_PAGE = 1000
Name = Annotated[
    str,
    StringConstraints(
        strip_whitespace=True, min_length=1, max_length=MAX_NAME_CHARS, pattern=NONBLANK_PATTERN
    ),
]


def _published_caller(schema: dict[str, Any]) -> None:
    schema.update(caller_schema())  # built when a schema is asked for, never at import (the pattern's cost)


# A caller: the one caller-name rule of every route (core/indexing/entity_validation.py), as it is given (no
# trimming, as in a path or a query), published with the one caller schema.
CallerName = Annotated[str, AfterValidator(_caller_name), Field(json_schema_extra=_published_caller)]


class AssembleRequest(QuarryModel):
    """POST /context/assemble."""

    model_config = ConfigDict(extra="forbid")

    query: str = Field(description="What the caller is working on; drives retrieval")
    caller: CallerName = Field(
        description="The agent or app asking; weights, budgets and own memory follow it"
    )
    namespace: Name | None = Field(default=None, description="Mission namespace to retrieve within")
    token_budget: Annotated[int, Field(ge=1, le=MAX_TOKEN_BUDGET), JSON_INTEGER] | None = None
    explicit_links: list[str] = Field(
        default_factory=list,
        max_length=MAX_LINKS,
        description="Entity ids (`type:id`) or paths under the links root, packed first (≤ 30% of budget)",
    )
    sources: list[str] | None = Field(
        default=None, max_length=MAX_SOURCES, description="Configured sources to use (default all)"
    )
    log: StrictBool = Field(
        default=True, description="false: do not log (health probes); assembly_id is null"
    )
    expand_namespaces: StrictBool = Field(
        default=True, description="With a namespace: also other namespaces' hits, at half score"
    )
    include_superseded: StrictBool = Field(
        default=False, description="Also use memories a newer memory superseded; default: current ones only"
    )
    min_relevance: Annotated[float, Field(ge=0, le=1), JSON_NUMBER] | None = Field(
        default=None,
        description="Leave out memories whose decayed relevance (relevance_score halved every 30 days since "
        "last use; pinned: never) is below this; other items are unaffected",
    )
    token_encoding: Literal["estimate", "cl100k_base", "o200k_base"] | None = Field(
        default=None,
        description="What the budget and every token figure are counted in: `estimate` (ceil(characters/4)), "
        "or OpenAI's `cl100k_base` / `o200k_base`; default: the caller's configured encoding, else the estimate",
    )
    min_trust: Literal["external", "agent", "user"] | None = Field(
        default=None,
        description="Leave out memories trusted less (external < agent < user; none: least); other items "
        "are unaffected",
    )

    @field_validator("query")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty or whitespace")
        return value


class ContextSource(QuarryModel):
    """One item in the block."""

    id: str
    source: str
    score: float
    tokens: int
    title: str
    truncated: bool = False


class AssembleResponse(QuarryModel):
    """POST /context/assemble response."""

    assembly_id: str | None
    context_block: str
    sources: list[ContextSource]
    total_tokens: int
    token_budget: int
    token_encoding: str = Field(default="estimate", description="What the token figures are counted in")
    retrieval_ms: float
    warnings: list[str]


class FeedbackRequest(QuarryModel):
    """POST /context/feedback."""

    model_config = ConfigDict(extra="forbid")

    assembly_id: str = Field(min_length=1, max_length=MAX_NAME_CHARS)
    used_source_ids: list[str] = Field(max_length=MAX_USED_IDS)
    tokens_used: Annotated[int, Field(ge=0), JSON_INTEGER] | None = None

    @field_validator("assembly_id", mode="before")
    @classmethod
    def _string_id(cls, value: Any) -> Any:
        if isinstance(value, int | float):  # docs/conformance.md#assembly-ids (core/conformance.py)
            raise ValueError(INTEGER_ASSEMBLY_ID)
        return value


class FeedbackResponse(QuarryModel):
    """What the feedback recorded; ids the assembly never returned are listed and not recorded."""

    success: bool
    assembly_id: str
    recorded_ids: list[str]
    ignored_ids: list[str]


class WeightOut(QuarryModel):
    caller: str
    source: str
    weight: float
    token_share: float
    manual: bool
    updated_at: str


class WeightsResponse(QuarryModel):
    """GET /context/weights: a page of stored rows by caller then source (pass `next_cursor` back as
    `cursor` for the next page); unlisted caller/source pairs use `*`, then the defaults."""

    weights: list[WeightOut]
    next_cursor: str | None = None
    sources: list[str]
    default_weight: float
    default_token_share: float


class BudgetOut(QuarryModel):
    caller: str
    budget: int
    min_budget: int
    max_budget: int
    updated_at: str


class BudgetsResponse(QuarryModel):
    """GET /context/budgets."""

    budgets: list[BudgetOut]
    null_namespace_budget: int
    default_budget: int


class LogSource(QuarryModel):
    id: str
    source: str
    score: float
    tokens: int


class LogEntryOut(QuarryModel):
    assembly_id: str
    caller: str
    namespace: str | None
    request_id: str | None
    query_hash: str
    budget: int
    total_tokens: int
    sources: list[LogSource]
    retrieval_ms: float
    total_ms: float
    created_at: str
    used_ids: list[str] | None
    tokens_used: int | None
    feedback_at: str | None
    processed: bool


class LogResponse(QuarryModel):
    """GET /context/log: newest first; pass `next_cursor` back as `cursor` for the next page."""

    data: list[LogEntryOut]
    next_cursor: str | None


class CallersResponse(QuarryModel):
    """GET /context/log/callers."""

    data: list[str]


class ManualWeightRequest(QuarryModel):
    """PUT /context/weights/{caller}/{source}: pin a weight and/or share; `manual: false` releases it."""

    model_config = ConfigDict(extra="forbid")

    weight: Annotated[float, Field(ge=0.0, le=WEIGHT_MAX), JSON_NUMBER] | None = None
    token_share: Annotated[float, Field(ge=0.0, le=TOKEN_SHARE_MAX), JSON_NUMBER] | None = None
    manual: StrictBool = True


class BudgetRequest(QuarryModel):
    """PUT /context/budgets/{caller}: the caller's budget and the bounds (min/max) learning keeps it within;
    what is left out keeps its value."""

    model_config = ConfigDict(extra="forbid")

    budget: Annotated[int, Field(ge=1, le=MAX_TOKEN_BUDGET), JSON_INTEGER] | None = None
    min_budget: Annotated[int, Field(ge=1, le=MAX_TOKEN_BUDGET), JSON_INTEGER] | None = None
    max_budget: Annotated[int, Field(ge=1, le=MAX_TOKEN_BUDGET), JSON_INTEGER] | None = None


class WeightAdjustmentOut(QuarryModel):
    tenant_id: str
    caller: str
    source: str
    old_weight: float
    new_weight: float
    old_share: float
    new_share: float
    effectiveness: float


class BudgetAdjustmentOut(QuarryModel):
    tenant_id: str
    caller: str
    old_budget: int
    new_budget: int
    reason: str


class EvalResponse(QuarryModel):
    """POST /context/eval (and the nightly run): what the learning cycle changed."""

    callers: int
    assemblies: int
    weight_adjustments: list[WeightAdjustmentOut]
    budget_adjustments: list[BudgetAdjustmentOut]
    weights_count: int
    budgets_count: int
    skipped: list[str]
