"""What the LangChain and LlamaIndex vector stores share, framework-free: how a text with its metadata (and
optionally its vector) becomes a Quarry entity, how a search for it is asked, how a hit becomes a text
again, and maximal marginal relevance over fetched candidates.

An item of the store is one entity of `Layout.entity_type` (default `document`, whose `text` field is
searchable and chunked): the text goes verbatim into `text_field` and the whole metadata, as given, into
`metadata_field` (stored, returned, never indexed), so both come back exactly through the search's
`return_fields`. Metadata keys that are Quarry filter fields of the type (`filter_fields`: for a document
`source`, `owner`, `namespace`, `topic`, `trust`) are also written as those fields, which is what makes
them filterable: Quarry filters only on the fields its entity types declare (docs/api.md, Search
filters), so a filter on any other metadata key is a 400 naming the filterable ones.
"""

from __future__ import annotations

import math
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from quarry_client import models as m
from quarry_client._documents import plain
from quarry_client._errors import BulkWriteError
from quarry_client._operations import SearchOptions, Strategy

SEARCH_PAGE_MAX = 100  # SearchRequest.limit's maximum in the OpenAPI document
BATCH_GET_MAX = 100  # BatchGetRequest.items' maxItems
LIST_PAGE_MAX = 500  # GET /entities `limit` maximum
# Items per POST /entities: well under QUARRY_MAX_BODY_BYTES (1 MiB, about 500 typical items, docs/api.md).
WRITE_BATCH = 100
# The document type's filterable fields and the common ones (the server's core/indexing/entity_types.py).
DOCUMENT_FILTER_FIELDS = ("source", "owner", "namespace", "topic", "trust")
_WORD = re.compile(r"\w+")


@dataclass(frozen=True, slots=True)
class Layout:
    """Where a store keeps its items: the entity type, the fields for text and metadata, the metadata keys
    also written as filterable fields, and an optional namespace that scopes every write, read and delete."""

    entity_type: str = "document"
    text_field: str = "text"
    metadata_field: str = "metadata"
    filter_fields: tuple[str, ...] = DOCUMENT_FILTER_FIELDS
    namespace: str | None = None


@dataclass(frozen=True, slots=True)
class Stored:
    """An item read back: its id, its text and metadata exactly as written, and the search score."""

    id: str
    text: str
    metadata: dict[str, Any]
    score: float = 0.0


def new_ids(ids: Iterable[str | None] | None, count: int) -> list[str]:
    """The ids given, a fresh uuid4 for each missing one."""
    given = list(ids) if ids is not None else [None] * count
    if len(given) != count:
        raise ValueError(f"{len(given)} ids for {count} texts")
    return [str(i) if i else str(uuid.uuid4()) for i in given]


def item(
    layout: Layout,
    item_id: str,
    text: str,
    metadata: Mapping[str, Any] | None,
    vector: Sequence[float] | None,
) -> dict[str, Any]:
    """The POST /entities item of one text."""
    metadata = dict(metadata or {})
    out: dict[str, Any] = {"type": layout.entity_type, "id": item_id, layout.text_field: text,
                           layout.metadata_field: metadata}  # fmt: skip
    for key in layout.filter_fields:
        value = metadata.get(key)
        if isinstance(value, str | int | float | bool) and not (key == "namespace" and layout.namespace):
            out[key] = value
    if layout.namespace:
        out["namespace"] = layout.namespace
    if vector is not None:
        out["embedding"] = [float(x) for x in vector]
    return out


def check_write(write: Any) -> None:
    """Raise BulkWriteError when a write refused items one by one."""
    if write.errors:
        raise BulkWriteError(f"{len(write.errors)} items refused: {write.errors[:3]}", write.errors)


def batches(values: Sequence[Any], size: int) -> list[Sequence[Any]]:
    return [values[at : at + size] for at in range(0, len(values), size)]


