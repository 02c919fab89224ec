"""The writes, a part of OpenSearchIndex: one document per entity, written compare-and-set — each document is read
(`_mget`, real time), a `Build` decides what the write makes of it, and the `_bulk` writes only if the
document is unchanged since the read; a write that lost to another in between is decided again."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from core.errors import InvalidInputError, QuarryError, UnavailableError
from core.models import EntityKey, EntityRecord, Placement, WriteOutcome
from core.ports import MetadataTouch
from infra.opensearch import bodies, documents, mapping, responses
from infra.opensearch.calls import IndexCalls, Write
from infra.opensearch.errors import BACKEND, UNAVAILABLE_RETRY_AFTER, classify
from infra.opensearch.index_lifecycle import IndexLifecycle
from infra.opensearch.responses import ItemResult

# What a write makes of the stored document (None: none yet): the new `_source`, or the outcome without
# writing (stale, duplicate, not found).
Build = Callable[[Mapping[str, Any] | None], "dict[str, Any] | WriteOutcome"]
CAS_ROUNDS = 16  # read-decide-write rounds per write before giving up under contention (each loses only
# to a write that landed in between, so a round that fails means another writer made progress)


class IndexWrites:
    """The writes, a part of OpenSearchIndex: upsert, metadata updates and tombstones (see module
    docstring)."""

    def __init__(self, calls: IndexCalls, lifecycle: IndexLifecycle) -> None:
        self._calls = calls
        self._lifecycle = lifecycle

    def upsert_many(self, records: Sequence[EntityRecord]) -> list[WriteOutcome]:
        """Upsert many entity versions (one `_mget` and one `_bulk` per round); one outcome per record."""
        for record in records:
            self._check_dimension(record)
        return self._cas(
            [(r.tenant_id, documents.doc_id(r.tenant_id, r.key), _replace_with(r)) for r in records]
        )

    def upsert(self, record: EntityRecord) -> WriteOutcome:
        """Store a whole entity version, unless the stored one is as new or newer."""
        return self.upsert_many([record])[0]

    def update_metadata(
        self,
        tenant_id: str,
        key: EntityKey,
        version: int,
        body: Mapping[str, Any],
        metadata: Mapping[str, Any],
        updated_at: str,
        placement: Placement | None = None,
    ) -> WriteOutcome:
        """Rewrite the stored document with new body/metadata (and placement) at `version`, text and vectors
        kept, built on the document as it is when written (a write landing after the read: read again)."""

        def build(stored: Mapping[str, Any] | None) -> dict[str, Any] | WriteOutcome:
            if not _owned(stored, tenant_id) or stored.get(mapping.DELETED):  # type: ignore[union-attr]
                return WriteOutcome.NOT_FOUND
            assert stored is not None
            refused = responses.refused(int(stored[mapping.VERSION]), version)
            return refused or documents.with_metadata(stored, version, body, metadata, updated_at, placement)

        return self._cas([(tenant_id, documents.doc_id(tenant_id, key), build)], read="all")[0]

    def touch_metadata(self, tenant_id: str, touches: Sequence[MetadataTouch]) -> list[WriteOutcome]:
        """Merge each touch's changes into the metadata of the document live at its version, the version
        kept (SearchIndex), in one bulk: a partial update of the metadata fields alone, sent to the
        generation the document was read from and compare-and-set there (bodies.touch_pair). It never
        rewrites text or vectors: a use read before a reindex's swap and written after it (or after the
        settle) cannot put the old model's vectors into the new generation; it lands in the old one, or
        is dropped once that one is gone (uses are approximate: core/memory/reinforcement.py)."""
        outcomes: list[WriteOutcome | None] = [None] * len(touches)
        pending = list(range(len(touches)))
        for _ in range(CAS_ROUNDS):
            if not pending:
                break
            ids = [documents.doc_id(tenant_id, touches[p].key) for p in pending]
            stored = self._calls.fetch_for_touch(tenant_id, ids)
            pairs, positions = [], []
            for p, doc_id in zip(pending, ids, strict=True):
                found = stored.get(doc_id)
                if found is None or not _touchable(found.source, tenant_id, touches[p].version):
                    outcomes[p] = WriteOutcome.NOT_FOUND
                    continue
                fields = documents.for_layout(
                    _touched(found.source, touches[p].changes), self._lifecycle.display_values, False
                )
                pairs.append(
                    bodies.touch_pair(
                        found.index, doc_id, found.seq, fields, self._lifecycle.route(tenant_id)
                    )
                )
                positions.append(p)
            pending = []
            for p, item in zip(positions, self._calls.bulk_pairs(pairs), strict=True):
                if item.ok:
                    outcomes[p] = WriteOutcome.APPLIED
                elif item.conflict:
                    pending.append(p)  # written since our read: decide again
                elif item.status == 404:
                    outcomes[p] = WriteOutcome.NOT_FOUND  # its generation (or the document) is gone
                else:
                    raise self._write_error(item)
        if pending:
            raise UnavailableError(
                BACKEND, f"{len(pending)} touches kept losing to concurrent writes", UNAVAILABLE_RETRY_AFTER
            )
        return [o for o in outcomes if o is not None]

    def delete(self, tenant_id: str, key: EntityKey, version: int | None) -> WriteOutcome:
        """Replace the entity by a tombstone at `version` (stored + 1 when None); see SearchIndex.delete.

        Unknown with a version: a tombstone alone (an older write arriving later is refused). A live
        document at exactly `version` is replaced (a delete wins a tie).
        """

        def build(stored: Mapping[str, Any] | None) -> dict[str, Any] | WriteOutcome:
            if not _owned(stored, tenant_id):
                if version is None:
                    return WriteOutcome.NOT_FOUND
                return documents.new_tombstone(tenant_id, key, version)
            assert stored is not None
            current = int(stored[mapping.VERSION])
            effective = current + 1 if version is None else version
            if effective == current and not stored.get(mapping.DELETED):
                return documents.tombstone(stored, effective)  # a delete wins a tie
            refused = responses.refused(current, effective)
            return refused or documents.tombstone(stored, effective)

        return self._cas([(tenant_id, documents.doc_id(tenant_id, key), build)], read="entity")[0]

    def _cas(self, jobs: Sequence[tuple[str, str, Build]], read: str = "version") -> list[WriteOutcome]:
        """Compare-and-set writes: read each document, let its `Build` decide, write only if unchanged
        since the read; a write that lost to another in between is decided again on the new document."""
        if not jobs:
            return []
        outcomes: list[WriteOutcome | None] = [None] * len(jobs)
        pending = list(range(len(jobs)))
        for _ in range(CAS_ROUNDS):
            stored = self._calls.fetch_for_write([jobs[p][:2] for p in pending], read)
            writes: list[Write] = []
            positions: list[int] = []
            for p in pending:
                _, doc_id, build = jobs[p]
                found = stored.get(doc_id)
                decided = build(found.source if found else None)
                if isinstance(decided, WriteOutcome):
                    outcomes[p] = decided
                    continue
                source = documents.for_layout(
                    decided, self._lifecycle.display_values, self._lifecycle.feedback_vectors
                )
                writes.append((doc_id, found.seq if found else None, source))
                positions.append(p)
            pending = []
            for p, item in zip(positions, self._calls.bulk(writes) if writes else [], strict=True):
                if item.ok:
                    outcomes[p] = WriteOutcome.APPLIED
                elif item.conflict:
                    pending.append(p)  # written since our read: decide again
                else:
                    raise self._write_error(item)
            if not pending:
                return [o for o in outcomes if o is not None]
        raise UnavailableError(
            BACKEND, f"{len(pending)} writes kept losing to concurrent writes", UNAVAILABLE_RETRY_AFTER
        )

    def _write_error(self, item: ItemResult) -> QuarryError:
        """A refused write; one refused for its vector dimension was embedded with the model of the
        generation a reindex just swapped out: a 503 to retry (this process follows the new model by
        then), never the caller's 400."""
        if item.status == 400 and item.dimension_mismatch:
            self._lifecycle.recheck_model()
            return UnavailableError(
                BACKEND, f"the index was reindexed with another embedding model: {item.reason}", 1
            )
        return classify(item.status, item.error_type, item.reason)

    def _check_dimension(self, record: EntityRecord) -> None:
        for chunk in record.chunks:
            if chunk.embedding is not None and len(chunk.embedding) != self._lifecycle.dimension:
                path = f"chunks.{chunk.chunk_no}.embedding"
                raise InvalidInputError(
                    f"embedding has {len(chunk.embedding)} dimensions, the index expects {self._lifecycle.dimension}",
                    {path: f"must have {self._lifecycle.dimension} dimensions"},
                )


