"""Request and response models of the HTTP API (pydantic, so they publish JSON Schema / OpenAPI).

Static bounds live here; configured limits (query length, max limit, batch size) are checked again by the
services, which know the deployment's settings.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    StrictBool,
    WithJsonSchema,
    field_validator,
)

from core.base_model import JSON_INTEGER, JSON_NUMBER, JsonInt, QuarryModel
from core.indexing.caller_vectors import VECTOR_RULES, VectorList
from core.indexing.entity_validation import MAX_ID_CHARS
from core.search.filters import MAX_FACETS
from core.search.paging import (
    DEFAULT_KEEP_ALIVE_SECONDS,
    MAX_KEEP_ALIVE_SECONDS,
    MIN_KEEP_ALIVE_SECONDS,
)

Scalar = str | int | float | bool
# A value, any of a list, or an object of operators (core/search/filters.py checks them, naming the field and
# the operator; the OpenAPI document states the operators: handlers/http_api/openapi.py).
FilterValue = Scalar | list[Scalar] | dict[str, Any]
Strategy = Literal["auto", "keyword", "semantic", "hybrid"]
MAX_LIMIT = 100  # a page holds at most 100 results
DEFAULT_LIMIT = 20  # results per page when the request names no limit
MAX_RETURN_FIELDS = 100  # field names a search may ask for (a type declares a few dozen at most)
ReturnFieldList = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=256)]],
    Field(min_length=1, max_length=MAX_RETURN_FIELDS),
]
MAX_BULK_ITEMS = (
    10_000  # core/indexing/write_jobs.py MAX_JOB_ITEMS: above the synchronous size a bulk becomes a job
)


def _keep_alive_in_bounds(value: int) -> int:
    """One message naming both bounds (pydantic's names only the one crossed)."""
    if not MIN_KEEP_ALIVE_SECONDS <= value <= MAX_KEEP_ALIVE_SECONDS:
        raise ValueError(f"must be between {MIN_KEEP_ALIVE_SECONDS} and {MAX_KEEP_ALIVE_SECONDS} seconds")
    return value


KeepAliveSeconds = Annotated[
    int,
    JSON_INTEGER,
    AfterValidator(_keep_alive_in_bounds),
    WithJsonSchema({"type": "integer", "minimum": MIN_KEEP_ALIVE_SECONDS, "maximum": MAX_KEEP_ALIVE_SECONDS}),
]


class SearchRequest(QuarryModel):
    """POST /search."""

    model_config = ConfigDict(extra="forbid")

    query: str = Field(
        description="What to search for; supports `type:` prefixes, `@name` and quoted phrases. "
        "Empty or whitespace: no results (not an error)"
    )
    entities: list[str] | None = Field(
        default=None, description="Entity types to search, singular or plural (`task`, `tasks`); default all"
    )
    filters: dict[str, FilterValue] | None = Field(
        default=None,
        description="Filters, field → a value, any of a list, or operators (gt, gte, lt, lte, in, not, exists)",
    )
    limit: JsonInt = Field(default=DEFAULT_LIMIT, ge=1, le=MAX_LIMIT)
    strategy: Strategy = "auto"
    explain: StrictBool = False
    min_score: Annotated[float, Field(ge=0, le=1), JSON_NUMBER] | None = Field(
        default=None,
        description="Leave out results whose fused `score` is below this (0-1: fused scores are at most 1)",
    )
    min_relevance: Annotated[float, Field(ge=0, le=1), JSON_NUMBER] | None = Field(
        default=None,
        description="Memories only (a search with it returns memories alone): leave out those whose decayed "
        "relevance (relevance_score halved every 30 days since last use; pinned: never) is below this",
    )
    min_trust: Literal["external", "agent", "user"] | None = Field(
        default=None,
        description="Memories only (a search with it returns memories alone): leave out those trusted less "
        "(external < agent < user; none: least)",
    )
    include_superseded: StrictBool = Field(
        default=False,
        description="Also return memories a newer memory superseded (their history); default: current ones only",
    )
    facets: list[str] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_FACETS,
        description="Fields to count: entities per value over every match of the query's words within the "
        "filters (every entity within them for a semantic search), not only this page",
    )
    return_fields: Literal["all", "none"] | ReturnFieldList | None = Field(
        default=None,
        description="Stored fields in each result's `fields`: `all`, a list of names, or `none` (ids and "
        "scores only: no title, snippet or metadata); default: title, snippet and metadata, no `fields`",
    )

    @field_validator("return_fields", mode="before")
    @classmethod
    def _one_of_the_forms(cls, value: Any) -> Any:
        """One message for every wrong form (not pydantic's error per member of the union)."""
        if value is None or value in ("all", "none"):
            return value
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return value
        raise ValueError("must be 'all', 'none' or a list of field names")

    query_vector: VectorList | None = Field(
        default=None,
        description="Your own query vector for the vector leg instead of embedding `query` ("
        + VECTOR_RULES
        + '); `query` may then be empty (a semantic search). See docs/api.md, "Your own vectors"',
    )
    cursor: str | None = Field(
        default=None,
        max_length=1024,
        description="`next_cursor` of the previous page; send the same query, entities, filters, "
        "strategy and limit. Later pages are read from a snapshot of the ranking, so writes to the tenant "
        "do not change them (entities as they were when it was taken). Answers 409 `cursor_expired` when "
        "the snapshot's lifetime lapsed, or, without `keep_alive` on the first page, when the tenant's index "
        "changed before the second page: start again from the first page.",
    )
    keep_alive: KeepAliveSeconds | None = Field(
        default=None,
        description="Seconds the snapshot behind `next_cursor` lives between two page reads (each read "
        f"extends it by as much again), {MIN_KEEP_ALIVE_SECONDS} to {MAX_KEEP_ALIVE_SECONDS}; default "
        f"{DEFAULT_KEEP_ALIVE_SECONDS}. Sent on the first page, the snapshot is taken by that page, so no "
        "write can expire the cursor (like an OpenSearch point in time); sent with `cursor`, it sets how "
        "long this read extends the snapshot.",
    )


