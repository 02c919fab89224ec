"""What the MCP tools share (handlers/mcp/server.py): the annotated arguments an agent reads in
`tools/list` (what, limits, default, examples), request validation with the HTTP API's error texts, and
the shape of `act`, which runs a tool's work for its caller behind the tenant's fence."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal, TypeVar

from mcp.server.mcpserver import Context
from pydantic import BaseModel, Field, ValidationError

from core.indexing.entity_validation import ID_JSON_PATTERN, NONBLANK_PATTERN
from handlers.http_api.auth import Principal
from handlers.http_api.errors import validation_fields
from infra.wiring.root import Container

Model = TypeVar("Model", bound=BaseModel)
# Arguments as an agent reads them in tools/list: what, limits, default; the deployment's entity types and
# sources are added to the published schemas by handlers/mcp/tools.py.
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
        examples=["my-agent"],
    ),  # the API's one caller schema is added by handlers/mcp/tools.py (its pattern is built on first use)
]
Cursor = Annotated[
    str | None,
    Field(
        description="`next_cursor` of the previous page (same other arguments); omit for the first page",
        max_length=1024,
        examples=[None],
    ),
]

# The memory options of search and assembly (core/memory/: relevance, trust, supersession).
MinRelevance = Annotated[
    float | None,
    Field(
        description="Memories only: leave out those whose decayed relevance (relevance_score halved every 30 days "
        "since last use; pinned never decay) is below this (0..1)",
        ge=0,
        le=1,
    ),
]
MinTrust = Annotated[
    Literal["external", "agent", "user"] | None,
    Field(description="Memories only: leave out those trusted less (external < agent < user)"),
]
IncludeSuperseded = Annotated[
    bool, Field(description="Also memories a newer memory superseded (history); default: current ones only")
]


def validated(model: type[Model], payload: dict[str, Any]) -> Model:
    """The request model, or the InvalidInputError the HTTP API would answer with (same field texts)."""
    from core.errors import InvalidInputError

    try:
        return model.model_validate({k: v for k, v in payload.items() if v is not None})
    except ValidationError as exc:
        # Located like the HTTP API's body errors, so the field paths read the same.
        fields = validation_fields([{**e, "loc": ("body", *e["loc"])} for e in exc.errors()])
        raise InvalidInputError("request is invalid: " + ", ".join(sorted(fields)), fields) from exc


Act = Callable[[Context, str, Callable[[Principal, Container], Any]], Any]
