"""OpenSearchIndex: the production SearchIndex (BM25 + k-NN in one OpenSearch index behind an alias).

The adapter only sequences calls: bodies come from `bodies`/`mapping`/`documents`, responses are read by
`responses`, failures are translated by `errors`. Retries come from libraries, paced by one RetryPolicy:
whole requests by opensearch-py's Transport (`client.build_client`), throttled `_bulk` items by
opensearch-py's `helpers.streaming_bulk`, throttled or failed `_msearch` items by tenacity (opensearch-py
has no helper for those).

One job per module, composed here: the retried calls (calls.py), compare-and-set writes and tombstones
(writes.py), the searches in one `_msearch` (searches.py), listings, facets and erasure (catalog.py), the
index's creation and the following of a reindex (lifecycle.py); reads by key stay here.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any

from core.models import ALL_CHUNKS, EntityKey, StoredEntity, Vector
from infra.opensearch import documents, mapping
from infra.opensearch.calls import Refresh
from infra.opensearch.catalog import OpenSearchCatalog
from infra.opensearch.client import RetryPolicy, node_timeout
from infra.opensearch.layout import Layout
from infra.opensearch.searches import IndexSearches
from infra.opensearch.writes import IndexWrites

# Bytes per `_bulk` request. Amazon OpenSearch Service refuses requests above 10 MiB on small instance
# types (100 MiB on larger ones) with a 413, and recommends bulk requests of 5–15 MiB: 5 MiB stays
# below every cap with room to spare. QUARRY_OPENSEARCH_MAX_BULK_BYTES changes it.
DEFAULT_MAX_BULK_BYTES = 5 * 1024 * 1024
REFRESH_INTERVAL_SECONDS = 1.0  # OpenSearch's default index.refresh_interval (the mapping keeps it)
# How often a process reads which model built the generation behind the alias (one GET _mapping): a
# `quarry reindex` swap is followed within this; its settle wait is longer (infra/opensearch/reindex.py).
DEFAULT_MODEL_CHECK_SECONDS = 5.0
# OpenSearch's own default: an acknowledged write is on every in-sync copy of its shard, even when only the
# primary is active (docs/scaling.md, "What an acknowledged write means"). "all" refuses writes while a
# replica is missing instead.
DEFAULT_ACTIVE_SHARDS = "1"


class OpenSearchIndex(IndexWrites, IndexSearches, OpenSearchCatalog):
    """SearchIndex over OpenSearch: one document per entity, chunks nested, writes compare-and-set."""

    def __init__(
        self,
        client: Any,
        dimension: int,
        prefix: str = "quarry",
        refresh: Refresh = False,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
        auto_create: bool = True,
        max_bulk_bytes: int = DEFAULT_MAX_BULK_BYTES,
        model_check_seconds: float = DEFAULT_MODEL_CHECK_SECONDS,
        monotonic: Callable[[], float] = time.monotonic,
        layout: Layout | None = None,
        wait_for_active_shards: str = DEFAULT_ACTIVE_SHARDS,
        request_timeout: float | None = None,
    ) -> None:
        self._client = client
        self._model_dir: str | None = None
        self._live_index: str | None = None
        self._model_checked = -math.inf
        self._model_check_seconds = model_check_seconds
        self._monotonic = monotonic
        self._dimension = dimension
        self._prefix = prefix
        self._alias = prefix
        self._refresh = refresh
        self._retry = retry or RetryPolicy()
        self._sleep = sleep  # tenacity's waits between `_msearch` attempts (tests record them)
        self._ready = not auto_create
        self._max_bulk_bytes = max_bulk_bytes
        self._display_values = True  # an index this adapter creates has them; an older one is read in _adopt
        self._layout = layout or Layout()
        self._routed = self._layout.routed  # of the live index, once read (lifecycle._adopt)
        # Every `_bulk` says how many copies of each shard must be active before it writes, and how long a
        # primary that is not (a node just lost, a replica being promoted) is waited for: less than the
        # client waits for the answer, so a write the node cannot place is answered 503 by the node, not
        # left running after the client gave up and sent it again (client.node_timeout). opensearch-py
        # takes `timeout` for its own unless `request_timeout` is given too.
        self._write_params: dict[str, Any] = {"wait_for_active_shards": wait_for_active_shards}
        if request_timeout is not None:
            self._write_params.update(timeout=node_timeout(request_timeout), request_timeout=request_timeout)

    @property
    def visibility_delay_seconds(self) -> float:
        """0 when writes wait for a refresh; else the index refresh interval (a search may miss a write)."""
        return 0.0 if self._refresh else REFRESH_INTERVAL_SECONDS

    @property
    def client(self) -> Any:
        """The opensearch-py client (for `quarry reindex`, which works beside the adapter)."""
        return self._client

    @property
    def layout(self) -> Layout:
        """The layout of the index generations this adapter creates."""
        return self._layout

    @property
    def alias(self) -> str:
        """The alias every read and write goes through."""
        return self._alias

    # -- reads ------------------------------------------------------------------------------------------

    def get(self, tenant_id: str, keys: Sequence[EntityKey]) -> dict[EntityKey, StoredEntity]:
        """The stored entities among `keys` (tombstones included, flagged deleted)."""
        unique = sorted(set(keys))
        if not unique:
            return {}
        found = self._fetch(tenant_id, [documents.doc_id(tenant_id, k) for k in unique])
        entities = (documents.stored_entity(s) for s in found if s.get(mapping.TENANT) == tenant_id)
        return {e.key: e for e in entities}

    def chunk_vectors(
        self, tenant_id: str, chunks: Sequence[tuple[EntityKey, int]]
    ) -> dict[tuple[EntityKey, int], Vector]:
        """Stored chunk embeddings, from one `_mget` of the entities' chunk numbers and vectors (no text)."""
        import numpy as np

        keys = sorted({key for key, _ in chunks})
        wanted = set(chunks)
        out: dict[tuple[EntityKey, int], Vector] = {}
        ids = [documents.doc_id(tenant_id, k) for k in keys]
        for doc in self._fetch(tenant_id, ids, vectors_only=True):
            if doc.get(mapping.TENANT) != tenant_id:
                continue
            key = EntityKey(str(doc.get(mapping.ENTITY_TYPE)), str(doc.get(mapping.ENTITY_ID)))
            every = (key, ALL_CHUNKS) in wanted
            for chunk in doc.get(mapping.CHUNKS) or []:
                ref = (key, int(chunk.get("chunk_no", ALL_CHUNKS)))
                if (every or ref in wanted) and ref[1] != ALL_CHUNKS and chunk.get("embedding") is not None:
                    out[ref] = np.asarray(chunk["embedding"], dtype=np.float32)
        return out
