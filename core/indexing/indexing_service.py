"""Indexing use cases (docs/architecture.md, Write path): create/replace, partial update, delete and bulk —
versioned, so retries and re-deliveries are harmless and an older write never overwrites a newer one.

Ordering: a delete always leaves a versioned tombstone (even for an entity never seen, when the delete
carries a version), and a delete wins a tie with a write of the same version, so the newest operation
wins whatever order they arrive in. Versions of the two kinds (sequence numbers, times in ms) never mix
on one entity (core/indexing/versioning.py).

Search-cache invalidation: the tenant's generation (a counter in the Cache) is bumped before a write
reaches the index and again after it. A cache that cannot be bumped before makes the write a 503 with
nothing applied; one that cannot be bumped after makes it a 503 too, and the retry (a duplicate, which
bumps again) finishes the invalidation — a write is never acknowledged while a cached result could
still show what it replaced.

The drafts and results live in drafts.py, the records built from them in entity_records.py, the item-by-item
half of a bulk write in bulk_writes.py; what stays
here (longer than the ~300 lines a module keeps to) is the one sequence every write kind shares — draft,
embed, bump, write, bump, check for a racing writer — written once for put, patch, delete and bulk.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from core.errors import (
    InvalidInputError,
    NotFoundError,
    UnavailableError,
    VersionConflictError,
)
from core.indexing.bulk_writes import BulkReport, bulk_error, newer_drafts, repeated_items, valid_items
from core.indexing.caller_vectors import (
    fingerprint,
    vector_mark,
)
from core.indexing.drafts import Draft, WriteResult
from core.indexing.entity_records import build_records, model_embeds, split_vector
from core.indexing.entity_types import EntityType, EntityTypeRegistry
from core.indexing.entity_validation import VERSION_RULE, is_version, validate_body, validate_id
from core.indexing.versioning import (
    MAX_CLOCK_SKEW_SECONDS,
    check_scheme,
    delete_version,
    is_clock_version,
    refused,
    same_entity,
    unchanged,
    write_version,
)
from core.memory.metadata import MEMORY_TYPE, indexed_metadata
from core.memory.supersession import (
    carried_mark,
    mark_superseded,
    restore_superseded,
)
from core.memory.validation import check_memory
from core.models import EntityKey, Placement, StoredEntity, Vector, WriteOutcome
from core.payload import lone_surrogates
from core.ports import Cache, Clock, Embedder, SearchIndex
from core.search.cache_key import generation_key, settling_key
from core.timestamps import iso_timestamp

_log = logging.getLogger(__name__)

MAX_TEXT_CHARS = 1_000_000  # per field; a larger body is refused by the HTTP size limit long before
# How long after a write searches stay uncached, in refresh intervals: a refresh under load can take longer
# than its interval (a judgement call; OpenSearch's default interval is 1 s).
SETTLE_INTERVALS = 2.0


class IndexingService:
    """Builds search text, chunks and embeddings for entities and writes them to the index."""

    def __init__(
        self,
        index: SearchIndex,
        embedder: Embedder,
        registry: EntityTypeRegistry,
        cache: Cache,
        max_text_chars: int = MAX_TEXT_CHARS,
        clock: Clock | None = None,
        max_skew_seconds: float = MAX_CLOCK_SKEW_SECONDS,
    ) -> None:
        self._clock = clock
        self._skew = max_skew_seconds
        self._index = index
        self._embedder = embedder
        self._registry = registry
        self._cache = cache
        self._max_text = max_text_chars

    def _bump(self, tenant_id: str, when: str) -> None:
        """Move the tenant's cache generation on; a cache that cannot is a 503 (see the module docstring).
        After a write, when the index shows writes only after a refresh, the tenant is first marked as
        settling, so a search in between (which may still see the old document) is not cached under the
        new generation."""
        try:
            delay = self._index.visibility_delay_seconds
            if when == "after" and delay > 0 and self._clock is not None:
                self._cache.set(settling_key(tenant_id), True, delay * SETTLE_INTERVALS, self._clock.now())
            self._cache.incr(generation_key(tenant_id))
        except Exception as exc:
            _log.warning("search cache generation not bumped %s a write: %s", when, exc)
            if isinstance(exc, UnavailableError):
                raise
            raise UnavailableError("cache", f"cannot invalidate cached searches: {exc}") from exc

    def put(self, tenant_id: str, entity_type: str, entity_id: str, body: Any, now: float) -> WriteResult:
        """Create or replace an entity (embeds its text); the result names the fields its type does not index."""
        result = self._put(tenant_id, entity_type, entity_id, body, now)
        return replace(result, unindexed_fields=self._registry.unindexed(entity_type, body))

    def _put(self, tenant_id: str, entity_type: str, entity_id: str, body: Any, now: float) -> WriteResult:
        draft = self._put_draft(tenant_id, entity_type, entity_id, body, now)
        if isinstance(draft, WriteResult):
            if draft.outcome is WriteOutcome.DUPLICATE and isinstance(body, Mapping):
                self._supersede(tenant_id, draft.key, draft.version, body, now)  # a retry finishes the mark
                self._bump(tenant_id, "after")
            return draft
        prior, key, version = draft.prior, draft.key, draft.version
        record = build_records(self._embedder, tenant_id, [draft], now)[0]
        self._bump(tenant_id, "before")
        outcome = self._index.upsert(record)
        if outcome is WriteOutcome.APPLIED:
            self._supersede(tenant_id, key, version, draft.body, now)
        self._bump(tenant_id, "after")
        if outcome is WriteOutcome.DUPLICATE and self._raced(tenant_id, [draft]):
            raise VersionConflictError(str(key), version)
        stored = prior.version if prior is not None else None
        embedded = outcome is WriteOutcome.APPLIED and model_embeds(self._embedder, tenant_id, draft.vector)
        return WriteResult(key, version, outcome, embedded, stored)

    def _supersede(
        self, tenant_id: str, key: EntityKey, version: int, body: Mapping[str, Any], now: float
    ) -> None:
        """Mark the memory a memory's write supersedes (core/memory/supersession.py); between the bumps."""
        if key.entity_type == MEMORY_TYPE and MEMORY_TYPE in self._registry:
            memory = self._registry.get(MEMORY_TYPE)
            mark_superseded(self._index, tenant_id, memory, key, version, now, body)

    def _raced(self, tenant_id: str, drafts: Sequence[Draft]) -> set[EntityKey]:
        """The drafts' keys at whose version another write stored other content meanwhile (the index found
        their version already there though none was stored when they were checked)."""
        stored = self._index.get(tenant_id, [d.key for d in drafts])
        return {
            d.key
            for d in drafts
            if (found := stored.get(d.key)) is not None
            and not found.deleted
            and not same_entity(found, d.body, d.mark)
        }

    def check_put(
        self, tenant_id: str, entity_type: str, entity_id: str, body: Any, now: float
    ) -> WriteResult | None:
        """What a PUT would answer without embedding anything: its outcome when the stored state already
        covers it (stale, duplicate), None when it would apply; a bad body or a conflict raises as `put`."""
        draft = self._put_draft(tenant_id, entity_type, entity_id, body, now)
        return draft if isinstance(draft, WriteResult) else None

    def _put_draft(
        self, tenant_id: str, entity_type: str, entity_id: str, body: Any, now: float
    ) -> Draft | WriteResult:
        """The validated write, or the answer when the stored state already covers it."""
        etype = self._registry.get(entity_type)
        validate_id(entity_id)
        body, vector = split_vector(self._embedder, tenant_id, body)
        clean = validate_body(etype, body, self._max_text)
        check_memory(etype.name, entity_id, clean)
        key = EntityKey(etype.name, entity_id)
        version = write_version(clean, now, self._skew)
        prior = self._index.get(tenant_id, [key]).get(key)
        if prior is not None:
            check_scheme(key, prior.version, version)
            clean = carried_mark(prior, clean) if etype.name == MEMORY_TYPE else clean
        draft = Draft(etype, key, clean, version, prior, vector)
        early = unchanged(prior, version, clean, draft.mark)
        if early is not None:
            return self._unchanged(tenant_id, key, version, early, prior)
        return draft

    def _unchanged(
        self, tenant_id: str, key: EntityKey, version: int, outcome: WriteOutcome, prior: StoredEntity | None
    ) -> WriteResult:
        """A write the stored state already covers; a duplicate bumps the generation (a retry after a
        cache failure finishes the invalidation its first attempt could not)."""
        if outcome is WriteOutcome.DUPLICATE:
            self._bump(tenant_id, "after")
        return WriteResult(key, version, outcome, False, prior.version if prior is not None else None)

    def patch(
        self, tenant_id: str, entity_type: str, entity_id: str, changes: Any, now: float
    ) -> WriteResult:
        """Partial update: metadata-only when no searchable field changed (no re-embedding,
        docs/conformance.md#metadata-only-update); the result names the changed fields its type does not
        index."""
        result = self._patch(tenant_id, entity_type, entity_id, changes, now)
        return replace(result, unindexed_fields=self._registry.unindexed(entity_type, changes))

    def _patch(
        self, tenant_id: str, entity_type: str, entity_id: str, changes: Any, now: float
    ) -> WriteResult:
        etype = self._registry.get(entity_type)
        validate_id(entity_id)
        changes, vector = split_vector(self._embedder, tenant_id, changes)
        clean = (
            validate_body(etype, changes, self._max_text, partial=True) if changes or vector is None else {}
        )
        check_memory(etype.name, entity_id, clean)
        key = EntityKey(etype.name, entity_id)
        prior = self._index.get(tenant_id, [key]).get(key)
        version = write_version(clean, now, self._skew)
        if prior is None:
            raise NotFoundError(etype.name, entity_id)
        if prior.deleted:
            if refused(prior, version) is WriteOutcome.STALE and is_clock_version(
                version
            ) == is_clock_version(prior.version):
                return WriteResult(
                    key, version, WriteOutcome.STALE, False, prior.version
                )  # older than the delete
            raise NotFoundError(etype.name, entity_id)
        check_scheme(key, prior.version, version)
        merged = {k: v for k, v in {**prior.body, **clean}.items() if v is not None}
        merged.pop("version", None)
        mark = vector_mark(prior.content_hash) if vector is None else fingerprint(vector)
        early = unchanged(prior, version, merged, mark)
        if early is not None:
            return self._unchanged(tenant_id, key, version, early, prior)
        searchable = etype.searchable_names | {etype.title_field} | ({"chunks"} if etype.chunked else set())
        searchable |= {*etype.caught(merged), *etype.caught(prior.body)}  # a catch-all tier's text
        if vector is None and all(merged.get(f) == prior.body.get(f) for f in searchable):
            outcome = self._metadata_only(tenant_id, etype, key, version, merged, clean, prior, now)
            reembedded = False
        else:
            merged.setdefault("created_at", prior.created_at)
            if "updated_at" not in clean:
                merged.pop("updated_at", None)
            record = build_records(
                self._embedder, tenant_id, [Draft(etype, key, merged, version, prior, vector)], now
            )[0]
            self._bump(tenant_id, "before")
            outcome = self._index.upsert(record)
            reembedded = outcome is WriteOutcome.APPLIED and model_embeds(self._embedder, tenant_id, vector)
        if outcome is WriteOutcome.APPLIED:
            self._supersede(tenant_id, key, version, merged, now)
        self._bump(tenant_id, "after")
        return WriteResult(key, version, outcome, reembedded, prior.version)

    def _metadata_only(
        self,
        tenant_id: str,
        etype: EntityType,
        key: EntityKey,
        version: int,
        merged: dict[str, Any],
        clean: Mapping[str, Any],
        prior: StoredEntity,
        now: float,
    ) -> WriteOutcome:
        """A patch that changed no searchable text: the stored body, filter fields and placement move, the
        chunks and their vectors stay (no re-embedding)."""
        metadata = indexed_metadata(etype, merged, prior, prior.created_at)
        updated = str(clean.get("updated_at") or iso_timestamp(now))
        place = Placement(
            str(merged.get("source") or etype.default_source), merged.get("owner"), merged.get("namespace")
        )
        moved = (place.source, place.owner, place.namespace) != (prior.source, prior.owner, prior.namespace)
        self._bump(tenant_id, "before")
        return self._index.update_metadata(
            tenant_id, key, version, merged, metadata, updated, place if moved else None
        )

    def delete(
        self, tenant_id: str, entity_type: str, entity_id: str, version: int | None, now: float
    ) -> WriteResult:
        """Remove an entity from lexical and vector retrieval, leaving a versioned tombstone.

        An entity that is unknown (or already deleted) is a 404 — but a delete that carries a version newer
        than what is stored still leaves its tombstone, so an older write arriving later is refused. A
        delete at the stored version deletes (a delete wins a tie).
        """
        etype = self._registry.get(entity_type)
        validate_id(entity_id)
        if version is not None and not is_version(version):
            raise InvalidInputError("invalid version", {"version": VERSION_RULE})
        key = EntityKey(etype.name, entity_id)
        prior = self._index.get(tenant_id, [key]).get(key)
        if prior is None or prior.deleted:
            if prior is not None:
                self._bump(tenant_id, "after")  # a retry finishes what a failed bump left undone
            if version is not None and (prior is None or version > prior.version):
                if prior is not None:
                    check_scheme(key, prior.version, version)
                self._bump(tenant_id, "before")
                self._index.delete(tenant_id, key, version)
                self._bump(tenant_id, "after")
            raise NotFoundError(etype.name, entity_id)
        effective = delete_version(version, prior.version, now)
        assert effective is not None  # a stored entity always yields a version
        check_scheme(key, prior.version, effective)
        if effective < prior.version:
            return WriteResult(key, effective, WriteOutcome.STALE, False, prior.version)
        self._bump(tenant_id, "before")
        outcome = self._index.delete(tenant_id, key, effective)
        if outcome is WriteOutcome.APPLIED and key.entity_type == MEMORY_TYPE:
            restore_superseded(self._index, tenant_id, etype, prior, now)
        self._bump(tenant_id, "after")
        return WriteResult(key, effective, outcome, False, prior.version)

    def _draft(
        self, tenant_id: str, item: Any
    ) -> tuple[EntityType, EntityKey, dict[str, Any], Vector | None]:
        if not isinstance(item, Mapping):
            raise InvalidInputError("item must be an object", {"": "must be an object"})
        broken = lone_surrogates(dict(item))
        if broken:
            raise InvalidInputError("item is not valid Unicode: " + ", ".join(sorted(broken)), broken)
        if not isinstance(item.get("type"), str):
            raise InvalidInputError("missing type", {"type": "is required"})
        if not isinstance(item.get("id"), str):
            raise InvalidInputError("missing id", {"id": "is required"})
        etype = self._registry.get(item["type"])
        validate_id(item["id"])
        body, vector = split_vector(
            self._embedder, tenant_id, {k: v for k, v in item.items() if k not in ("type", "id")}
        )
        clean = validate_body(etype, body, self._max_text)
        check_memory(etype.name, item["id"], clean)
        return etype, EntityKey(etype.name, item["id"]), clean, vector

    def bulk(
        self, tenant_id: str, items: Sequence[Any], now: float, repeats: Mapping[int, int] | None = None
    ) -> BulkReport:
        """Index many entities; one bad item is reported with its position and never blocks the others.

        An entity may appear once per request: a later item naming it is refused (`repeats`, {position:
        earlier position}; by default found among `items`, a job passes those of its whole request).
        A backend outage (UnavailableError) fails the whole request, so the caller retries all of it.
        """
        report = BulkReport()
        repeated = repeated_items(self._registry, items) if repeats is None else repeats
        valid = valid_items(items, report, repeated, lambda item: self._draft(tenant_id, item))
        if not valid:
            return report
        stored = self._index.get(tenant_id, [key for _, _, key, _, _ in valid])
        drafts = newer_drafts(stored, valid, report, now, self._skew)
        for _, draft in drafts:
            report.unindexed_fields.update(draft.etype.unindexed(draft.body))
        records = build_records(self._embedder, tenant_id, [d for _, d in drafts], now)
        self._bump(tenant_id, "before")
        outcomes = self._index.upsert_many(records) if records else []
        for (_, draft), outcome in zip(drafts, outcomes, strict=True):
            if outcome is WriteOutcome.APPLIED:
                self._supersede(tenant_id, draft.key, draft.version, draft.body, now)
        self._bump(tenant_id, "after")
        duplicates = [d for (_, d), o in zip(drafts, outcomes, strict=True) if o is WriteOutcome.DUPLICATE]
        raced = self._raced(tenant_id, duplicates) if duplicates else set()
        for (position, draft), outcome in zip(drafts, outcomes, strict=True):
            if draft.key in raced:
                report.errors.append(
                    bulk_error(
                        position, draft.key.entity_id, VersionConflictError(str(draft.key), draft.version)
                    )
                )
            elif outcome is WriteOutcome.STALE:
                report.skipped_stale += 1
            else:
                report.indexed += 1
        return report
