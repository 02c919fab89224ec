"""Entity records as OpenSearch documents (`_source`), and back.

Metadata is stored twice: `metadata_raw` keeps the values as given (returned to callers, not indexed),
`metadata_terms` holds one `key=value` keyword per value for filtering. One field for every key means
no mapping growth and no conflicts (a number here and a string there, `a` beside `a.b`). Filters build
their terms the same way (`metadata_term`).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import struct
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any
from urllib.parse import quote

from core.models import Chunk, EntityKey, EntityRecord, Placement, StoredEntity
from core.search.filters import DATE, NUMBER
from infra.opensearch import mapping as m

MAX_ID_BYTES = 512  # OpenSearch refuses longer `_id`s; longer keys are hashed
_ID_SAFE = "-_.~"


def doc_id(tenant_id: str, key: EntityKey) -> str:
    """The document `_id`: tenant, type and id percent-encoded and joined, so no two keys collide."""
    parts = (quote(tenant_id, safe=_ID_SAFE), key.entity_type, quote(key.entity_id, safe=_ID_SAFE))
    readable = ":".join(parts)
    if len(readable.encode()) <= MAX_ID_BYTES:
        return readable
    return "sha256:" + hashlib.sha256(readable.encode()).hexdigest()


def keyword(value: Any) -> str:
    """A scalar as the keyword it is indexed (and filtered) as: true/false, 5 for 5.0, JSON for objects."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if math.isfinite(value) and value.is_integer() else repr(value)
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


# Range terms (core/search/filters.py): a number also as `%N<key>=<sortable hex>`, a text that starts with a
# date also as `%D<key>=<text>`, so `range` on the one keyword field compares them in order. A key's own
# `%` is escaped (`%25`), so no `key=value` term starts with `%N` or `%D`.
NUMBER_PREFIX = "%N"
DATE_PREFIX = "%D"
DATED = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")  # the same test as infra/local/sqlite/sql.py _RANGE_VALUES
_SIGN = 1 << 63
_ALL_BITS = (1 << 64) - 1


def _escaped(key: str) -> str:
    return key.replace("%", "%25").replace("=", "%3D")


def sortable_number(value: float) -> str:
    """A number as 16 hex digits whose text order is the numbers' order (IEEE 754 bits, sign folded)."""
    (bits,) = struct.unpack(">Q", struct.pack(">d", float(value) + 0.0))  # -0.0 as 0.0
    return f"{(bits ^ _ALL_BITS) if bits & _SIGN else (bits | _SIGN):016x}"


def range_term(key: str, kind: str, value: Any) -> str:
    """The term a range compares: `kind` is core.search.filters NUMBER or DATE."""
    if kind == NUMBER:
        return f"{NUMBER_PREFIX}{_escaped(key)}={sortable_number(value)}"
    return f"{DATE_PREFIX}{_escaped(key)}={value}"


def range_limits(key: str, kind: str) -> tuple[str, str]:
    """The first and past-the-last terms of a key's range terms (`=` then `>`, the next character)."""
    prefix = f"{NUMBER_PREFIX if kind == NUMBER else DATE_PREFIX}{_escaped(key)}"
    return f"{prefix}=", f"{prefix}>"


def metadata_term(key: str, value: Any) -> str:
    """One `key=value` filter term; `%` and `=` in the key are escaped so no two pairs collide."""
    return f"{_escaped(key)}={keyword(value)}"


def metadata_terms(metadata: Mapping[str, Any]) -> list[str]:
    """The filter copy of metadata: a term per value, lists per element (any matches), None dropped; numbers
    and dated texts also as range terms."""
    out: list[str] = []
    for key, value in metadata.items():
        values = value if isinstance(value, (list, tuple)) else [value]
        for v in values:
            if v is None:
                continue
            out.append(metadata_term(key, v))
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
                out.append(range_term(key, NUMBER, v))
            elif isinstance(v, str) and DATED.match(v):
                out.append(range_term(key, DATE, v))
    return out


def _units(text: str) -> int:
    """A string's length as OpenSearch's `ignore_above` counts it (Java chars: UTF-16 code units)."""
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def metadata_value(metadata: Mapping[str, Any]) -> str:
    """The metadata as the compact JSON its doc value holds (searches read it instead of `_source`)."""
    return json.dumps(metadata, separators=(",", ":"), ensure_ascii=False)


