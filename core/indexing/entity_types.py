"""Entity types: which fields are searchable (with their boost) and which are filterable.

Built-in types and boosts follow docs/architecture.md, Write path (docs/conformance.md#entity-types).
More types come from a configuration file (JSON) without code changes; `EntityTypeRegistry.with_config` merges
them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from core.errors import InvalidInputError

# Lexical boosts map onto three tiers (3 = title-like, 2 = strong, 1 = body), so every backend can index
# a fixed set of weighted text fields: tantivy field boosts (or FTS5 column weights) locally, `field^boost` in OpenSearch.
BOOST_TIERS = (3, 2, 1)
ENTITY_TYPE_NAME_PATTERN = r"^[a-z][a-z0-9_]{0,39}$"
# The tiers a type's `catch_all` may name (docs/configuration.md, Entity types), as words or as boosts.
CATCH_ALL_TIERS = {"title": 3, "strong": 2, "body": 1}

# A bulk item's type and id, texts given as chunks (core/indexing/chunking.py PREMADE_CHUNKS_FIELD), and the
# caller's own vector (core/indexing/caller_vectors.py; never stored in the body).
WRITE_FIELDS = frozenset({"type", "id", "chunks", "embedding"})
# Fields every entity may carry besides its type's own (docs/architecture.md, Write path).
COMMON_FIELDS = frozenset({"source", "owner", "namespace", "created_at", "updated_at", "version"})


@dataclass(frozen=True, slots=True)
class SearchField:
    """One searchable field and its lexical boost tier (1..3)."""

    name: str
    boost: int


@dataclass(frozen=True, slots=True)
class EntityType:
    """How an entity type is indexed: title field, searchable fields by boost, filterable metadata."""

    name: str
    title_field: str
    fields: tuple[SearchField, ...]
    filterable: tuple[str, ...]
    default_source: str
    chunked: bool = False
    catch_all: int | None = None  # the boost tier of undeclared text fields; None: they are not indexed

    @property
    def searchable_names(self) -> frozenset[str]:
        """Names of the fields whose change requires a new search text and embedding."""
        return frozenset(f.name for f in self.fields)

    @property
    def known_fields(self) -> frozenset[str]:
        """Every field this type understands."""
        return self.searchable_names | frozenset(self.filterable) | {self.title_field} | COMMON_FIELDS

    def undeclared(self, body: Mapping[str, Any]) -> tuple[str, ...]:
        """The body's fields this type does not declare (sorted)."""
        ignored = self.known_fields | WRITE_FIELDS
        return tuple(sorted(name for name in body if name not in ignored))

    def caught(self, body: Mapping[str, Any]) -> tuple[str, ...]:
        """The undeclared text fields (a string or a list of strings) its catch-all tier indexes."""
        if self.catch_all is None:
            return ()
        return tuple(name for name in self.undeclared(body) if _is_text(body[name]))

    def unindexed(self, body: Mapping[str, Any]) -> tuple[str, ...]:
        """The body's fields this type neither searches nor filters on: stored and returned, never found
        (a write reports them: `unindexed_fields`)."""
        caught = set(self.caught(body))
        return tuple(name for name in self.undeclared(body) if name not in caught)


def _is_text(value: Any) -> bool:
    if isinstance(value, list):
        return bool(value) and all(isinstance(v, str) for v in value)
    return isinstance(value, str)


def _type(
    name: str,
    title: str,
    fields: Iterable[tuple[str, int]],
    filterable: Iterable[str],
    source: str,
    chunked: bool = False,
) -> EntityType:
    return EntityType(
        name=name,
        title_field=title,
        fields=tuple(SearchField(n, b) for n, b in fields),
        filterable=tuple(filterable),
        default_source=source,
        chunked=chunked,
    )


