"""What makes Quarry's MCP tools usable by an agent that sees only `tools/list`: each input schema closed
(`additionalProperties: false`) and completed with what the deployment allows (entity types, sources,
query length, the API's caller schema, each entity type's fields), every call checked against that same
schema first, so an unknown or bad argument is refused naming it; the tools a caller's scopes allow, and
only those, in its `tools/list`; every failure answered as the HTTP API's error body; behaviour hints;
plain-text snippets."""

from __future__ import annotations

import copy
import html
import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError as SchemaError
from jsonschema.exceptions import best_match
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import UnexpectedToolError
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult, ListToolsResult, TextContent, ToolAnnotations
from pydantic import ValidationError

from core.errors import InvalidInputError, NotFoundError, QuarryError
from core.indexing.entity_validation import (
    CALLER_RULE,
    ID_JSON_PATTERN,
    ID_RULE,
    NONBLANK_PATTERN,
    caller_json_pattern,
    caller_schema,
)
from core.payload import check_top_type, check_value
from core.search.filters import COLUMN_FIELDS, TIME_FIELDS
from core.search.search_api import SearchResponse
from handlers.http_api.errors import error_body, validation_fields
from handlers.mcp.fields import publish_fields
from handlers.observability.powertools import logger
from infra.wiring.root import Container

READ = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
# Recorded, not repeated: a feedback or an assembly log entry once per call.
WRITE = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)
# Versioned writes: the same call again is a duplicate, never a second change.
UPSERT = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)
DELETE = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)
_MARK = re.compile(r"</?mark>")
MAX_REPORTED = 20  # argument problems named in one error
MAX_CHAIN = 8  # causes looked through for the error to answer with (the SDK wraps once or twice)


def plain_snippets(response: SearchResponse) -> SearchResponse:
    """Search hits with plain-text snippets (no `<mark>`, no HTML entities): agents read text, not HTML."""
    results = [
        r.model_copy(update={"snippet": html.unescape(_MARK.sub("", r.snippet))}) for r in response.results
    ]
    return response.model_copy(update={"results": results})


def _deployment(schema: dict[str, Any], c: Container) -> None:
    """Values the deployment allows, stated in a tool's input schema (as /openapi.json states them)."""
    props = schema.get("properties", {})
    types = list(c.registry.names())
    if "entity_type" in props:
        target = next((s for s in props["entity_type"].get("anyOf", []) if s.get("type") == "string"), None)
        (target or props["entity_type"])["enum"] = types
    _list_of(props, "entities", types)
    if "sources" in props:
        _list_of(props, "sources", [s.name for s in c.context_settings.sources])
    if "facets" in props:
        _list_of(props, "facets", facet_fields(c))
    if "query" in props:
        props["query"]["maxLength"] = c.settings.max_query_chars
    if "caller" in props:
        props["caller"].update(caller_schema())
    if "fields" in props and "entity_type" in props:
        publish_fields(schema, c.registry)


def _list_of(props: dict[str, Any], name: str, allowed: list[str]) -> None:
    """Argument `name` (a list, or null), when present: its items one of `allowed`."""
    for branch in props.get(name, {}).get("anyOf", []):
        if branch.get("type") == "array":
            branch["items"] = {"type": "string", "enum": allowed}


def facet_fields(c: Container) -> list[str]:
    """What a search over every type may count (core/search/filters.py, check_facets): the columns every
    entity has first, then the types' declared filterable fields."""
    declared = {f for name in c.registry.names() for f in c.registry.get(name).filterable}
    return [*COLUMN_FIELDS, *sorted(declared - set(COLUMN_FIELDS) - set(TIME_FIELDS))]


# jsonschema's failed keyword → the words the HTTP API uses for it (pydantic's, via handlers/http_api/errors.py)
_WORDS: dict[str, Callable[[Any], str]] = {
    "minimum": lambda v: f"input should be greater than or equal to {v}",
    "maximum": lambda v: f"input should be less than or equal to {v}",
    "minLength": lambda v: f"string should have at least {v} character{'s' * (v != 1)}",
    "maxLength": lambda v: f"string should have at most {v} characters",
    "maxItems": lambda v: f"list should have at most {v} items",
    "pattern": lambda v: f"string should match pattern '{v}'",
    "enum": lambda v: "input should be " + ", ".join(repr(x) for x in v),
    "type": lambda v: f"input should be a valid {v if isinstance(v, str) else ' or '.join(v)}",
}


PATTERN_WORDS = {NONBLANK_PATTERN: "must not be empty or whitespace", ID_JSON_PATTERN: ID_RULE}


def _words(err: SchemaError) -> str:
    if err.validator == "pattern" and err.validator_value in PATTERN_WORDS:
        return PATTERN_WORDS[err.validator_value]
    if err.validator == "pattern" and err.validator_value == caller_json_pattern():
        return CALLER_RULE
    if err.validator == "anyOf" and err.context and all(e.validator == "required" for e in err.context):
        return "needs one of " + ", ".join(str(e.validator_value[0]) for e in err.context)
    if err.validator in ("anyOf", "oneOf") and err.context:
        real = [e for e in err.context if e.validator != "type"] or list(err.context)
        return _words(best_match(real))
    said = _WORDS.get(str(err.validator))
    return said(err.validator_value) if said else err.message