def search_options(
    layout: Layout,
    limit: int,
    filters: Mapping[str, Any] | None,
    vector: Sequence[float] | None,
    strategy: Strategy,
) -> SearchOptions:
    """POST /search options of a store query: its entity type, its namespace and the caller's filters, the
    stored text and metadata returned, and the query vector when the caller embeds."""
    scoped = {**(filters or {}), **({"namespace": layout.namespace} if layout.namespace else {})}
    options: SearchOptions = {"entities": [layout.entity_type], "limit": min(max(limit, 1), SEARCH_PAGE_MAX),
                              "strategy": strategy, "return_fields": [layout.text_field, layout.metadata_field]}  # fmt: skip
    if scoped:
        options["filters"] = scoped
    if vector is not None:
        options["query_vector"] = [float(x) for x in vector]
    return options


def hit(layout: Layout, result: m.SearchResult) -> Stored:
    """A search hit as the store's item (an entity the store did not write: its title and snippet)."""
    return _stored(layout, result.entity_id, result.fields or {}, result.metadata, result.score,
                   "\n".join(p for p in (result.title, plain(result.snippet)) if p))  # fmt: skip


def entity(layout: Layout, found: m.EntityOut) -> Stored:
    """A stored entity (batch-get) as the store's item."""
    return _stored(layout, found.entity_id, found.fields, found.metadata, 0.0, found.title)


def _stored(
    layout: Layout,
    item_id: str,
    fields: Mapping[str, Any],
    metadata: Mapping[str, Any],
    score: float,
    fallback: str,
) -> Stored:
    text = fields.get(layout.text_field)
    if isinstance(text, list):
        text = "\n".join(str(t) for t in text)
    kept = fields.get(layout.metadata_field)
    return Stored(item_id, text if isinstance(text, str) else fallback,
                  dict(kept) if isinstance(kept, Mapping) else dict(metadata), score)  # fmt: skip


def in_scope(layout: Layout, found: m.EntityOut) -> bool:
    """Whether a listed entity belongs to the store (its type, and its namespace when it has one)."""
    return found.entity_type == layout.entity_type and (
        layout.namespace is None or found.namespace == layout.namespace
    )


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity (0 when either vector is zero)."""
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return sum(x * y for x, y in zip(a, b, strict=False)) / norm if norm else 0.0


def word_overlap(a: str, b: str) -> float:
    """Jaccard similarity of the two texts' lower-cased word sets: the stand-in for the cosine between two
    candidates when the server's vectors are out of reach (Quarry never returns them)."""
    left, right = set(_WORD.findall(a.lower())), set(_WORD.findall(b.lower()))
    return len(left & right) / len(left | right) if left or right else 1.0


def mmr(
    relevance: Sequence[float], similarity: Sequence[Sequence[float]], k: int, lambda_mult: float
) -> list[int]:
    """Maximal marginal relevance (Carbonell & Goldstein, SIGIR 1998): repeatedly pick the candidate with
    the best λ·relevance − (1−λ)·(its highest similarity to those picked); ties go to the earlier rank."""
    picked: list[int] = []
    left = list(range(len(relevance)))
    while left and len(picked) < k:

        def gain(i: int) -> float:
            redundancy = max((similarity[i][j] for j in picked), default=0.0)
            return lambda_mult * relevance[i] - (1 - lambda_mult) * redundancy

        best = max(left, key=lambda i: (gain(i), -i))
        picked.append(best)
        left.remove(best)
    return picked


def text_similarities(texts: Sequence[str]) -> list[list[float]]:
    return [[word_overlap(a, b) for b in texts] for a in texts]


def vector_similarities(vectors: Sequence[Sequence[float]]) -> list[list[float]]:
    return [[cosine(a, b) for b in vectors] for a in vectors]


def pick(
    hits: list[Stored],
    query: Sequence[float] | None,
    vectors: Sequence[Sequence[float]] | None,
    k: int,
    lambda_mult: float,
) -> list[Stored]:
    """MMR over search hits: by cosine when the query's and the candidates' vectors are known, else by
    Quarry's score and the candidates' word overlap."""
    if query is not None and vectors is not None:
        relevance = [cosine(query, v) for v in vectors]
        similarity = vector_similarities(vectors)
    else:
        relevance, similarity = [h.score for h in hits], text_similarities([h.text for h in hits])
    return [hits[i] for i in mmr(relevance, similarity, k, lambda_mult)]
