"""Pydantic models of entity bodies, one per entity type, built from the registry (docs/architecture.md, Write
path).

They publish the JSON Schema of PUT and PATCH bodies and of bulk items in the OpenAPI document
(handlers/http_api/openapi.py), and they are the request-level check of bulk items: an item that breaks its type's
schema makes the whole request a 400 naming `items.<n>.<field>`, so what the document says is what the
server enforces. Strict, as core/indexing/entity_validation.py is: a number is never read from a string, nor a flag from
a number. What a JSON Schema cannot state is still checked per entity by core/indexing/entity_validation.py (and reported
per item in a bulk, the others indexed): lone surrogates, the total length of a list of strings,
timestamps that do not parse, versions older than the stored one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    WithJsonSchema,
    create_model,
    model_validator,
)
from pydantic_core import PydanticCustomError

from core.errors import InvalidInputError
from core.indexing.caller_vectors import VectorList
from core.indexing.chunking import PREMADE_CHUNKS_FIELD
from core.indexing.entity_types import COMMON_FIELDS, EntityType, EntityTypeRegistry
from core.indexing.entity_validation import (
    ID_JSON_PATTERN,
    ID_RULE,
    MAX_LABEL_CHARS,
    NONBLANK_PATTERN,
    at_least_one,
    is_whole_number,
)
from core.payload import INT64_MAX, lone_surrogates
from core.timestamps import parse_timestamp

Scalar = str | int | float | bool
Text = str | list[str]
_CONFIG = ConfigDict(strict=True, extra="allow", regex_engine="python-re")


def _has_text(values: list[str]) -> list[str]:
    if not any(v.strip() for v in values):
        raise ValueError("must hold at least one non-blank string")
    return values


def _whole(value: int | float) -> int | float:
    if not is_whole_number(value) or value > INT64_MAX:
        raise ValueError("must be a whole number")
    return value


def _timestamp(value: str) -> str:
    if parse_timestamp(value) is None:
        raise ValueError("must be an ISO-8601 timestamp")
    return value


NonBlankText = (
    Annotated[str, Field(pattern=NONBLANK_PATTERN)]
    | Annotated[
        list[str],
        AfterValidator(_has_text),
        WithJsonSchema(
            {
                "type": "array",
                "items": {"type": "string"},
                "contains": {"type": "string", "pattern": NONBLANK_PATTERN},
            }
        ),
    ]
)
# RFC 3339 date-times and full dates are what clients send; Python's `datetime.fromisoformat` (the server's
# parser) reads both, and a few rarer ISO-8601 forms besides.
Timestamp = Annotated[
    str,
    AfterValidator(_timestamp),
    WithJsonSchema(
        {"anyOf": [{"type": "string", "format": "date-time"}, {"type": "string", "format": "date"}]}
    ),
]
Label = Annotated[str, Field(min_length=1, max_length=MAX_LABEL_CHARS)]
TEXT_RULE = "must be a string or a list of strings"
TITLE_RULE = "must be a non-blank string, or a list of strings holding one"
SCALAR_RULE = "must be a string, number, boolean or a list of them"
# name → (type, description, the rule a bad value is told)
COMMON_TYPES: dict[str, tuple[Any, str, str]] = {
    "version": (
        Annotated[
            int | float,
            AfterValidator(_whole),
            WithJsonSchema({"type": "integer", "minimum": 0, "maximum": INT64_MAX}),
        ],
        "Newer wins; a write older than the stored one is refused (409)",
        f"must be an integer from 0 to {INT64_MAX}",
    ),
    "created_at": (Timestamp, "ISO-8601; default: now", "must be an ISO-8601 timestamp"),
    "updated_at": (
        Timestamp,
        "ISO-8601; without `version`, its time in milliseconds is the version",
        "must be an ISO-8601 timestamp",
    ),
    "source": (Label, "Where the entity comes from: a context source (filterable)", ""),
    "owner": (Label, "Filterable", ""),
    "namespace": (Label, "A mission namespace (filterable)", ""),
}
LABEL_RULE = f"must be a non-empty string of at most {MAX_LABEL_CHARS} characters"
EMBEDDING = "embedding"
EMBEDDING_TEXT = (
    "Your own vector for the entity instead of the model's: the tenant's vector dimension, finite, not all "
    'zero; not returned in reads (docs/api.md, "Your own vectors")'
)


def _field(annotation: Any, name: str, description: str, required: bool = False) -> tuple[Any, Any]:
    kind = annotation if required else annotation | None
    return kind, Field(... if required else None, alias=name, title=name, description=description)


def _fields(etype: EntityType, partial: bool) -> tuple[dict[str, tuple[Any, Any]], dict[str, str]]:
    """Field definitions of a type's body (its searchable text, its filterable metadata, the common fields),
    and the rule each field's bad value is told (the words of core/indexing/entity_validation.py)."""
    boosts = {f.name: f.boost for f in etype.fields}
    title_required = (
        not partial and not etype.chunked
    )  # core/indexing/entity_validation.py: a document may be untitled
    out: dict[str, tuple[Any, Any]] = {}
    rules: dict[str, str] = {}
    for name in sorted(etype.known_fields):
        if name in COMMON_FIELDS:
            annotation, text, rules[name] = COMMON_TYPES[name]
            rules[name] = rules[name] or LABEL_RULE
        elif name == etype.title_field and title_required:
            annotation, text, rules[name] = NonBlankText, f"The {etype.name}'s title (searchable)", TITLE_RULE
        elif name in boosts or name == etype.title_field:
            boost = boosts.get(name, 3)
            annotation, text, rules[name] = Text, f"Searchable text (boost {boost} of 3)", TEXT_RULE
        else:
            annotation, text, rules[name] = Scalar | list[Scalar], "Filterable metadata", SCALAR_RULE
        required = name == etype.title_field and title_required
        out[f"f_{len(out)}"] = _field(annotation, name, text, required)
    out["f_embedding"] = _field(VectorList, EMBEDDING, EMBEDDING_TEXT)
    rules[EMBEDDING] = "must be a list of numbers"
    return out, rules


