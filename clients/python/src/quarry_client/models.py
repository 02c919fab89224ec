# Generated from clients/python/openapi.json by `make client-models` (datamodel-code-generator): do not edit.

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, RootModel, StringConstraints
from typing import Annotated, Any, Dict, Literal, Optional, Union
from datetime import date, datetime


class ExplicitLink(
    RootModel[
        Annotated[
            str, StringConstraints(pattern=r"^(commitment|document|idea|memory|person|project|task):[^/\\]+$")
        ]
    ]
):
    root: Annotated[
        str, StringConstraints(pattern=r"^(commitment|document|idea|memory|person|project|task):[^/\\]+$")
    ] = Field(..., description="an entity, `type:id`")


class AssembleRequest(BaseModel):
    model_config = ConfigDict(
        extra="allow",
        regex_engine="python-re",
    )
    caller: Annotated[
        str,
        StringConstraints(
            pattern=r"^(?!(\.\.?|\*)(?![\s\S]))[^\u0000-\u0020\u002f\u007f-\u00a0\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u1680\u180e\u2000-\u200f\u2028-\u202f\u205f-\u2064\u2066-\u206f\u3000\ud800-\udfff\ufeff\ufff9-\ufffb𑂽𑃍𓐰-𓐸𛲠-𛲣𝅳-𝅺󠀁󠀠-󠁿]{1,128}(?![\s\S])",
            min_length=1,
            max_length=128,
        ),
    ] = Field(
        ..., description="The agent or app asking; weights, budgets and own memory follow it", title="Caller"
    )
    expand_namespaces: bool | None = Field(
        True,
        description="With a namespace: also other namespaces' hits, at half score",
        title="Expand Namespaces",
    )
    explicit_links: list[ExplicitLink] | None = Field(
        None,
        description="Entity ids (`type:id`) or paths under the links root, packed first (≤ 30% of budget)",
        max_length=20,
        title="Explicit Links",
    )
    include_superseded: bool | None = Field(
        False,
        description="Also use memories a newer memory superseded; default: current ones only",
        title="Include Superseded",
    )
    log: bool | None = Field(
        True, description="false: do not log (health probes); assembly_id is null", title="Log"
    )
    min_relevance: Annotated[float, Field(ge=0.0, le=1.0)] | None = Field(
        None,
        description="Leave out memories whose decayed relevance (relevance_score halved every 30 days since last use; pinned: never) is below this; other items are unaffected",
        title="Min Relevance",
    )
    min_trust: Literal["external", "agent", "user"] | None = Field(
        None,
        description="Leave out memories trusted less (external < agent < user; none: least); other items are unaffected",
        title="Min Trust",
    )
    namespace: (
        Annotated[
            str,
            StringConstraints(
                pattern=r"[^\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]",
                min_length=1,
                max_length=128,
            ),
        ]
        | None
    ) = Field(None, description="Mission namespace to retrieve within", title="Namespace")
    query: Annotated[
        str,
        StringConstraints(
            pattern=r"[^\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
        ),
    ] = Field(..., description="What the caller is working on; drives retrieval", title="Query")
    sources: (
        list[
            Literal[
                "memory",
                "agent_memory_own",
                "agent_memory_peer",
                "vault_index",
                "psychic_cache",
                "tasks",
                "ideas",
                "projects",
                "people",
                "commitments",
            ]
        ]
        | None
    ) = Field(None, description="Configured sources to use (default all)", title="Sources")
    token_budget: Annotated[int, Field(ge=1, le=16000)] | None = Field(None, title="Token Budget")
    token_encoding: Literal["estimate", "cl100k_base", "o200k_base"] | None = Field(
        None,
        description="What the budget and every token figure are counted in: `estimate` (ceil(characters/4)), or OpenAI's `cl100k_base` / `o200k_base`; default: the caller's configured encoding, else the estimate",
        title="Token Encoding",
    )


class BudgetAdjustmentOut(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    caller: str = Field(..., title="Caller")
    new_budget: Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] = Field(
        ..., title="New Budget"
    )
    old_budget: Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] = Field(
        ..., title="Old Budget"
    )
    reason: str = Field(..., title="Reason")
    tenant_id: str = Field(..., title="Tenant Id")


class BudgetOut(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    budget: Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] = Field(
        ..., title="Budget"
    )
    caller: str = Field(..., title="Caller")
    max_budget: Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] = Field(
        ..., title="Max Budget"
    )
    min_budget: Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] = Field(
        ..., title="Min Budget"
    )
    updated_at: str = Field(..., title="Updated At")


class BudgetRequest(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    budget: Annotated[int, Field(ge=1, le=16000)] | None = Field(None, title="Budget")
    max_budget: Annotated[int, Field(ge=1, le=16000)] | None = Field(None, title="Max Budget")
    min_budget: Annotated[int, Field(ge=1, le=16000)] | None = Field(None, title="Min Budget")


class BudgetsResponse(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    budgets: list[BudgetOut] = Field(..., title="Budgets")
    default_budget: Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] = Field(
        ..., title="Default Budget"
    )
    null_namespace_budget: Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] = Field(
        ..., title="Null Namespace Budget"
    )


class BulkError(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    code: str | None = Field("invalid_input", title="Code")
    entity_id: str | None = Field(..., title="Entity Id")
    error: str = Field(..., title="Error")
    fields: dict[str, str] | None = Field(None, title="Fields")
    index: Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] = Field(..., title="Index")


class BulkResponse(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    errors: list[BulkError] = Field(..., title="Errors")
    indexed: Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] = Field(
        ..., title="Indexed"
    )
    skipped_stale: Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] = Field(
        ..., title="Skipped Stale"
    )
    unindexed_fields: list[str] | None = Field(
        None,
        description="Fields the entity type neither searches nor filters on: stored and returned, never found (of any item)",
        title="Unindexed Fields",
    )


class CallersResponse(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    data: list[str] = Field(..., title="Data")


class CommitmentFields(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    context_type: str | list[str] | None = Field(
        None, description="Searchable text (boost 1 of 3)", title="context_type"
    )
    created_at: datetime | date | None = Field(None, description="ISO-8601; default: now", title="created_at")
    description: (
        Annotated[
            str,
            StringConstraints(
                pattern=r"[^\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
            ),
        ]
        | list[str]
    ) = Field(..., description="The commitment's title (searchable)", title="description")
    due_date: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, description="Filterable metadata", title="due_date")
    embedding: list[float] | None = Field(
        None,
        description="Your own vector for the entity instead of the model's: the tenant's vector dimension, finite, not all zero; not returned in reads (docs/api.md, \"Your own vectors\")",
        title="embedding",
    )
    namespace: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="A mission namespace (filterable)", title="namespace"
    )
    owner: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="Filterable", title="owner"
    )
    person_name: str | list[str] | None = Field(
        None, description="Searchable text (boost 2 of 3)", title="person_name"
    )
    source: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="Where the entity comes from: a context source (filterable)", title="source"
    )
    status: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, description="Filterable metadata", title="status")
    updated_at: datetime | date | None = Field(
        None,
        description="ISO-8601; without `version`, its time in milliseconds is the version",
        title="updated_at",
    )
    version: Annotated[int, Field(ge=0, le=9223372036854775807)] | None = Field(
        None, description="Newer wins; a write older than the stored one is refused (409)", title="version"
    )


class CommitmentItem(BaseModel):
    model_config = ConfigDict(
        extra="allow",
        regex_engine="python-re",
    )
    context_type: str | list[str] | None = Field(
        None, description="Searchable text (boost 1 of 3)", title="context_type"
    )
    created_at: datetime | date | None = Field(None, description="ISO-8601; default: now", title="created_at")
    description: (
        Annotated[
            str,
            StringConstraints(
                pattern=r"[^\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
            ),
        ]
        | list[str]
    ) = Field(..., description="The commitment's title (searchable)", title="description")
    due_date: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, description="Filterable metadata", title="due_date")
    embedding: list[float] | None = Field(
        None,
        description="Your own vector for the entity instead of the model's: the tenant's vector dimension, finite, not all zero; not returned in reads (docs/api.md, \"Your own vectors\")",
        title="embedding",
    )
    id: Annotated[
        str,
        StringConstraints(
            pattern=r"^(?!\.\.?(?![\s\S]))[^\x00-\x20\x7f-\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000/#|]{1,256}(?![\s\S])"
        ),
    ] = Field(
        ...,
        description="The entity id: 1-256 characters without whitespace, control characters, '/', '#' or '|', and not '.' or '..'",
        title="id",
    )
    namespace: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="A mission namespace (filterable)", title="namespace"
    )
    owner: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="Filterable", title="owner"
    )
    person_name: str | list[str] | None = Field(
        None, description="Searchable text (boost 2 of 3)", title="person_name"
    )
    source: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="Where the entity comes from: a context source (filterable)", title="source"
    )
    status: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, description="Filterable metadata", title="status")
    type: Literal["commitment"] = Field(..., description="The entity type", title="type")
    updated_at: datetime | date | None = Field(
        None,
        description="ISO-8601; without `version`, its time in milliseconds is the version",
        title="updated_at",
    )
    version: Annotated[int, Field(ge=0, le=9223372036854775807)] | None = Field(
        None, description="Newer wins; a write older than the stored one is refused (409)", title="version"
    )


class CommitmentPatch(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    context_type: str | list[str] | None = Field(
        None, description="Searchable text (boost 1 of 3)", title="context_type"
    )
    created_at: datetime | date | None = Field(None, description="ISO-8601; default: now", title="created_at")
    description: str | list[str] | None = Field(
        None, description="Searchable text (boost 3 of 3)", title="description"
    )
    due_date: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, description="Filterable metadata", title="due_date")
    embedding: list[float] | None = Field(
        None,
        description="Your own vector for the entity instead of the model's: the tenant's vector dimension, finite, not all zero; not returned in reads (docs/api.md, \"Your own vectors\")",
        title="embedding",
    )
    namespace: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="A mission namespace (filterable)", title="namespace"
    )
    owner: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="Filterable", title="owner"
    )
    person_name: str | list[str] | None = Field(
        None, description="Searchable text (boost 2 of 3)", title="person_name"
    )
    source: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="Where the entity comes from: a context source (filterable)", title="source"
    )
    status: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, description="Filterable metadata", title="status")
    updated_at: datetime | date | None = Field(
        None,
        description="ISO-8601; without `version`, its time in milliseconds is the version",
        title="updated_at",
    )
    version: Annotated[int, Field(ge=0, le=9223372036854775807)] | None = Field(
        None, description="Newer wins; a write older than the stored one is refused (409)", title="version"
    )


class ContextSource(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    id: str = Field(..., title="Id")
    score: float = Field(..., title="Score")
    source: str = Field(..., title="Source")
    title: str = Field(..., title="Title")
    tokens: Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] = Field(
        ..., title="Tokens"
    )
    truncated: bool | None = Field(False, title="Truncated")


