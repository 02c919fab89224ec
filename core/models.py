"""Values that cross the ports: what is indexed, what retrieval returns, and how it is filtered."""

from __future__ import annotations

import enum
from collections.abc import ItemsView, Iterator, KeysView, Mapping, ValuesView
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:  # numpy loads with the first vector (an embedder or index adapter), not at import
    import numpy as np
    import numpy.typing as npt

    Vector = npt.NDArray[np.float32]
else:
    Vector = Any
Scalar = str | int | float | bool


class EntityKey(NamedTuple):
    """Identity of an entity inside a tenant. A named tuple, so that hashing, equality and ordering run in C:
    every fusion, feedback and result step keys dictionaries by it, thousands of times per search."""

    entity_type: str
    entity_id: str

    def __str__(self) -> str:
        return f"{self.entity_type}:{self.entity_id}"


@dataclass(frozen=True, slots=True)
class Chunk:
    """One indexed unit of an entity: its text by boost tier (3, 2, 1), plain text, and its embedding."""

    chunk_no: int
    tiers: tuple[str, str, str]
    text: str
    embedding: Vector | None = None


@dataclass(frozen=True, slots=True)
class Placement:
    """Where an entity sits for filtering: its source store, owner and namespace (indexed fields)."""

    source: str
    owner: str | None = None
    namespace: str | None = None


@dataclass(frozen=True, slots=True)
class EntityRecord:
    """Everything the index stores for one entity version."""

    tenant_id: str
    key: EntityKey
    version: int
    source: str
    owner: str | None
    namespace: str | None
    created_at: str
    updated_at: str
    title: str
    body: Mapping[str, Any]
    metadata: Mapping[str, Any]
    content_hash: str
    chunks: tuple[Chunk, ...]


@dataclass(frozen=True, slots=True)
class StoredEntity:
    """An entity as read back from the index (no chunks, no embeddings)."""

    tenant_id: str
    key: EntityKey
    version: int
    deleted: bool
    source: str
    owner: str | None
    namespace: str | None
    created_at: str
    updated_at: str
    title: str
    body: Mapping[str, Any]
    metadata: Mapping[str, Any]
    content_hash: str


class WriteOutcome(enum.Enum):
    """What a versioned write did: applied, ignored as older than stored, or a harmless re-delivery."""

    APPLIED = "applied"
    STALE = "stale"
    DUPLICATE = "duplicate"
    NOT_FOUND = "not_found"


class MatchMode(enum.Enum):
    """How lexical terms match: exactly (stemmed), as prefixes, or fuzzily (edit distance)."""

    EXACT = "exact"
    PREFIX = "prefix"
    FUZZY = "fuzzy"


@dataclass(frozen=True, slots=True)
class LexicalQuery:
    """Sanitised terms and phrases; adapters quote them in their own syntax (no injection possible)."""

    terms: tuple[str, ...]
    phrases: tuple[str, ...] = ()
    mode: MatchMode = MatchMode.EXACT
    # Query-term frequency per term (aligned with `terms`; empty = each once): BM25's query side.
    weights: tuple[int, ...] = ()

    def weight(self, index: int) -> int:
        """How many times the query holds `terms[index]` (at least 1)."""
        return self.weights[index] if index < len(self.weights) else 1

    def term_weights(self) -> list[int]:
        """`weight` of every term, in order (one call for a loop over the terms)."""
        return [*self.weights[: len(self.terms)], *[1] * (len(self.terms) - len(self.weights))]

    @property
    def empty(self) -> bool:
        return not self.terms and not self.phrases


@dataclass(frozen=True, slots=True)
class Condition:
    """One filter condition beyond equality (core/search/filters.py parses them from a search's `filters`).

    `op` is `gt`/`gte`/`lt`/`lte` (a range bound: `values` holds the one bound, `kind` says how it
    compares: `number` against numeric values, `date` against ISO 8601 text as text), `not` (none of
    `values`; entities without the field pass) or `exists` (`values` = (True,) or (False,)). `column`:
    the field is an entity column (source, owner, namespace, created_at, updated_at), not metadata.
    """

    field: str
    op: str
    values: tuple[Scalar, ...]
    kind: str = ""
    column: bool = False