def _content_fields(etype: EntityType) -> list[str]:
    """A chunked type (a document) needs text in one of these (core/indexing/entity_validation.py `_untitled_document`)."""
    return [etype.title_field, *(f.name for f in etype.fields if f.boost == 1), PREMADE_CHUNKS_FIELD]


def _has_content(etype: EntityType) -> Any:
    names = _content_fields(etype)

    def check(body: Any) -> Any:
        if isinstance(body, Mapping) and not any(_text_in(body.get(n)) for n in names):
            raise PydanticCustomError(
                "untitled",
                "is required for a {kind} without {others}",
                {"kind": etype.name, "field": etype.title_field, "others": " or ".join(names[1:])},
            )
        return body

    return model_validator(mode="before")(check)


def _text_in(value: Any) -> bool:
    if isinstance(value, str):
        return bool(value.strip())
    return isinstance(value, list) and any(_text_in(v) for v in value)


def _model(etype: EntityType, suffix: str, partial: bool, keyed: bool) -> type[BaseModel]:
    fields, _ = _fields(etype, partial)
    if keyed:
        fields["type"] = (Literal[etype.name], Field(title="type", description="The entity type"))
        fields["id"] = (
            Annotated[str, Field(pattern=ID_JSON_PATTERN)],
            Field(title="id", description="The entity id: " + ID_RULE.removeprefix("must be ")),
        )
    title = etype.name.title().replace("_", "") + suffix
    description = f"A {etype.name}: its fields, each known field typed; other fields are kept as given"
    schema_extra: dict[str, Any] = {"description": description}
    validators = {}
    if partial:
        schema_extra["minProperties"] = 1
    elif etype.chunked:
        text = TypeAdapter(NonBlankText).json_schema()
        schema_extra |= at_least_one(
            [{"required": [n], "properties": {n: text}} for n in _content_fields(etype)]
        )
        schema_extra["description"] += (
            f"; needs non-blank text in one of: {', '.join(_content_fields(etype))}"
        )
        validators["has_content"] = _has_content(etype)
    model: type[BaseModel] = create_model(  # type: ignore[call-overload]
        title,
        __config__=ConfigDict(**_CONFIG, title=title, json_schema_extra=schema_extra),
        __validators__=validators,
        **fields,
    )
    return model


