"""schemathesis extensions (loaded through schemathesis.toml `hooks`): NDJSON request bodies, and what an
assembly body's draws cannot know.

/openapi.json states an NDJSON upload (POST /entities/ndjson) as an array of bulk items, one a line on the
wire (handlers/http_api/openapi.py `_ndjson_upload`); this serializer writes the generated array that way. Drawn from
that schema alone, an upload (up to 10,000 items, each one of the types' schemas with their id pattern)
is mostly filtered away (hypothesis' `filter_too_much` health check), so lines built from the types' own
required fields are drawn alongside: the upload is exercised every run, and the schema's own cases still come.

The caller, wherever it is drawn (POST /context/assemble's body, the `caller` query of GET /context/log and
GET /context/weights/history, the `{caller}` path segment of PUT /context/budgets/{caller} and
PUT /context/weights/{caller}/{source}): the published caller pattern (the server's caller rule, checked
equal by tests/handlers/test_openapi_document.py) holds characters outside the Basic Multilingual Plane in
a class, which schemathesis drops ("Unsupported regex patterns"): it then draws any string of 1-128
characters and counts the server's 400 as a schema-valid request refused. A drawn caller of that length the
rule refuses is replaced by one it takes (the rule's own cases: tests/handlers/test_openapi_document.py);
a draw outside the schema's length is left for the negative phases."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import unquote

import schemathesis
from hypothesis import strategies as st

from core.indexing.entity_types import EntityTypeRegistry
from core.indexing.entity_validation import is_caller
from core.state import WILDCARD_CALLER

FUZZ_CALLER = "fuzz-agent"  # a caller the rule takes, for a draw the rule refuses
MAX_LINES = 3  # lines per explicit upload: enough for a job of several items, small enough to stay fast
_ID = st.from_regex(r"[a-z0-9][a-z0-9._-]{0,23}", fullmatch=True)
_TEXT = st.from_regex(r"[A-Za-z][A-Za-z0-9 ,.]{0,47}", fullmatch=True)


@st.composite
def bulk_line(draw: Any) -> dict[str, Any]:
    """One bulk item of a built-in type with its required title field (core/indexing/entity_validation.py)."""
    registry = EntityTypeRegistry()
    etype = registry.get(draw(st.sampled_from(registry.names())))
    return {"type": etype.name, "id": draw(_ID), etype.title_field: draw(_TEXT)}


def bulk_lines() -> Any:
    """An upload of 1..MAX_LINES lines naming distinct entities (a repeat is refused as one, by design)."""
    return st.lists(
        bulk_line(), min_size=1, max_size=MAX_LINES, unique_by=lambda line: (line["type"], line["id"])
    )


@schemathesis.hook.apply_to(method="POST", path="/entities/ndjson")
def before_generate_body(ctx: Any, strategy: Any) -> Any:
    """The upload's explicit lines first, the schema's own draws still among them."""
    return st.one_of(bulk_lines(), strategy)


@schemathesis.serializer("application/x-ndjson", "application/jsonl")
def ndjson(ctx: Any, value: Any) -> bytes:
    """Each item of a generated array as one line; anything else (a negative case) as one line."""
    items = value if isinstance(value, list) else [value]
    return b"".join(
        json.dumps(item, ensure_ascii=False).encode("utf-8", "surrogatepass") + b"\n" for item in items
    )


def _taken(caller: Any, wildcard: bool = False) -> Any:
    """`caller`, or FUZZ_CALLER for a string of the schema's length that the caller rule refuses."""
    if not isinstance(caller, str) or not 0 < len(caller) <= 128:
        return caller
    return caller if is_caller(caller) or (wildcard and caller == WILDCARD_CALLER) else FUZZ_CALLER


@schemathesis.hook.apply_to(method="POST", path="/context/assemble")
def map_body(ctx: Any, body: Any) -> Any:
    """An assembly body whose drawn caller the caller rule refuses gets one it takes (module docstring)."""
    if not isinstance(body, dict) or "caller" not in body:
        return body
    return {**body, "caller": _taken(body["caller"])}


@schemathesis.hook.apply_to(method="GET", path="/context/log").apply_to(
    method="GET", path="/context/weights/history"
)
def map_query(ctx: Any, query: Any) -> Any:
    """A `caller` query the caller rule refuses becomes one it takes (module docstring)."""
    if not isinstance(query, dict) or "caller" not in query:
        return query
    return {**query, "caller": _taken(query["caller"])}


@schemathesis.hook.apply_to(method="PUT", path="/context/budgets/{caller}").apply_to(
    method="PUT", path="/context/weights/{caller}/{source}"
)
def map_path_parameters(ctx: Any, path_parameters: Any) -> Any:
    """A `{caller}` segment the caller rule refuses becomes one it takes (`*`, every caller, is one here);
    schemathesis hands path parameters over percent-encoded."""
    if not isinstance(path_parameters, dict) or not isinstance(path_parameters.get("caller"), str):
        return path_parameters
    drawn = path_parameters["caller"]  # as it goes on the wire: percent-encoded
    taken = _taken(unquote(drawn), wildcard=True)
    return path_parameters if taken != FUZZ_CALLER else {**path_parameters, "caller": FUZZ_CALLER}