class RetrieverExplanation(QuarryModel):
    """One retriever's view of a result."""

    rank: int | None
    score: float | None = Field(
        description="The retriever's own score, not normalised: BM25 for the keyword leg, cosine for the vector leg"
    )


class Explanation(QuarryModel):
    """Why a result scored what it did."""

    fusion: str
    alpha: float
    lexical: RetrieverExplanation
    vector: RetrieverExplanation
    field_boosts: dict[str, int]
    matched_chunk: int
    fallback: str | None = None


class SearchResult(QuarryModel):
    """One hit."""

    entity_type: str
    entity_id: str
    title: str
    snippet: str
    score: float
    metadata: dict[str, Any]
    fields: dict[str, Any] | None = Field(
        default=None, description="The stored fields asked for with `return_fields` (absent ones left out)"
    )
    matched_terms: list[str] = Field(
        default_factory=list,
        description="The query's words found in the title or the matched text; empty: no query word matched",
    )
    explanation: Explanation | None = None


class QueryInfo(QuarryModel):
    """How the query was understood and served."""

    original_query: str
    parsed_query: str
    entities_searched: list[str]
    strategy: str
    cache: Literal["hit", "miss", "bypass"]
    degraded: bool
    degraded_reason: str | None = None
    fallback: str | None = None
    terms_truncated: bool = False
    query_shape: Literal["question", "identifier", "plain"] = "plain"


class SearchResponse(QuarryModel):
    """POST /search response."""

    results: list[SearchResult]
    total: int
    query_info: QueryInfo
    took_ms: float
    next_cursor: str | None = Field(
        default=None, description="Pass back as `cursor` for the next page; null on the last page"
    )
    facets: dict[str, dict[str, int]] | None = Field(
        default=None, description="Per field asked for in `facets`: value → entities, most frequent first"
    )
    # What each retriever contributed (core.search.fusion.LegCounts), for the log line; never in the body, and
    # None on a cache hit (nothing was retrieved).
    _legs: Any = PrivateAttr(default=None)

    @property
    def legs(self) -> Any:
        """The search's LegCounts, or None when it was answered without retrieving."""
        return self._legs


class BulkItem(QuarryModel):
    """One entity in POST /entities: its type and id plus its fields."""

    model_config = ConfigDict(extra="allow")

    type: str
    id: str = Field(min_length=1, max_length=MAX_ID_CHARS)


class BulkRequest(QuarryModel):
    """POST /entities."""

    model_config = ConfigDict(extra="forbid")

    # Any item is accepted here so a bad one (not an object, say) is reported at its index while the
    # others are indexed; the OpenAPI document types the items as BulkItem.
    items: list[Any] = Field(
        min_length=1, max_length=MAX_BULK_ITEMS, description="Entities: each its `type`, `id` and fields"
    )


class BulkError(QuarryModel):
    """Why one bulk item was not indexed."""

    index: int
    entity_id: str | None
    error: str
    code: str = "invalid_input"
    fields: dict[str, str] = Field(default_factory=dict)


UNINDEXED = "Fields the entity type neither searches nor filters on: stored and returned, never found"


class BulkResponse(QuarryModel):
    """POST /entities response."""

    indexed: int
    skipped_stale: int
    errors: list[BulkError]
    unindexed_fields: list[str] = Field(default_factory=list, description=UNINDEXED + " (of any item)")


class WriteResponse(QuarryModel):
    """PUT / PATCH / DELETE /entities/{type}/{id} response."""

    entity_type: str
    entity_id: str
    version: int
    outcome: Literal["applied", "stale", "duplicate"]
    reembedded: bool
    message: str | None = None
    unindexed_fields: list[str] = Field(default_factory=list, description=UNINDEXED)