class CorpusChunk(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    text: Annotated[str, StringConstraints(min_length=1, max_length=20000)] = Field(..., title="Text")


class CorpusDocument(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    chunks: list[CorpusChunk | Annotated[str, StringConstraints(min_length=1, max_length=20000)]] | None = (
        Field(None, title="Chunks")
    )
    created_at: str | None = Field(None, title="Created At")
    id: Annotated[str, StringConstraints(min_length=1, max_length=256)] = Field(..., title="Id")
    source: (
        Annotated[
            str,
            StringConstraints(
                pattern=r"[^\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]",
                min_length=1,
                max_length=200,
            ),
        ]
        | None
    ) = Field(None, title="Source")
    text: str | None = Field(None, title="Text")
    title: Annotated[
        str,
        StringConstraints(
            pattern=r"[^\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]",
            min_length=1,
            max_length=1000,
        ),
    ] = Field(..., title="Title")
    trust: (
        Annotated[
            str,
            StringConstraints(
                pattern=r"^[\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]*([Hh][Ii][Gg][Hh]|[Mm][Ee][Dd][Ii][Uu][Mm]|[Ll][Oo][Ww])[\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]*$"
            ),
        ]
        | Annotated[float, Field(ge=0.0, le=1.0)]
        | None
    ) = Field(None, description="high, medium or low (any case), or a number from 0 to 1", title="Trust")


class CorpusError(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    error: str = Field(..., title="Error")
    fields: dict[str, str] | None = Field(None, title="Fields")
    id: str | None = Field(..., title="Id")
    index: Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] = Field(..., title="Index")


class CorpusReport(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    chunks_ingested: Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] = Field(
        ..., title="Chunks Ingested"
    )
    documents_ingested: Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] = Field(
        ..., title="Documents Ingested"
    )
    errors: list[CorpusError] = Field(..., title="Errors")
    unindexed_fields: list[str] | None = Field(
        None,
        description="Fields of the documents no search will find (a document neither searches nor filters on them): stored, returned",
        title="Unindexed Fields",
    )


class DocumentFields(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    created_at: datetime | date | None = Field(None, description="ISO-8601; default: now", title="created_at")
    embedding: list[float] | None = Field(
        None,
        description="Your own vector for the entity instead of the model's: the tenant's vector dimension, finite, not all zero; not returned in reads (docs/api.md, \"Your own vectors\")",
        title="embedding",
    )
    namespace: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="A mission namespace (filterable)", title="namespace"
    )
    owner: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="Filterable", title="owner"
    )
    source: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="Where the entity comes from: a context source (filterable)", title="source"
    )
    text: str | list[str] | None = Field(None, description="Searchable text (boost 1 of 3)", title="text")
    title: str | list[str] | None = Field(None, description="Searchable text (boost 2 of 3)", title="title")
    topic: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, description="Filterable metadata", title="topic")
    trust: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, description="Filterable metadata", title="trust")
    updated_at: datetime | date | None = Field(
        None,
        description="ISO-8601; without `version`, its time in milliseconds is the version",
        title="updated_at",
    )
    version: Annotated[int, Field(ge=0, le=9223372036854775807)] | None = Field(
        None, description="Newer wins; a write older than the stored one is refused (409)", title="version"
    )


class DocumentItem(BaseModel):
    model_config = ConfigDict(
        extra="allow",
        regex_engine="python-re",
    )
    created_at: datetime | date | None = Field(None, description="ISO-8601; default: now", title="created_at")
    embedding: list[float] | None = Field(
        None,
        description="Your own vector for the entity instead of the model's: the tenant's vector dimension, finite, not all zero; not returned in reads (docs/api.md, \"Your own vectors\")",
        title="embedding",
    )
    id: Annotated[
        str,
        StringConstraints(
            pattern=r"^(?!\.\.?(?![\s\S]))[^\x00-\x20\x7f-\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000/#|]{1,256}(?![\s\S])"
        ),
    ] = Field(
        ...,
        description="The entity id: 1-256 characters without whitespace, control characters, '/', '#' or '|', and not '.' or '..'",
        title="id",
    )
    namespace: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="A mission namespace (filterable)", title="namespace"
    )
    owner: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="Filterable", title="owner"
    )
    source: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="Where the entity comes from: a context source (filterable)", title="source"
    )
    text: str | list[str] | None = Field(None, description="Searchable text (boost 1 of 3)", title="text")
    title: str | list[str] | None = Field(None, description="Searchable text (boost 2 of 3)", title="title")
    topic: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, description="Filterable metadata", title="topic")
    trust: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, description="Filterable metadata", title="trust")
    type: Literal["document"] = Field(..., description="The entity type", title="type")
    updated_at: datetime | date | None = Field(
        None,
        description="ISO-8601; without `version`, its time in milliseconds is the version",
        title="updated_at",
    )
    version: Annotated[int, Field(ge=0, le=9223372036854775807)] | None = Field(
        None, description="Newer wins; a write older than the stored one is refused (409)", title="version"
    )


class DocumentPatch(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    created_at: datetime | date | None = Field(None, description="ISO-8601; default: now", title="created_at")
    embedding: list[float] | None = Field(
        None,
        description="Your own vector for the entity instead of the model's: the tenant's vector dimension, finite, not all zero; not returned in reads (docs/api.md, \"Your own vectors\")",
        title="embedding",
    )
    namespace: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="A mission namespace (filterable)", title="namespace"
    )
    owner: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="Filterable", title="owner"
    )
    source: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="Where the entity comes from: a context source (filterable)", title="source"
    )
    text: str | list[str] | None = Field(None, description="Searchable text (boost 1 of 3)", title="text")
    title: str | list[str] | None = Field(None, description="Searchable text (boost 2 of 3)", title="title")
    topic: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, description="Filterable metadata", title="topic")
    trust: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, description="Filterable metadata", title="trust")
    updated_at: datetime | date | None = Field(
        None,
        description="ISO-8601; without `version`, its time in milliseconds is the version",
        title="updated_at",
    )
    version: Annotated[int, Field(ge=0, le=9223372036854775807)] | None = Field(
        None, description="Newer wins; a write older than the stored one is refused (409)", title="version"
    )


class Text(RootModel[Annotated[str, StringConstraints(min_length=1, max_length=8192)]]):
    root: Annotated[str, StringConstraints(min_length=1, max_length=8192)]


class EmbedRequest(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    kind: Literal["query", "passage"] | None = Field(
        "query",
        description="`query`: as a search embeds its query (send the vector as `query_vector`); `passage`: as a write embeds an entity's text (send it as `embedding`)",
        title="Kind",
    )
    texts: list[Text] = Field(
        ...,
        description="1 to 64 texts of 1 to 8192 characters, each embedded on its own (the model reads about its first 1,000 characters)",
        max_length=64,
        min_length=1,
        title="Texts",
    )


class EmbedResponse(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    dimension: Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] = Field(
        ..., description="Numbers per vector", title="Dimension"
    )
    kind: Literal["query", "passage"] = Field(..., title="Kind")
    model: str = Field(..., description="The model the tenant's vectors come from", title="Model")
    vectors: list[list[float]] = Field(..., title="Vectors")


class EntityOut(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    chunks: Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] = Field(
        ..., description="Indexed chunks (long documents are split)", title="Chunks"
    )
    created_at: str = Field(..., title="Created At")
    embedded: bool = Field(
        ...,
        description="True when the entity has its vectors: every indexed chunk the model's, or the caller's own `embedding` (one per entity)",
        title="Embedded",
    )
    entity_id: str = Field(..., title="Entity Id")
    entity_type: str = Field(..., title="Entity Type")
    fields: dict[str, Any] = Field(
        ...,
        description="The entity's fields as stored, without what is shown above (version, source, owner, namespace, updated_at)",
        title="Fields",
    )
    metadata: dict[str, Any] = Field(..., title="Metadata")
    namespace: str | None = Field(..., title="Namespace")
    owner: str | None = Field(..., title="Owner")
    source: str = Field(..., title="Source")
    title: str = Field(..., title="Title")
    updated_at: str = Field(..., title="Updated At")
    version: Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] = Field(
        ..., title="Version"
    )


class EntityPage(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    data: list[EntityOut] = Field(..., title="Data")
    next_cursor: str | None = Field(..., title="Next Cursor")


class EntityRef(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    id: Annotated[str, StringConstraints(min_length=1, max_length=256)] = Field(..., title="Id")
    type: Literal["commitment", "document", "idea", "memory", "person", "project", "task"] = Field(
        ..., title="Type"
    )


class EraseReport(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    cache_entries_removed: Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] = Field(
        ..., title="Cache Entries Removed"
    )
    entities_removed: Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] = Field(
        ..., title="Entities Removed"
    )
    fenced_at: str = Field(..., title="Fenced At")
    job_parts_discarded: Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] = Field(
        ..., title="Job Parts Discarded"
    )
    jobs_removed: Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] = Field(
        ..., title="Jobs Removed"
    )
    reopen_after: str = Field(..., title="Reopen After")
    state_rows_removed: Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] = Field(
        ..., title="State Rows Removed"
    )
    tenant_id: str = Field(..., title="Tenant Id")


