"""The write and read-by-key bodies the OpenSearch adapter sends (`_bulk` actions, `_mget`), as plain dicts
(no client, no I/O), so each one can be validated without a cluster against
the OpenSearch API specification (docs/configuration.md#opensearch-spec); the search bodies are in
query_bodies.py (tests/adapters/test_opensearch_spec.py checks both).


- Writes are compare-and-set: the adapter reads the stored document's version with its `_seq_no` and
  `_primary_term`, decides (a version not newer than the stored one is stale or a duplicate), and writes
  with a bulk `create` (no document yet) or an `index` action with `if_seq_no`/`if_primary_term`.
  OpenSearch refuses the write (409) when anything wrote the document since the read, and the adapter
  reads again: a stale write loses even when writers race, and a metadata update (read, modify, write)
  is always built on the latest document. External versioning cannot do the latter: OpenSearch refuses
  `if_seq_no` together with a version ("compare and write operations can not use versioning").
  Deletes are tombstone documents written the same way; a real `delete` would forget the entity's
  version after `index.gc_deletes` (60 s) and let a delayed older write resurrect it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from infra.opensearch import mapping as m

# -- writes ------------------------------------------------------------------------------------------


SeqNo = tuple[int, int]  # (_seq_no, _primary_term) of the document as read


def write_action(alias: str, doc_id: str, seq: SeqNo | None, routing: str | None = None) -> dict[str, Any]:
    """The bulk action line that writes a whole document through the alias, only if it is unchanged since
    it was read (`seq`), or only if it does not exist yet (`seq` None: a `create`); with `routing` (the
    tenant, on a routed index: layout.py) to its tenant's shard."""
    meta: dict[str, Any] = {"_index": alias, "_id": doc_id, "require_alias": True}
    if routing is not None:
        meta["routing"] = routing
    if seq is None:
        return {"create": meta}
    return {"index": {**meta, "if_seq_no": seq[0], "if_primary_term": seq[1]}}


def write_pair(
    alias: str, doc_id: str, seq: SeqNo | None, source: dict[str, Any], routed: bool
) -> tuple[dict[str, Any], dict[str, Any]]:
    """One write's action and source lines; on a routed index, routed by the document's tenant."""
    return write_action(alias, doc_id, seq, str(source[m.TENANT]) if routed else None), source


def bulk_lines(
    alias: str, writes: Sequence[tuple[str, SeqNo | None, dict[str, Any]]], routed: bool = False
) -> list[dict[str, Any]]:
    """(doc id, seq, source) triples as action/source line pairs for `_bulk`."""
    return [line for w in writes for line in write_pair(alias, *w, routed)]


def write_bytes(alias: str, doc_id: str, seq: SeqNo | None, source: dict[str, Any]) -> int:
    """An upper bound of the bytes one write adds to a `_bulk` body (two NDJSON lines)."""
    lines = (write_action(alias, doc_id, seq, source.get(m.TENANT)), source)
    return sum(len(json.dumps(line, separators=(",", ":"))) + 1 for line in lines)


def byte_batches(sizes: Sequence[int], limit: int) -> list[list[int]]:
    """Positions grouped in order so each group's total stays within `limit` (a larger one goes alone)."""
    batches: list[list[int]] = []
    total = limit + 1
    for position, size in enumerate(sizes):
        if total + size > limit:
            batches.append([])
            total = 0
        batches[-1].append(position)
        total += size
    return batches


VERSION_FIELDS = (m.TENANT, m.VERSION, m.DELETED)
# What a metadata touch reads (`touch_read_body`): what it decides on, and what the display fields of the
# metadata it writes are computed from — never the chunks' vectors.
TOUCH_FIELDS = (*VERSION_FIELDS, m.METADATA_RAW, "title", m.CHUNK_TEXT)
# What a read of stored chunk vectors needs (`chunk_vectors`): not the text tiers, title or metadata.
VECTOR_FIELDS = (m.TENANT, m.ENTITY_TYPE, m.ENTITY_ID, m.CHUNK_NO, m.EMBEDDING)


def mget_body(
    doc_ids: Sequence[str],
    with_chunks: bool = False,
    version_only: bool = False,
    routing: Sequence[str | None] | None = None,
    vectors_only: bool = False,
) -> dict[str, Any]:
    """`_mget` for entity documents: without their chunks unless asked (the embeddings are large), only
    what a whole-document write decides on (tenant, version, deleted), or only the chunks' numbers and
    vectors; `routing`, one per id, on a routed index (a document is found only on its routing's shard)."""
    source: Any = True if with_chunks else {"excludes": [m.CHUNKS]}
    if version_only:
        source = {"includes": list(VERSION_FIELDS)}
    if vectors_only:
        source = {"includes": list(VECTOR_FIELDS)}
    docs: list[dict[str, Any]] = [{"_id": i, "_source": source} for i in doc_ids]
    for doc, value in zip(docs, routing or [], strict=False):
        if value is not None:
            doc["routing"] = value
    return {"docs": docs}


def touch_read_body(doc_ids: Sequence[str], routing: str | None) -> dict[str, Any]:
    """`_mget` of what a metadata touch needs of each document (TOUCH_FIELDS), with `_seq_no`."""
    docs: list[dict[str, Any]] = [{"_id": i, "_source": {"includes": list(TOUCH_FIELDS)}} for i in doc_ids]
    for doc in docs:
        if routing is not None:
            doc["routing"] = routing
    return {"docs": docs}


def touch_pair(
    index: str, doc_id: str, seq: SeqNo, fields: dict[str, Any], routing: str | None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A partial update of `fields` of one document in the concrete `index` it was read from, only if it is
    unchanged since (`seq` is that index's): text and vectors are never sent, so whatever generation a
    reindex has made live meanwhile keeps its own (infra/opensearch/reindex.py)."""
    meta: dict[str, Any] = {"_index": index, "_id": doc_id, "if_seq_no": seq[0], "if_primary_term": seq[1]}
    if routing is not None:
        meta["routing"] = routing
    return {"update": meta}, {"doc": fields}
