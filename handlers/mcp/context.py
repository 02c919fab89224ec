"""The MCP context tools (handlers/mcp/server.py): assemble_context, context_feedback and retrieve, each
the twin of its HTTP route with the same request model, scope and tenancy."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from pydantic import Field

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
from core.governance.bundle import RetrievalBundle
from core.governance.overlay import MAX_TEXT_CHARS, ROLE_ID_PATTERN
from core.governance.requests import RetrieveRequest
from core.indexing.entity_validation import NONBLANK_PATTERN
from handlers.mcp.arguments import Act, Caller, IncludeSuperseded, MinRelevance, MinTrust, Query, validated
from handlers.mcp.tools import READ, WRITE


def register_context_tools(server: MCPServer, act: Act) -> None:
    """assemble_context, context_feedback and retrieve."""
    _assemble_tool(server, act)
    _feedback_tool(server, act)
    _retrieve_tool(server, act)


# The arguments of assemble_context as an agent reads them in tools/list (one per argument of
# POST /context/assemble it may fill); those search shares are in handlers/mcp/arguments.py.
Namespace = Annotated[
    str | None, Field(description="Mission namespace to retrieve within", max_length=MAX_NAME_CHARS)
]
TokenBudget = Annotated[
    int | None,
    Field(
        description="Tokens for the block (default: the caller's learned budget)", ge=1, le=MAX_TOKEN_BUDGET
    ),
]
ExplicitLinks = Annotated[
    list[str] | None,
    Field(
        description="Entities (`type:id`) packed first, within 30% of the budget",
        max_length=MAX_LINKS,
        examples=[["memory:m-42"]],
    ),
]
Sources = Annotated[list[str] | None, Field(description="Sources to use (default: all)")]
Log = Annotated[bool, Field(description="false: do not log (no assembly_id, no learning)")]
TokenEncoding = Annotated[
    Literal["estimate", "cl100k_base", "o200k_base"] | None,
    Field(
        description="What the budget is counted in: estimate (ceil(chars/4)) or your model's "
        "encoding (default: the caller's configured one, else the estimate)"
    ),
]


def _assemble_tool(server: MCPServer, act: Act) -> None:
    # the tool's signature is its published input schema (the annotated arguments above)
    @server.tool(
        description="A token-budgeted context block for a caller, with its sources (POST /context/assemble). "
        "Then call context_feedback with the source ids you used.",
        annotations=WRITE,  # it logs the assembly (log: true) for the caller's learning
    )
    def assemble_context(
        ctx: Context,
        query: Query,
        caller: Caller,
        namespace: Namespace = None,
        token_budget: TokenBudget = None,
        explicit_links: ExplicitLinks = None,
        sources: Sources = None,
        log: Log = True,
        token_encoding: TokenEncoding = None,
        min_relevance: MinRelevance = None,
        min_trust: MinTrust = None,
        include_superseded: IncludeSuperseded = False,
    ) -> AssembleResponse:
        request = {
            "query": query,
            "caller": caller,
            "namespace": namespace,
            "token_budget": token_budget,
            "explicit_links": explicit_links,
            "sources": sources,
            "log": log,
            "token_encoding": token_encoding,
            "min_relevance": min_relevance,
            "min_trust": min_trust,
            "include_superseded": include_superseded,
        }
        return act(
            ctx,
            "read",
            lambda w, c: c.context.assemble(
                w.tenant_id,
                validated(AssembleRequest, {**request, "caller": w.act_as(caller)}),
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
            lambda w, c: c.context.feedback(w.tenant_id, validated(FeedbackRequest, request), w.bound_caller),
        )


# The arguments of retrieve as an agent reads them in tools/list (those of POST /retrieve).
RoleId = Annotated[
    str,
    Field(description="The role (its stored overlay applies)", pattern=ROLE_ID_PATTERN, examples=["support"]),
]
TaskText = Annotated[
    str,
    Field(
        description="The task to gather evidence for",
        min_length=1,
        max_length=MAX_TEXT_CHARS,
        pattern=NONBLANK_PATTERN,
        examples=["customer cannot sign in after a password reset"],
    ),
]
Overlay = Annotated[
    dict[str, Any] | None,
    Field(
        description="A RoleOverlay to use instead of the stored one (resource quarry://schemas/"
        "role_overlay); its role_id defaults to the role_id argument and must equal it",
        examples=[{"mission": "help customers sign in", "vocabulary": {"boost": ["password"]}}],
    ),
]
ContextSummary = Annotated[str | None, Field(description="What is known so far", max_length=MAX_TEXT_CHARS)]
LexicalOnly = Annotated[bool, Field(description="BM25 only: no embedding call")]


def _retrieve_tool(server: MCPServer, act: Act) -> None:
    # the tool's signature is its published input schema (the annotated arguments above)
    @server.tool(
        description="Governed retrieval for a role: evidence selected and screened by the role's overlay, "
        "with provenance and warnings (POST /retrieve).",
        annotations=READ,
    )
    def retrieve(
        ctx: Context,
        role_id: RoleId,
        task_text: TaskText,
        overlay: Overlay = None,
        context_summary: ContextSummary = None,
        lexical_only: LexicalOnly = False,
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
            lambda w, c: c.governed_retrieval.retrieve(w.tenant_id, validated(RetrieveRequest, request)),
        )