class EraseRequest(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    confirm: Annotated[str, StringConstraints(min_length=1, max_length=256)] = Field(
        ..., description="Must equal the caller's tenant id", title="Confirm"
    )


class Error1(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    code: str = Field(..., description="stable, machine-readable")
    fields: dict[str, str]
    message: str


class Error(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    error: Error1


class EvalOut(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    at: str = Field(..., title="At")
    metrics: dict[str, Any] = Field(..., title="Metrics")
    name: str = Field(..., title="Name")


class EvalsResponse(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    data: list[EvalOut] = Field(..., title="Data")


class FeedbackRequest(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    assembly_id: Annotated[str, StringConstraints(min_length=1, max_length=128)] = Field(
        ..., title="Assembly Id"
    )
    tokens_used: Annotated[int, Field(ge=0, le=9223372036854775807)] | None = Field(None, title="Tokens Used")
    used_source_ids: list[str] = Field(..., max_length=1000, title="Used Source Ids")


class FeedbackResponse(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    assembly_id: str = Field(..., title="Assembly Id")
    ignored_ids: list[str] = Field(..., title="Ignored Ids")
    recorded_ids: list[str] = Field(..., title="Recorded Ids")
    success: bool = Field(..., title="Success")


class FilterOperators(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    exists: bool | None = Field(None, description="true: has a value; false: has none")
    gt: (
        Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | Annotated[
            str,
            StringConstraints(
                pattern=r"^[0-9]{4}-[0-9]{2}-[0-9]{2}([T ][0-9]{2}:[0-9]{2}(:[0-9]{2}([.,][0-9]+)?)?(Z|[+-][0-9]{2}:?[0-9]{2})?)?$"
            ),
        ]
        | None
    ) = None
    gte: (
        Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | Annotated[
            str,
            StringConstraints(
                pattern=r"^[0-9]{4}-[0-9]{2}-[0-9]{2}([T ][0-9]{2}:[0-9]{2}(:[0-9]{2}([.,][0-9]+)?)?(Z|[+-][0-9]{2}:?[0-9]{2})?)?$"
            ),
        ]
        | None
    ) = None
    in_: (
        list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, alias="in", description="any of these", min_length=1)
    lt: (
        Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | Annotated[
            str,
            StringConstraints(
                pattern=r"^[0-9]{4}-[0-9]{2}-[0-9]{2}([T ][0-9]{2}:[0-9]{2}(:[0-9]{2}([.,][0-9]+)?)?(Z|[+-][0-9]{2}:?[0-9]{2})?)?$"
            ),
        ]
        | None
    ) = None
    lte: (
        Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | Annotated[
            str,
            StringConstraints(
                pattern=r"^[0-9]{4}-[0-9]{2}-[0-9]{2}([T ][0-9]{2}:[0-9]{2}(:[0-9]{2}([.,][0-9]+)?)?(Z|[+-][0-9]{2}:?[0-9]{2})?)?$"
            ),
        ]
        | None
    ) = None
    not_: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, alias="not", description="none of these (no value passes)")


class ExpectedId(
    RootModel[
        Annotated[
            str,
            StringConstraints(
                pattern=r"[^\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]",
                min_length=1,
                max_length=200,
            ),
        ]
    ]
):
    root: Annotated[
        str,
        StringConstraints(
            pattern=r"[^\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]",
            min_length=1,
            max_length=200,
        ),
    ]


class GoldenQuery(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    context_summary: (
        Annotated[
            str,
            StringConstraints(
                pattern=r"[^\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]",
                min_length=1,
                max_length=4000,
            ),
        ]
        | None
    ) = Field(None, title="Context Summary")
    expected_ids: list[ExpectedId] = Field(..., max_length=100, min_length=1, title="Expected Ids")
    id: Annotated[str, StringConstraints(min_length=1, max_length=200)] = Field(..., title="Id")
    task_text: Annotated[
        str,
        StringConstraints(
            pattern=r"[^\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]",
            min_length=1,
            max_length=4000,
        ),
    ] = Field(..., title="Task Text")


class IdeaFields(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    category: str | list[str] | None = Field(
        None, description="Searchable text (boost 1 of 3)", title="category"
    )
    created_at: datetime | date | None = Field(None, description="ISO-8601; default: now", title="created_at")
    description: str | list[str] | None = Field(
        None, description="Searchable text (boost 2 of 3)", title="description"
    )
    domain: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, description="Filterable metadata", title="domain")
    embedding: list[float] | None = Field(
        None,
        description="Your own vector for the entity instead of the model's: the tenant's vector dimension, finite, not all zero; not returned in reads (docs/api.md, \"Your own vectors\")",
        title="embedding",
    )
    namespace: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="A mission namespace (filterable)", title="namespace"
    )
    owner: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="Filterable", title="owner"
    )
    source: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="Where the entity comes from: a context source (filterable)", title="source"
    )
    status: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, description="Filterable metadata", title="status")
    tags: str | list[str] | None = Field(None, description="Searchable text (boost 1 of 3)", title="tags")
    title: (
        Annotated[
            str,
            StringConstraints(
                pattern=r"[^\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
            ),
        ]
        | list[str]
    ) = Field(..., description="The idea's title (searchable)", title="title")
    updated_at: datetime | date | None = Field(
        None,
        description="ISO-8601; without `version`, its time in milliseconds is the version",
        title="updated_at",
    )
    version: Annotated[int, Field(ge=0, le=9223372036854775807)] | None = Field(
        None, description="Newer wins; a write older than the stored one is refused (409)", title="version"
    )


class IdeaItem(BaseModel):
    model_config = ConfigDict(
        extra="allow",
        regex_engine="python-re",
    )
    category: str | list[str] | None = Field(
        None, description="Searchable text (boost 1 of 3)", title="category"
    )
    created_at: datetime | date | None = Field(None, description="ISO-8601; default: now", title="created_at")
    description: str | list[str] | None = Field(
        None, description="Searchable text (boost 2 of 3)", title="description"
    )
    domain: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, description="Filterable metadata", title="domain")
    embedding: list[float] | None = Field(
        None,
        description="Your own vector for the entity instead of the model's: the tenant's vector dimension, finite, not all zero; not returned in reads (docs/api.md, \"Your own vectors\")",
        title="embedding",
    )
    id: Annotated[
        str,
        StringConstraints(
            pattern=r"^(?!\.\.?(?![\s\S]))[^\x00-\x20\x7f-\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000/#|]{1,256}(?![\s\S])"
        ),
    ] = Field(
        ...,
        description="The entity id: 1-256 characters without whitespace, control characters, '/', '#' or '|', and not '.' or '..'",
        title="id",
    )
    namespace: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="A mission namespace (filterable)", title="namespace"
    )
    owner: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="Filterable", title="owner"
    )
    source: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="Where the entity comes from: a context source (filterable)", title="source"
    )
    status: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, description="Filterable metadata", title="status")
    tags: str | list[str] | None = Field(None, description="Searchable text (boost 1 of 3)", title="tags")
    title: (
        Annotated[
            str,
            StringConstraints(
                pattern=r"[^\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
            ),
        ]
        | list[str]
    ) = Field(..., description="The idea's title (searchable)", title="title")
    type: Literal["idea"] = Field(..., description="The entity type", title="type")
    updated_at: datetime | date | None = Field(
        None,
        description="ISO-8601; without `version`, its time in milliseconds is the version",
        title="updated_at",
    )
    version: Annotated[int, Field(ge=0, le=9223372036854775807)] | None = Field(
        None, description="Newer wins; a write older than the stored one is refused (409)", title="version"
    )


class IdeaPatch(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    category: str | list[str] | None = Field(
        None, description="Searchable text (boost 1 of 3)", title="category"
    )
    created_at: datetime | date | None = Field(None, description="ISO-8601; default: now", title="created_at")
    description: str | list[str] | None = Field(
        None, description="Searchable text (boost 2 of 3)", title="description"
    )
    domain: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, description="Filterable metadata", title="domain")
    embedding: list[float] | None = Field(
        None,
        description="Your own vector for the entity instead of the model's: the tenant's vector dimension, finite, not all zero; not returned in reads (docs/api.md, \"Your own vectors\")",
        title="embedding",
    )
    namespace: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="A mission namespace (filterable)", title="namespace"
    )
    owner: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="Filterable", title="owner"
    )
    source: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="Where the entity comes from: a context source (filterable)", title="source"
    )
    status: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, description="Filterable metadata", title="status")
    tags: str | list[str] | None = Field(None, description="Searchable text (boost 1 of 3)", title="tags")
    title: str | list[str] | None = Field(None, description="Searchable text (boost 3 of 3)", title="title")
    updated_at: datetime | date | None = Field(
        None,
        description="ISO-8601; without `version`, its time in milliseconds is the version",
        title="updated_at",
    )
    version: Annotated[int, Field(ge=0, le=9223372036854775807)] | None = Field(
        None, description="Newer wins; a write older than the stored one is refused (409)", title="version"
    )


class JobFailure(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    part: Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] = Field(
        ..., description="The part's number (0-based) among the job's parts", title="Part"
    )
    reason: str = Field(
        ..., description="Why, in words a caller may read (the last attempt's error)", title="Reason"
    )


class JsonValue(
    RootModel[
        Optional[
            Union[
                str,
                bool,
                Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)],
                float,
                list[Optional["JsonValue"]],
                dict[str, Optional["JsonValue"]],
            ]
        ]
    ]
):
    root: Optional[
        Union[
            str,
            bool,
            Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)],
            float,
            list[Optional["JsonValue"]],
            dict[str, Optional["JsonValue"]],
        ]
    ] = Field(..., description="Any JSON value; numbers within ±(2^63 - 1), however written (RFC 7493)")


class LogSource(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    id: str = Field(..., title="Id")
    score: float = Field(..., title="Score")
    source: str = Field(..., title="Source")
    tokens: Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] = Field(
        ..., title="Tokens"
    )


class ManualWeightRequest(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    manual: bool | None = Field(True, title="Manual")
    token_share: Annotated[float, Field(ge=0.0, le=0.8)] | None = Field(None, title="Token Share")
    weight: Annotated[float, Field(ge=0.0, le=1.5)] | None = Field(None, title="Weight")


class MemoryFields(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    category: str | list[str] | None = Field(
        None, description="Searchable text (boost 2 of 3)", title="category"
    )
    content: (
        Annotated[
            str,
            StringConstraints(
                pattern=r"[^\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
            ),
        ]
        | list[str]
    ) = Field(..., description="The memory's title (searchable)", title="content")
    created_at: datetime | date | None = Field(None, description="ISO-8601; default: now", title="created_at")
    embedding: list[float] | None = Field(
        None,
        description="Your own vector for the entity instead of the model's: the tenant's vector dimension, finite, not all zero; not returned in reads (docs/api.md, \"Your own vectors\")",
        title="embedding",
    )
    memory_type: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, description="Filterable metadata", title="memory_type")
    namespace: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="A mission namespace (filterable)", title="namespace"
    )
    owner: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="Filterable", title="owner"
    )
    pinned: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, description="Filterable metadata", title="pinned")
    relevance_score: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, description="Filterable metadata", title="relevance_score")
    source: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="Where the entity comes from: a context source (filterable)", title="source"
    )
    source_repo: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, description="Filterable metadata", title="source_repo")
    superseded_by: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, description="Filterable metadata", title="superseded_by")
    supersedes: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, description="Filterable metadata", title="supersedes")
    tags: str | list[str] | None = Field(None, description="Searchable text (boost 1 of 3)", title="tags")
    trust_level: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, description="Filterable metadata", title="trust_level")
    updated_at: datetime | date | None = Field(
        None,
        description="ISO-8601; without `version`, its time in milliseconds is the version",
        title="updated_at",
    )
    version: Annotated[int, Field(ge=0, le=9223372036854775807)] | None = Field(
        None, description="Newer wins; a write older than the stored one is refused (409)", title="version"
    )


