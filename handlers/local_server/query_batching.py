"""The local server's batcher (handlers/local_server/devserver_engine.py `Batcher`): the query embeddings of the searches
waiting in a worker's queue, made in one model call (docs/architecture.md#query-batching).

Translation only: which waiting events are `POST /search` calls, and by whom (the same credentials the route
checks); whether each will embed, what, and with which model, is core/search/query_batch.py's to decide, and
serving each request its own vector is infra/text_models/ahead_embedder.py's. A request that is not a search, or whose
credentials or body the route would refuse, gets nothing and answers as it always did.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.errors import QuarryError
from core.search.query_batch import AheadVector, WaitingSearch
from handlers.http_api.auth import principal_from_event
from handlers.http_api.routes.common import jwt_policy, services
from handlers.local_server.devserver_engine import Handler
from infra.text_models.ahead_embedder import AheadEmbedder

SEARCH_ROUTE = ("POST", "/search")


def waiting_search(event: dict[str, Any]) -> WaitingSearch | None:
    """The tenant and body of a `POST /search` event its caller may run (read scope), else None."""
    if (event["requestContext"]["http"]["method"], event.get("rawPath")) != SEARCH_ROUTE:
        return None
    body = event.get("body")
    if not isinstance(body, str) or not body or event.get("isBase64Encoded"):
        return None
    try:
        principal = principal_from_event(event, jwt_policy()).require("read")
    except QuarryError:
        return None  # the route answers its 401 or 403
    return WaitingSearch(principal.tenant_id, body)


class SearchBatcher:
    """Prepares waiting searches' query vectors in one call (QUARRY_QUERY_BATCH of them at most)."""

    def __init__(self, max_batch: int) -> None:
        self.max_batch = max_batch

    def prepare(self, events: Sequence[dict[str, Any]]) -> list[AheadVector | None]:
        """One query vector per event that is a search which embeds its query (None for the others)."""
        waiting = [waiting_search(e) for e in events]
        if sum(w is not None for w in waiting) < 2:
            return [None] * len(events)  # one search alone embeds its own query
        return services().query_batch.embed_ahead(waiting)

    def run(self, handler: Handler, event: dict[str, Any], context: Any, share: Any) -> dict[str, Any]:
        """The handler's answer, the request's query vector (made ahead, if any) served to it alone."""
        vectors = services().vectors if share is not None else None
        if not isinstance(vectors, AheadEmbedder):  # nothing made ahead, or a test's own embedder
            return handler(event, context)
        with vectors.serving(share):
            return handler(event, context)