def _owned(stored: Mapping[str, Any] | None, tenant_id: str) -> bool:
    return stored is not None and stored.get(mapping.TENANT) == tenant_id


def _touchable(stored: Mapping[str, Any], tenant_id: str, version: int) -> bool:
    """A touch applies to the tenant's live document at exactly the version it was computed from."""
    return (
        _owned(stored, tenant_id)
        and not stored.get(mapping.DELETED)
        and int(stored.get(mapping.VERSION) or -1) == version
    )


def _touched(stored: Mapping[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
    """The metadata fields of `stored` with `changes` merged in (None removes a key): the raw values, their
    filter terms and display copies, nothing else."""
    merged = {**(stored.get(mapping.METADATA_RAW) or {}), **changes}
    metadata = {k: v for k, v in merged.items() if v is not None}
    shown = documents.with_display({**stored, mapping.METADATA_RAW: metadata})
    keep = (mapping.METADATA_RAW, mapping.METADATA, mapping.METADATA_VALUE, mapping.DISPLAY_CLIPPED)
    return {k: shown[k] for k in keep if k in shown}


def _replace_with(record: EntityRecord) -> Build:
    """A whole new version replaces the stored document unless that one is as new or newer."""

    def build(stored: Mapping[str, Any] | None) -> dict[str, Any] | WriteOutcome:
        if stored is not None:
            refused = responses.refused(int(stored[mapping.VERSION]), record.version)
            if refused is not None:
                return refused
        return documents.entity_source(record)

    return build