class MemoryItem(BaseModel):
    model_config = ConfigDict(
        extra="allow",
        regex_engine="python-re",
    )
    category: str | list[str] | None = Field(
        None, description="Searchable text (boost 2 of 3)", title="category"
    )
    content: (
        Annotated[
            str,
            StringConstraints(
                pattern=r"[^\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
            ),
        ]
        | list[str]
    ) = Field(..., description="The memory's title (searchable)", title="content")
    created_at: datetime | date | None = Field(None, description="ISO-8601; default: now", title="created_at")
    embedding: list[float] | None = Field(
        None,
        description="Your own vector for the entity instead of the model's: the tenant's vector dimension, finite, not all zero; not returned in reads (docs/api.md, \"Your own vectors\")",
        title="embedding",
    )
    id: Annotated[
        str,
        StringConstraints(
            pattern=r"^(?!\.\.?(?![\s\S]))[^\x00-\x20\x7f-\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000/#|]{1,256}(?![\s\S])"
        ),
    ] = Field(
        ...,
        description="The entity id: 1-256 characters without whitespace, control characters, '/', '#' or '|', and not '.' or '..'",
        title="id",
    )
    memory_type: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, description="Filterable metadata", title="memory_type")
    namespace: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="A mission namespace (filterable)", title="namespace"
    )
    owner: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="Filterable", title="owner"
    )
    pinned: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, description="Filterable metadata", title="pinned")
    relevance_score: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, description="Filterable metadata", title="relevance_score")
    source: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="Where the entity comes from: a context source (filterable)", title="source"
    )
    source_repo: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, description="Filterable metadata", title="source_repo")
    superseded_by: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, description="Filterable metadata", title="superseded_by")
    supersedes: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, description="Filterable metadata", title="supersedes")
    tags: str | list[str] | None = Field(None, description="Searchable text (boost 1 of 3)", title="tags")
    trust_level: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, description="Filterable metadata", title="trust_level")
    type: Literal["memory"] = Field(..., description="The entity type", title="type")
    updated_at: datetime | date | None = Field(
        None,
        description="ISO-8601; without `version`, its time in milliseconds is the version",
        title="updated_at",
    )
    version: Annotated[int, Field(ge=0, le=9223372036854775807)] | None = Field(
        None, description="Newer wins; a write older than the stored one is refused (409)", title="version"
    )


class MemoryPatch(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    category: str | list[str] | None = Field(
        None, description="Searchable text (boost 2 of 3)", title="category"
    )
    content: str | list[str] | None = Field(
        None, description="Searchable text (boost 3 of 3)", title="content"
    )
    created_at: datetime | date | None = Field(None, description="ISO-8601; default: now", title="created_at")
    embedding: list[float] | None = Field(
        None,
        description="Your own vector for the entity instead of the model's: the tenant's vector dimension, finite, not all zero; not returned in reads (docs/api.md, \"Your own vectors\")",
        title="embedding",
    )
    memory_type: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, description="Filterable metadata", title="memory_type")
    namespace: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="A mission namespace (filterable)", title="namespace"
    )
    owner: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="Filterable", title="owner"
    )
    pinned: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, description="Filterable metadata", title="pinned")
    relevance_score: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, description="Filterable metadata", title="relevance_score")
    source: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="Where the entity comes from: a context source (filterable)", title="source"
    )
    source_repo: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, description="Filterable metadata", title="source_repo")
    superseded_by: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, description="Filterable metadata", title="superseded_by")
    supersedes: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, description="Filterable metadata", title="supersedes")
    tags: str | list[str] | None = Field(None, description="Searchable text (boost 1 of 3)", title="tags")
    trust_level: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, description="Filterable metadata", title="trust_level")
    updated_at: datetime | date | None = Field(
        None,
        description="ISO-8601; without `version`, its time in milliseconds is the version",
        title="updated_at",
    )
    version: Annotated[int, Field(ge=0, le=9223372036854775807)] | None = Field(
        None, description="Newer wins; a write older than the stored one is refused (409)", title="version"
    )


class OverlayDeleted(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    deleted: bool = Field(..., title="Deleted")
    role_id: str = Field(..., title="Role Id")


class OverlayEvaluation(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    default: str | None = Field(None, description="The strategy the overlay uses", title="Default")
    message: str | None = Field(None, description="Set when the overlay has no golden set", title="Message")
    min_ndcg_at_10: float | None = Field(None, title="Min Ndcg At 10")
    passed: bool | None = Field(
        None, description="The default strategy reached min_ndcg_at_10", title="Passed"
    )
    queries: Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] = Field(
        ..., title="Queries"
    )
    role_id: str = Field(..., title="Role Id")
    skipped: dict[str, str] | None = Field(
        None, description="Strategies that could not run, and why", title="Skipped"
    )
    strategies: dict[str, dict[str, float]] = Field(
        ..., description="strategy → {ndcg_at_10, recall_at_100, mrr_at_10}", title="Strategies"
    )


class OverlayTuning(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    adopted: dict[str, Any] = Field(..., title="Adopted")
    best: dict[str, Any] = Field(..., title="Best")
    best_ndcg_at_10: float = Field(..., title="Best Ndcg At 10")
    changed: bool = Field(..., title="Changed")
    current: dict[str, Any] = Field(..., title="Current")
    current_ndcg_at_10: float = Field(..., title="Current Ndcg At 10")
    role_id: str = Field(..., title="Role Id")


class PersonFields(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    created_at: datetime | date | None = Field(None, description="ISO-8601; default: now", title="created_at")
    domain: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, description="Filterable metadata", title="domain")
    embedding: list[float] | None = Field(
        None,
        description="Your own vector for the entity instead of the model's: the tenant's vector dimension, finite, not all zero; not returned in reads (docs/api.md, \"Your own vectors\")",
        title="embedding",
    )
    name: (
        Annotated[
            str,
            StringConstraints(
                pattern=r"[^\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
            ),
        ]
        | list[str]
    ) = Field(..., description="The person's title (searchable)", title="name")
    namespace: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="A mission namespace (filterable)", title="namespace"
    )
    notes: str | list[str] | None = Field(None, description="Searchable text (boost 1 of 3)", title="notes")
    organization: str | list[str] | None = Field(
        None, description="Searchable text (boost 2 of 3)", title="organization"
    )
    owner: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="Filterable", title="owner"
    )
    relationship: str | list[str] | None = Field(
        None, description="Searchable text (boost 1 of 3)", title="relationship"
    )
    role: str | list[str] | None = Field(None, description="Searchable text (boost 1 of 3)", title="role")
    source: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="Where the entity comes from: a context source (filterable)", title="source"
    )
    updated_at: datetime | date | None = Field(
        None,
        description="ISO-8601; without `version`, its time in milliseconds is the version",
        title="updated_at",
    )
    version: Annotated[int, Field(ge=0, le=9223372036854775807)] | None = Field(
        None, description="Newer wins; a write older than the stored one is refused (409)", title="version"
    )


class PersonItem(BaseModel):
    model_config = ConfigDict(
        extra="allow",
        regex_engine="python-re",
    )
    created_at: datetime | date | None = Field(None, description="ISO-8601; default: now", title="created_at")
    domain: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, description="Filterable metadata", title="domain")
    embedding: list[float] | None = Field(
        None,
        description="Your own vector for the entity instead of the model's: the tenant's vector dimension, finite, not all zero; not returned in reads (docs/api.md, \"Your own vectors\")",
        title="embedding",
    )
    id: Annotated[
        str,
        StringConstraints(
            pattern=r"^(?!\.\.?(?![\s\S]))[^\x00-\x20\x7f-\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000/#|]{1,256}(?![\s\S])"
        ),
    ] = Field(
        ...,
        description="The entity id: 1-256 characters without whitespace, control characters, '/', '#' or '|', and not '.' or '..'",
        title="id",
    )
    name: (
        Annotated[
            str,
            StringConstraints(
                pattern=r"[^\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
            ),
        ]
        | list[str]
    ) = Field(..., description="The person's title (searchable)", title="name")
    namespace: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="A mission namespace (filterable)", title="namespace"
    )
    notes: str | list[str] | None = Field(None, description="Searchable text (boost 1 of 3)", title="notes")
    organization: str | list[str] | None = Field(
        None, description="Searchable text (boost 2 of 3)", title="organization"
    )
    owner: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="Filterable", title="owner"
    )
    relationship: str | list[str] | None = Field(
        None, description="Searchable text (boost 1 of 3)", title="relationship"
    )
    role: str | list[str] | None = Field(None, description="Searchable text (boost 1 of 3)", title="role")
    source: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="Where the entity comes from: a context source (filterable)", title="source"
    )
    type: Literal["person"] = Field(..., description="The entity type", title="type")
    updated_at: datetime | date | None = Field(
        None,
        description="ISO-8601; without `version`, its time in milliseconds is the version",
        title="updated_at",
    )
    version: Annotated[int, Field(ge=0, le=9223372036854775807)] | None = Field(
        None, description="Newer wins; a write older than the stored one is refused (409)", title="version"
    )


class PersonPatch(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    created_at: datetime | date | None = Field(None, description="ISO-8601; default: now", title="created_at")
    domain: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, description="Filterable metadata", title="domain")
    embedding: list[float] | None = Field(
        None,
        description="Your own vector for the entity instead of the model's: the tenant's vector dimension, finite, not all zero; not returned in reads (docs/api.md, \"Your own vectors\")",
        title="embedding",
    )
    name: str | list[str] | None = Field(None, description="Searchable text (boost 3 of 3)", title="name")
    namespace: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="A mission namespace (filterable)", title="namespace"
    )
    notes: str | list[str] | None = Field(None, description="Searchable text (boost 1 of 3)", title="notes")
    organization: str | list[str] | None = Field(
        None, description="Searchable text (boost 2 of 3)", title="organization"
    )
    owner: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="Filterable", title="owner"
    )
    relationship: str | list[str] | None = Field(
        None, description="Searchable text (boost 1 of 3)", title="relationship"
    )
    role: str | list[str] | None = Field(None, description="Searchable text (boost 1 of 3)", title="role")
    source: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="Where the entity comes from: a context source (filterable)", title="source"
    )
    updated_at: datetime | date | None = Field(
        None,
        description="ISO-8601; without `version`, its time in milliseconds is the version",
        title="updated_at",
    )
    version: Annotated[int, Field(ge=0, le=9223372036854775807)] | None = Field(
        None, description="Newer wins; a write older than the stored one is refused (409)", title="version"
    )


