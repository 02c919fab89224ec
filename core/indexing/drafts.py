"""A write on its way to the index (docs/architecture.md, Write path): the validated draft waiting for its
embeddings, the vector each of its chunks gets, and the result a write answers with."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from core.indexing.caller_vectors import fingerprint
from core.indexing.entity_types import EntityType
from core.models import EntityKey, StoredEntity, Vector, WriteOutcome

EMBEDDING_FIELD = "embedding"  # a write's own vector (docs/api.md, "Your own vectors")


@dataclass(frozen=True, slots=True)
class WriteResult:
    """The outcome of one write, with the version it carried and the version stored before it."""

    key: EntityKey
    version: int
    outcome: WriteOutcome
    reembedded: bool
    stored_version: int | None = None
    unindexed_fields: tuple[str, ...] = ()  # stored, neither searched nor filtered on (EntityType.unindexed)


@dataclass(frozen=True, slots=True)
class Draft:
    """A validated write waiting for its embeddings."""

    etype: EntityType
    key: EntityKey
    body: dict[str, Any]
    version: int
    prior: StoredEntity | None
    vector: Vector | None = None  # the caller's own (core/indexing/caller_vectors.py), unit length

    @property
    def mark(self) -> str:
        """The caller vector's fingerprint ("" without one): content, for the version rules."""
        return "" if self.vector is None else fingerprint(self.vector)


def chunk_vectors(
    draft: Draft, chunks: int, model: bool, embedded: Iterator[Vector]
) -> Iterator[Vector | None]:
    """Each chunk's vector: the caller's with the first chunk (None with the others), else the model's next
    ones, else (a tenant bringing its own vectors, none given) None: keyword-only."""
    if draft.vector is not None:
        return iter([draft.vector, *([None] * (chunks - 1))])
    if not model:
        return iter([None] * chunks)
    return iter([next(embedded) for _ in range(chunks)])  # the draft's vectors taken at once
