"""Reading back what a tenant stored (docs/architecture.md, A tenant's data lifecycle): one entity, the entity
listing, weight history and stored golden-set evaluations. Only coordinates the ports; the tenant is always
the caller's."""

from __future__ import annotations

from core.errors import NotFoundError
from core.indexing.caller_vectors import vector_mark
from core.indexing.catalog import (
    BatchGetRequest,
    BatchGetResponse,
    EntityOut,
    EntityPage,
    EntityPosition,
    EntityRef,
    EvalOut,
    EvalsResponse,
    WeightChangeOut,
    WeightHistoryResponse,
    entity_cursor,
    entity_position,
)
from core.indexing.entity_types import EntityTypeRegistry
from core.indexing.entity_validation import validate_caller
from core.memory.metadata import public_metadata
from core.models import EntityKey, StoredEntity
from core.ports import EntityCatalog, StateStore

# What EntityOut shows as the entity's own attributes: kept in the stored body (a PATCH merges with it),
# never repeated in `fields`.
ATTRIBUTE_FIELDS = frozenset({"version", "source", "owner", "namespace", "updated_at"})


def entity_out(entity: StoredEntity, chunks: int, embedded: int) -> EntityOut:
    """The API shape of a stored entity."""
    return EntityOut(
        entity_type=entity.key.entity_type,
        entity_id=entity.key.entity_id,
        version=entity.version,
        source=entity.source,
        owner=entity.owner,
        namespace=entity.namespace,
        created_at=entity.created_at,
        updated_at=entity.updated_at,
        title=entity.title,
        fields={k: v for k, v in entity.body.items() if k not in ATTRIBUTE_FIELDS},
        metadata=public_metadata(entity.metadata),
        # a caller's own vector is one per entity, stored with its first chunk (core/indexing/caller_vectors.py)
        embedded=chunks > 0
        and (embedded == chunks or (embedded > 0 and vector_mark(entity.content_hash) != "")),
        chunks=chunks,
    )


class CatalogService:
    """Reads of stored entities and stored-but-hidden state, for one tenant at a time."""

    def __init__(self, index: EntityCatalog, state: StateStore, registry: EntityTypeRegistry) -> None:
        self._index = index
        self._state = state
        self._registry = registry

    def get(self, tenant_id: str, entity_type: str, entity_id: str) -> EntityOut:
        """One live entity; 404 when absent, deleted, or another tenant's (indistinguishably)."""
        self._registry.get(entity_type, path="type")
        key = EntityKey(entity_type, entity_id)
        entity = self._index.get(tenant_id, [key]).get(key)
        if entity is None or entity.deleted:
            raise NotFoundError("entity", str(key))
        status = self._index.embedding_status(tenant_id, [key]).get(key)
        return entity_out(entity, status.chunks if status else 0, status.embedded if status else 0)

    def batch_get(self, tenant_id: str, request: BatchGetRequest) -> BatchGetResponse:
        """Up to MAX_BATCH_GET entities of the tenant in one read, in the order asked, each once."""
        for i, ref in enumerate(request.items):
            self._registry.get(ref.type, path=f"items.{i}.type")
        keys = list(dict.fromkeys(EntityKey(ref.type, ref.id) for ref in request.items))
        stored = self._index.get(tenant_id, keys)
        live = [k for k in keys if (e := stored.get(k)) is not None and not e.deleted]
        status = self._index.embedding_status(tenant_id, live)
        found = []
        for key in live:
            s = status.get(key)
            found.append(entity_out(stored[key], s.chunks if s else 0, s.embedded if s else 0))
        shown = set(live)
        missing = [EntityRef(type=k.entity_type, id=k.entity_id) for k in keys if k not in shown]
        return BatchGetResponse(found=found, missing=missing)

    def list(self, tenant_id: str, entity_type: str | None, limit: int, cursor: str | None) -> EntityPage:
        """Live entities newest first (by created_at, then type and id), `limit` per page.

        Keyset paging: a cursor names the last entity returned, so writes between pages never shift a
        page; every entity that exists throughout the paging and is not re-created appears exactly once.
        """
        if entity_type is not None:
            self._registry.get(entity_type, path="type")
        after = entity_position(tenant_id, entity_type, cursor) if cursor else None
        entities = self._index.list_entities(tenant_id, entity_type, limit, after)
        status = self._index.embedding_status(tenant_id, [e.key for e in entities])
        data = []
        for e in entities:
            s = status.get(e.key)
            data.append(entity_out(e, s.chunks if s else 0, s.embedded if s else 0))
        next_cursor = None
        if len(entities) == limit:
            last = entities[-1]
            position = EntityPosition(last.created_at, last.key.entity_type, last.key.entity_id)
            next_cursor = entity_cursor(tenant_id, entity_type, position)
        return EntityPage(data=data, next_cursor=next_cursor)

    def weight_history(self, tenant_id: str, caller: str | None, limit: int) -> WeightHistoryResponse:
        """What learning (or an operator) changed, newest first (of one caller, or `*`, when named)."""
        if caller is not None:
            validate_caller(caller, wildcard=True)
        rows = self._state.list_history(tenant_id, caller, limit)
        return WeightHistoryResponse(
            data=[WeightChangeOut.model_validate(r, from_attributes=True) for r in rows]
        )

    def evals(self, tenant_id: str, name: str | None, limit: int) -> EvalsResponse:
        """Stored golden-set evaluation figures, newest first, optionally of one set (an overlay's role)."""
        rows = self._state.list_evals(tenant_id, name, limit)
        return EvalsResponse(data=[EvalOut.model_validate(r, from_attributes=True) for r in rows])
