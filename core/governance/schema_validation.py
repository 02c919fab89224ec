"""JSON Schemas of RoleOverlay and RetrievalBundle (generated from the models, published at GET
/schemas/{name} and committed under schemas/), and validation that names every bad field."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from core.errors import InvalidInputError, NotFoundError
from core.governance.bundle import RetrievalBundle
from core.governance.overlay import RoleOverlay

SCHEMA_MODELS: dict[str, type[BaseModel]] = {
    "role_overlay": RoleOverlay,
    "retrieval_bundle": RetrievalBundle,
}
KIND_ALIASES = {"overlay": "role_overlay", "bundle": "retrieval_bundle"}
JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"  # what pydantic v2 emits
SCHEMA_ID_BASE = "https://quarry.dev/schemas/"  # a stable identifier, not a download location


def schema_names() -> list[str]:
    """The published schema names."""
    return sorted(SCHEMA_MODELS)


def json_schema(name: str) -> dict[str, Any]:
    """The JSON Schema called `name` (role_overlay | retrieval_bundle); NotFoundError otherwise."""
    model = SCHEMA_MODELS.get(KIND_ALIASES.get(name, name))
    if model is None:
        raise NotFoundError("schema", name)
    schema = model.model_json_schema()
    canonical = KIND_ALIASES.get(name, name)
    return {"$schema": JSON_SCHEMA_DIALECT, "$id": f"{SCHEMA_ID_BASE}{canonical}.json", **schema}


def _path(loc: tuple[int | str, ...]) -> str:
    # Drop pydantic's union-branch tags (`str`, `CorpusChunk`, function names) that are not JSON paths.
    parts = [str(p) for p in loc if isinstance(p, int) or not (p[:1].isupper() or "[" in p or p == "str")]
    return ".".join(parts) or "body"


def _message(err: Mapping[str, Any]) -> str:
    if err.get("type") == "missing":
        return "is required"
    if err.get("type") == "extra_forbidden":
        return "is not a known field"
    text = str(err.get("msg", "is invalid")).removeprefix("Value error, ")
    return text[:1].lower() + text[1:]


def error_fields(exc: ValidationError, prefix: str = "") -> dict[str, str]:
    """A pydantic error → {dotted.field.path: readable message}, one entry per bad field."""
    fields: dict[str, str] = {}
    for err in exc.errors():
        path = _path(tuple(err.get("loc", ())))
        key = f"{prefix}.{path}" if prefix and path != "body" else prefix or path
        fields.setdefault(key, _message(err))
    return fields


def parse_overlay(data: Any, role_id: str | None = None) -> RoleOverlay:
    """A RoleOverlay from JSON-like data (role_id filled from the path when absent); 400 on any bad field."""
    if not isinstance(data, Mapping):
        raise InvalidInputError("overlay must be a JSON object", {"body": "must be an object"})
    body = dict(data)
    if role_id is not None:
        body.setdefault("role_id", role_id)
    try:
        overlay = RoleOverlay.model_validate(body)
    except ValidationError as exc:
        fields = error_fields(exc)
        raise InvalidInputError("invalid overlay: " + ", ".join(sorted(fields)), fields) from exc
    if role_id is not None and overlay.role_id != role_id:
        raise InvalidInputError(
            "overlay role_id does not match the path", {"role_id": f"must equal '{role_id}' (the path)"}
        )
    return overlay


def validate_document(kind: str, data: Any) -> dict[str, Any]:
    """`{valid, errors: [{path, message}]}` for an overlay or a bundle (kind: overlay | bundle | schema name)."""
    model = SCHEMA_MODELS.get(KIND_ALIASES.get(kind, kind))
    if model is None:
        raise InvalidInputError(f"unknown kind '{kind}'", {"kind": "must be overlay or bundle"})
    try:
        model.model_validate(data)
    except ValidationError as exc:
        errors = [{"path": p, "message": m} for p, m in error_fields(exc).items()]
        return {"valid": False, "errors": errors}
    return {"valid": True, "errors": []}
