"""POST /search and POST /embed (the vectors a search or a write may carry)."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body

from core.search.embedding import EmbedRequest, EmbedResponse
from core.search.search_api import SearchRequest, SearchResponse
from handlers.http_api.routes.common import caller, services
from handlers.observability.observations import observed, searched

router = Router()


@router.post(
    "/search", summary="Hybrid search over the tenant's entities", tags=["search"], operation_id="search"
)
@observed(router, searched)
def search(request: Annotated[SearchRequest, Body()]) -> Annotated[SearchResponse, Body()]:
    return services().search.search(caller(router, "read").tenant_id, request)


@router.post(
    "/embed",
    summary="The deployment's vectors for texts (to send as `query_vector` or `embedding`)",
    tags=["search"],
    operation_id="embed",
)
def embed(request: Annotated[EmbedRequest, Body()]) -> Annotated[EmbedResponse, Body()]:
    principal = caller(router, "read")
    return services().embedding.embed(principal.tenant_id, request)
