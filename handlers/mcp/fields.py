"""What `upsert_entity.fields` takes, per entity type of this deployment (core/indexing/entity_types.py),
stated in the tool's input schema so that an agent learns a type's required fields from `tools/list`, not
from a refused write: a description naming each type's title, searchable and filterable fields, and one
`if`/`then` per type requiring its title field on a full write (a `partial` one changes only what it names).
The server's check (core/indexing/entity_validation.py `validate_body`) stays the judge; this says it first."""

from __future__ import annotations

from typing import Any

from core.indexing.entity_types import EntityType, EntityTypeRegistry

FIELDS_INTRO = (
    "The entity's fields; optional besides the type's required one: other text and metadata, `version` "
    "and `embedding` (your own vector of the tenant's dimension, used instead of the model's). Per type"
)


def title_alternatives(etype: EntityType) -> list[str]:
    """The fields a full write of `etype` needs one of: its title, or for a chunked type (a document) its
    body text or chunks instead (entity_validation `_untitled_document`)."""
    if not etype.chunked:
        return [etype.title_field]
    return [etype.title_field, *(f.name for f in etype.fields if f.boost == 1), "chunks"]


def describe_type(etype: EntityType) -> str:
    """One type as an agent reads it: required, searchable (best boost first), filterable."""
    required = " or ".join(f"`{name}`" for name in title_alternatives(etype))
    searchable = ", ".join(f.name for f in sorted(etype.fields, key=lambda f: (-f.boost, f.name)))
    said = f"{etype.name}: requires {required}; searchable: {searchable}"
    return said + (f"; filterable: {', '.join(etype.filterable)}" if etype.filterable else "")


def required_by_type(etype: EntityType) -> dict[str, Any]:
    """`if` the arguments name `etype` on a full write, `then` `fields` holds its title (or an alternative)."""
    alternatives = title_alternatives(etype)
    holds: dict[str, Any] = (
        {"required": alternatives}
        if len(alternatives) == 1
        else {"anyOf": [{"required": [name]} for name in alternatives]}
    )
    return {
        "if": {
            "properties": {"entity_type": {"const": etype.name}, "partial": {"const": False}},
            "required": ["entity_type"],
        },
        "then": {"properties": {"fields": holds}},
    }


def publish_fields(schema: dict[str, Any], registry: EntityTypeRegistry) -> None:
    """Complete upsert_entity's input schema with the deployment's types (their words and their rule)."""
    types = [registry.get(name) for name in registry.names()]
    schema["properties"]["fields"]["description"] = (
        FIELDS_INTRO + " — " + ". ".join(describe_type(t) for t in types) + "."
    )
    schema["allOf"] = [required_by_type(t) for t in types]