def display_fields(title: str, texts: Sequence[str], metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The metadata's doc-value copy, and whether any shown value is too long for a doc value (mapping.py:
    DISPLAY_CLIPPED; the title and chunk texts reach theirs through `copy_to`)."""
    meta = metadata_value(metadata)
    limit = m.DISPLAY_VALUE_UNITS
    clipped = _units(title) > limit or _units(meta) > limit or any(_units(t) > limit for t in texts)
    return {m.METADATA_VALUE: meta, m.DISPLAY_CLIPPED: clipped}


def for_layout(source: dict[str, Any], display_values: bool, feedback_vectors: bool = True) -> dict[str, Any]:
    """`source` as the live index takes it: an index made before the display doc values or the compact
    feedback vectors (its mapping is strict) refuses their fields, so they are left out there."""
    dropped = () if display_values else (m.METADATA_VALUE, m.DISPLAY_CLIPPED)
    if not feedback_vectors:
        dropped = (*dropped, m.FEEDBACK_VECTORS)
    if not dropped:
        return source
    return {k: v for k, v in source.items() if k not in dropped}


def feedback_vectors(chunks: Sequence[tuple[int, Any]]) -> str | None:
    """mapping.FEEDBACK_VECTORS of (chunk number, vector) pairs: per chunk an int32 and float16 values,
    little-endian, base64 (None without any vector)."""
    import base64

    import numpy as np

    parts = [
        np.int32(no).astype("<i4").tobytes() + np.asarray(v, dtype="<f2").tobytes()
        for no, v in chunks
        if v is not None
    ]
    return base64.b64encode(b"".join(parts)).decode("ascii") if parts else None


def chunk_feedback_vectors(value: str, dimension: int) -> dict[int, Any]:
    """mapping.FEEDBACK_VECTORS read back: chunk number → float32 vector (of `dimension` values; a value
    written for another dimension reads as nothing). One conversion per entity, not one per chunk: a
    hybrid search with feedback reads ~150 entities' (docs/benchmarks.md#opensearch-own-cpu)."""
    import base64

    import numpy as np

    raw = base64.b64decode(value + "=" * (-len(value) % 4))  # the node returns doc values unpadded
    kind = _feedback_row(dimension)
    if not raw or len(raw) % kind.itemsize:
        return {}
    rows = np.frombuffer(raw, dtype=kind)
    return dict(zip(rows["no"].tolist(), rows["v"].astype(np.float32), strict=True))


@cache
def _feedback_row(dimension: int) -> Any:
    """The record of one chunk in mapping.FEEDBACK_VECTORS: its number (int32), its float16 values."""
    import numpy as np

    return np.dtype([("no", "<i4"), ("v", "<f2", (dimension,))])


def with_feedback_vectors(source: dict[str, Any]) -> dict[str, Any]:
    """A document with its compact feedback vectors (re)computed from its chunks' embeddings."""
    chunks = [(int(c.get("chunk_no") or 0), c.get("embedding")) for c in source.get(m.CHUNKS) or []]
    return {**source, m.FEEDBACK_VECTORS: feedback_vectors(chunks)}


def with_display(source: dict[str, Any]) -> dict[str, Any]:
    """A stored document with its filter terms and display fields (re)computed (a reindex copies older
    documents)."""
    texts = [str(c.get("text") or "") for c in source.get(m.CHUNKS) or []]
    metadata = source.get(m.METADATA_RAW) or {}
    return {
        **source,
        m.METADATA: metadata_terms(metadata),  # an older copy may lack the range terms
        **display_fields(str(source.get("title") or ""), texts, metadata),
    }


def _chunk(chunk: Chunk) -> dict[str, Any]:
    source: dict[str, Any] = {"chunk_no": chunk.chunk_no, "text": chunk.text}
    for field, text in zip(m.TIER_FIELDS, chunk.tiers, strict=True):
        source[field.removeprefix(f"{m.CHUNKS}.")] = text
    if chunk.embedding is not None:
        source["embedding"] = vector_json(chunk.embedding)
    return source


