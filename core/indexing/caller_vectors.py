"""Vectors that come from callers (docs/api.md, "Your own vectors"): checked, normalised, fingerprinted.

A write may carry its entity's `embedding` and a search its `query_vector`. Both are checked against the
tenant's vector dimension (the deployment model's, or the one a bring-your-own tenant declares), and made
unit length: every index ranks by cosine (infra/opensearch/mapping.py SPACE_TYPE; the local store by dot
product over unit vectors), so only a vector's direction matters.

A tenant declared bring-your-own (`QUARRY_BYO_VECTOR_TENANTS`, docs/configuration.md) has no embedder:
`CallerVectorTenants.for_tenant` gives it a `CallerVectors`, whose dimension is the declared one and which
refuses to embed text (CallerVectorsError). Writes without `embedding` are then indexed for keywords only;
the paths that embed query text (context assembly, governed retrieval) fall back to keywords with a warning.

A caller's vector is stored with the entity's first chunk only (a vector describes the whole entity; the
other chunks of a long text are found by keywords), and its fingerprint is part of the entity's
`content_hash`, so a write at the stored version with another vector is other content (a version conflict),
and `quarry reindex` can tell entities whose vector no model can recompute.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from pydantic import Field

from core.base_model import JsonFloat
from core.errors import CallerVectorsError, InvalidInputError
from core.models import Vector
from core.ports import Embedder

# OpenSearch's Lucene k-NN engine holds at most 16,000 dimensions (OpenSearch documentation, "k-NN vector",
# engine limits); the local store has no limit, the same cap keeps both backends alike.
MAX_VECTOR_DIMENSION = 16_000
VECTOR_MARK = "+vector:"  # in `content_hash`: what follows fingerprints the caller's vector
FINGERPRINT_CHARS = 32  # 128 bits of SHA-256 over the unit vector's float32 bytes
# The JSON Schema of a caller's vector (`embedding`, `query_vector`); its length is checked per tenant.
VectorList = Annotated[list[JsonFloat], Field(min_length=1, max_length=MAX_VECTOR_DIMENSION)]
VECTOR_RULES = (
    "as many numbers as the tenant's vector dimension (the deployment model's, e.g. 384, or the one "
    "declared for a tenant bringing its own vectors), finite, not all zero; only its direction counts "
    "(cosine)"
)


def caller_vector(value: Any, dimension: int, path: str) -> Vector:
    """`value` as a unit float32 vector of `dimension` numbers, or InvalidInputError naming `path`."""
    if not isinstance(value, Sequence) or isinstance(value, str):
        raise InvalidInputError(f"invalid {path}", {path: "must be a list of numbers"})
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in value):
        raise InvalidInputError(f"invalid {path}", {path: "must be a list of numbers"})
    if len(value) != dimension:
        rule = f"must have {dimension} numbers (the tenant's vector dimension), not {len(value)}"
        raise InvalidInputError(f"invalid {path}", {path: rule})
    import numpy as np  # here, not at import: a handler's cold start never pays for it

    try:
        vector = np.asarray([float(v) for v in value], dtype=np.float64)
    except OverflowError:  # an integer beyond any float (JSON allows 1 followed by 400 zeros)
        vector = np.asarray([math.inf])
    if not bool(np.all(np.isfinite(vector))):
        raise InvalidInputError(f"invalid {path}", {path: "must hold finite numbers only"})
    peak = float(np.max(np.abs(vector)))
    if peak == 0.0:
        raise InvalidInputError(f"invalid {path}", {path: "must not be all zeros (it has no direction)"})
    scaled = vector / peak  # the norm of the numbers themselves may overflow (1e308 squared)
    unit: Vector = (scaled / np.linalg.norm(scaled)).astype(np.float32)
    return unit


def fingerprint(vector: Vector) -> str:
    """A short digest of a unit vector (what `content_hash` carries after VECTOR_MARK)."""
    return hashlib.sha256(vector.tobytes()).hexdigest()[:FINGERPRINT_CHARS]


def marked_hash(text_hash: str, vector: Vector | None) -> str:
    """An entity's `content_hash`: its text's digest, and the caller's vector's fingerprint when it brought one."""
    return text_hash if vector is None else f"{text_hash}{VECTOR_MARK}{fingerprint(vector)}"


def vector_mark(content_hash: str) -> str:
    """The caller vector's fingerprint in a stored `content_hash`; "" when the entity's vectors are a model's."""
    _, _, mark = content_hash.partition(VECTOR_MARK)
    return mark


def check_dimensions(tenants: Mapping[str, int]) -> dict[str, str]:
    """{tenant: problem} for declared dimensions out of range (a setting's check)."""
    return {
        t: f"must be a whole number from 1 to {MAX_VECTOR_DIMENSION}"
        for t, d in tenants.items()
        if isinstance(d, bool) or not isinstance(d, int) or not 0 < d <= MAX_VECTOR_DIMENSION
    }


class CallerVectors(Embedder):
    """The Embedder of a tenant whose vectors come from its callers: a dimension and no model."""

    def __init__(self, tenant_id: str, dimension: int) -> None:
        self._tenant = tenant_id
        self._dimension = dimension

    @property
    def dimension(self) -> int:
        return self._dimension

    @property
    def model_id(self) -> str:
        return f"caller-vectors-{self._dimension}"

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        """Never: there is no model (CallerVectorsError, which query-text paths turn into keyword search)."""
        raise CallerVectorsError(self._tenant)

    def embed_query(self, texts: Sequence[str]) -> list[Vector]:
        """Never, as `embed`."""
        raise CallerVectorsError(self._tenant)


def brings_own_vectors(embedder: Embedder) -> bool:
    """Whether a tenant's resolved embedder (`Embedder.for_tenant`) is its callers' (no model)."""
    return isinstance(embedder, CallerVectors)


class CallerVectorTenants(Embedder):
    """An Embedder that is `inner` for every tenant but the bring-your-own ones, which get CallerVectors
    (resolved per tenant through core.ports.as a reindexed tenant's model is)."""

    def __init__(self, inner: Embedder, tenants: Mapping[str, int]) -> None:
        self._inner = inner
        self._own = {t: CallerVectors(t, d) for t, d in tenants.items()}

    def for_tenant(self, tenant_id: str) -> Embedder:
        """The tenant's CallerVectors when it brings its own, else its model."""
        own = self._own.get(tenant_id)
        return own if own is not None else self._inner.for_tenant(tenant_id)

    def brings_own(self, tenant_id: str) -> bool:
        """Whether `tenant_id` is declared bring-your-own."""
        return tenant_id in self._own

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        """Passages, with the deployment's model (no tenant named)."""
        return self._inner.embed(texts)

    def embed_query(self, texts: Sequence[str]) -> list[Vector]:
        """Queries, with the deployment's model (no tenant named)."""
        return self._inner.embed_query(texts)

    @property
    def vectors_id(self) -> str:
        return self._inner.vectors_id