def _unknown(known: set[str], tool: str) -> str:
    if not known:
        return f"is not a known argument; {tool} takes no arguments"
    return "is not a known argument; known: " + ", ".join(sorted(known))


def _problems(errors: list[SchemaError], tool: str) -> dict[str, str]:
    """{argument path: problem} in the HTTP API's words."""
    fields: dict[str, str] = {}
    for err in errors[:MAX_REPORTED]:
        if err.validator == "additionalProperties" and not err.absolute_path:
            known = set(err.schema.get("properties", {}))
            for name in sorted(set(err.instance) - known):
                fields[name] = _unknown(known, tool)
        elif err.validator == "required":
            missing = err.message.split("'")[1] if "'" in err.message else "arguments"
            fields.setdefault(".".join([*(str(p) for p in err.absolute_path), missing]), "is required")
        else:
            fields.setdefault(".".join(str(p) for p in err.absolute_path) or "arguments", _words(err))
    return fields


def error_text(exc: QuarryError) -> str:
    """The HTTP API's error body for `exc` (handlers/http_api/errors.py `error_body`), as JSON text."""
    return json.dumps(error_body(exc)[1])


def _chain(exc: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    cause: BaseException | None = exc
    while cause is not None and len(chain) < MAX_CHAIN:
        chain.append(cause)
        cause = cause.__cause__
    return chain


def refusal(exc: Exception) -> CallToolResult:
    """A failed call as the tool result an agent reads: `isError` and the HTTP API's error body alone,
    whatever failed (a core error, the SDK's argument check, a crash: logged, answered as the API's 500)."""
    chain = _chain(exc)
    error = next((e for e in chain if isinstance(e, QuarryError)), None)
    invalid = next((e for e in chain if isinstance(e, ValidationError)), None)
    if error is None and invalid is not None and not isinstance(exc, UnexpectedToolError):
        fields = validation_fields([dict(e) for e in invalid.errors()])
        error = InvalidInputError("invalid arguments: " + ", ".join(sorted(fields)), fields)
    if error is None:
        logger.error("tool failed", exc_info=exc)
        error = QuarryError("tool failed")  # any 5xx is answered without its text (error_body)
    return CallToolResult(content=[TextContent(type="text", text=error_text(error))], is_error=True)


class QuarryMCPServer(MCPServer):
    """MCPServer whose published input schemas are closed and deployment-complete, and enforced, whose
    tool arguments are screened as the HTTP API screens a body, whose tool list shows a caller only the
    tools its scopes allow, and whose every refusal is the HTTP API's error body."""

    def __init__(
        self,
        container: Callable[[], Container],
        granted: Callable[[Mapping[str, str] | None], frozenset[str]],
        tool_scopes: Mapping[str, str],
        **kw: Any,
    ) -> None:
        super().__init__(**kw)
        self._container = container
        self._granted = granted  # the scopes of the caller whose request carries these headers
        self._tool_scopes = dict(tool_scopes)
        self._schemas: dict[str, dict[str, Any]] = {}

    def _schema(self, name: str, published: dict[str, Any]) -> dict[str, Any]:
        if name not in self._schemas:
            schema = copy.deepcopy(published)
            schema["additionalProperties"] = False
            _deployment(schema, self._container())
            self._schemas[name] = schema
        return self._schemas[name]

    async def list_tools(self) -> list[Any]:
        tools = await super().list_tools()
        return [t.model_copy(update={"input_schema": self._schema(t.name, t.input_schema)}) for t in tools]

    async def _handle_list_tools(self, ctx: Any, params: Any) -> ListToolsResult:
        # The tools this caller may call: a key without `write` is not shown the tools that need it. The
        # SDK's handler is overridden because `list_tools` is not told who asks (the request's headers).
        try:
            granted = self._granted(getattr(ctx.request, "headers", None))
        except QuarryError:
            granted = frozenset()
        tools = await self.list_tools()
        return ListToolsResult(tools=[t for t in tools if self._tool_scopes.get(t.name, "admin") in granted])

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            self._screen(name, arguments)
            if self._tool_manager.get_tool(name) is None:
                raise NotFoundError("tool", name)
            return await super().call_tool(name, arguments, context)
        except MCPError:
            raise
        except Exception as exc:  # every failure, one shape: the HTTP API's error body
            return refusal(exc)

    def _screen(self, name: str, arguments: Any) -> None:
        """InvalidInputError unless `arguments` pass what the HTTP API checks of a body (an object, I-JSON:
        integers a 64-bit store holds, bounded depth, no lone surrogates) and the tool's published schema."""
        check_top_type(arguments, "object", "tool arguments", "arguments")
        check_value(arguments)
        tool = self._tool_manager.get_tool(name)
        if tool is None:
            return
        schema = self._schema(name, tool.parameters)
        errors = sorted(Draft202012Validator(schema).iter_errors(arguments), key=lambda e: list(e.path))
        if errors:
            fields = _problems(errors, name)
            raise InvalidInputError("invalid arguments: " + ", ".join(sorted(fields)), fields)