class ProjectFields(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    created_at: datetime | date | None = Field(None, description="ISO-8601; default: now", title="created_at")
    description: str | list[str] | None = Field(
        None, description="Searchable text (boost 2 of 3)", title="description"
    )
    domain: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, description="Filterable metadata", title="domain")
    embedding: list[float] | None = Field(
        None,
        description="Your own vector for the entity instead of the model's: the tenant's vector dimension, finite, not all zero; not returned in reads (docs/api.md, \"Your own vectors\")",
        title="embedding",
    )
    name: (
        Annotated[
            str,
            StringConstraints(
                pattern=r"[^\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
            ),
        ]
        | list[str]
    ) = Field(..., description="The project's title (searchable)", title="name")
    namespace: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="A mission namespace (filterable)", title="namespace"
    )
    objective: str | list[str] | None = Field(
        None, description="Searchable text (boost 2 of 3)", title="objective"
    )
    owner: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="Filterable", title="owner"
    )
    source: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="Where the entity comes from: a context source (filterable)", title="source"
    )
    status: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, description="Filterable metadata", title="status")
    tags: str | list[str] | None = Field(None, description="Searchable text (boost 1 of 3)", title="tags")
    updated_at: datetime | date | None = Field(
        None,
        description="ISO-8601; without `version`, its time in milliseconds is the version",
        title="updated_at",
    )
    version: Annotated[int, Field(ge=0, le=9223372036854775807)] | None = Field(
        None, description="Newer wins; a write older than the stored one is refused (409)", title="version"
    )


class ProjectItem(BaseModel):
    model_config = ConfigDict(
        extra="allow",
        regex_engine="python-re",
    )
    created_at: datetime | date | None = Field(None, description="ISO-8601; default: now", title="created_at")
    description: str | list[str] | None = Field(
        None, description="Searchable text (boost 2 of 3)", title="description"
    )
    domain: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, description="Filterable metadata", title="domain")
    embedding: list[float] | None = Field(
        None,
        description="Your own vector for the entity instead of the model's: the tenant's vector dimension, finite, not all zero; not returned in reads (docs/api.md, \"Your own vectors\")",
        title="embedding",
    )
    id: Annotated[
        str,
        StringConstraints(
            pattern=r"^(?!\.\.?(?![\s\S]))[^\x00-\x20\x7f-\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000/#|]{1,256}(?![\s\S])"
        ),
    ] = Field(
        ...,
        description="The entity id: 1-256 characters without whitespace, control characters, '/', '#' or '|', and not '.' or '..'",
        title="id",
    )
    name: (
        Annotated[
            str,
            StringConstraints(
                pattern=r"[^\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
            ),
        ]
        | list[str]
    ) = Field(..., description="The project's title (searchable)", title="name")
    namespace: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="A mission namespace (filterable)", title="namespace"
    )
    objective: str | list[str] | None = Field(
        None, description="Searchable text (boost 2 of 3)", title="objective"
    )
    owner: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="Filterable", title="owner"
    )
    source: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="Where the entity comes from: a context source (filterable)", title="source"
    )
    status: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, description="Filterable metadata", title="status")
    tags: str | list[str] | None = Field(None, description="Searchable text (boost 1 of 3)", title="tags")
    type: Literal["project"] = Field(..., description="The entity type", title="type")
    updated_at: datetime | date | None = Field(
        None,
        description="ISO-8601; without `version`, its time in milliseconds is the version",
        title="updated_at",
    )
    version: Annotated[int, Field(ge=0, le=9223372036854775807)] | None = Field(
        None, description="Newer wins; a write older than the stored one is refused (409)", title="version"
    )


class ProjectPatch(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    created_at: datetime | date | None = Field(None, description="ISO-8601; default: now", title="created_at")
    description: str | list[str] | None = Field(
        None, description="Searchable text (boost 2 of 3)", title="description"
    )
    domain: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, description="Filterable metadata", title="domain")
    embedding: list[float] | None = Field(
        None,
        description="Your own vector for the entity instead of the model's: the tenant's vector dimension, finite, not all zero; not returned in reads (docs/api.md, \"Your own vectors\")",
        title="embedding",
    )
    name: str | list[str] | None = Field(None, description="Searchable text (boost 3 of 3)", title="name")
    namespace: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="A mission namespace (filterable)", title="namespace"
    )
    objective: str | list[str] | None = Field(
        None, description="Searchable text (boost 2 of 3)", title="objective"
    )
    owner: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="Filterable", title="owner"
    )
    source: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="Where the entity comes from: a context source (filterable)", title="source"
    )
    status: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, description="Filterable metadata", title="status")
    tags: str | list[str] | None = Field(None, description="Searchable text (boost 1 of 3)", title="tags")
    updated_at: datetime | date | None = Field(
        None,
        description="ISO-8601; without `version`, its time in milliseconds is the version",
        title="updated_at",
    )
    version: Annotated[int, Field(ge=0, le=9223372036854775807)] | None = Field(
        None, description="Newer wins; a write older than the stored one is refused (409)", title="version"
    )


class QueryInfo(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    cache: Literal["hit", "miss", "bypass"] = Field(..., title="Cache")
    degraded: bool = Field(..., title="Degraded")
    degraded_reason: str | None = Field(None, title="Degraded Reason")
    entities_searched: list[str] = Field(..., title="Entities Searched")
    fallback: str | None = Field(None, title="Fallback")
    original_query: str = Field(..., title="Original Query")
    parsed_query: str = Field(..., title="Parsed Query")
    query_shape: Literal["question", "identifier", "plain"] | None = Field("plain", title="Query Shape")
    strategy: str = Field(..., title="Strategy")
    terms_truncated: bool | None = Field(False, title="Terms Truncated")


class RejectReason(
    RootModel[
        Literal[
            "forbidden_source", "below_min_trust", "below_min_score", "stale", "near_duplicate", "over_limit"
        ]
    ]
):
    root: Literal[
        "forbidden_source", "below_min_trust", "below_min_score", "stale", "near_duplicate", "over_limit"
    ] = Field(
        ...,
        description="Why a candidate was dropped; checked in this order, the first that applies is reported.",
        title="RejectReason",
    )


class RejectedCandidate(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    chunk_id: Annotated[str, StringConstraints(min_length=1)] = Field(..., title="Chunk Id")
    detail: Annotated[str, StringConstraints(min_length=1)] = Field(..., title="Detail")
    document_id: Annotated[str, StringConstraints(min_length=1)] = Field(..., title="Document Id")
    final: float | None = Field(..., title="Final")
    reason: RejectReason
    relevance: float = Field(..., title="Relevance")
    source: str = Field(..., title="Source")
    title: str = Field(..., title="Title")


class ReopenReport(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    cache_entries_removed: Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] = Field(
        ..., title="Cache Entries Removed"
    )
    entities_removed: Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] = Field(
        ..., title="Entities Removed"
    )
    jobs_removed: Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] = Field(
        ..., title="Jobs Removed"
    )
    reopened_at: str = Field(..., title="Reopened At")
    state_rows_removed: Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] = Field(
        ..., title="State Rows Removed"
    )
    tenant_id: str = Field(..., title="Tenant Id")


class RetrievalDiagnostics(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    counts: dict[str, Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]] = Field(
        ..., title="Counts"
    )
    degraded_reason: str | None = Field(None, title="Degraded Reason")
    depth: Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] = Field(..., title="Depth")
    embedder: str | None = Field(..., title="Embedder")
    timings_ms: dict[str, float] = Field(..., title="Timings Ms")


