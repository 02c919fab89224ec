"""POST /embed: the deployment's vectors for given texts, so a caller can send `query_vector` on a search
or `embedding` on a write without a model of its own (docs/api.md, Your own vectors).

The texts are embedded by the tenant's model (its own after `quarry reindex --tenant`), as a search
embeds its query (`kind: query`) or a write its chunks (`kind: passage`); the same text embedded here and
by Quarry itself gives the same vector. Bounded as the request schema states (one bound per text whatever
its kind, so the published document is exact): at most MAX_EMBED_TEXTS texts of MAX_EMBED_CHARS each.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field

from core.base_model import QuarryModel
from core.errors import ConflictError
from core.indexing.caller_vectors import brings_own_vectors
from core.ports import Embedder

# Texts per request: one request embeds them in one model call; 64 is the local embedder's MAX_BATCH
# (infra/local/onnx/embedder.py) and keeps a request's vectors (64 × 384 numbers) well under a MiB of JSON.
MAX_EMBED_TEXTS = 64
# A text's characters: all-MiniLM-L6-v2 reads its first 256 word pieces (its max_seq_length), about
# 1,000 characters of English; 8,192 leaves room for words that split into many pieces and bounds the
# tokenizer's work per text.
MAX_EMBED_CHARS = 8192
# Decimals kept per number: the vectors are float32 (about 7 significant digits), so 6 decimals of a
# unit vector's components lose nothing a cosine can see and halve the answer's size.
VECTOR_DECIMALS = 6

EmbedKind = Literal["query", "passage"]


class EmbedRequest(QuarryModel):
    """Texts to embed, as queries (for `query_vector`) or as passages (for a write's `embedding`)."""

    model_config = ConfigDict(extra="forbid")

    texts: list[Annotated[str, Field(min_length=1, max_length=MAX_EMBED_CHARS)]] = Field(
        min_length=1,
        max_length=MAX_EMBED_TEXTS,
        description=f"1 to {MAX_EMBED_TEXTS} texts of 1 to {MAX_EMBED_CHARS} characters, each embedded on its "
        "own (the model reads about its first 1,000 characters)",
    )
    kind: EmbedKind = Field(
        default="query",
        description="`query`: as a search embeds its query (send the vector as `query_vector`); "
        "`passage`: as a write embeds an entity's text (send it as `embedding`)",
    )


class EmbedResponse(QuarryModel):
    """One unit-length vector per text, in the order asked, and the model that made them."""

    model: str = Field(description="The model the tenant's vectors come from")
    dimension: int = Field(description="Numbers per vector")
    kind: EmbedKind
    vectors: list[list[float]]


class EmbeddingService:
    """Embeds texts with the tenant's model; a tenant that brings its own vectors has none (409)."""

    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder

    def embed(self, tenant_id: str, request: EmbedRequest) -> EmbedResponse:
        """The tenant's vectors for `request.texts` (bounded by EmbedRequest's schema)."""
        embedder = self._embedder.for_tenant(tenant_id)  # resolved once: vectors and name agree
        if brings_own_vectors(embedder):
            raise ConflictError(
                "this tenant's vectors come from its callers: Quarry has no model to embed with",
                {"texts": "no model embeds this tenant's text (QUARRY_BYO_VECTOR_TENANTS)"},
            )
        run = embedder.embed_query if request.kind == "query" else embedder.embed
        vectors = run(list(request.texts))
        return EmbedResponse(
            model=embedder.model_id,
            dimension=embedder.dimension,
            kind=request.kind,
            vectors=[[round(float(x), VECTOR_DECIMALS) for x in v] for v in vectors],
        )
