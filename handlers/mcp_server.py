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
as the one key it was started with (`--key` / QUARRY_MCP_KEY, see `stdio_principal`). A refused call is
an MCP tool error whose text is the HTTP error body `{"error": {code, message, fields}}`. What an agent
sees in `tools/list` (descriptions, limits, enums, closed schemas checked before each call, behaviour
hints) is completed and enforced in handlers/mcp_tools.py.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as installed_version
from typing import Annotated, Any, Literal, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from pydantic import BaseModel, Field, ValidationError

from core.context.budget import MAX_TOKEN_BUDGET
from core.context.context_api import (
    MAX_NAME_CHARS,
    MAX_USED_IDS,
    AssembleRequest,
    AssembleResponse,
    FeedbackRequest,
    FeedbackResponse,
)
from core.context.links import MAX_LINKS
from core.errors import NotFoundError, QuarryError, UnauthorizedError
from core.governance.bundle import RetrievalBundle
from core.governance.overlay import MAX_TEXT_CHARS, ROLE_ID_PATTERN
from core.governance.requests import RetrieveRequest
from core.governance.schema_validation import json_schema
from core.indexing.catalog import DEFAULT_ENTITY_PAGE, MAX_ENTITY_PAGE, EntityOut, EntityPage
from core.indexing.entity_validation import ID_JSON_PATTERN, NONBLANK_PATTERN
from core.payload import INT64_MAX
from core.search.search_api import DEFAULT_LIMIT, MAX_LIMIT, SearchRequest, SearchResponse, WriteResponse
from handlers.auth import SCOPES, Principal
from handlers.errors import STATUS, validation_fields
from handlers.mcp_tools import DELETE, READ, UPSERT, WRITE, QuarryMCPServer, plain_snippets
from infra.wiring import Container

SERVER_NAME = "quarry"
INSTRUCTIONS = (
    "Quarry: hybrid search and token-budgeted context over this tenant's entities. Use `assemble_context` "
    "for a ready context block, then `context_feedback` with the source ids you used; `search` for ranked "
    "hits (pass `next_cursor` back as `cursor` for more); entity tools to read and write what is stored."
)
Model = TypeVar("Model", bound=BaseModel)
# Arguments as an agent reads them in tools/list: what, limits, default; the deployment's entity types and
# sources are added to the published schemas by handlers/mcp_tools.py.
Query = Annotated[
    str,
    Field(
        description="What to search for; `type:` prefixes (`task: login`), `@name` and quoted phrases work",
        min_length=1,
        pattern=NONBLANK_PATTERN,
        examples=["rate limit for API clients"],
    ),
]
EntityType = Annotated[str, Field(description="The entity type", examples=["memory"])]
EntityId = Annotated[
    str,
    Field(
        description="The entity id: 1-256 characters, no whitespace, '/', '#' or '|'",
        json_schema_extra={"pattern": ID_JSON_PATTERN},
        examples=["m-42"],
    ),  # look-ahead: checked by jsonschema
]
Caller = Annotated[
    str,
    Field(
        description="The agent or app asking: its budget, weights and own memory follow it",
        min_length=1,
        max_length=MAX_NAME_CHARS,
        pattern=NONBLANK_PATTERN,
        examples=["my-agent"],
    ),
]
Cursor = Annotated[
    str | None,
    Field(
        description="`next_cursor` of the previous page (same other arguments); omit for the first page",
        max_length=1024,
        examples=[None],
    ),
]


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
        lambda exc: error_text(exc) if isinstance(exc, QuarryError) else str(exc),
        name=SERVER_NAME,
        instructions=INSTRUCTIONS,
        log_level="WARNING",
        version=server_version(),
    )

    def act(ctx: Context, scope: str, work: Callable[[Principal, Container], Any]) -> Any:
        """Run `work` for the caller once `scope` is checked, as one unit of work behind the tenant's fence
        (core/tenancy/fencing.py); core errors become tool errors."""
        try:
            who, c = gate.principal(ctx.headers).require(scope), container()
            with c.gate.unit(who.tenant_id):
                return work(who, c)
        except QuarryError as exc:
            raise ToolError(error_text(exc)) from exc

    _search_tool(server, act)
    _context_tools(server, act)
    _entity_tools(server, act)
    _governance(server, act, container, gate)
    return server