BUILTIN_TYPES: dict[str, EntityType] = {
    t.name: t
    for t in (
        _type(
            "task",
            "title",
            [("title", 3), ("description", 2), ("tags", 1), ("contexts", 1), ("project_name", 1)],
            ["status", "domain", "project_id", "due_date"],
            "tasks",
        ),
        _type(
            "idea",
            "title",
            [("title", 3), ("description", 2), ("tags", 1), ("category", 1)],
            ["status", "domain", "category"],
            "ideas",
        ),
        _type(
            "project",
            "name",
            [("name", 3), ("description", 2), ("objective", 2), ("tags", 1)],
            ["status", "domain"],
            "projects",
        ),
        _type(
            "person",
            "name",
            [("name", 3), ("organization", 2), ("role", 1), ("notes", 1), ("relationship", 1)],
            ["domain"],
            "people",
        ),
        _type(
            "commitment",
            "description",
            [("description", 3), ("person_name", 2), ("context_type", 1)],
            ["status", "due_date"],
            "commitments",
        ),
        _type(
            "memory",
            "content",
            [("content", 3), ("category", 2), ("tags", 1)],
            [
                "memory_type",
                "source_repo",
                "trust_level",
                "pinned",
                "relevance_score",
                "supersedes",
                "superseded_by",
                "tags",  # searched (boost 1) and filtered on: docs/conformance.md#memory-tags
            ],
            "memory",
        ),
        _type(
            "document",
            "title",
            [("title", 2), ("text", 1)],
            ["source", "trust", "topic"],
            "vault",
            chunked=True,
        ),
    )
}

# Plural and alias prefixes a user may type before a colon (`tasks: fix bug`, `people: ann`).
_ALIASES = {"people": "person", "persons": "person"}
_FILTERABLE_MEMO = 256  # lists of types whose filterable fields a registry keeps (searches name few)


def _plural(name: str) -> str:
    """The English plural of a type name: `memory` → `memories`, `task` → `tasks`."""
    if name.endswith("y") and name[-2:-1] not in ("a", "e", "i", "o", "u"):
        return name[:-1] + "ies"
    return name + "s"


def _field_error(path: str, message: str) -> InvalidInputError:
    return InvalidInputError(f"invalid entity type configuration: {path} {message}", {path: message})


def _catch_all(name: str, value: Any) -> int | None:
    """The boost tier a `catch_all` setting names (a tier word or a boost), None when absent."""
    if value is None:
        return None
    tier = CATCH_ALL_TIERS.get(value) if isinstance(value, str) else value
    if not isinstance(tier, int) or isinstance(tier, bool) or tier not in BOOST_TIERS:
        words = ", ".join(sorted(CATCH_ALL_TIERS))
        raise _field_error(f"types.{name}.catch_all", f"must be one of: {words} (or 1, 2, 3)")
    return tier


def _parse_type(name: str, spec: Mapping[str, Any]) -> EntityType:
    """Build one EntityType from its configuration mapping, naming the bad path on error. A built-in type
    named without `fields` keeps its own and takes the rest (`catch_all`, `filterable`…) from `spec`."""
    import re

    if not re.match(ENTITY_TYPE_NAME_PATTERN, name):
        raise _field_error(f"types.{name}", "name must match " + ENTITY_TYPE_NAME_PATTERN)
    builtin = BUILTIN_TYPES.get(name)
    if builtin is not None and "fields" not in spec:
        return _amend(builtin, spec)
    fields = spec.get("fields")
    if not isinstance(fields, Mapping) or not fields:
        raise _field_error(f"types.{name}.fields", "must be a non-empty object of field: boost")
    parsed: list[SearchField] = []
    for field, boost in fields.items():
        if not isinstance(boost, int) or isinstance(boost, bool) or boost not in BOOST_TIERS:
            raise _field_error(f"types.{name}.fields.{field}", "boost must be 1, 2 or 3")
        parsed.append(SearchField(str(field), boost))
    parsed.sort(key=lambda f: -f.boost)
    title = spec.get("title_field", parsed[0].name)
    filterable = spec.get("filterable", [])
    if not isinstance(filterable, list) or not all(isinstance(x, str) for x in filterable):
        raise _field_error(f"types.{name}.filterable", "must be a list of field names")
    return EntityType(
        name=name,
        title_field=str(title),
        fields=tuple(parsed),
        filterable=tuple(filterable),
        default_source=str(spec.get("source", name)),
        chunked=bool(spec.get("chunked", False)),
        catch_all=_catch_all(name, spec.get("catch_all")),
    )


