"""The published OpenAPI document: Powertools' generated one, corrected to the contract (docs/architecture.md,
Errors and authentication).

Powertools documents a 422 Quarry never sends and leaves bodies typed `dict` untyped. Here every
operation gets the errors it really answers, all in the one `{error: {code, message, fields}}` body (503
with Retry-After, 413, the 202 of a write job); the bearer scheme is declared; entity, overlay and corpus
bodies get their schemas, one per entity type (bulk items are a union on `type`); and every constraint
the server enforces from its configuration (entity types, query length, sources) is stated, so a
generated client, or a fuzzer (schemathesis.toml), learns the API from the document alone.

The constraints stated from the deployment's configuration are in handlers/http_api/openapi_constraints.py, the
models and examples added in handlers/http_api/openapi_models.py and handlers/http_api/openapi_examples.py.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from core.governance.requests import CorpusDocument
from core.indexing.entity_models import entity_models
from core.indexing.entity_validation import (
    NONBLANK_PATTERN,
)
from core.indexing.write_jobs import MAX_JOB_ITEMS
from core.payload import INT64_MAX
from handlers.http_api.auth import PUBLIC_PATHS as PUBLIC
from handlers.http_api.gate import NDJSON_TYPES
from handlers.http_api.openapi_constraints import REF, assemble_request, parameters, search_request
from handlers.http_api.openapi_examples import add_examples

if TYPE_CHECKING:
    from infra.wiring.root import Container

POWERTOOLS_ONLY = ("HTTPValidationError", "ValidationError", "ResponseValidationError")
FENCE_PATHS = frozenset({"/tenant", "/tenant/reopen"})  # erase and reopen act on the fence itself
REFERS_TO_STORED = frozenset({"/context/feedback"})  # a body naming an object that may not exist
# an expired cursor; embedding or tuning for a tenant that brings its own vectors; an assembly learned from
# already
CONFLICTS = ("/search", "/embed", "/context/feedback", "/overlays/{role_id}/tune")
ERRORS: dict[str, tuple[str, str, dict[str, str]]] = {
    "400": ("BadRequest", "Invalid input: `fields` names each bad field (path → problem)", {}),
    "401": ("Unauthorized", "Missing or unknown bearer token", {}),
    "403": ("Forbidden", "The token lacks the scope this operation needs", {}),
    "404": ("NotFound", "No such object for this tenant (another tenant's object is not revealed)", {}),
    "405": ("MethodNotAllowed", "Wrong method for this path", {"Allow": "the methods this path accepts"}),
    "409": (
        "Conflict",
        "A write older than the stored version (`fields.version` names it), a stale cursor, or what the"
        " tenant's configuration rules out (tuning the fusion of a tenant that brings its own vectors)",
        {},
    ),
    "410": ("TenantErased", "The tenant was erased (DELETE /tenant) and is not reopened", {}),
    "413": ("PayloadTooLarge", "Body (or batch) over the configured limit", {}),
    "415": ("UnsupportedMediaType", "A body without `Content-Type: application/json`", {}),
    "503": (
        "Unavailable",
        "A backend is down or the server is at capacity: retry after `Retry-After` seconds",
        {"Retry-After": "seconds to wait before retrying"},
    ),
}
ERROR_BODY = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message", "fields"],
            "properties": {
                "code": {"type": "string", "description": "stable, machine-readable"},
                "message": {"type": "string"},
                "fields": {"type": "object", "additionalProperties": {"type": "string"}},
            },
        }
    },
}
NONBLANK = {"type": "string", "pattern": NONBLANK_PATTERN}
# Any value a body may carry where the schema names no type (an entity's own extra fields): the input gate
# (core/payload.py) holds every integer within a signed 64-bit range.
JSON_VALUE = {
    "description": "Any JSON value; numbers within ±(2^63 - 1), however written (RFC 7493)",
    "anyOf": [
        {"type": "string"},
        {"type": "boolean"},
        {"type": "null"},
        {"type": "integer"},
        {"type": "number", "not": {"type": "integer"}},
        {"type": "array", "items": {"$ref": REF.format(model="JsonValue")}},
        {"type": "object", "additionalProperties": {"$ref": REF.format(model="JsonValue")}},
    ],
}
OPEN_BODIES = ("Item", "Fields", "Patch", "CorpusDocument", "CorpusChunk")  # schemas that keep extra fields
# Every field name but `embedding`: a write's own vector holds finite numbers of any size (its own schema says so).
OPEN_FIELD_NAMES = "^(?!embedding$)"


_ENTITY = {"entity_type": "$response.body#/entity_type", "entity_id": "$response.body#/entity_id"}
_JOB = {"job_id": "$response.body#/job_id"}
_ROLE = {"role_id": "$response.body#/role_id"}
# (operation, status) → the operations its answer leads to (OpenAPI links: clients and fuzzers follow them)
LINKS: dict[tuple[str, str], dict[str, tuple[str, dict[str, str]]]] = {
    ("putEntity", "200"): {"GetEntity": ("getEntity", _ENTITY), "DeleteEntity": ("deleteEntity", _ENTITY)},
    ("patchEntity", "200"): {"GetEntity": ("getEntity", _ENTITY)},
    ("bulkWrite", "202"): {"GetJob": ("getJob", _JOB)},
    ("loadCorpus", "202"): {"GetJob": ("getJob", _JOB)},
    ("uploadEntities", "202"): {"GetJob": ("getJob", _JOB)},
    ("putOverlay", "200"): {
        "GetOverlay": ("getOverlay", _ROLE),
        "EvalOverlay": ("evalOverlay", _ROLE),
        "TuneOverlay": ("tuneOverlay", _ROLE),
        "DeleteOverlay": ("deleteOverlay", _ROLE),
    },
}


def _links(op: dict[str, Any]) -> None:
    for (operation, status), links in LINKS.items():
        if op.get("operationId") == operation and status in op.get("responses", {}):
            op["responses"][status]["links"] = {
                name: {"operationId": target, "parameters": params}
                for name, (target, params) in links.items()
            }


def _ref(model: str) -> dict[str, str]:
    return {"$ref": REF.format(model=model)}


def _entity_schemas(c: Container) -> dict[str, Any]:
    """Per type: `<Type>Item` (bulk), `<Type>Fields` (PUT), `<Type>Patch` (PATCH); BulkItem is their union."""
    models = entity_models(c.registry)
    out: dict[str, Any] = {}
    for group in (models.items, models.bodies, models.patches):
        for model in group.values():
            schema = model.model_json_schema(ref_template=REF)
            out |= schema.pop("$defs", {})
            out[model.__name__] = schema
    items = {name: _ref(model.__name__) for name, model in models.items.items()}
    out["BulkItem"] = {
        "oneOf": list(items.values()),
        "discriminator": {"propertyName": "type", "mapping": {n: r["$ref"] for n, r in items.items()}},
    }
    out["EntityFields"] = {
        "description": "The fields of an entity of the path's type (see `<Type>Fields`)",
        "anyOf": [_ref(m.__name__) for m in models.bodies.values()],
    }
    out["EntityPatch"] = {
        "description": "Some fields of an entity of the path's type (see `<Type>Patch`); null removes one",
        "anyOf": [_ref(m.__name__) for m in models.patches.values()],
    }
    return out


def _corpus_schemas() -> dict[str, Any]:
    doc = CorpusDocument.model_json_schema(ref_template=REF)
    defs = doc.pop("$defs", {})
    corpus = {
        "type": "object",
        "required": ["documents"],
        "additionalProperties": False,
        "properties": {
            "documents": {
                "type": "array",
                "minItems": 1,
                "maxItems": MAX_JOB_ITEMS,
                "items": _ref("CorpusDocument"),
            }
        },
    }
    return {**defs, "CorpusDocument": doc, "Corpus": corpus}


def _overlay_body(schemas: dict[str, Any]) -> None:
    """PUT /overlays/{role_id}: a RoleOverlay whose role_id may be left out (the path's is used)."""
    body = copy.deepcopy(schemas["RoleOverlay"])
    body["required"] = [r for r in body.get("required", []) if r != "role_id"]
    body["title"] = "RoleOverlayBody"
    body["properties"]["role_id"]["description"] = "Optional; when given it must equal the path's role_id"
    schemas["RoleOverlayBody"] = body


def _body(op: dict[str, Any], model: str) -> None:
    op["requestBody"] = {"required": True, "content": {"application/json": {"schema": _ref(model)}}}


def _type_bodies(paths: dict[str, Any]) -> None:
    entity = paths.get("/entities/{entity_type}/{entity_id}", {})
    for method, model in (("put", "EntityFields"), ("patch", "EntityPatch")):
        if method in entity:
            _body(entity[method], model)
    if "put" in paths.get("/overlays/{role_id}", {}):
        _body(paths["/overlays/{role_id}"]["put"], "RoleOverlayBody")
    if "post" in paths.get("/corpus", {}):
        _body(paths["/corpus"]["post"], "Corpus")


def _int64(node: Any) -> None:
    """Every integer a body or parameter may carry is bounded by the input gate (core/payload.py)."""
    if isinstance(node, dict):
        if node.get("type") == "integer":
            node["minimum"] = max(node.get("minimum", -INT64_MAX), -INT64_MAX)
            node["maximum"] = min(node.get("maximum", INT64_MAX), INT64_MAX)
        for key, value in node.items():
            if key != "not":  # "not an integer" means any integer, however large
                _int64(value)
    elif isinstance(node, list):
        for value in node:
            _int64(value)


def _open_bodies(schemas: dict[str, Any]) -> None:
    """Extra fields of entities and corpus documents: any JSON value the gate accepts. Stated with
    `patternProperties` (every name but the vector's), which validators apply and client generators that
    cannot type a recursive union (openapi-python-client) leave alone, keeping `additionalProperties`."""
    for name, schema in schemas.items():
        if name.endswith(OPEN_BODIES) and schema.get("additionalProperties") is True:
            schema["patternProperties"] = {OPEN_FIELD_NAMES: _ref("JsonValue")}


def _errors_of(method: str, path: str, op: dict[str, Any]) -> list[str]:
    codes = ["400"] if op.get("parameters") or "requestBody" in op else []
    if path not in PUBLIC:
        codes += ["401", "403"]
        codes += [] if path in FENCE_PATHS else ["410"]  # an erased tenant: every route but these two
    codes.append("503")  # a backend outage, or the local server at capacity (`overloaded`)
    if "{" in path or path in REFERS_TO_STORED:
        codes.append("404")
    stale = path.startswith("/entities/") and method != "get" and path != "/entities/ndjson"
    if path in CONFLICTS or stale:  # a stale version (an upload reports its lines in the job)
        codes.append("409")
    if "requestBody" in op:
        codes += ["413", "415"]
    return sorted(set(codes))


def _ndjson_export(paths: dict[str, Any]) -> None:
    """GET /tenant/export answers NDJSON, one `{kind, data}` object per line (core.tenancy.lifecycle)."""
    op = paths.get("/tenant/export", {}).get("get")
    if op is not None:
        op.setdefault("responses", {})["200"] = {
            "description": "NDJSON: `{kind, data}` per line; the last line is `{kind: next, cursor}` or `{kind: end}`",
            "content": {"application/x-ndjson": {"schema": {"type": "string"}}},
        }


def _ndjson_upload(paths: dict[str, Any]) -> None:
    """POST /entities/ndjson takes NDJSON, one bulk item a line (core/indexing/ndjson.py), and always answers 202."""
    op = paths.get("/entities/ndjson", {}).get("post")
    if op is None:
        return
    # The lines as an array of their items (OpenAPI 3.1 has no schema for a sequence of JSON texts; 3.2's
    # `itemSchema` will): each item is one line on the wire, not one JSON array.
    lines = {"type": "array", "items": _ref("BulkItem"), "minItems": 1, "maxItems": MAX_JOB_ITEMS,
             "description": "One `BulkItem` a line (NDJSON), not a JSON array; blank lines are skipped"}  # fmt: skip
    op["requestBody"] = {"required": True, "content": dict.fromkeys(NDJSON_TYPES, {"schema": lines})}
    responses = op.setdefault("responses", {})
    responses.pop("200", None)
    responses["202"] = {
        "description": "Accepted as one job; follow it at `Location`. Lines refused on arrival are already in "
        "its `errors`, each with its `line`",
        "headers": {"Location": {"description": "/jobs/{job_id}", "schema": {"type": "string"}}},
        "content": {"application/json": {"schema": _ref("Job")}},
    }


def _components(doc: dict[str, Any], c: Container) -> None:
    schemas = doc.setdefault("components", {}).setdefault("schemas", {})
    for name in POWERTOOLS_ONLY:
        schemas.pop(name, None)
    schemas |= {"Error": ERROR_BODY, "JsonValue": JSON_VALUE, **_entity_schemas(c), **_corpus_schemas()}
    _open_bodies(schemas)
    schemas["BulkRequest"]["properties"]["items"]["items"] = _ref("BulkItem")
    _overlay_body(schemas)
    search_request(schemas, c)
    schemas["EntityRef"]["properties"]["type"]["enum"] = list(c.registry.names())  # CatalogService.batch_get
    assemble_request(schemas, c)
    doc["components"]["responses"] = {
        name: {
            "description": text,
            "content": {"application/json": {"schema": _ref("Error")}},
            **(
                {"headers": {h: {"description": d, "schema": {"type": "string"}} for h, d in headers.items()}}
                if headers
                else {}
            ),
        }
        for name, text, headers in ERRORS.values()
    }
    doc["components"]["securitySchemes"] = {
        "bearer": {
            "type": "http",
            "scheme": "bearer",
            "description": "In AWS a JWT from the configured issuer; locally a key from QUARRY_API_KEYS, "
            "else the data directory's local key (`local-api-key`, printed by `quarry serve` at start)",
        }
    }


def document(generated: dict[str, Any], c: Container) -> dict[str, Any]:
    """The corrected OpenAPI document (see module docstring) of the deployment `c`."""
    doc = copy.deepcopy(generated)
    _components(doc, c)
    doc["security"] = [{"bearer": []}]
    _type_bodies(doc["paths"])
    _ndjson_export(doc["paths"])
    _ndjson_upload(doc["paths"])
    parameters(doc["paths"], c)
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            responses = op.setdefault("responses", {})
            responses.pop("422", None)
            for code in _errors_of(method, path, op):
                responses[code] = {"$ref": f"#/components/responses/{ERRORS[code][0]}"}
            if path in PUBLIC:
                op["security"] = []
            _links(op)
    _int64(doc)
    add_examples(doc)
    doc["info"]["description"] = (
        "Hybrid search and RAG context assembly. Every error is `{error: {code, message, fields}}`. "
        "A method a path does not accept answers 405 with `Allow` (components.responses.MethodNotAllowed); "
        "an unknown path 404. Large writes (`bulkWrite`, `loadCorpus`) answer 202 with a job to follow at "
        "`GET /jobs/{job_id}`; a 503 carries `Retry-After`."
    )
    return doc
