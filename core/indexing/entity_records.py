"""The records an indexing write stores (core/indexing/indexing_service.py): each draft's chunks, their
embeddings from one batched model call (or the caller's own vector), and the entity's metadata and content
hash (docs/architecture.md, Write path)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from core.indexing.caller_vectors import brings_own_vectors, caller_vector, marked_hash
from core.indexing.chunking import build_chunks, embedding_input
from core.indexing.drafts import EMBEDDING_FIELD, Draft, chunk_vectors
from core.memory.metadata import indexed_metadata
from core.models import Chunk, EntityRecord, Vector
from core.ports import Embedder
from core.text import flatten_all
from core.timestamps import iso_timestamp


def build_records(
    embedder: Embedder, tenant_id: str, drafts: Sequence[Draft], now: float
) -> list[EntityRecord]:
    """Build records for many drafts with ONE embedding call (batched encoding is several times faster).
    A draft with the caller's vector is not embedded: the vector goes with its first chunk, the other
    chunks are keyword-only; a tenant bringing its own vectors embeds nothing (core/indexing/caller_vectors.py)."""
    built = [build_chunks(d.etype, d.body) for d in drafts]
    titles = [t.strip() for t in flatten_all([d.body.get(d.etype.title_field) for d in drafts])]
    embedder = embedder.for_tenant(tenant_id)  # the tenant's model (quarry reindex)
    model = not brings_own_vectors(embedder)
    inputs = [
        embedding_input(d.etype.chunked, title, plain)
        for d, title, chunks in zip(drafts, titles, built, strict=True)
        if model and d.vector is None
        for _, plain in chunks
    ]
    vectors = iter(embedder.embed(inputs) if inputs else [])
    return [
        entity_record(tenant_id, d, title, chunks, chunk_vectors(d, len(chunks), model, vectors), now)
        for d, title, chunks in zip(drafts, titles, built, strict=True)
    ]


def split_vector(embedder: Embedder, tenant_id: str, body: Any) -> tuple[Any, Vector | None]:
    """(the body without `embedding`, the caller's vector checked against the tenant's dimension; None
    without one: `"embedding": null` is no vector, never a stored field)."""
    if not isinstance(body, Mapping) or EMBEDDING_FIELD not in body:
        return body, None
    rest = {k: v for k, v in body.items() if k != EMBEDDING_FIELD}
    if body[EMBEDDING_FIELD] is None:
        return rest, None
    dimension = embedder.for_tenant(tenant_id).dimension
    return rest, caller_vector(body[EMBEDDING_FIELD], dimension, EMBEDDING_FIELD)


def model_embeds(embedder: Embedder, tenant_id: str, vector: Vector | None) -> bool:
    """Whether a write with `vector` (None: the caller sent none) is embedded by the model: not when
    the caller brought the vector, nor for a tenant whose vectors come only from its callers."""
    return vector is None and not brings_own_vectors(embedder.for_tenant(tenant_id))


def entity_record(
    tenant_id: str,
    d: Draft,
    title: str,
    chunks: list[tuple[tuple[str, str, str], str]],
    vectors: Iterator[Vector | None],
    now: float,
) -> EntityRecord:
    """One draft's record: its chunks with their vectors, its metadata, and the hash of its text."""
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
        metadata=indexed_metadata(etype, body, d.prior, str(created)),
        content_hash=marked_hash(
            hashlib.sha256(" ".join(p for _, p in chunks).lower().encode()).hexdigest(), d.vector
        ),
        chunks=tuple(
            Chunk(chunk_no=i, tiers=t, text=plain, embedding=next(vectors))
            for i, (t, plain) in enumerate(chunks)
        ),
    )
