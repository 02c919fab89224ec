"""What the published OpenAPI document (handlers/http_api/openapi.py) states of the constraints the server
enforces from its configuration: the entity types, the query's length and the result limit, the
filterable fields and their operators, the configured sources, and each path parameter's rule — so a
generated client or a fuzzer learns them from the document alone."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from core.context.links import MAX_LINK_CHARS
from core.governance.overlay import ROLE_ID_PATTERN
from core.governance.schema_validation import KIND_ALIASES, schema_names
from core.indexing.entity_validation import ID_JSON_PATTERN, NONBLANK_PATTERN, caller_schema
from core.payload import INT64_MAX

if TYPE_CHECKING:
    from infra.wiring.root import Container

REF = "#/components/schemas/{model}"


def _ref(model: str) -> dict[str, str]:
    return {"$ref": REF.format(model=model)}


def _parameter_schemas(c: Container) -> dict[tuple[str, str], dict[str, Any]]:
    """(location, name) → the schema of that parameter, where the server enforces more than its type."""
    types = {"type": "string", "enum": list(c.registry.names())}
    sources = [s.name for s in c.context_settings.sources]
    return {
        ("path", "entity_type"): types,
        ("query", "type"): types,
        ("path", "entity_id"): {"type": "string", "pattern": ID_JSON_PATTERN},
        ("path", "role_id"): {"type": "string", "pattern": ROLE_ID_PATTERN},
        ("path", "name"): {"type": "string", "enum": [*schema_names(), *KIND_ALIASES]},
        ("path", "caller"): caller_schema(wildcard=True),
        ("query", "caller"): caller_schema(),
        ("path", "source"): {"type": "string", "enum": sources},
        ("query", "version"): {"type": "integer", "minimum": 0, "maximum": INT64_MAX},
    }


UNCHECKED_ROLE_IDS = frozenset({"/overlays/{role_id}/evals"})  # any name: an empty list, never a 400


def parameters(paths: dict[str, Any], c: Container) -> None:
    table = _parameter_schemas(c)
    for path, ops in paths.items():
        for op in ops.values():
            for param in op.get("parameters", []):
                stated = table.get((param["in"], param["name"]))
                if stated is None or (param["name"] == "role_id" and path in UNCHECKED_ROLE_IDS):
                    continue
                # an optional query parameter is left out, never null: a query string cannot say null
                kept = {k: v for k, v in param["schema"].items() if k in ("title", "default", "description")}
                param["schema"] = {**kept, **stated}


def search_request(schemas: dict[str, Any], c: Container) -> None:
    """What the search service checks against the deployment: types, filter names, query length, limit."""
    from core.search.filters import COMMON_FILTERS, TIME_FIELDS

    props = schemas["SearchRequest"]["properties"]
    props["query"]["maxLength"] = c.settings.max_query_chars  # empty or blank: no results, not an error
    props["limit"]["maximum"] = c.settings.max_limit
    entities = next(s for s in props["entities"]["anyOf"] if s.get("type") == "array")
    entities["items"] = {"type": "string", "enum": list(c.registry.spellings())}
    filterable = sorted(
        {f for n in c.registry.names() for f in c.registry.get(n).filterable} | set(COMMON_FILTERS)
    )
    filters = next(s for s in props["filters"]["anyOf"] if s.get("type") == "object")
    filters["propertyNames"] = {"enum": filterable}
    facets = next(s for s in props["facets"]["anyOf"] if s.get("type") == "array")
    facets["items"] = {"type": "string", "enum": [f for f in filterable if f not in TIME_FIELDS]}
    _filter_values(schemas, filters)
    props["filters"]["description"] = (
        "Filters, field → a value, any of a list, or operators that must all hold (FilterOperators); "
        "the fields must be filterable for every searched type, or be source, owner, namespace (no ranges), "
        "created_at or updated_at (ranges only)"
    )


def _filter_values(schemas: dict[str, Any], filters: dict[str, Any]) -> None:
    """What core/search/filters.py accepts for each field: values and operators, per kind of field."""
    from core.search.filters import COLUMN_FIELDS, RANGE_OPERATORS, TIME_FIELDS
    from core.timestamps import DATE_PATTERN

    scalar = [{"type": "string"}, {"type": "integer"}, {"type": "number"}, {"type": "boolean"}]
    values = {"type": "array", "items": {"anyOf": scalar}, "minItems": 1, "description": "any of these"}
    date = {"type": "string", "pattern": DATE_PATTERN, "description": "an ISO 8601 date or date-time"}
    number = [{"type": "integer"}, {"type": "number", "not": {"type": "integer"}}]
    text_ops = {
        "in": values,
        "not": {"anyOf": [*scalar, values], "description": "none of these (no value passes)"},
        "exists": {"type": "boolean", "description": "true: has a value; false: has none"},
    }

    def operators(description: str, ops: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "object",
            "description": description,
            "properties": ops,
            "additionalProperties": False,
            "minProperties": 1,
        }

    schemas["FilterOperators"] = operators(
        "Operators that must all hold: ranges on numbers or ISO 8601 dates (a date-only `lte`/`gt` bound "
        "covers its whole day), any of, none of, has a value",
        {**{op: {"anyOf": [*number, date]} for op in RANGE_OPERATORS}, **text_ops},
    )
    schemas["TextFilterOperators"] = operators("any of, none of, has a value", text_ops)
    schemas["TimeRange"] = operators("A range of ISO 8601 dates", {op: date for op in RANGE_OPERATORS})
    filters["additionalProperties"] = {"anyOf": [*scalar, values, _ref("FilterOperators")]}
    filters["properties"] = {
        **{f: {"anyOf": [*scalar, values, _ref("TextFilterOperators")]} for f in COLUMN_FIELDS},
        **{f: _ref("TimeRange") for f in TIME_FIELDS},
    }


def assemble_request(schemas: dict[str, Any], c: Container) -> None:
    """What the context service checks against the deployment: the configured sources."""
    props = schemas["AssembleRequest"]["properties"]
    props["query"]["pattern"] = NONBLANK_PATTERN
    sources = next(s for s in props["sources"]["anyOf"] if s.get("type") == "array")
    sources["items"] = {"type": "string", "enum": [s.name for s in c.context_settings.sources]}
    types = "|".join(c.registry.names())
    entity = {"type": "string", "pattern": rf"^({types}):[^/\\]+$", "description": "an entity, `type:id`"}
    path = {
        "type": "string",
        "maxLength": MAX_LINK_CHARS,
        "pattern": LINK_PATH_PATTERN,
        "description": "a path",
    }
    # file links only where QUARRY_LINKS_ROOT is set
    props["explicit_links"]["items"] = {"anyOf": [entity, path]} if c.settings.links_root else entity


# core/context/links.py `check_relative_path`: not blank, no NUL, not absolute (`/`, `\`, `C:`, `~`), no `..`
LINK_PATH_PATTERN = (
    r"^(?![/\\~])(?![A-Za-z]:)(?!(?:[\s\S]*[/\\])?\.\.(?:[/\\]|$))[^\x00]*"
    + NONBLANK_PATTERN.replace("[^", r"[^\x00", 1)
    + r"[^\x00]*$"
)
