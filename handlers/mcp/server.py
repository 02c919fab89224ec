"""`quarry mcp`: the Model Context Protocol server (docs/architecture.md, Entry points), built with the
official `mcp` SDK.

Tools call the same core services as the HTTP API, with the same request models (so the same limits and
error texts), the same scopes and the same tenancy:

    tool              scope   HTTP twin
    search            read    POST /search (cursor paging included)
    assemble_context  read    POST /context/assemble
    context_feedback  write   POST /context/feedback
    retrieve          read    POST /retrieve
    get_entity        read    GET /entities/{type}/{id}
    list_entities     read    GET /entities
    upsert_entity     write   PUT /entities/{type}/{id} (PATCH with `partial: true`)
    delete_entity     write   DELETE /entities/{type}/{id}

    list_overlays     read    the role ids behind GET /overlays/{role_id}

Resource templates (read scope): `quarry://overlays/{role_id}` (a role overlay) and
`quarry://schemas/{name}` (role_overlay, retrieval_bundle): GET /overlays/{role_id}, GET /schemas/{name}.

Who is calling: over streamable HTTP, the bearer key of each request (looked up in QUARRY_API_KEYS,
exactly as the dev server does); over stdio (and in-process) there are no headers, so the server acts
as the one key it was started with (`--key` / QUARRY_MCP_KEY, see `stdio_principal`); `tools/list` shows
that key only the tools its scopes allow (TOOL_SCOPES). Every failed call is a tool result with `isError`
whose whole text is the HTTP error body `{"error": {code, message, fields}}` (handlers/http_api/errors.py). What an agent
sees in `tools/list` (descriptions, limits, enums, closed schemas checked before each call, behaviour
hints) is completed and enforced in handlers/mcp/tools.py. This module registers `search` and the
governance tool and resources; the context tools are in handlers/mcp/context.py, the entity tools in
handlers/mcp/entities.py, the arguments they share in handlers/mcp/arguments.py.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as installed_version
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError
from pydantic import Field

from core.errors import NotFoundError, QuarryError, UnauthorizedError
from core.governance.schema_validation import json_schema
from core.search.filters import MAX_FACETS
from core.search.search_api import DEFAULT_LIMIT, MAX_LIMIT, SearchRequest, SearchResponse
from handlers.http_api.auth import SCOPES, Principal
from handlers.mcp.arguments import Act, Cursor, IncludeSuperseded, MinRelevance, MinTrust, Query, validated
from handlers.mcp.context import register_context_tools
from handlers.mcp.entities import register_entity_tools
from handlers.mcp.tools import READ, QuarryMCPServer, error_text, plain_snippets
from infra.wiring.root import Container

# The scope each tool needs (the table above): `tools/list` shows a caller only the tools it may call.
TOOL_SCOPES = {
    "search": "read",
    "assemble_context": "read",
    "context_feedback": "write",
    "retrieve": "read",
    "get_entity": "read",
    "list_entities": "read",
    "upsert_entity": "write",
    "delete_entity": "write",
    "list_overlays": "read",
}
SERVER_NAME = "quarry"
INSTRUCTIONS = (
    "Quarry: hybrid search and token-budgeted context over this tenant's entities. Use `assemble_context` "
    "for a ready context block, then `context_feedback` with the source ids you used; `search` for ranked "
    "hits (pass `next_cursor` back as `cursor` for more); entity tools to read and write what is stored."
)


def grant_principal(grant: Mapping[str, Any]) -> Principal:
    """A Principal from one QUARRY_API_KEYS entry (a key with `caller` speaks only for that caller)."""
    caller = grant.get("caller")
    return Principal(
        str(grant["tenant"]),
        frozenset(grant.get("scopes", [])) & SCOPES,
        None,
        str(caller) if caller else None,
    )


class Gate:
    """Who a tool call acts for: the request's bearer key (HTTP) or the configured stdio principal."""

    def __init__(
        self, keys: Mapping[str, Mapping[str, Any]], stdio: Principal | None, hint: str = ""
    ) -> None:
        self._keys = dict(keys)
        self._stdio = stdio
        self.hint = hint  # where the key comes from, for a 401

    def principal(self, headers: Mapping[str, str] | None) -> Principal:
        """The caller; UnauthorizedError when an HTTP request has no known bearer key."""
        if headers is None:
            if self._stdio is None:
                raise UnauthorizedError("this MCP server was started without a key (QUARRY_MCP_KEY)")
            return self._stdio
        return self.bearer(headers.get("authorization", ""))

    def bearer(self, authorization: str) -> Principal:
        """The principal of an `Authorization: Bearer <key>` header value."""
        scheme, _, token = authorization.partition(" ")
        token = token.strip()
        grant = self._keys.get(token) if token and scheme.lower() == "bearer" else None
        if grant is None:
            raise UnauthorizedError("missing or invalid bearer token")
        return grant_principal(grant)


def server_version() -> str:
    """The installed Quarry's version (server_info.version)."""
    try:
        return installed_version("quarry")
    except PackageNotFoundError:
        return "0.0.0"