class RetrieverExplanation(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    rank: Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | None = Field(
        ..., title="Rank"
    )
    score: float | None = Field(
        ...,
        description="The retriever's own score, not normalised: BM25 for the keyword leg, cosine for the vector leg",
        title="Score",
    )


class AntiGoal(RootModel[Annotated[str, StringConstraints(min_length=1, max_length=500)]]):
    root: Annotated[str, StringConstraints(min_length=1, max_length=500)]


class BoostItem(
    RootModel[
        Annotated[
            str,
            StringConstraints(
                pattern=r"[^\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]",
                min_length=1,
                max_length=100,
            ),
        ]
    ]
):
    root: Annotated[
        str,
        StringConstraints(
            pattern=r"[^\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]",
            min_length=1,
            max_length=100,
        ),
    ]


class SuppressItem(
    RootModel[
        Annotated[
            str,
            StringConstraints(
                pattern=r"[^\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]",
                min_length=1,
                max_length=100,
            ),
        ]
    ]
):
    root: Annotated[
        str,
        StringConstraints(
            pattern=r"[^\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]",
            min_length=1,
            max_length=100,
        ),
    ]


class RoleVocabulary(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    boost: list[BoostItem] | None = Field(None, max_length=100, title="Boost")
    suppress: list[SuppressItem] | None = Field(None, max_length=100, title="Suppress")


class ScoreBreakdown(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    final: float = Field(..., description="Σ wᵢ·signalᵢ / Σ wᵢ × penalty: the ranking score", title="Final")
    freshness: float = Field(
        ..., description="1 / (1 + ln(1 + age_days)); 1 when the age is unknown", title="Freshness"
    )
    fused: float = Field(
        ..., description="the ordering signal: relevance (convex) or max-normalised RRF", title="Fused"
    )
    lexical: float = Field(..., description="BM25 / max BM25 × share of task terms matched", title="Lexical")
    mmr: float | None = Field(None, description="λ·final − (1−λ)·max similarity to chosen", title="Mmr")
    penalty: float = Field(
        ..., description="multiplier < 1 when a suppressed term or an anti-goal matches", title="Penalty"
    )
    preference: float = Field(..., description="1 for a preferred source, else 0", title="Preference")
    relevance: float = Field(
        ..., description="α·vector + (1−α)·lexical: checked against min_score", title="Relevance"
    )
    trust: float = Field(..., title="Trust")
    vector: float = Field(
        ..., description="cosine similarity to the semantic query (0 below the noise floor)", title="Vector"
    )


class ScoreWeights(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    freshness: Annotated[float, Field(ge=0.0, le=1.0)] | None = Field(0.1, title="Freshness")
    preference: Annotated[float, Field(ge=0.0, le=1.0)] | None = Field(0.1, title="Preference")
    relevance: Annotated[float, Field(le=1.0, gt=0.0)] | None = Field(0.7, title="Relevance")
    trust: Annotated[float, Field(ge=0.0, le=1.0)] | None = Field(0.1, title="Trust")


class ReturnField(RootModel[Annotated[str, StringConstraints(min_length=1, max_length=256)]]):
    root: Annotated[str, StringConstraints(min_length=1, max_length=256)]


class SemanticPart(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    role: Literal["task", "context_summary", "mission"] = Field(..., title="Role")
    text: str = Field(..., title="Text")
    weight: float = Field(..., title="Weight")


class ForbiddenItem(
    RootModel[
        Annotated[
            str,
            StringConstraints(
                pattern=r"[^\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]",
                min_length=1,
                max_length=200,
            ),
        ]
    ]
):
    root: Annotated[
        str,
        StringConstraints(
            pattern=r"[^\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]",
            min_length=1,
            max_length=200,
        ),
    ]


class PreferredItem(
    RootModel[
        Annotated[
            str,
            StringConstraints(
                pattern=r"[^\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]",
                min_length=1,
                max_length=200,
            ),
        ]
    ]
):
    root: Annotated[
        str,
        StringConstraints(
            pattern=r"[^\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]",
            min_length=1,
            max_length=200,
        ),
    ]


class SourcePolicy(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    forbidden: list[ForbiddenItem] | None = Field(None, max_length=100, title="Forbidden")
    min_trust: Literal["high", "medium", "low"] | None = Field(
        None, description="Candidates whose trust is below this level are rejected", title="Min Trust"
    )
    preferred: list[PreferredItem] | None = Field(None, max_length=100, title="Preferred")


class SourceShare(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    preferred: bool = Field(..., title="Preferred")
    selected: Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] = Field(
        ..., title="Selected"
    )
    source: str = Field(..., title="Source")
    trust: Literal["high", "medium", "low", "unknown"] = Field(..., title="Trust")


class Instruction(
    RootModel[
        Annotated[
            str,
            StringConstraints(
                pattern=r"[^\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]",
                min_length=1,
                max_length=4000,
            ),
        ]
    ]
):
    root: Annotated[
        str,
        StringConstraints(
            pattern=r"[^\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]",
            min_length=1,
            max_length=4000,
        ),
    ]


class SynthesisPolicy(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    citation_required: bool | None = Field(True, title="Citation Required")
    format: Annotated[str, StringConstraints(max_length=200)] | None = Field(None, title="Format")
    instructions: list[Instruction] | None = Field(None, max_length=100, title="Instructions")
    max_tokens: Annotated[int, Field(ge=1, le=16000)] | None = Field(None, title="Max Tokens")


class TaskFields(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    contexts: str | list[str] | None = Field(
        None, description="Searchable text (boost 1 of 3)", title="contexts"
    )
    created_at: datetime | date | None = Field(None, description="ISO-8601; default: now", title="created_at")
    description: str | list[str] | None = Field(
        None, description="Searchable text (boost 2 of 3)", title="description"
    )
    domain: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, description="Filterable metadata", title="domain")
    due_date: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, description="Filterable metadata", title="due_date")
    embedding: list[float] | None = Field(
        None,
        description="Your own vector for the entity instead of the model's: the tenant's vector dimension, finite, not all zero; not returned in reads (docs/api.md, \"Your own vectors\")",
        title="embedding",
    )
    namespace: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="A mission namespace (filterable)", title="namespace"
    )
    owner: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="Filterable", title="owner"
    )
    project_id: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, description="Filterable metadata", title="project_id")
    project_name: str | list[str] | None = Field(
        None, description="Searchable text (boost 1 of 3)", title="project_name"
    )
    source: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="Where the entity comes from: a context source (filterable)", title="source"
    )
    status: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, description="Filterable metadata", title="status")
    tags: str | list[str] | None = Field(None, description="Searchable text (boost 1 of 3)", title="tags")
    title: (
        Annotated[
            str,
            StringConstraints(
                pattern=r"[^\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
            ),
        ]
        | list[str]
    ) = Field(..., description="The task's title (searchable)", title="title")
    updated_at: datetime | date | None = Field(
        None,
        description="ISO-8601; without `version`, its time in milliseconds is the version",
        title="updated_at",
    )
    version: Annotated[int, Field(ge=0, le=9223372036854775807)] | None = Field(
        None, description="Newer wins; a write older than the stored one is refused (409)", title="version"
    )


class TaskItem(BaseModel):
    model_config = ConfigDict(
        extra="allow",
        regex_engine="python-re",
    )
    contexts: str | list[str] | None = Field(
        None, description="Searchable text (boost 1 of 3)", title="contexts"
    )
    created_at: datetime | date | None = Field(None, description="ISO-8601; default: now", title="created_at")
    description: str | list[str] | None = Field(
        None, description="Searchable text (boost 2 of 3)", title="description"
    )
    domain: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, description="Filterable metadata", title="domain")
    due_date: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, description="Filterable metadata", title="due_date")
    embedding: list[float] | None = Field(
        None,
        description="Your own vector for the entity instead of the model's: the tenant's vector dimension, finite, not all zero; not returned in reads (docs/api.md, \"Your own vectors\")",
        title="embedding",
    )
    id: Annotated[
        str,
        StringConstraints(
            pattern=r"^(?!\.\.?(?![\s\S]))[^\x00-\x20\x7f-\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000/#|]{1,256}(?![\s\S])"
        ),
    ] = Field(
        ...,
        description="The entity id: 1-256 characters without whitespace, control characters, '/', '#' or '|', and not '.' or '..'",
        title="id",
    )
    namespace: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="A mission namespace (filterable)", title="namespace"
    )
    owner: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="Filterable", title="owner"
    )
    project_id: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, description="Filterable metadata", title="project_id")
    project_name: str | list[str] | None = Field(
        None, description="Searchable text (boost 1 of 3)", title="project_name"
    )
    source: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="Where the entity comes from: a context source (filterable)", title="source"
    )
    status: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, description="Filterable metadata", title="status")
    tags: str | list[str] | None = Field(None, description="Searchable text (boost 1 of 3)", title="tags")
    title: (
        Annotated[
            str,
            StringConstraints(
                pattern=r"[^\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
            ),
        ]
        | list[str]
    ) = Field(..., description="The task's title (searchable)", title="title")
    type: Literal["task"] = Field(..., description="The entity type", title="type")
    updated_at: datetime | date | None = Field(
        None,
        description="ISO-8601; without `version`, its time in milliseconds is the version",
        title="updated_at",
    )
    version: Annotated[int, Field(ge=0, le=9223372036854775807)] | None = Field(
        None, description="Newer wins; a write older than the stored one is refused (409)", title="version"
    )


class TaskPatch(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    contexts: str | list[str] | None = Field(
        None, description="Searchable text (boost 1 of 3)", title="contexts"
    )
    created_at: datetime | date | None = Field(None, description="ISO-8601; default: now", title="created_at")
    description: str | list[str] | None = Field(
        None, description="Searchable text (boost 2 of 3)", title="description"
    )
    domain: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, description="Filterable metadata", title="domain")
    due_date: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, description="Filterable metadata", title="due_date")
    embedding: list[float] | None = Field(
        None,
        description="Your own vector for the entity instead of the model's: the tenant's vector dimension, finite, not all zero; not returned in reads (docs/api.md, \"Your own vectors\")",
        title="embedding",
    )
    namespace: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="A mission namespace (filterable)", title="namespace"
    )
    owner: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="Filterable", title="owner"
    )
    project_id: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, description="Filterable metadata", title="project_id")
    project_name: str | list[str] | None = Field(
        None, description="Searchable text (boost 1 of 3)", title="project_name"
    )
    source: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="Where the entity comes from: a context source (filterable)", title="source"
    )
    status: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, description="Filterable metadata", title="status")
    tags: str | list[str] | None = Field(None, description="Searchable text (boost 1 of 3)", title="tags")
    title: str | list[str] | None = Field(None, description="Searchable text (boost 3 of 3)", title="title")
    updated_at: datetime | date | None = Field(
        None,
        description="ISO-8601; without `version`, its time in milliseconds is the version",
        title="updated_at",
    )
    version: Annotated[int, Field(ge=0, le=9223372036854775807)] | None = Field(
        None, description="Newer wins; a write older than the stored one is refused (409)", title="version"
    )


class TextFilterOperators(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    exists: bool | None = Field(None, description="true: has a value; false: has none")
    in_: (
        list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, alias="in", description="any of these", min_length=1)
    not_: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | None
    ) = Field(None, alias="not", description="none of these (no value passes)")


