"""Models that turn text into numbers: the embedder (vectors) and the token counters (budgets)
(docs/architecture.md, Ports and adapters).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from core.models import (
    Vector,
)
from core.tokens import TokenCounter


class Embedder(Protocol):
    """Text → unit-length vectors."""

    @property
    def dimension(self) -> int: ...

    @property
    def model_id(self) -> str: ...

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        """One L2-normalised vector per passage; raises UnavailableError when the model cannot answer."""
        ...

    def embed_query(self, texts: Sequence[str]) -> list[Vector]:
        """Like `embed`, for search queries (models such as E5 or BGE embed queries with a prefix)."""
        ...

    # Capabilities with a default, inherited by the embedders that subclass this port: one model for every
    # tenant, vectors filed under the model's name, no tenant bringing its own.

    @property
    def vectors_id(self) -> str:
        """What an embedding cache files this embedder's vectors under (the model, and for local models the
        runtime and pooling that change the vectors' last bits)."""
        return self.model_id

    def for_tenant(self, tenant_id: str) -> Embedder:
        """The embedder of the model `tenant_id`'s vectors were built with (another one after `quarry reindex
        --tenant`; one without a model for a tenant that brings its own vectors). Resolve once per call,
        then embed and read `model_id` from the result, so both name the same model even if a reindex
        switches it meanwhile."""
        return self

    def brings_own(self, tenant_id: str) -> bool:
        """Whether `tenant_id`'s callers bring their own vectors (QUARRY_BYO_VECTOR_TENANTS): a lookup, where
        `for_tenant` may read which model a reindex switched the tenant to."""
        return False


class TokenCounters(Protocol):
    """Token counters by encoding name (core/tokens.py TOKEN_ENCODINGS)."""

    def counter(self, encoding: str) -> TokenCounter:
        """The counter for `encoding`; InvalidInputError naming `token_encoding` when this deployment
        cannot count in it (its tokenizer is not installed)."""
        ...