def build_server(container: Callable[[], Container], gate: Gate) -> MCPServer:
    """The MCPServer with Quarry's tools and resources; `container` is the composition root."""
    server = QuarryMCPServer(
        container,
        lambda headers: gate.principal(headers).scopes,
        TOOL_SCOPES,
        name=SERVER_NAME,
        instructions=INSTRUCTIONS,
        log_level="WARNING",
        version=server_version(),
    )

    def act(ctx: Context, scope: str, work: Callable[[Principal, Container], Any]) -> Any:
        """Run `work` for the caller once `scope` is checked, as one unit of work behind the tenant's fence
        (core/tenancy/fencing.py); a core error is answered by QuarryMCPServer as the API's error body."""
        who, c = gate.principal(ctx.headers).require(scope), container()
        with c.gate.unit(who.tenant_id):
            return work(who, c)

    _search_tool(server, act)
    register_context_tools(server, act)
    register_entity_tools(server, act)
    _governance(server, act, container, gate)
    return server


# The arguments of `search` as an agent reads them in tools/list (one per argument of POST /search it may
# fill); the ones the context tools share are in handlers/mcp/arguments.py.
EntityTypes = Annotated[list[str] | None, Field(description="Entity types to search (default: all)")]
Filters = Annotated[
    dict[str, Any] | None,
    Field(
        description="Metadata filters, field → a value, a list of values (any of them), or operators "
        "that must all hold: gt, gte, lt, lte (numbers, ISO dates), in, not, exists",
        examples=[{"status": "open"}, {"due_date": {"gte": "2026-01-01"}, "status": {"not": "done"}}],
    ),
]
Limit = Annotated[int, Field(description="Hits per page", ge=1, le=MAX_LIMIT)]
Strategy = Annotated[
    Literal["auto", "keyword", "semantic", "hybrid"],
    Field(description="auto: identifiers lean keyword, the rest hybrid"),
]
Explain = Annotated[bool, Field(description="Add each hit's ranks and scores per retriever")]
MinScore = Annotated[
    float | None,
    Field(description="Leave out hits whose fused score is below this (0..1)", ge=0, le=1, examples=[0.2]),
]
Facets = Annotated[
    list[str] | None,
    Field(
        description="Fields to count values of over every match (the filterable ones: status, "
        "source, owner, namespace, the types' declared metadata)",
        max_length=MAX_FACETS,
        examples=[["source"]],
    ),
]
ReturnFields = Annotated[
    Literal["all", "none"] | list[str] | None,
    Field(
        description="Stored fields in each hit's `fields`: all, or their names; none: ids and scores "
        "only (default: title, snippet and metadata)",
        examples=["all"],
    ),
]


def _search_tool(server: MCPServer, act: Act) -> None:
    # the tool's signature is its published input schema (the annotated arguments above)
    @server.tool(
        description="Hybrid search (BM25 + vectors) over the tenant's entities, best first (POST /search). "
        "Snippets are plain text. For more hits pass `next_cursor` back as `cursor`.",
        annotations=READ,
    )
    def search(
        ctx: Context,
        query: Query,
        entities: EntityTypes = None,
        filters: Filters = None,
        limit: Limit = DEFAULT_LIMIT,
        strategy: Strategy = "auto",
        explain: Explain = False,
        cursor: Cursor = None,
        min_score: MinScore = None,
        facets: Facets = None,
        return_fields: ReturnFields = None,
        min_relevance: MinRelevance = None,
        min_trust: MinTrust = None,
        include_superseded: IncludeSuperseded = False,
    ) -> SearchResponse:
        request = {
            "query": query,
            "entities": entities,
            "filters": filters,
            "limit": limit,
            "strategy": strategy,
            "explain": explain,
            "cursor": cursor,
            "min_score": min_score,
            "facets": facets,
            "return_fields": return_fields,
            "min_relevance": min_relevance,
            "min_trust": min_trust,
            "include_superseded": include_superseded,
        }
        return act(
            ctx,
            "read",
            lambda w, c: plain_snippets(c.search.search(w.tenant_id, validated(SearchRequest, request))),
        )


def _governance(server: MCPServer, act: Act, container: Callable[[], Container], gate: Gate) -> None:
    @server.tool(
        description="The tenant's role overlay ids (read one as resource quarry://overlays/{role_id}).",
        annotations=READ,
    )
    def list_overlays(ctx: Context) -> dict[str, list[str]]:
        return act(ctx, "read", lambda w, c: {"role_ids": c.state.list_overlays(w.tenant_id)})

    def read_resource(ctx: Context, work: Callable[[Principal, Container], Any]) -> str:
        try:
            return json.dumps(
                work(gate.principal(ctx.headers).require("read"), container()), indent=2, sort_keys=True
            )
        except NotFoundError as exc:  # answered as not found (-32602), not as a server error
            raise ResourceNotFoundError(error_text(exc)) from exc
        except QuarryError as exc:
            raise ResourceError(error_text(exc)) from exc

    @server.resource(
        "quarry://overlays/{role_id}", mime_type="application/json", description="One role overlay"
    )
    def overlay(role_id: str, ctx: Context) -> str:
        return read_resource(
            ctx, lambda w, c: c.governed_retrieval.get_overlay(w.tenant_id, role_id).model_dump(mode="json")
        )

    @server.resource(
        "quarry://schemas/{name}",
        mime_type="application/schema+json",
        description="JSON Schema: role_overlay or retrieval_bundle",
    )
    def schema(name: str, ctx: Context) -> str:
        return read_resource(ctx, lambda w, c: json_schema(name))