class TimeRange(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    gt: (
        Annotated[
            str,
            StringConstraints(
                pattern=r"^[0-9]{4}-[0-9]{2}-[0-9]{2}([T ][0-9]{2}:[0-9]{2}(:[0-9]{2}([.,][0-9]+)?)?(Z|[+-][0-9]{2}:?[0-9]{2})?)?$"
            ),
        ]
        | None
    ) = Field(None, description="an ISO 8601 date or date-time")
    gte: (
        Annotated[
            str,
            StringConstraints(
                pattern=r"^[0-9]{4}-[0-9]{2}-[0-9]{2}([T ][0-9]{2}:[0-9]{2}(:[0-9]{2}([.,][0-9]+)?)?(Z|[+-][0-9]{2}:?[0-9]{2})?)?$"
            ),
        ]
        | None
    ) = Field(None, description="an ISO 8601 date or date-time")
    lt: (
        Annotated[
            str,
            StringConstraints(
                pattern=r"^[0-9]{4}-[0-9]{2}-[0-9]{2}([T ][0-9]{2}:[0-9]{2}(:[0-9]{2}([.,][0-9]+)?)?(Z|[+-][0-9]{2}:?[0-9]{2})?)?$"
            ),
        ]
        | None
    ) = Field(None, description="an ISO 8601 date or date-time")
    lte: (
        Annotated[
            str,
            StringConstraints(
                pattern=r"^[0-9]{4}-[0-9]{2}-[0-9]{2}([T ][0-9]{2}:[0-9]{2}(:[0-9]{2}([.,][0-9]+)?)?(Z|[+-][0-9]{2}:?[0-9]{2})?)?$"
            ),
        ]
        | None
    ) = Field(None, description="an ISO 8601 date or date-time")


class WarningState(
    RootModel[
        Literal["healthy", "no_overlay", "no_strong_match", "stale_dominant", "forbidden_hit", "conflicting"]
    ]
):
    root: Literal[
        "healthy", "no_overlay", "no_strong_match", "stale_dominant", "forbidden_hit", "conflicting"
    ] = Field(
        ...,
        description="Degradation signals of a bundle (each state with the action it asks for and when it is raised).",
        title="WarningState",
    )


class WeightAdjustmentOut(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    caller: str = Field(..., title="Caller")
    effectiveness: float = Field(..., title="Effectiveness")
    new_share: float = Field(..., title="New Share")
    new_weight: float = Field(..., title="New Weight")
    old_share: float = Field(..., title="Old Share")
    old_weight: float = Field(..., title="Old Weight")
    source: str = Field(..., title="Source")
    tenant_id: str = Field(..., title="Tenant Id")


class WeightChangeOut(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    at: str = Field(..., title="At")
    caller: str = Field(..., title="Caller")
    new_share: float = Field(..., title="New Share")
    new_weight: float = Field(..., title="New Weight")
    old_share: float = Field(..., title="Old Share")
    old_weight: float = Field(..., title="Old Weight")
    reason: str = Field(..., title="Reason")
    source: str = Field(..., title="Source")


class WeightHistoryResponse(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    data: list[WeightChangeOut] = Field(..., title="Data")


class WeightOut(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    caller: str = Field(..., title="Caller")
    manual: bool = Field(..., title="Manual")
    source: str = Field(..., title="Source")
    token_share: float = Field(..., title="Token Share")
    updated_at: str = Field(..., title="Updated At")
    weight: float = Field(..., title="Weight")


class WeightsResponse(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    default_token_share: float = Field(..., title="Default Token Share")
    default_weight: float = Field(..., title="Default Weight")
    next_cursor: str | None = Field(None, title="Next Cursor")
    sources: list[str] = Field(..., title="Sources")
    weights: list[WeightOut] = Field(..., title="Weights")


class WriteResponse(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    entity_id: str = Field(..., title="Entity Id")
    entity_type: str = Field(..., title="Entity Type")
    message: str | None = Field(None, title="Message")
    outcome: Literal["applied", "stale", "duplicate"] = Field(..., title="Outcome")
    reembedded: bool = Field(..., title="Reembedded")
    unindexed_fields: list[str] | None = Field(
        None,
        description="Fields the entity type neither searches nor filters on: stored and returned, never found",
        title="Unindexed Fields",
    )
    version: Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] = Field(
        ..., title="Version"
    )


class AssembleResponse(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    assembly_id: str | None = Field(..., title="Assembly Id")
    context_block: str = Field(..., title="Context Block")
    retrieval_ms: float = Field(..., title="Retrieval Ms")
    sources: list[ContextSource] = Field(..., title="Sources")
    token_budget: Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] = Field(
        ..., title="Token Budget"
    )
    token_encoding: str | None = Field(
        "estimate", description="What the token figures are counted in", title="Token Encoding"
    )
    total_tokens: Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] = Field(
        ..., title="Total Tokens"
    )
    warnings: list[str] = Field(..., title="Warnings")


class BatchGetRequest(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    items: list[EntityRef] = Field(..., max_length=100, min_length=1, title="Items")


class BatchGetResponse(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    found: list[EntityOut] = Field(..., title="Found")
    missing: list[EntityRef] = Field(
        ..., description="Absent, deleted or another tenant's (indistinguishably)", title="Missing"
    )


class BulkItem(
    RootModel[CommitmentItem | DocumentItem | IdeaItem | MemoryItem | PersonItem | ProjectItem | TaskItem]
):
    root: CommitmentItem | DocumentItem | IdeaItem | MemoryItem | PersonItem | ProjectItem | TaskItem = Field(
        ..., discriminator="type"
    )


class BulkRequest(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    items: list[BulkItem] = Field(
        ...,
        description="Entities: each its `type`, `id` and fields",
        max_length=10000,
        min_length=1,
        title="Items",
    )


class Corpus(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    documents: list[CorpusDocument] = Field(..., max_length=10000, min_length=1)


class EntityFields(
    RootModel[
        CommitmentFields
        | DocumentFields
        | IdeaFields
        | MemoryFields
        | PersonFields
        | ProjectFields
        | TaskFields
    ]
):
    root: (
        CommitmentFields
        | DocumentFields
        | IdeaFields
        | MemoryFields
        | PersonFields
        | ProjectFields
        | TaskFields
    ) = Field(..., description="The fields of an entity of the path's type (see `<Type>Fields`)")


class EntityPatch(
    RootModel[
        CommitmentPatch | DocumentPatch | IdeaPatch | MemoryPatch | PersonPatch | ProjectPatch | TaskPatch
    ]
):
    root: (
        CommitmentPatch | DocumentPatch | IdeaPatch | MemoryPatch | PersonPatch | ProjectPatch | TaskPatch
    ) = Field(
        ..., description="Some fields of an entity of the path's type (see `<Type>Patch`); null removes one"
    )


class EvalProfile(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    golden_set: list[GoldenQuery] | None = Field(None, max_length=200, title="Golden Set")
    min_ndcg_at_10: Annotated[float, Field(ge=0.0, le=1.0)] | None = Field(None, title="Min Ndcg At 10")


class EvalResponse(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    assemblies: Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] = Field(
        ..., title="Assemblies"
    )
    budget_adjustments: list[BudgetAdjustmentOut] = Field(..., title="Budget Adjustments")
    budgets_count: Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] = Field(
        ..., title="Budgets Count"
    )
    callers: Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] = Field(
        ..., title="Callers"
    )
    skipped: list[str] = Field(..., title="Skipped")
    weight_adjustments: list[WeightAdjustmentOut] = Field(..., title="Weight Adjustments")
    weights_count: Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] = Field(
        ..., title="Weights Count"
    )


class Explanation(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    alpha: float = Field(..., title="Alpha")
    fallback: str | None = Field(None, title="Fallback")
    field_boosts: dict[str, Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]] = Field(
        ..., title="Field Boosts"
    )
    fusion: str = Field(..., title="Fusion")
    lexical: RetrieverExplanation
    matched_chunk: Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] = Field(
        ..., title="Matched Chunk"
    )
    vector: RetrieverExplanation


class Job(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    chunks: Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] = Field(
        ..., description="Chunks to embed, estimated from the request", title="Chunks"
    )
    created_at: str = Field(..., title="Created At")
    documents_ingested: Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | None = Field(
        None, description="Corpus jobs: documents ingested so far", title="Documents Ingested"
    )
    errors: list[dict[str, Any]] = Field(
        ...,
        description="The first 100 item errors, by position in the request (`index`, the id, `error`, `fields`)",
        title="Errors",
    )
    errors_total: Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] = Field(
        ..., title="Errors Total"
    )
    failures: list[JobFailure] | None = Field(
        None,
        description="Parts that failed on every attempt; their items can be sent again",
        title="Failures",
    )
    indexed: Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | None = Field(
        None, description="Bulk jobs: items indexed so far", title="Indexed"
    )
    items: Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] = Field(
        ..., description="Items (or corpus documents) in the request", title="Items"
    )
    job_id: str = Field(..., title="Job Id")
    kind: Literal["bulk", "corpus"] = Field(..., title="Kind")
    parts: Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] = Field(..., title="Parts")
    parts_done: Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] = Field(
        ..., title="Parts Done"
    )
    skipped_stale: Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] = Field(
        ..., title="Skipped Stale"
    )
    status: Literal["queued", "running", "done", "failed"] = Field(
        ...,
        description="queued → running → done, or failed once every part is processed and one could not be",
        title="Status",
    )
    unindexed_fields: list[str] | None = Field(
        None,
        description="Fields of the written items their types neither search nor filter on: stored, never found",
        title="Unindexed Fields",
    )
    updated_at: str = Field(..., title="Updated At")


class LogEntryOut(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    assembly_id: str = Field(..., title="Assembly Id")
    budget: Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] = Field(
        ..., title="Budget"
    )
    caller: str = Field(..., title="Caller")
    created_at: str = Field(..., title="Created At")
    feedback_at: str | None = Field(..., title="Feedback At")
    namespace: str | None = Field(..., title="Namespace")
    processed: bool = Field(..., title="Processed")
    query_hash: str = Field(..., title="Query Hash")
    request_id: str | None = Field(..., title="Request Id")
    retrieval_ms: float = Field(..., title="Retrieval Ms")
    sources: list[LogSource] = Field(..., title="Sources")
    tokens_used: Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | None = Field(
        ..., title="Tokens Used"
    )
    total_ms: float = Field(..., title="Total Ms")
    total_tokens: Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] = Field(
        ..., title="Total Tokens"
    )
    used_ids: list[str] | None = Field(..., title="Used Ids")