def _amend(builtin: EntityType, spec: Mapping[str, Any]) -> EntityType:
    """A built-in type with the settings `spec` gives (all but its searchable fields)."""
    filterable = spec.get("filterable", list(builtin.filterable))
    if not isinstance(filterable, list) or not all(isinstance(x, str) for x in filterable):
        raise _field_error(f"types.{builtin.name}.filterable", "must be a list of field names")
    return replace(
        builtin,
        filterable=tuple(filterable),
        default_source=str(spec.get("source", builtin.default_source)),
        catch_all=_catch_all(builtin.name, spec.get("catch_all")),
    )


class EntityTypeRegistry:
    """The entity types a deployment knows: the built-ins plus any declared in configuration."""

    def __init__(self, types: Mapping[str, EntityType] | None = None) -> None:
        self._types = dict(BUILTIN_TYPES if types is None else types)
        self._filterable: dict[tuple[str, ...], frozenset[str]] = {}  # by the names asked for (fixed types)

    @classmethod
    def with_config(cls, config: Mapping[str, Any]) -> EntityTypeRegistry:
        """Built-ins plus `{"types": {name: {fields: {f: boost}, title_field?, filterable?, source?, chunked?,
        catch_all?}}}` (a built-in named without `fields` is amended, not replaced)."""
        declared = config.get("types", {})
        if not isinstance(declared, Mapping):
            raise _field_error("types", "must be an object")
        types = dict(BUILTIN_TYPES)
        for name, spec in declared.items():
            if not isinstance(spec, Mapping):
                raise _field_error(f"types.{name}", "must be an object")
            types[str(name)] = _parse_type(str(name), spec)
        return cls(types)

    def names(self) -> tuple[str, ...]:
        """All type names, sorted."""
        return tuple(sorted(self._types))

    def get(self, name: str, path: str = "type") -> EntityType:
        """The type called `name`, or an InvalidInputError naming `path` and the known types."""
        found = self._types.get(name)
        if found is None:
            known = ", ".join(self.names())
            raise InvalidInputError(f"unknown entity type '{name}'", {path: f"must be one of: {known}"})
        return found

    def unindexed(self, name: str, body: Mapping[str, Any]) -> tuple[str, ...]:
        """The fields of `body` the type called `name` neither searches nor filters on (EntityType.unindexed),
        asked in one call."""
        return self.get(name).unindexed(body)

    def filterable(self, names: Sequence[str]) -> frozenset[str]:
        """The fields a search of the types `names` may filter on: each one's `filterable` together (an
        unknown name: InvalidInputError, as `get`). Worked out once per list of names."""
        key = tuple(names)
        found = self._filterable.get(key)
        if found is None:
            found = frozenset(f for name in key for f in self.get(name).filterable)
            if len(self._filterable) < _FILTERABLE_MEMO:
                self._filterable[key] = found
        return found

    def spellings(self) -> tuple[str, ...]:
        """Every name `resolve` takes: each type's name and its plural (`task`, `tasks`; `memory`,
        `memories`; `person`, `people`)."""
        plurals = {_plural(n) for n in self._types} | {a for a, n in _ALIASES.items() if n in self._types}
        return tuple(sorted(set(self._types) | plurals))

    def resolve(self, name: str, path: str = "type") -> str:
        """The type a request names by its name or its plural (`task`, `tasks`, `memories`, `people`;
        docs/api.md#routes); an InvalidInputError naming `path` and the known types otherwise."""
        if name in self._types:
            return name
        singular = self._singulars().get(name, name)
        return self.get(singular, path).name

    def _singulars(self) -> dict[str, str]:
        return {_plural(n): n for n in self._types} | {a: n for a, n in _ALIASES.items() if n in self._types}

    def resolve_prefix(self, prefix: str) -> str | None:
        """The type a query prefix names (`task`, `tasks`, `memories`, `people`), or None."""
        word = prefix.lower()
        return word if word in self._types else self._singulars().get(word)

    def __contains__(self, name: object) -> bool:
        return name in self._types
