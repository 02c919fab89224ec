"""Indexing use cases (DESIGN.md §2): create/replace, partial update, delete and bulk — versioned, so
retries and re-deliveries are harmless and an older write never overwrites a newer one."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from core.cache_key import generation_key, settling_key
from core.chunking import chunk_text
from core.entities import EntityType, EntityTypeRegistry
from core.errors import InvalidInputError, NotFoundError, QuarryError, UnavailableError
from core.models import Chunk, EntityKey, EntityRecord, Placement, StoredEntity, Vector, WriteOutcome
from core.ports import Cache, Clock, Embedder, SearchIndex
from core.scoring import iso_timestamp, parse_timestamp
from core.text import flatten, index_text
from core.validation import validate_body, validate_id

MAX_TEXT_CHARS = 1_000_000  # per field; a larger body is refused by the HTTP size limit long before
MS = 1000.0
# A chunked entity (a corpus document) may bring its own chunks under this field (POST /corpus).
PREMADE_CHUNKS_FIELD = "chunks"
# How long after a write searches stay uncached, in refresh intervals: a refresh under load can take longer
# than its interval (a judgement call; OpenSearch's default interval is 1 s).
SETTLE_INTERVALS = 2.0


@dataclass(frozen=True, slots=True)
class WriteResult:
    """The outcome of one write, with the version it carried and the version stored before it."""

    key: EntityKey
    version: int
    outcome: WriteOutcome
    reembedded: bool
    stored_version: int | None = None


@dataclass(frozen=True, slots=True)
class _Draft:
    """A validated write waiting for its embeddings."""

    etype: EntityType
    key: EntityKey
    body: dict[str, Any]
    version: int
    prior: StoredEntity | None


@dataclass(slots=True)
class BulkReport:
    """Counts and per-item errors of a bulk write (`index` is the item's position in the request)."""

    indexed: int = 0
    skipped_stale: int = 0
    errors: list[dict[str, Any]] = field(default_factory=list)


def _version(body: Mapping[str, Any], now: float) -> int:
    """The write's version: explicit `version`, else `updated_at` in ms, else arrival time in ms."""
    if body.get("version") is not None:
        return int(body["version"])
    stamp = parse_timestamp(body["updated_at"]) if body.get("updated_at") else None
    return int((stamp if stamp is not None else now) * MS)


def _tiers(etype: EntityType, body: Mapping[str, Any]) -> dict[int, list[str]]:
    tiers: dict[int, list[str]] = {3: [], 2: [], 1: []}
    for spec in etype.fields:
        text = flatten(body.get(spec.name))
        if text:
            tiers[spec.boost].append(text)
    return tiers


def premade_chunks(etype: EntityType, body: Mapping[str, Any]) -> list[str] | None:
    """A chunked type's own `chunks` (non-empty strings), used as they are instead of chunking its text."""
    given = body.get(PREMADE_CHUNKS_FIELD) if etype.chunked else None
    if not isinstance(given, list):
        return None
    pieces = [text for text in (flatten(c).strip() for c in given) if text]
    return pieces or None


def build_chunks(etype: EntityType, body: Mapping[str, Any]) -> list[tuple[tuple[str, str, str], str]]:
    """(tiers, plain text) per chunk: chunked types use their pre-made `chunks` or split their boost-1 text."""
    tiers = _tiers(etype, body)
    top, mid, low = (" ".join(tiers[b]) for b in (3, 2, 1))
    pieces = premade_chunks(etype, body) or (chunk_text(low) if etype.chunked and low else [low])
    out = []
    for piece in pieces or [""]:
        plain = " ".join(p for p in (top, mid, piece) if p)
        out.append(((index_text([top]), index_text([mid]), index_text([piece])), plain))
    return out


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
    ) -> None:
        self._clock = clock
        self._index = index
        self._embedder = embedder
        self._registry = registry
        self._cache = cache
        self._max_text = max_text_chars

    def _records(self, tenant_id: str, drafts: Sequence[_Draft], now: float) -> list[EntityRecord]:
        """Build records for many drafts with ONE embedding call (batched encoding is several times faster)."""
        built = [build_chunks(d.etype, d.body) for d in drafts]
        titles = [flatten(d.body.get(d.etype.title_field)).strip() for d in drafts]
        inputs = [
            f"{title}. {plain}" if d.etype.chunked else plain
            for d, title, chunks in zip(drafts, titles, built, strict=True)
            for _, plain in chunks
        ]
        vectors = iter(self._embedder.embed(inputs) if inputs else [])
        return [
            self._record(tenant_id, d, title, chunks, vectors, now)
            for d, title, chunks in zip(drafts, titles, built, strict=True)
        ]

    @staticmethod
    def _record(
        tenant_id: str,
        d: _Draft,
        title: str,
        chunks: list[tuple[tuple[str, str, str], str]],
        vectors: Iterator[Vector],
        now: float,
    ) -> EntityRecord:
        body, etype = d.body, d.etype
        created = body.get("created_at") or (d.prior.created_at if d.prior else iso_timestamp(now))
        return EntityRecord(
            tenant_id=tenant_id,
            key=d.key,
            version=d.version,
            source=str(body.get("source") or etype.default_source),
            owner=body.get("owner"),
            namespace=body.get("namespace"),
            created_at=str(created),
            updated_at=str(body.get("updated_at") or iso_timestamp(now)),
            title=title,
            body=dict(body),
            metadata={f: body[f] for f in etype.filterable if body.get(f) is not None},
            content_hash=hashlib.sha256(" ".join(p for _, p in chunks).lower().encode()).hexdigest(),
            chunks=tuple(
                Chunk(chunk_no=i, tiers=t, text=plain, embedding=next(vectors))
                for i, (t, plain) in enumerate(chunks)
            ),
        )

    def _changed(self, tenant_id: str) -> None:
        """Invalidate the tenant's cached searches. When the index shows writes only after a refresh, mark
        the tenant as settling first, so a search in between (which may still see the old document) is
        not cached under the new generation."""
        delay = float(getattr(self._index, "visibility_delay_seconds", 0.0))
        if delay > 0 and self._clock is not None:
            self._cache.set(settling_key(tenant_id), True, delay * SETTLE_INTERVALS, self._clock.now())
        self._cache.incr(generation_key(tenant_id))

    def put(self, tenant_id: str, entity_type: str, entity_id: str, body: Any, now: float) -> WriteResult:
        """Create or replace an entity (embeds its text)."""
        etype = self._registry.get(entity_type)
        validate_id(entity_id)
        clean = validate_body(etype, body, self._max_text)
        key = EntityKey(etype.name, entity_id)
        version = _version(clean, now)
        prior = self._index.get(tenant_id, [key]).get(key)
        if prior is not None and version <= prior.version:
            outcome = WriteOutcome.STALE if version < prior.version else WriteOutcome.DUPLICATE
            return WriteResult(key, version, outcome, False, prior.version)
        draft = _Draft(etype, key, clean, version, prior)
        outcome = self._index.upsert(self._records(tenant_id, [draft], now)[0])
        if outcome is WriteOutcome.APPLIED:
            self._changed(tenant_id)
        stored = prior.version if prior is not None else None
        return WriteResult(key, version, outcome, outcome is WriteOutcome.APPLIED, stored)

    def patch(
        self, tenant_id: str, entity_type: str, entity_id: str, changes: Any, now: float
    ) -> WriteResult:
        """Partial update: metadata-only when no searchable field changed (no re-embedding, seed nexus §2.2)."""
        etype = self._registry.get(entity_type)
        validate_id(entity_id)
        clean = validate_body(etype, changes, self._max_text, partial=True)
        key = EntityKey(etype.name, entity_id)
        prior = self._index.get(tenant_id, [key]).get(key)
        version = _version(clean, now)
        if prior is not None and prior.deleted and version <= prior.version:
            return WriteResult(
                key, version, WriteOutcome.STALE, False, prior.version
            )  # older than the delete
        if prior is None or prior.deleted:
            raise NotFoundError(etype.name, entity_id)
        if version <= prior.version:
            outcome = WriteOutcome.STALE if version < prior.version else WriteOutcome.DUPLICATE
            return WriteResult(key, version, outcome, False, prior.version)
        merged = {k: v for k, v in {**prior.body, **clean}.items() if v is not None}
        merged.pop("version", None)
        searchable = etype.searchable_names | {etype.title_field} | ({"chunks"} if etype.chunked else set())
        if all(merged.get(f) == prior.body.get(f) for f in searchable):
            metadata = {f: merged[f] for f in etype.filterable if merged.get(f) is not None}
            updated = str(clean.get("updated_at") or iso_timestamp(now))
            place = Placement(
                str(merged.get("source") or etype.default_source),
                merged.get("owner"),
                merged.get("namespace"),
            )
            moved = (place.source, place.owner, place.namespace) != (
                prior.source,
                prior.owner,
                prior.namespace,
            )
            outcome = self._index.update_metadata(
                tenant_id, key, version, merged, metadata, updated, place if moved else None
            )
            reembedded = False
        else:
            merged.setdefault("created_at", prior.created_at)
            if "updated_at" not in clean:
                merged.pop("updated_at", None)
            draft = _Draft(etype, key, merged, version, prior)
            outcome = self._index.upsert(self._records(tenant_id, [draft], now)[0])
            reembedded = outcome is WriteOutcome.APPLIED
        if outcome is WriteOutcome.APPLIED:
            self._changed(tenant_id)
        return WriteResult(key, version, outcome, reembedded, prior.version)

    def delete(
        self, tenant_id: str, entity_type: str, entity_id: str, version: int | None, now: float
    ) -> WriteResult:
        """Remove an entity from lexical and vector retrieval; unknown ids are 404."""
        etype = self._registry.get(entity_type)
        validate_id(entity_id)
        key = EntityKey(etype.name, entity_id)
        prior = self._index.get(tenant_id, [key]).get(key)
        if prior is None:
            # delete before create (redelivery, reordering): leave a versioned tombstone so the older
            # create, arriving later, loses; the answer is still "not found"
            self._index.delete(tenant_id, key, version if version is not None else int(now * MS))
            raise NotFoundError(etype.name, entity_id)
        if prior.deleted:
            raise NotFoundError(etype.name, entity_id)
        effective = version if version is not None else max(prior.version + 1, int(now * MS))
        outcome = self._index.delete(tenant_id, key, effective)
        if outcome is WriteOutcome.APPLIED:
            self._changed(tenant_id)
        return WriteResult(key, effective, outcome, False, prior.version)

    def _draft(self, item: Any) -> tuple[EntityType, EntityKey, dict[str, Any]]:
        if not isinstance(item, Mapping):
            raise InvalidInputError("item must be an object", {"": "must be an object"})
        if not isinstance(item.get("type"), str):
            raise InvalidInputError("missing type", {"type": "is required"})
        if not isinstance(item.get("id"), str):
            raise InvalidInputError("missing id", {"id": "is required"})
        etype = self._registry.get(item["type"])
        validate_id(item["id"])
        body = {k: v for k, v in item.items() if k not in ("type", "id")}
        return etype, EntityKey(etype.name, item["id"]), validate_body(etype, body, self._max_text)

    def bulk(self, tenant_id: str, items: Sequence[Any], now: float) -> BulkReport:
        """Index many entities; one bad item is reported with its position and never blocks the others.

        A backend outage (UnavailableError) fails the whole request, so the caller retries all of it.
        """
        report = BulkReport()
        valid: list[tuple[int, EntityType, EntityKey, dict[str, Any]]] = []
        for position, item in enumerate(items):
            try:
                valid.append((position, *self._draft(item)))
            except UnavailableError:
                raise
            except QuarryError as exc:
                entity_id = item.get("id") if isinstance(item, Mapping) else None
                fields = getattr(exc, "fields", {})
                report.errors.append(
                    {
                        "index": position,
                        "entity_id": entity_id if isinstance(entity_id, str) else None,
                        "error": exc.message,
                        "fields": {f"items.{position}.{k}".rstrip("."): v for k, v in fields.items()},
                    }
                )
        stored = self._index.get(tenant_id, [key for _, _, key, _ in valid])
        drafts: list[_Draft] = []
        for _, etype, key, body in valid:
            version, prior = _version(body, now), stored.get(key)
            if prior is not None and version < prior.version:
                report.skipped_stale += 1
            elif prior is not None and version == prior.version:
                report.indexed += 1  # a re-delivery: already indexed, harmless
            else:
                drafts.append(_Draft(etype, key, body, version, prior))
        for outcome in self._index.upsert_many(self._records(tenant_id, drafts, now)):
            if outcome is WriteOutcome.STALE:
                report.skipped_stale += 1
            else:
                report.indexed += 1
        if drafts:
            self._changed(tenant_id)
        return report
