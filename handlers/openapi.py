"""The published OpenAPI document: Powertools' generated one, corrected to the contract (DESIGN.md §7).

Powertools documents a 422 Quarry never sends and leaves bodies typed `dict` untyped. Here every
operation gets the errors it really answers, all in the one `{error: {code, message, fields}}` body; the
bearer scheme is declared; entity, overlay and corpus bodies get their schemas."""

from __future__ import annotations

import copy
from typing import Any

from core.entities import COMMON_FIELDS, EntityTypeRegistry
from core.governance.requests import CorpusDocument
from core.payload import INT64_MAX

REF = "#/components/schemas/{model}"
POWERTOOLS_ONLY = ("HTTPValidationError", "ValidationError", "ResponseValidationError")
PUBLIC = frozenset({"/health"})
FENCE_PATHS = frozenset({"/tenant", "/tenant/reopen"})  # erase and reopen act on the fence itself
REFERS_TO_STORED = frozenset({"/context/feedback"})  # a body naming an object that may not exist
ERRORS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "400": ("BadRequest", "Invalid input: `fields` names each bad field (path → problem)", {}),
    "401": ("Unauthorized", "Missing or unknown bearer token", {}),
    "403": ("Forbidden", "The token lacks the scope this operation needs", {}),
    "404": ("NotFound", "No such object for this tenant (another tenant's object is not revealed)", {}),
    "405": ("MethodNotAllowed", "Wrong method for this path", {"Allow": "the methods this path accepts"}),
    "409": ("Conflict", "A write older than the stored version (`fields.version` names it)", {}),
    "410": ("TenantErased", "The tenant was erased (DELETE /tenant) and is not reopened", {}),
    "413": ("PayloadTooLarge", "Body (or batch) over the configured limit", {}),
    "415": ("UnsupportedMediaType", "A body without `Content-Type: application/json`", {}),
    "503": (
        "Unavailable",
        "A backend is down or the server is at capacity; retry",
        {"Retry-After": "seconds"},
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
VALUE = {
    "description": "searchable text (a string or list of strings) or filterable metadata",
    "anyOf": [
        {"type": "string"},
        {"type": "number"},
        {"type": "boolean"},
        {"type": "null"},
        {"type": "array", "items": {"type": ["string", "number", "boolean"]}},
    ],
}
COMMON = {
    "version": {"type": "integer", "minimum": 0, "maximum": INT64_MAX, "description": "newer wins"},
    "created_at": {"type": "string", "description": "ISO-8601"},
    "updated_at": {"type": "string", "description": "ISO-8601"},
    "source": {"type": "string", "minLength": 1, "maxLength": 200},
    "owner": {"type": "string", "minLength": 1, "maxLength": 200},
    "namespace": {"type": "string", "minLength": 1, "maxLength": 200},
}


JOB_ACCEPTED = {
    "description": "Accepted as a write job: `Location: /jobs/{id}`, and GET /jobs/{job_id} follows it",
    "content": {"application/json": {"schema": {"type": "object"}}},
}


def _entity_schemas(registry: EntityTypeRegistry) -> dict[str, Any]:
    names = registry.names()
    titles = ", ".join(f"{n}: `{registry.get(n).title_field}`" for n in names)
    fields = sorted({f for n in names for f in registry.get(n).known_fields} - set(COMMON_FIELDS))
    entity: dict[str, Any] = {
        "type": "object",
        "description": f"An entity's fields. Each type requires its title field ({titles}).",
        "properties": {**{f: VALUE for f in fields}, **COMMON},
        "additionalProperties": VALUE,
    }
    item = copy.deepcopy(entity)
    item["properties"] |= {
        "type": {"type": "string", "enum": list(names)},
        "id": {"type": "string", "minLength": 1, "maxLength": 256},
    }
    item["required"] = ["type", "id"]
    return {"Entity": entity, "BulkItem": item}


def _corpus_schemas() -> dict[str, Any]:
    doc = CorpusDocument.model_json_schema(ref_template=REF)
    defs = doc.pop("$defs", {})
    corpus = {
        "type": "object",
        "required": ["documents"],
        "properties": {"documents": {"type": "array", "items": {"$ref": REF.format(model="CorpusDocument")}}},
    }
    return {**defs, "CorpusDocument": doc, "Corpus": corpus}


def _body(op: dict[str, Any], model: str) -> None:
    op["requestBody"] = {
        "required": True,
        "content": {"application/json": {"schema": {"$ref": REF.format(model=model)}}},
    }


def _errors_of(method: str, path: str, op: dict[str, Any]) -> list[str]:
    codes = ["400"] if op.get("parameters") or "requestBody" in op else []
    if path not in PUBLIC:
        codes += ["401", "403", "503"]
        codes += [] if path in FENCE_PATHS else ["410"]  # an erased tenant: every route but these two
    if "{" in path or path in REFERS_TO_STORED:
        codes.append("404")
    if path.startswith("/entities/") or path == "/search":  # stale version; expired search cursor
        codes.append("409")
    if "requestBody" in op:
        codes += ["413", "415"]
    return sorted(codes)


def _ndjson_export(paths: dict[str, Any]) -> None:
    """GET /tenant/export answers NDJSON, one `{kind, data}` object per line (core.service.lifecycle)."""
    op = paths.get("/tenant/export", {}).get("get")
    if op is not None:
        op.setdefault("responses", {})["200"] = {
            "description": "NDJSON: `{kind, data}` per line; the last line is `{kind: next, cursor}` or `{kind: end}`",
            "content": {"application/x-ndjson": {"schema": {"type": "string"}}},
        }


def _type_bodies(paths: dict[str, Any]) -> None:
    entity = paths.get("/entities/{entity_type}/{entity_id}", {})
    for method, model in (("put", "Entity"), ("patch", "Entity")):
        if method in entity:
            _body(entity[method], model)
    if "put" in entity:  # a write, or a job when it is as large as a bulk job (handlers/routes/entities.py)
        written = {"$ref": REF.format(model="WriteResponse")}
        entity["put"]["responses"] = {
            "200": {
                "description": "Written (or already stored)",
                "content": {"application/json": {"schema": written}},
            }
        }
    for op in (
        entity.get("put"),
        paths.get("/entities", {}).get("post"),
        paths.get("/corpus", {}).get("post"),
    ):
        if op is not None:
            op.setdefault("responses", {})["202"] = JOB_ACCEPTED
    if "put" in paths.get("/overlays/{role_id}", {}):
        _body(paths["/overlays/{role_id}"]["put"], "RoleOverlay")
    if "post" in paths.get("/corpus", {}):
        _body(paths["/corpus"]["post"], "Corpus")


def document(generated: dict[str, Any], registry: EntityTypeRegistry) -> dict[str, Any]:
    """The corrected OpenAPI document (see module docstring)."""
    doc = copy.deepcopy(generated)
    schemas = doc.setdefault("components", {}).setdefault("schemas", {})
    for name in POWERTOOLS_ONLY:
        schemas.pop(name, None)
    schemas |= {"Error": ERROR_BODY, **_entity_schemas(registry), **_corpus_schemas()}
    schemas["BulkRequest"]["properties"]["items"]["items"] = {"$ref": REF.format(model="BulkItem")}
    doc["components"]["responses"] = {
        name: {
            "description": text,
            "content": {"application/json": {"schema": {"$ref": REF.format(model="Error")}}},
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
    doc["security"] = [{"bearer": []}]
    _type_bodies(doc["paths"])
    _ndjson_export(doc["paths"])
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            responses = op.setdefault("responses", {})
            responses.pop("422", None)
            for code in _errors_of(method, path, op):
                responses[code] = {"$ref": f"#/components/responses/{ERRORS[code][0]}"}
            if path in PUBLIC:
                op["security"] = []
    doc["info"]["description"] = (
        "Hybrid search and RAG context assembly. Every error is `{error: {code, message, fields}}`. "
        "A method a path does not accept answers 405 with `Allow` (components.responses.MethodNotAllowed); "
        "an unknown path 404."
    )
    return doc
