"""`quarry mcp`: the Model Context Protocol server (DESIGN.md §9), built with the official `mcp` SDK.

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
as the one key it was started with (`--key` / QUARRY_MCP_KEY, see `stdio_principal`). A refused call is
an MCP tool error whose text is the HTTP error body `{"error": {code, message, fields}}`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, Literal, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from pydantic import BaseModel, ValidationError

from core.catalog import EntityOut, EntityPage
from core.context.schemas import AssembleRequest, AssembleResponse, FeedbackRequest, FeedbackResponse
from core.errors import QuarryError, UnauthorizedError
from core.governance.bundle import RetrievalBundle
from core.governance.requests import RetrieveRequest
from core.governance.validation import json_schema
from core.payload import check_value
from core.schemas import SearchRequest, SearchResponse, WriteResponse
from handlers.auth import SCOPES, Principal
from handlers.errors import STATUS, validation_fields
from infra.wiring import Container

SERVER_NAME = "quarry"
INSTRUCTIONS = (
    "Quarry: hybrid search and token-budgeted context over this tenant's entities. Use `assemble_context` "
    "for a ready context block, then `context_feedback` with the source ids you used; `search` for ranked "
    "hits (pass `next_cursor` back as `cursor` for more); entity tools to read and write what is stored."
)
Model = TypeVar("Model", bound=BaseModel)


def error_text(exc: QuarryError) -> str:
    """The HTTP API's error body for `exc`, as JSON text (the same code, message and fields)."""
    status = next((s for cls, s in STATUS if isinstance(exc, cls)), 500)
    fields = dict(getattr(exc, "fields", {}) or {})
    return json.dumps(
        {"error": {"code": exc.code, "message": exc.message, "fields": fields}, "status": status}
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


def _validated(model: type[Model], payload: dict[str, Any]) -> Model:
    """The request model, or the InvalidInputError the HTTP API would answer with (same field texts)."""
    from core.errors import InvalidInputError

    try:
        return model.model_validate({k: v for k, v in payload.items() if v is not None})
    except ValidationError as exc:
        # Located like the HTTP API's body errors, so the field paths read the same.
        fields = validation_fields([{**e, "loc": ("body", *e["loc"])} for e in exc.errors()])
        raise InvalidInputError("request is invalid: " + ", ".join(sorted(fields)), fields) from exc


Act = Callable[[Context, str, Callable[[Principal, Container], Any]], Any]


class QuarryServer(MCPServer):
    """The SDK's server, with every tool call's arguments screened as the HTTP API screens a body (I-JSON:
    integers a 64-bit store holds, bounded depth, no lone surrogates) before any tool runs."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            check_value(arguments)
        except QuarryError as exc:
            raise ToolError(error_text(exc)) from exc
        return await super().call_tool(name, arguments, context)


def build_server(container: Callable[[], Container], gate: Gate) -> MCPServer:
    """The MCPServer with Quarry's tools and resources; `container` is the composition root."""
    server = QuarryServer(SERVER_NAME, instructions=INSTRUCTIONS, log_level="WARNING")

    def act(ctx: Context, scope: str, work: Callable[[Principal, Container], Any]) -> Any:
        """Run `work` for the caller once `scope` is checked, as one unit of work behind the tenant's fence
        (core/service/fencing.py); core errors become tool errors."""
        try:
            who, c = gate.principal(ctx.headers).require(scope), container()
            with c.gate.unit(who.tenant_id):
                return work(who, c)
        except QuarryError as exc:
            raise ToolError(error_text(exc)) from exc

    _search_tool(server, act)
    _context_tools(server, act)
    _entity_tools(server, act)
    _governance(server, act)
    return server


def _search_tool(server: MCPServer, act: Act) -> None:
    @server.tool(description="Hybrid search over the tenant's entities (POST /search).")
    def search(
        ctx: Context,
        query: str,
        entities: list[str] | None = None,
        filters: dict[str, Any] | None = None,
        limit: int = 20,
        strategy: Literal["auto", "keyword", "semantic", "hybrid"] = "auto",
        explain: bool = False,
        cursor: str | None = None,
    ) -> SearchResponse:
        request = {
            "query": query,
            "entities": entities,
            "filters": filters,
            "limit": limit,
            "strategy": strategy,
            "explain": explain,
            "cursor": cursor,
        }
        return act(ctx, "read", lambda w, c: c.search.search(w.tenant_id, _validated(SearchRequest, request)))


def _context_tools(server: MCPServer, act: Act) -> None:
    @server.tool(description="A token-budgeted context block for a caller (POST /context/assemble).")
    def assemble_context(
        ctx: Context,
        query: str,
        caller: str,
        namespace: str | None = None,
        token_budget: int | None = None,
        explicit_links: list[str] | None = None,
        sources: list[str] | None = None,
        log: bool = True,
    ) -> AssembleResponse:
        request = {
            "query": query,
            "caller": caller,
            "namespace": namespace,
            "token_budget": token_budget,
            "explicit_links": explicit_links,
            "sources": sources,
            "log": log,
        }
        return act(
            ctx,
            "read",
            lambda w, c: c.context.assemble(
                w.tenant_id,
                _validated(AssembleRequest, {**request, "caller": w.act_as(caller)}),
                ctx.request_id,
            ),
        )

    @server.tool(description="Which sources of an assembly the caller used (POST /context/feedback).")
    def context_feedback(
        ctx: Context, assembly_id: str, used_source_ids: list[str], tokens_used: int | None = None
    ) -> FeedbackResponse:
        request = {"assembly_id": assembly_id, "used_source_ids": used_source_ids, "tokens_used": tokens_used}
        # a key bound to one caller steers only that caller's learning (another's assembly is not found)
        return act(
            ctx,
            "write",
            lambda w, c: c.context.feedback(
                w.tenant_id, _validated(FeedbackRequest, request), w.bound_caller
            ),
        )

    @server.tool(description="Governed retrieval for a role: a RetrievalBundle (POST /retrieve).")
    def retrieve(
        ctx: Context,
        role_id: str,
        task_text: str,
        overlay: dict[str, Any] | None = None,
        context_summary: str | None = None,
        lexical_only: bool = False,
    ) -> RetrievalBundle:
        request = {
            "role_id": role_id,
            "task_text": task_text,
            "overlay": overlay,
            "context_summary": context_summary,
            "lexical_only": lexical_only,
        }
        return act(
            ctx, "read", lambda w, c: c.retrieval.retrieve(w.tenant_id, _validated(RetrieveRequest, request))
        )


def _entity_tools(server: MCPServer, act: Act) -> None:
    @server.tool(
        description="A stored entity: fields, version, whether embedded (GET /entities/{type}/{id})."
    )
    def get_entity(ctx: Context, entity_type: str, entity_id: str) -> EntityOut:
        return act(ctx, "read", lambda w, c: c.catalog.get(w.tenant_id, entity_type, entity_id))

    @server.tool(description="The tenant's entities, newest first, with cursor paging (GET /entities).")
    def list_entities(
        ctx: Context, entity_type: str | None = None, limit: int = 50, cursor: str | None = None
    ) -> EntityPage:
        from handlers.mcp_entities import checked_page_size

        return act(
            ctx,
            "read",
            lambda w, c: c.catalog.list(w.tenant_id, entity_type, checked_page_size(limit), cursor),
        )

    @server.tool(
        description="Create or replace an entity (PUT /entities/{type}/{id}); `partial: true` updates "
        "only the given fields (PATCH). A `version` older than the stored one is refused."
    )
    def upsert_entity(
        ctx: Context, entity_type: str, entity_id: str, fields: dict[str, Any], partial: bool = False
    ) -> WriteResponse:
        from handlers.mcp_entities import upsert

        return act(ctx, "write", lambda w, c: upsert(c, w.tenant_id, entity_type, entity_id, fields, partial))

    @server.tool(description="Delete an entity (DELETE /entities/{type}/{id}).")
    def delete_entity(
        ctx: Context, entity_type: str, entity_id: str, version: int | None = None
    ) -> WriteResponse:
        from handlers.mcp_entities import delete

        return act(ctx, "write", lambda w, c: delete(c, w.tenant_id, entity_type, entity_id, version))


def _governance(server: MCPServer, act: Act) -> None:
    @server.tool(
        description="The tenant's role overlay ids (read one as resource quarry://overlays/{role_id})."
    )
    def list_overlays(ctx: Context) -> dict[str, list[str]]:
        return act(ctx, "read", lambda w, c: {"role_ids": c.state.list_overlays(w.tenant_id)})

    def read_resource(ctx: Context, work: Callable[[Principal, Container], Any]) -> str:
        try:
            return json.dumps(act(ctx, "read", work), indent=2, sort_keys=True)
        except ToolError as exc:
            raise ResourceError(str(exc)) from exc

    @server.resource(
        "quarry://overlays/{role_id}", mime_type="application/json", description="One role overlay"
    )
    def overlay(role_id: str, ctx: Context) -> str:
        return read_resource(
            ctx, lambda w, c: c.retrieval.get_overlay(w.tenant_id, role_id).model_dump(mode="json")
        )

    @server.resource(
        "quarry://schemas/{name}",
        mime_type="application/schema+json",
        description="JSON Schema: role_overlay or retrieval_bundle",
    )
    def schema(name: str, ctx: Context) -> str:
        return read_resource(ctx, lambda w, c: json_schema(name))