@dataclass(frozen=True)
class EntityModels:
    """The registry's per-type models: `items` (bulk items, a union on `type`), `bodies` (PUT), `patches`."""

    registry: EntityTypeRegistry

    def _types(self) -> list[EntityType]:
        return [self.registry.get(name) for name in self.registry.names()]

    @cached_property
    def items(self) -> dict[str, type[BaseModel]]:
        return {t.name: _model(t, "Item", partial=False, keyed=True) for t in self._types()}

    @cached_property
    def bodies(self) -> dict[str, type[BaseModel]]:
        return {t.name: _model(t, "Fields", partial=False, keyed=False) for t in self._types()}

    @cached_property
    def patches(self) -> dict[str, type[BaseModel]]:
        return {t.name: _model(t, "Patch", partial=True, keyed=False) for t in self._types()}

    @cached_property
    def rules(self) -> dict[str, dict[str, str]]:
        return {t.name: _fields(t, partial=False)[1] for t in self._types()}

    @cached_property
    def item_adapter(self) -> TypeAdapter[Any]:
        union = tuple(self.items.values())
        return TypeAdapter(
            Annotated[union[0] if len(union) == 1 else _union(union), Field(discriminator="type")]
        )

    def check_items(self, items: Sequence[Any], where: str = "items") -> None:
        """InvalidInputError naming `<where>.<n>.<field>` for every item that breaks its type's schema."""
        fields: dict[str, str] = {}
        for position, item in enumerate(items):
            fields |= self.item_problems(item, f"{where}.{position}")
        if fields:
            raise InvalidInputError("request is invalid: " + ", ".join(sorted(fields)[:20]), fields)

    def item_problems(self, item: Any, where: str) -> dict[str, str]:
        """{`<where>.<field>`: rule} for a bulk item that breaks its type's schema; {} for one that fits."""
        if isinstance(item, Mapping) and lone_surrogates(dict(item)):
            return {}  # not text at all: reported per item by core/indexing/entity_validation.py, like invalid JSON text
        try:
            self.item_adapter.validate_python(item)
        except ValidationError as exc:
            kind = item.get("type") if isinstance(item, Mapping) else None
            rules = self.rules.get(kind, {}) if isinstance(kind, str) else {}
            return _problems(exc, where, rules, self.registry.names())
        return {}


def _union(members: tuple[type[BaseModel], ...]) -> Any:
    from typing import Union

    return Union[members]  # noqa: UP007 - a union built from a runtime tuple


def _problems(
    exc: ValidationError, prefix: str, rules: Mapping[str, str], names: Sequence[str]
) -> dict[str, str]:
    """{`<prefix>.<field>`: rule} for a bad item: one message per field (not one per union branch)."""
    out: dict[str, str] = {}
    for err in exc.errors():
        kind, loc = err.get("type", ""), [str(p) for p in err.get("loc", ())]
        if kind in ("union_tag_invalid", "union_tag_not_found"):
            field, message = (
                "type",
                ("must be one of: " + ", ".join(names)) if kind == "union_tag_invalid" else "is required",
            )
        elif kind == "untitled":
            field, message = str(err.get("ctx", {}).get("field", "title")), str(err["msg"])
        elif not loc[1:]:  # the item itself
            field, message = "", "must be an object"
        else:
            field = loc[1]  # loc[0] is the union branch (the item's type)
            message = (
                "is required"
                if kind == "missing"
                else rules.get(field, ID_RULE if field == "id" else "is invalid")
            )
        out.setdefault(f"{prefix}.{field}".rstrip("."), message)
    return out


_CACHE: dict[int, EntityModels] = {}


def entity_models(registry: EntityTypeRegistry) -> EntityModels:
    """The (cached) models of a registry."""
    found = _CACHE.get(id(registry))
    if found is None or found.registry is not registry:
        found = _CACHE[id(registry)] = EntityModels(registry)
    return found