class LogResponse(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    data: list[LogEntryOut] = Field(..., title="Data")
    next_cursor: str | None = Field(..., title="Next Cursor")


class ProvenanceSummary(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    forbidden_sources_removed: list[str] = Field(..., title="Forbidden Sources Removed")
    freshness_posture: Literal["fresh", "mixed", "stale", "unbounded", "none"] = Field(
        ..., title="Freshness Posture"
    )
    freshness_window_days: Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | None = (
        Field(..., title="Freshness Window Days")
    )
    mean_trust: float | None = Field(..., title="Mean Trust")
    newest_created_at: str | None = Field(..., title="Newest Created At")
    oldest_created_at: str | None = Field(..., title="Oldest Created At")
    sources: list[SourceShare] = Field(..., title="Sources")
    stale_selected: Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] = Field(
        ..., title="Stale Selected"
    )
    trust_posture: Literal["high", "mixed", "low", "none"] = Field(..., title="Trust Posture")


class QueryTrace(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    anti_goals: list[str] = Field(..., title="Anti Goals")
    boost_terms_added: list[str] = Field(..., title="Boost Terms Added")
    context_summary: str | None = Field(..., title="Context Summary")
    fusion: Literal["convex", "rrf"] = Field(..., title="Fusion")
    lexical_terms: list[str] = Field(..., title="Lexical Terms")
    mission: str | None = Field(..., title="Mission")
    mode: Literal["hybrid", "lexical_only", "lexical_degraded", "semantic_only"] = Field(..., title="Mode")
    penalised_terms: list[str] = Field(..., title="Penalised Terms")
    semantic_parts: list[SemanticPart] = Field(..., title="Semantic Parts")
    semantic_weight: float = Field(..., title="Semantic Weight")
    suppress_terms_removed: list[str] = Field(..., title="Suppress Terms Removed")
    task_terms: list[str] = Field(..., title="Task Terms")
    task_text: str = Field(..., title="Task Text")


class RetrievalPolicy(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    diversity: Annotated[float, Field(ge=0.0, le=1.0)] | None = Field(
        0.7, description="MMR λ: 1 = relevance only, 0 = diversity only", title="Diversity"
    )
    freshness_days: Annotated[int, Field(ge=1, le=36500)] | None = Field(
        None, description="Older evidence is stale; null = no freshness window", title="Freshness Days"
    )
    fusion: Literal["convex", "rrf"] | None = Field(
        "convex", description="How the two retrievers' lists are ordered", title="Fusion"
    )
    max_chunks: Annotated[int, Field(ge=1, le=50)] | None = Field(8, title="Max Chunks")
    min_score: Annotated[float, Field(ge=0.0, le=1.0)] | None = Field(
        0.1, description="Least relevance (0..1) a candidate needs", title="Min Score"
    )
    reject_stale: bool | None = Field(
        False, description="Reject stale candidates instead of flagging them", title="Reject Stale"
    )
    semantic_weight: Annotated[float, Field(ge=0.0, le=1.0)] | None = Field(
        0.6, description="α: share of semantic similarity", title="Semantic Weight"
    )
    weights: ScoreWeights | None = None


class RetrievalSummary(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    candidates: Annotated[int, Field(ge=0, le=9223372036854775807)] = Field(..., title="Candidates")
    mean_relevance: float = Field(..., title="Mean Relevance")
    overlay_applied: bool = Field(..., title="Overlay Applied")
    rejected: Annotated[int, Field(ge=0, le=9223372036854775807)] = Field(..., title="Rejected")
    selected: Annotated[int, Field(ge=0, le=9223372036854775807)] = Field(..., title="Selected")
    states: list[WarningState] = Field(..., title="States")
    status: Literal["ok", "warn"] = Field(..., title="Status")
    strong_match: bool = Field(..., title="Strong Match")
    top_relevance: float = Field(..., title="Top Relevance")


class RetrievalWarning(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    action: Literal["continue", "warn"] = Field(..., title="Action")
    chunk_ids: list[str] | None = Field(None, title="Chunk Ids")
    message: Annotated[str, StringConstraints(min_length=1)] = Field(..., title="Message")
    state: WarningState


class RetrievedChunk(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    age_days: float | None = Field(..., title="Age Days")
    chunk_id: Annotated[str, StringConstraints(min_length=1)] = Field(..., title="Chunk Id")
    chunk_no: Annotated[int, Field(ge=0, le=9223372036854775807)] = Field(..., title="Chunk No")
    created_at: str | None = Field(..., title="Created At")
    document_id: Annotated[str, StringConstraints(min_length=1)] = Field(..., title="Document Id")
    lexical_rank: Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | None = Field(
        ..., title="Lexical Rank"
    )
    matched_terms: list[str] = Field(..., title="Matched Terms")
    preferred: bool = Field(..., title="Preferred")
    rank: Annotated[int, Field(ge=1, le=9223372036854775807)] = Field(..., title="Rank")
    reason: Annotated[str, StringConstraints(min_length=1)] = Field(..., title="Reason")
    scores: ScoreBreakdown
    source: str = Field(..., title="Source")
    stale: bool = Field(..., title="Stale")
    text: str = Field(..., title="Text")
    title: str = Field(..., title="Title")
    trust: Literal["high", "medium", "low", "unknown"] = Field(..., title="Trust")
    vector_rank: Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | None = Field(
        ..., title="Vector Rank"
    )


class RoleOverlay(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    anti_goals: list[AntiGoal] | None = Field(None, max_length=100, title="Anti Goals")
    eval_profile: EvalProfile | None = None
    mission: Annotated[
        str,
        StringConstraints(
            pattern=r"[^\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]",
            min_length=1,
            max_length=4000,
        ),
    ] = Field(..., title="Mission")
    retrieval_policy: RetrievalPolicy | None = None
    role_id: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")] = Field(
        ..., title="Role Id"
    )
    source_policy: SourcePolicy | None = None
    synthesis_policy: SynthesisPolicy | None = None
    version: Literal["1.0"] = Field("1.0", title="Version")
    vocabulary: RoleVocabulary | None = None


class RoleOverlayBody(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    anti_goals: list[AntiGoal] | None = Field(None, max_length=100, title="Anti Goals")
    eval_profile: EvalProfile | None = None
    mission: Annotated[
        str,
        StringConstraints(
            pattern=r"[^\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]",
            min_length=1,
            max_length=4000,
        ),
    ] = Field(..., title="Mission")
    retrieval_policy: RetrievalPolicy | None = None
    role_id: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")] | None = Field(
        None, description="Optional; when given it must equal the path's role_id", title="Role Id"
    )
    source_policy: SourcePolicy | None = None
    synthesis_policy: SynthesisPolicy | None = None
    version: Literal["1.0"] = Field("1.0", title="Version")
    vocabulary: RoleVocabulary | None = None


class Filters(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    __annotations__ = {
        "__pydantic_extra__": Dict[
            Literal[
                "category",
                "created_at",
                "domain",
                "due_date",
                "memory_type",
                "namespace",
                "owner",
                "pinned",
                "project_id",
                "relevance_score",
                "source",
                "source_repo",
                "status",
                "superseded_by",
                "supersedes",
                "tags",
                "topic",
                "trust",
                "trust_level",
                "updated_at",
            ],
            str
            | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
            | float
            | bool
            | list[
                str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool
            ]
            | FilterOperators,
        ],
    }
    created_at: TimeRange | None = None
    namespace: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | TextFilterOperators
        | None
    ) = None
    owner: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | TextFilterOperators
        | None
    ) = None
    source: (
        str
        | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]
        | float
        | bool
        | list[str | Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] | float | bool]
        | TextFilterOperators
        | None
    ) = None
    updated_at: TimeRange | None = None


class SearchRequest(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    cursor: Annotated[str, StringConstraints(max_length=1024)] | None = Field(
        None,
        description="`next_cursor` of the previous page; send the same query, entities, filters, strategy and limit. Later pages are read from a snapshot of the ranking, so writes to the tenant do not change them (entities as they were when it was taken). Answers 409 `cursor_expired` when the snapshot's lifetime lapsed, or, without `keep_alive` on the first page, when the tenant's index changed before the second page: start again from the first page.",
        title="Cursor",
    )
    entities: (
        list[
            Literal[
                "commitment",
                "commitments",
                "document",
                "documents",
                "idea",
                "ideas",
                "memories",
                "memory",
                "people",
                "person",
                "persons",
                "project",
                "projects",
                "task",
                "tasks",
            ]
        ]
        | None
    ) = Field(
        None,
        description="Entity types to search, singular or plural (`task`, `tasks`); default all",
        title="Entities",
    )
    explain: bool | None = Field(False, title="Explain")
    facets: (
        list[
            Literal[
                "category",
                "domain",
                "due_date",
                "memory_type",
                "namespace",
                "owner",
                "pinned",
                "project_id",
                "relevance_score",
                "source",
                "source_repo",
                "status",
                "superseded_by",
                "supersedes",
                "tags",
                "topic",
                "trust",
                "trust_level",
            ]
        ]
        | None
    ) = Field(
        None,
        description="Fields to count: entities per value over every match of the query's words within the filters (every entity within them for a semantic search), not only this page",
        title="Facets",
    )
    filters: Filters | None = Field(
        None,
        description="Filters, field → a value, any of a list, or operators that must all hold (FilterOperators); the fields must be filterable for every searched type, or be source, owner, namespace (no ranges), created_at or updated_at (ranges only)",
        title="Filters",
    )
    include_superseded: bool | None = Field(
        False,
        description="Also return memories a newer memory superseded (their history); default: current ones only",
        title="Include Superseded",
    )
    keep_alive: Annotated[int, Field(ge=10, le=3600)] | None = Field(
        None,
        description="Seconds the snapshot behind `next_cursor` lives between two page reads (each read extends it by as much again), 10 to 3600; default 300. Sent on the first page, the snapshot is taken by that page, so no write can expire the cursor (like an OpenSearch point in time); sent with `cursor`, it sets how long this read extends the snapshot.",
        title="Keep Alive",
    )
    limit: Annotated[int, Field(ge=1, le=100)] | None = Field(20, title="Limit")
    min_relevance: Annotated[float, Field(ge=0.0, le=1.0)] | None = Field(
        None,
        description="Memories only (a search with it returns memories alone): leave out those whose decayed relevance (relevance_score halved every 30 days since last use; pinned: never) is below this",
        title="Min Relevance",
    )
    min_score: Annotated[float, Field(ge=0.0, le=1.0)] | None = Field(
        None,
        description="Leave out results whose fused `score` is below this (0-1: fused scores are at most 1)",
        title="Min Score",
    )
    min_trust: Literal["external", "agent", "user"] | None = Field(
        None,
        description="Memories only (a search with it returns memories alone): leave out those trusted less (external < agent < user; none: least)",
        title="Min Trust",
    )
    query: Annotated[str, StringConstraints(max_length=1000)] = Field(
        ...,
        description="What to search for; supports `type:` prefixes, `@name` and quoted phrases. Empty or whitespace: no results (not an error)",
        title="Query",
    )
    query_vector: list[float] | None = Field(
        None,
        description="Your own query vector for the vector leg instead of embedding `query` (as many numbers as the tenant's vector dimension (the deployment model's, e.g. 384, or the one declared for a tenant bringing its own vectors), finite, not all zero; only its direction counts (cosine)); `query` may then be empty (a semantic search). See docs/api.md, \"Your own vectors\"",
        title="Query Vector",
    )
    return_fields: Literal["all", "none"] | list[ReturnField] | None = Field(
        None,
        description="Stored fields in each result's `fields`: `all`, a list of names, or `none` (ids and scores only: no title, snippet or metadata); default: title, snippet and metadata, no `fields`",
        title="Return Fields",
    )
    strategy: Literal["auto", "keyword", "semantic", "hybrid"] | None = Field("auto", title="Strategy")


class SearchResult(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    entity_id: str = Field(..., title="Entity Id")
    entity_type: str = Field(..., title="Entity Type")
    explanation: Explanation | None = None
    fields: dict[str, Any] | None = Field(
        None,
        description="The stored fields asked for with `return_fields` (absent ones left out)",
        title="Fields",
    )
    matched_terms: list[str] | None = Field(
        None,
        description="The query's words found in the title or the matched text; empty: no query word matched",
        title="Matched Terms",
    )
    metadata: dict[str, Any] = Field(..., title="Metadata")
    score: float = Field(..., title="Score")
    snippet: str = Field(..., title="Snippet")
    title: str = Field(..., title="Title")


class RetrievalBundle(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    diagnostics: RetrievalDiagnostics
    provenance: ProvenanceSummary
    query: QueryTrace
    rejected: list[RejectedCandidate] = Field(..., title="Rejected")
    role_id: Annotated[str, StringConstraints(min_length=1)] = Field(..., title="Role Id")
    selected: list[RetrievedChunk] = Field(..., title="Selected")
    summary: RetrievalSummary
    version: Literal["1.0"] = Field("1.0", title="Version")
    warnings: list[RetrievalWarning] = Field(..., min_length=1, title="Warnings")


class RetrieveRequest(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    context_summary: Annotated[str, StringConstraints(max_length=4000)] | None = Field(
        None, title="Context Summary"
    )
    lexical_only: bool | None = Field(
        False, description="BM25 only: no embedder is called", title="Lexical Only"
    )
    overlay: RoleOverlay | None = Field(
        None,
        description="Use this overlay instead of the one stored for role_id; `null`: no overlay at all, the shared corpus only (role-overlay-retrieval-api); absent: the stored one",
    )
    role_id: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")] = Field(
        ..., title="Role Id"
    )
    task_text: Annotated[
        str,
        StringConstraints(
            pattern=r"[^\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]",
            min_length=1,
            max_length=4000,
        ),
    ] = Field(..., title="Task Text")


class SearchResponse(BaseModel):
    model_config = ConfigDict(
        extra="allow",
    )
    facets: (
        dict[str, dict[str, Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)]]] | None
    ) = Field(
        None,
        description="Per field asked for in `facets`: value → entities, most frequent first",
        title="Facets",
    )
    next_cursor: str | None = Field(
        None,
        description="Pass back as `cursor` for the next page; null on the last page",
        title="Next Cursor",
    )
    query_info: QueryInfo
    results: list[SearchResult] = Field(..., title="Results")
    took_ms: float = Field(..., title="Took Ms")
    total: Annotated[int, Field(ge=-9223372036854775807, le=9223372036854775807)] = Field(..., title="Total")


JsonValue.model_rebuild()
