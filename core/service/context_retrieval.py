"""The gathering half of an assembly: explicit links, the parallel fan-out to the sources (and the
knowledge graph), each failure turned into a warning rather than a failed request where that is safe."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar

from core.context.graph import MAX_TRIPLES_PER_ENTITY, extract_entities, graph_lines
from core.context.links import Link
from core.context.packing import EXPLICIT_LINK_BUDGET_SHARE
from core.context.scoring import ContextItem, score_source
from core.context.sources import EXPLICIT_LINK_SOURCE, SourceSpec
from core.entities import EntityTypeRegistry
from core.errors import InvalidInputError, UnavailableError
from core.models import Filters, LexicalQuery, Retrieval, Vector
from core.ports import LinkReader, SearchIndex, TripleStore
from core.scoring import CHARS_PER_TOKEN
from core.text import flatten

T = TypeVar("T")
MapFn = Callable[[Callable[[Any], Any], Iterable[Any]], Iterable[Any]]
CROSS_NAMESPACE_DEPTH_FACTOR = 2  # the expansion query also sees the requested namespace's hits, dropped
# How many characters of a linked file are read: its 30% allowance at 4 chars/token, twice over so a
# real tokenizer that packs more characters per token still gets enough text to fill the allowance.
LINK_READ_MARGIN = 2


@dataclass(frozen=True, slots=True)
class SourceTask:
    """One retrieval: a source within the requested namespace, or its cross-namespace expansion."""

    spec: SourceSpec
    filters: Filters
    weight: float
    cross: bool = False


@dataclass(slots=True)
class Gathered:
    """Everything retrieval produced for one assembly."""

    items: list[ContextItem] = field(default_factory=list)
    graph: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    failed_sources: int = 0


def plan_tasks(
    specs: Sequence[SourceSpec],
    weights: Mapping[str, float],
    caller: str,
    namespace: str | None,
    expand: bool,
) -> list[SourceTask]:
    """A task per source (muted sources, weight ≤ 0, are skipped) plus its expansion when a namespace is set."""
    tasks = []
    for spec in specs:
        weight = weights[spec.name]
        if weight <= 0:
            continue
        tasks.append(SourceTask(spec, spec.filters(caller, namespace), weight))
        if namespace is not None and expand:
            tasks.append(SourceTask(spec, spec.filters(caller, None), weight, cross=True))
    return tasks


def entity_text(registry: EntityTypeRegistry, entity_type: str, body: Mapping[str, Any]) -> tuple[str, str]:
    """(title, text) of a stored entity: its searchable fields in boost order."""
    etype = registry.get(entity_type)
    parts = [flatten(body.get(f.name)).strip() for f in etype.fields]
    return flatten(body.get(etype.title_field)).strip(), "\n".join(p for p in parts if p)


def _refuse_file_links(links: Sequence[Link]) -> None:
    refused = {
        f"explicit_links.{i}": "file links are disabled: set QUARRY_LINKS_ROOT"
        for i, link in enumerate(links)
        if link.path is not None
    }
    if refused:
        raise InvalidInputError("file links are disabled on this deployment", refused)


def _read(reader: LinkReader, position: int, path: str, max_chars: int) -> str | None:
    """The reader's text, its refusal re-raised naming the link's position in the request."""
    try:
        return reader.read(path, max_chars)
    except InvalidInputError as exc:
        reason = next(iter(exc.fields.values()), exc.message)
        raise InvalidInputError(exc.message, {f"explicit_links.{position}": reason}) from exc


def load_links(
    tenant_id: str,
    links: Sequence[Link],
    budget: int,
    index: SearchIndex,
    registry: EntityTypeRegistry,
    reader: LinkReader | None,
) -> tuple[list[ContextItem], list[str]]:
    """The linked entities and files as items (score 1.0), in request order; missing ones are warnings."""
    if reader is None:
        _refuse_file_links(links)
    keys = [link.entity for link in links if link.entity is not None]
    stored = index.get(tenant_id, keys) if keys else {}
    max_chars = math.ceil(budget * EXPLICIT_LINK_BUDGET_SHARE) * CHARS_PER_TOKEN * LINK_READ_MARGIN
    items, warnings = [], []
    for i, link in enumerate(links):
        item: ContextItem | None = None
        if link.entity is not None:
            entity = stored.get(link.entity)
            if entity is not None and not entity.deleted:
                title, text = entity_text(registry, link.entity.entity_type, entity.body)
                item = ContextItem(
                    str(link.entity), EXPLICIT_LINK_SOURCE, title, text, 1.0, 1.0, entity.created_at
                )
        elif reader is not None and link.path is not None:
            content = _read(reader, i, link.path, max_chars)
            if content is not None:
                item = ContextItem(link.raw, EXPLICIT_LINK_SOURCE, link.raw, content, 1.0, 1.0)
        if item is None:
            warnings.append(f"explicit link '{link.raw}' not found")
        else:
            items.append(item)
    return items, warnings


def _call(job: Callable[[], T]) -> T:
    return job()


class Fanout:
    """Runs one assembly's retrievals through an injected map (a thread pool in production)."""

    def __init__(self, index: SearchIndex, map_fn: MapFn, triples: TripleStore | None) -> None:
        self._index = index
        self._map = map_fn
        self._triples = triples

    def gather(
        self,
        tenant_id: str,
        tasks: Sequence[SourceTask],
        lexical: LexicalQuery | None,
        embedding: Vector | None,
        depth: int,
        scoring: Mapping[str, Any],
        graph_query: str | None,
    ) -> Gathered:
        """Retrieve and score every task (and the graph facts when `graph_query` is given) in parallel."""
        namespace = next((t.filters.namespaces[0] for t in tasks if t.filters.namespaces), None)

        def one(task: SourceTask) -> list[ContextItem] | UnavailableError:
            k = depth * (CROSS_NAMESPACE_DEPTH_FACTOR if task.cross else 1)
            try:
                got = self._index.retrieve(tenant_id, lexical, embedding, task.filters, k)
            except UnavailableError as exc:
                return exc
            if task.cross:
                got = Retrieval(
                    tuple(c for c in got.lexical if c.namespace != namespace),
                    tuple(c for c in got.vector if c.namespace != namespace),
                )
            return score_source(task.spec.name, got, task.weight, cross_namespace=task.cross, **scoring)

        def graph() -> list[str] | UnavailableError:
            entities = extract_entities(graph_query or "")
            if not entities or self._triples is None:
                return []
            try:
                found = self._triples.triples(tenant_id, entities, MAX_TRIPLES_PER_ENTITY)
            except UnavailableError as exc:
                return exc
            return graph_lines(found, scoring["now"])

        jobs: list[Callable[[], Any]] = [partial(one, t) for t in tasks]
        if graph_query is not None:
            jobs.append(graph)
        results = list(self._map(_call, jobs))
        return self._collect(tasks, results, graph_query is not None)

    @staticmethod
    def _collect(tasks: Sequence[SourceTask], results: list[Any], with_graph: bool) -> Gathered:
        out = Gathered()
        if with_graph:
            facts = results.pop()
            if isinstance(facts, UnavailableError):
                out.warnings.append(f"knowledge-graph enrichment skipped: {facts.message}")
            else:
                out.graph = facts
        for task, result in zip(tasks, results, strict=True):
            if isinstance(result, UnavailableError):
                out.failed_sources += 1
                scope = "cross-namespace expansion of " if task.cross else ""
                out.warnings.append(f"{scope}source '{task.spec.name}' skipped: {result.message}")
            else:
                out.items.extend(result)
        return out
