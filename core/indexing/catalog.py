"""Reading back what a tenant stored: listing positions, embedding status, the entity listing's cursor
(tenant-bound, core/cursor.py) and the response models of the read routes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from core.cursor import decode_cursor, encode_cursor
from core.errors import InvalidInputError
from core.indexing.entity_validation import MAX_ID_CHARS

DEFAULT_ENTITY_PAGE = 50  # GET /entities default page size (like the log's page)
MAX_ENTITY_PAGE = 500  # one page stays well under the 6 MB Lambda response limit at ~10 KB per entity
DEFAULT_READ_ROWS = 100  # weight history and eval rows per read
MAX_READ_ROWS = 1000


@dataclass(frozen=True, slots=True, order=True)
class EntityPosition:
    """Where a listing stands: entities are listed by (created_at, entity_type, entity_id), descending."""

    created_at: str
    entity_type: str
    entity_id: str


@dataclass(frozen=True, slots=True)
class EmbeddingStatus:
    """How many chunks an entity has in the index and how many of them carry an embedding."""

    chunks: int
    embedded: int

    @property
    def is_embedded(self) -> bool:
        """True when every chunk has a vector (an entity with no chunks is not embedded)."""
        return self.chunks > 0 and self.embedded == self.chunks


def entity_cursor(tenant_id: str, entity_type: str | None, last: EntityPosition) -> str:
    """The cursor continuing an entity listing after `last` (bound to the type filter too)."""
    position = {"y": entity_type, "c": last.created_at, "e": last.entity_type, "i": last.entity_id}
    return encode_cursor("entities", tenant_id, position)


def entity_position(tenant_id: str, entity_type: str | None, cursor: str) -> EntityPosition:
    """The position an entity cursor continues after; refused when issued for another type filter."""
    p = decode_cursor("entities", tenant_id, cursor)
    fields = (p.get("c"), p.get("e"), p.get("i"))
    if p.get("y") != entity_type or not all(isinstance(f, str) for f in fields):
        raise InvalidInputError(
            "invalid cursor", {"cursor": "was issued for another listing (type filter differs)"}
        )
    return EntityPosition(str(fields[0]), str(fields[1]), str(fields[2]))


class EntityOut(BaseModel):
    """GET /entities/{type}/{id}: the stored entity, its version, and whether its chunks are embedded."""

    entity_type: str
    entity_id: str
    version: int
    source: str
    owner: str | None
    namespace: str | None
    created_at: str
    updated_at: str
    title: str
    fields: dict[str, Any] = Field(
        description="The entity's fields as stored, without what is shown above (version, source, owner, "
        "namespace, updated_at)"
    )
    metadata: dict[str, Any]
    embedded: bool = Field(
        description="True when the entity has its vectors: every indexed chunk the model's, or the caller's "
        "own `embedding` (one per entity)"
    )
    chunks: int = Field(description="Indexed chunks (long documents are split)")


MAX_BATCH_GET = 100  # ids per POST /entities/batch-get: one page of the largest search (core/search/search_api.py MAX_LIMIT)


class EntityRef(BaseModel):
    """An entity by type and id."""

    model_config = ConfigDict(extra="forbid")

    type: str
    id: str = Field(min_length=1, max_length=MAX_ID_CHARS)


class BatchGetRequest(BaseModel):
    """POST /entities/batch-get."""

    model_config = ConfigDict(extra="forbid")

    items: list[EntityRef] = Field(min_length=1, max_length=MAX_BATCH_GET)


class BatchGetResponse(BaseModel):
    """POST /entities/batch-get: the live entities found, in the order asked (each once), and the rest."""

    found: list[EntityOut]
    missing: list[EntityRef] = Field(description="Absent, deleted or another tenant's (indistinguishably)")


class EntityPage(BaseModel):
    """GET /entities: newest first; pass `next_cursor` back as `cursor` for the next page."""

    data: list[EntityOut]
    next_cursor: str | None


class WeightChangeOut(BaseModel):
    """One weight history row."""

    caller: str
    source: str
    old_weight: float
    new_weight: float
    old_share: float
    new_share: float
    reason: str
    at: str


class WeightHistoryResponse(BaseModel):
    """GET /context/weights/history: newest first."""

    data: list[WeightChangeOut]


class EvalOut(BaseModel):
    """One stored golden-set evaluation."""

    name: str
    at: str
    metrics: dict[str, Any]


class EvalsResponse(BaseModel):
    """GET /evals: newest first."""

    data: list[EvalOut]