@dataclass(frozen=True, slots=True)
class Filters:
    """Restrictions applied inside retrieval (never post-filtered). Empty tuples mean "any"."""

    entity_types: tuple[str, ...] = ()
    metadata: Mapping[str, tuple[Scalar, ...]] = field(default_factory=dict)
    sources: tuple[str, ...] = ()
    owner: str | None = None
    exclude_owner: str | None = None
    namespaces: tuple[str, ...] = ()
    owners: tuple[str, ...] = ()  # any of these owners (a search's `owner` filter with several values)
    conditions: tuple[Condition, ...] = ()  # ranges, `not`, `exists`: every one must hold


class JsonObject(Mapping[str, Any]):
    """A JSON object kept as its text and parsed when first read. A search reads ~200 candidates and shows
    20: the metadata of the rest is never parsed (docs/benchmarks.md#lazy-metadata). Reads, compares and
    copies (`dict(...)`) as the object it holds; an empty text is the empty object."""

    __slots__ = ("_text", "_value")

    def __init__(self, text: str) -> None:
        self._text = text
        self._value: dict[str, Any] | None = None

    def _parsed(self) -> dict[str, Any]:
        if self._value is None:
            import json

            self._value = json.loads(self._text) if self._text and self._text != "{}" else {}
        return self._value

    def __getitem__(self, key: str) -> Any:
        return self._parsed()[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self._parsed().get(key, default)

    def __iter__(self) -> Iterator[str]:
        return iter(self._parsed())

    def items(self) -> ItemsView[str, Any]:
        return self._parsed().items()

    def keys(self) -> KeysView[str]:
        return self._parsed().keys()

    def values(self) -> ValuesView[Any]:
        return self._parsed().values()

    def __len__(self) -> int:
        return len(self._parsed())

    def __eq__(self, other: object) -> bool:
        return self._parsed() == (other._parsed() if isinstance(other, JsonObject) else other)

    __hash__ = None  # type: ignore[assignment]  # as a dict's: mutable contents

    def __repr__(self) -> str:
        return repr(self._parsed())


class Candidate(NamedTuple):
    """One retrieved entity (its best chunk) with the retriever's raw score; rank is its list position. A
    named tuple: each leg of a search builds one per hit (hundreds per search), and a tuple is built in C."""

    key: EntityKey
    score: float
    chunk_no: int
    title: str
    text: str
    source: str
    owner: str | None
    namespace: str | None
    created_at: str
    updated_at: str
    metadata: Mapping[str, Any]
    # Set when the index left the display values out (CandidateQuery.display False): its own reference to
    # the matched chunk, by which Retriever.displayed reads them for what is shown; None when they are in.
    handle: Any = None


# `chunk_no` of a candidate whose matched chunk is not known (CandidateQuery.vector_ranking_only), and, in a
# `SearchIndex.chunk_vectors` request, "every stored chunk of the entity".
ALL_CHUNKS = -1


@dataclass(frozen=True, slots=True)
class CandidateQuery:
    """One retrieval of a batch (`SearchIndex.retrieve_many`): what `retrieve` takes besides the tenant."""

    query: LexicalQuery | None
    embedding: Vector | None
    filters: Filters
    k: int
    # Only the vector list's ranking is needed (keys and scores): vector pseudo-relevance feedback
    # (core.search.pseudo_relevance) replaces that list before anything is shown. An index may then leave out
    # the display values (SQLite reads neither texts nor metadata), and where naming the matched chunk is
    # what costs (OpenSearch: the nested inner hit, most of a k-NN search's time on the node), the chunk
    # too: such candidates carry `chunk_no` ALL_CHUNKS.
    vector_ranking_only: bool = False
    # The hits' stored chunk vectors are wanted (vector feedback): an index that keeps a compact copy it
    # can return with each hit does so (CandidateLists.vectors); one that cannot leaves them out.
    with_vectors: bool = False
    # False: only what is shown needs the display values (title, text, metadata, ...), and a search shows a
    # page of the hundreds it ranks. An index may then leave them out of both lists, each candidate carrying
    # a `handle` instead, and read them for the shown ones by `Retriever.displayed` (SQLite does: the rows it
    # would read and build for the candidates never shown are most of a search's reads).
    display: bool = True


@dataclass(frozen=True, slots=True)
class CandidateLists:
    """What one round trip to the index returned: the lexical and the vector lists, best first, and, when
    asked (CandidateQuery.with_vectors) and the index has them at hand, the listed entities' stored chunk
    vectors, entity → chunk number → vector (possibly of reduced precision: OpenSearch keeps float16)."""

    lexical: tuple[Candidate, ...] = ()
    vector: tuple[Candidate, ...] = ()
    vectors: Mapping[EntityKey, Mapping[int, Vector]] = field(default_factory=dict)