def _search_tool(server: MCPServer, act: Act) -> None:
    @server.tool(
        description="Hybrid search (BM25 + vectors) over the tenant's entities, best first (POST /search). "
        "Snippets are plain text. For more hits pass `next_cursor` back as `cursor`.",
        annotations=READ,
    )
    def search(
        ctx: Context,
        query: Query,
        entities: Annotated[
            list[str] | None, Field(description="Entity types to search (default: all)")
        ] = None,
        filters: Annotated[
            dict[str, Any] | None,
            Field(
                description="Metadata filters, field → a value, a list of values (any of them), or operators "
                "that must all hold: gt, gte, lt, lte (numbers, ISO dates), in, not, exists",
                examples=[{"status": "open"}, {"due_date": {"gte": "2026-01-01"}, "status": {"not": "done"}}],
            ),
        ] = None,
        limit: Annotated[int, Field(description="Hits per page", ge=1, le=MAX_LIMIT)] = DEFAULT_LIMIT,
        strategy: Annotated[
            Literal["auto", "keyword", "semantic", "hybrid"],
            Field(description="auto: identifiers lean keyword, the rest hybrid"),
        ] = "auto",
        explain: Annotated[bool, Field(description="Add each hit's ranks and scores per retriever")] = False,
        cursor: Cursor = None,
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
        return act(
            ctx,
            "read",
            lambda w, c: plain_snippets(c.search.search(w.tenant_id, _validated(SearchRequest, request))),
        )


def _context_tools(server: MCPServer, act: Act) -> None:
    _assemble_tool(server, act)
    _feedback_tool(server, act)
    _retrieve_tool(server, act)


def _assemble_tool(server: MCPServer, act: Act) -> None:
    # ~50 lines: the tool's signature is its published input schema (one Annotated Field per argument)
    @server.tool(
        description="A token-budgeted context block for a caller, with its sources (POST /context/assemble). "
        "Then call context_feedback with the source ids you used.",
        annotations=WRITE,  # it logs the assembly (log: true) for the caller's learning
    )
    def assemble_context(
        ctx: Context,
        query: Query,
        caller: Caller,
        namespace: Annotated[
            str | None, Field(description="Mission namespace to retrieve within", max_length=MAX_NAME_CHARS)
        ] = None,
        token_budget: Annotated[
            int | None,
            Field(
                description="Tokens for the block (default: the caller's learned budget)",
                ge=1,
                le=MAX_TOKEN_BUDGET,
            ),
        ] = None,
        explicit_links: Annotated[
            list[str] | None,
            Field(
                description="Entities (`type:id`) packed first, within 30% of the budget",
                max_length=MAX_LINKS,
                examples=[["memory:m-42"]],
            ),
        ] = None,
        sources: Annotated[list[str] | None, Field(description="Sources to use (default: all)")] = None,
        log: Annotated[bool, Field(description="false: do not log (no assembly_id, no learning)")] = True,
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


def _feedback_tool(server: MCPServer, act: Act) -> None:
    @server.tool(
        description="Which sources of an assembly the caller used (POST /context/feedback): the caller's "
        "weights and budget learn from it. Once per assembly.",
        annotations=WRITE,
    )
    def context_feedback(
        ctx: Context,
        assembly_id: Annotated[
            str, Field(description="assembly_id of assemble_context", min_length=1, max_length=MAX_NAME_CHARS)
        ],
        used_source_ids: Annotated[
            list[str],
            Field(description="ids from the assembly's sources that you used", max_length=MAX_USED_IDS),
        ],
        tokens_used: Annotated[int | None, Field(description="Tokens of the block you used", ge=0)] = None,
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


def _retrieve_tool(server: MCPServer, act: Act) -> None:
    # ~50 lines: the tool's signature is its published input schema (one Annotated Field per argument)
    @server.tool(
        description="Governed retrieval for a role: evidence selected and screened by the role's overlay, "
        "with provenance and warnings (POST /retrieve).",
        annotations=READ,
    )
    def retrieve(
        ctx: Context,
        role_id: Annotated[
            str,
            Field(
                description="The role (its stored overlay applies)",
                pattern=ROLE_ID_PATTERN,
                examples=["support"],
            ),
        ],
        task_text: Annotated[
            str,
            Field(
                description="The task to gather evidence for",
                min_length=1,
                max_length=MAX_TEXT_CHARS,
                pattern=NONBLANK_PATTERN,
                examples=["customer cannot sign in after a password reset"],
            ),
        ],
        overlay: Annotated[
            dict[str, Any] | None,
            Field(
                description="A RoleOverlay to use instead of the stored one (resource quarry://schemas/"
                "role_overlay); its role_id defaults to the role_id argument and must equal it",
                examples=[{"mission": "help customers sign in", "vocabulary": {"boost": ["password"]}}],
            ),
        ] = None,
        context_summary: Annotated[
            str | None, Field(description="What is known so far", max_length=MAX_TEXT_CHARS)
        ] = None,
        lexical_only: Annotated[bool, Field(description="BM25 only: no embedding call")] = False,
    ) -> RetrievalBundle:
        request = {
            "role_id": role_id,
            "task_text": task_text,
            "overlay": None if overlay is None else {"role_id": role_id, **overlay},
            "context_summary": context_summary,
            "lexical_only": lexical_only,
        }
        return act(
            ctx,
            "read",
            lambda w, c: c.governed_retrieval.retrieve(w.tenant_id, _validated(RetrieveRequest, request)),
        )


def _entity_tools(server: MCPServer, act: Act) -> None:
    _entity_read_tools(server, act)
    _entity_write_tools(server, act)


def _entity_read_tools(server: MCPServer, act: Act) -> None:
    @server.tool(
        description="A stored entity: fields, version, whether embedded (GET /entities/{type}/{id}).",
        annotations=READ,
    )
    def get_entity(ctx: Context, entity_type: EntityType, entity_id: EntityId) -> EntityOut:
        return act(ctx, "read", lambda w, c: c.catalog.get(w.tenant_id, entity_type, entity_id))

    @server.tool(
        description="The tenant's entities, newest first, with cursor paging (GET /entities).",
        annotations=READ,
    )
    def list_entities(
        ctx: Context,
        entity_type: Annotated[str | None, Field(description="Only this type (default: every type)")] = None,
        limit: Annotated[
            int, Field(description="Entities per page", ge=1, le=MAX_ENTITY_PAGE)
        ] = DEFAULT_ENTITY_PAGE,
        cursor: Cursor = None,
    ) -> EntityPage:
        from handlers.mcp_entities import checked_page_size

        return act(
            ctx,
            "read",
            lambda w, c: c.catalog.list(w.tenant_id, entity_type, checked_page_size(limit), cursor),
        )


def _entity_write_tools(server: MCPServer, act: Act) -> None:
    @server.tool(
        description="Create or replace an entity (PUT /entities/{type}/{id}); `partial: true` updates "
        "only the given fields (PATCH). A `version` older than the stored one is refused; the same call "
        "again changes nothing.",
        annotations=UPSERT,
    )
    def upsert_entity(
        ctx: Context,
        entity_type: EntityType,
        entity_id: EntityId,
        fields: Annotated[
            dict[str, Any],
            Field(
                description="The entity's fields: its title field (`content` for a memory, `title` for a "
                "task, ...), other text and metadata, optional `version` and `embedding` (your own vector "
                "of the tenant's dimension, used instead of the model's)",
                examples=[{"content": "The deploy needs a free cache volume", "version": 1}],
            ),
        ],
        partial: Annotated[bool, Field(description="true: change only the given fields")] = False,
    ) -> WriteResponse:
        from handlers.mcp_entities import upsert

        return act(ctx, "write", lambda w, c: upsert(c, w.tenant_id, entity_type, entity_id, fields, partial))

    @server.tool(description="Delete an entity (DELETE /entities/{type}/{id}).", annotations=DELETE)
    def delete_entity(
        ctx: Context,
        entity_type: EntityType,
        entity_id: EntityId,
        version: Annotated[
            int | None, Field(description="The delete's version (default: the next one)", ge=0, le=INT64_MAX)
        ] = None,
    ) -> WriteResponse:
        from handlers.mcp_entities import delete

        return act(ctx, "write", lambda w, c: delete(c, w.tenant_id, entity_type, entity_id, version))


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