def vector_json(vector: Any) -> list[float]:
    """A vector as the shortest decimals that bring back its float32 values exactly (NumPy's float32
    repr): 0.013274832 rather than the double repr 0.013274831883609295, 40% fewer characters for a
    384-dimension vector. The vector is text in `_source` and in every `_bulk`, most of a document's
    stored bytes; the node stores float32 either way."""
    import numpy as np

    return list(map(float, np.asarray(vector, dtype=np.float32).astype(str)))


def entity_source(record: EntityRecord) -> dict[str, Any]:
    """The whole document for one entity version."""
    return {
        m.TENANT: record.tenant_id,
        m.ENTITY_TYPE: record.key.entity_type,
        m.ENTITY_ID: record.key.entity_id,
        m.VERSION: record.version,
        m.DELETED: False,
        m.SOURCE: record.source,
        m.OWNER: record.owner,
        m.NAMESPACE: record.namespace,
        "created_at": record.created_at,
        "updated_at": record.updated_at,
        "title": record.title,
        "content_hash": record.content_hash,
        "body": dict(record.body),
        m.METADATA: metadata_terms(record.metadata),
        m.METADATA_RAW: dict(record.metadata),
        **display_fields(record.title, [c.text for c in record.chunks], record.metadata),
        m.FEEDBACK_VECTORS: feedback_vectors([(c.chunk_no, c.embedding) for c in record.chunks]),
        m.CHUNKS: [_chunk(c) for c in record.chunks],
    }


def with_metadata(
    stored: Mapping[str, Any],
    version: int,
    body: Mapping[str, Any],
    metadata: Mapping[str, Any],
    updated_at: str,
    placement: Placement | None = None,
) -> dict[str, Any]:
    """A stored document with new body, metadata, version (and placement); text and embeddings untouched."""
    doc = dict(stored)
    doc.update(
        {
            m.VERSION: version,
            "body": dict(body),
            m.METADATA_RAW: dict(metadata),  # with_display derives the filter terms
            "updated_at": updated_at,
        }
    )
    doc = with_display(doc)
    if placement is not None:
        doc.update({m.SOURCE: placement.source, m.OWNER: placement.owner, m.NAMESPACE: placement.namespace})
    return doc


def identity(tenant_id: str, key: EntityKey) -> dict[str, Any]:
    """The identity fields of an entity never indexed (the base of its tombstone)."""
    return {m.TENANT: tenant_id, m.ENTITY_TYPE: key.entity_type, m.ENTITY_ID: key.entity_id, m.SOURCE: ""}


def tombstone(stored: Mapping[str, Any], version: int) -> dict[str, Any]:
    """A deleted entity: identity, version and provenance kept; text, chunks, body and metadata dropped."""
    doc = dict(stored)
    doc.update(
        {
            m.VERSION: version,
            m.DELETED: True,
            "title": "",
            "body": {},
            m.METADATA: [],
            m.METADATA_RAW: {},
            **display_fields("", [], {}),
            m.FEEDBACK_VECTORS: None,
            m.CHUNKS: [],
        }
    )
    return doc


def new_tombstone(tenant_id: str, key: EntityKey, version: int) -> dict[str, Any]:
    """The tombstone of an entity never stored: identity and version only (a versioned delete came first)."""
    return tombstone(
        {m.TENANT: tenant_id, m.ENTITY_TYPE: key.entity_type, m.ENTITY_ID: key.entity_id, m.SOURCE: ""},
        version,
    )


def stored_entity(source: Mapping[str, Any]) -> StoredEntity:
    """A document's `_source` as a StoredEntity (chunks are never part of it)."""
    return StoredEntity(
        tenant_id=str(source[m.TENANT]),
        key=EntityKey(str(source[m.ENTITY_TYPE]), str(source[m.ENTITY_ID])),
        version=int(source[m.VERSION]),
        deleted=bool(source.get(m.DELETED, False)),
        source=str(source.get(m.SOURCE) or ""),
        owner=source.get(m.OWNER),
        namespace=source.get(m.NAMESPACE),
        created_at=str(source.get("created_at") or ""),
        updated_at=str(source.get("updated_at") or ""),
        title=str(source.get("title") or ""),
        body=dict(source.get("body") or {}),
        metadata=dict(source.get(m.METADATA_RAW) or {}),
        content_hash=str(source.get("content_hash") or ""),
    )
