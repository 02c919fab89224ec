"""The stores an assembly fans out to, and how each maps onto index filters (docs/architecture.md, Context
assembly).

A source is a named slice of the tenant's index: which `source` values and entity types it covers and which
owners count. The defaults are the specification's five stores under its names
(docs/conformance.md#context-sources: psychic_cache, memory, agent_memory_own, agent_memory_peer, vault_index)
and one source per built-in entity type a user writes (tasks, ideas, projects, people, commitments);
`vault_index` covers the entities whose `source` is `vault` (documents by default). Deployments replace them
with a JSON object (QUARRY_CONTEXT_SOURCES) without code changes:

    {"memory": {"sources": ["memory"]},
     "agent_memory_own": {"sources": ["agent_memory"], "owner": "caller"},
     "tickets": {"sources": ["tasks"], "entity_types": ["task"], "label": "TICKET"}}
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.errors import InvalidInputError
from core.models import Candidate, Filters
from core.state import MAX_LEARNING_ROWS

# One learning update writes a weight and a history row per source next to MAX_LEARNING_ROWS log rows and
# the budget, inside DynamoDB's 100-item transaction (core.state): 100 - 64 - 1 = 35 → 17 sources.
MAX_SOURCES = (100 - MAX_LEARNING_ROWS - 1) // 2
EXPLICIT_LINK_SOURCE = "explicit_link"  # the source name explicit links report (never learned)
_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")


class OwnerRule(enum.Enum):
    """Which owners a source covers: anyone, only the calling agent, or everyone but the caller."""

    ANY = "any"
    CALLER = "caller"
    OTHERS = "others"


@dataclass(frozen=True, slots=True)
class SourceSpec:
    """One configured source: its name (what weights and feedback refer to) and its index slice."""

    name: str
    sources: tuple[str, ...]
    entity_types: tuple[str, ...] = ()
    owner: OwnerRule = OwnerRule.ANY
    label: str = ""

    @property
    def display(self) -> str:
        """The label shown in the context block, e.g. `MEMORY`."""
        return self.label or self.name.upper()

    def filters(self, caller: str, namespace: str | None) -> Filters:
        """The index filters of this source for one caller, optionally within one namespace."""
        return Filters(
            entity_types=self.entity_types,
            sources=self.sources,
            owner=caller if self.owner is OwnerRule.CALLER else None,
            exclude_owner=caller if self.owner is OwnerRule.OTHERS else None,
            namespaces=(namespace,) if namespace is not None else (),
        )

    def matches(self, candidate: Candidate, caller: str) -> bool:
        """True when a candidate retrieved from a wider slice belongs to this source."""
        if candidate.source not in self.sources:
            return False
        if self.entity_types and candidate.key.entity_type not in self.entity_types:
            return False
        if self.owner is OwnerRule.CALLER:
            return candidate.owner == caller
        return not (self.owner is OwnerRule.OTHERS and candidate.owner == caller)


def union_filters(specs: Sequence[SourceSpec]) -> Filters:
    """Filters covering every source's slice at once (owners are told apart afterwards by `matches`)."""
    types: tuple[str, ...] = ()
    if all(s.entity_types for s in specs):
        types = tuple(sorted({t for s in specs for t in s.entity_types}))
    return Filters(entity_types=types, sources=tuple(sorted({v for s in specs for v in s.sources})))


SEED_SOURCES: tuple[SourceSpec, ...] = (  # the five stores of docs/conformance.md#context-sources
    SourceSpec("memory", ("memory",)),
    SourceSpec("agent_memory_own", ("agent_memory",), owner=OwnerRule.CALLER),
    SourceSpec("agent_memory_peer", ("agent_memory",), owner=OwnerRule.OTHERS),
    SourceSpec("vault_index", ("vault",)),
    SourceSpec("psychic_cache", ("psychic_cache",)),
)
DEFAULT_SOURCES: tuple[SourceSpec, ...] = (
    *SEED_SOURCES,
    # The entity types a user writes, under their default `source` (core/indexing/entity_types.py), so an
    # assembly finds the tasks, ideas, projects, people and commitments that searches find; documents are
    # `vault_index`'s.
    SourceSpec("tasks", ("tasks",), ("task",), label="TASK"),
    SourceSpec("ideas", ("ideas",), ("idea",), label="IDEA"),
    SourceSpec("projects", ("projects",), ("project",), label="PROJECT"),
    SourceSpec("people", ("people",), ("person",), label="PERSON"),
    SourceSpec("commitments", ("commitments",), ("commitment",), label="COMMITMENT"),
)


def _strings(value: Any, path: str, errors: dict[str, str]) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        errors[path] = "must be a list of non-empty strings"
        return ()
    return tuple(value)


def _spec(name: str, raw: Any, errors: dict[str, str]) -> SourceSpec | None:
    path = f"QUARRY_CONTEXT_SOURCES.{name}"
    if not _NAME.match(name) or name == EXPLICIT_LINK_SOURCE:
        errors[path] = "source names are lower-case snake_case (and not 'explicit_link')"
        return None
    if not isinstance(raw, Mapping):
        errors[path] = "must be an object {sources, entity_types?, owner?, label?}"
        return None
    unknown = set(raw) - {"sources", "entity_types", "owner", "label"}
    if unknown:
        errors[path] = "unknown keys: " + ", ".join(sorted(unknown))
    sources = _strings(raw.get("sources", [name]), f"{path}.sources", errors)
    types = _strings(raw.get("entity_types"), f"{path}.entity_types", errors)
    owner = raw.get("owner", "any")
    if owner not in {r.value for r in OwnerRule}:
        errors[f"{path}.owner"] = "must be one of any, caller, others"
        owner = "any"
    label = raw.get("label", "")
    if not isinstance(label, str):
        errors[f"{path}.label"] = "must be a string"
        label = ""
    return SourceSpec(name, sources, types, OwnerRule(owner), label)


def parse_sources(config: Mapping[str, Any] | None) -> tuple[SourceSpec, ...]:
    """Source specs from configuration (None → the defaults); errors name the offending key."""
    if config is None:
        return DEFAULT_SOURCES
    errors: dict[str, str] = {}
    if not config:
        errors["QUARRY_CONTEXT_SOURCES"] = "must configure at least one source"
    if len(config) > MAX_SOURCES:
        errors["QUARRY_CONTEXT_SOURCES"] = f"at most {MAX_SOURCES} sources"
    specs = [_spec(str(name), raw, errors) for name, raw in config.items()]
    if errors:
        raise InvalidInputError("invalid configuration: QUARRY_CONTEXT_SOURCES", errors)
    return tuple(s for s in specs if s is not None)


def select_sources(configured: Sequence[SourceSpec], requested: Sequence[str] | None) -> list[SourceSpec]:
    """The configured sources a request asked for (all when it named none); 400 for an unknown name."""
    if not requested:
        return list(configured)
    by_name = {s.name: s for s in configured}
    errors = {
        f"sources.{i}": "unknown source; configured: " + ", ".join(by_name)
        for i, name in enumerate(requested)
        if name not in by_name
    }
    if errors:
        raise InvalidInputError("unknown source", errors)
    return [by_name[name] for name in dict.fromkeys(requested)]
