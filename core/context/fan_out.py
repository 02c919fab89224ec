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
from core.context.sources import EXPLICIT_LINK_SOURCE, SourceSpec, union_filters
from core.errors import InvalidInputError, UnavailableError
from core.indexing.entity_types import EntityTypeRegistry
from core.memory.supersession import current_only
from core.models import CandidateLists, CandidateQuery, Filters, LexicalQuery, Vector
from core.ports import LinkReader, SearchIndex, TripleStore
from core.text import flatten
from core.tokens import CHARS_PER_TOKEN

T = TypeVar("T")
MapFn = Callable[[Callable[[Any], Any], Iterable[Any]], Iterable[Any]]
# How many characters of a linked file are read: its 30% allowance at 4 chars/token, twice over so a
# real tokenizer that packs more characters per token still gets enough text to fill the allowance.
LINK_READ_MARGIN = 2


@dataclass(frozen=True, slots=True)
class SourceTask:
    """One source's retrieval within the requested namespace (or everywhere when none is given)."""

    spec: SourceSpec
    filters: Filters
    weight: float


@dataclass(frozen=True, slots=True)
class FanOutPlan:
    """The retrievals of one assembly: one per source, plus one cross-namespace expansion over the union
    of their slices (split back per source in memory: one namespace-free query instead of one per source,
    which measured ~4× cheaper on the local index at 10,000 items)."""

    tasks: tuple[SourceTask, ...]
    caller: str
    namespace: str | None
    expansion: Filters | None


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
    history: bool = False,
) -> FanOutPlan:
    """A task per source (muted sources, weight ≤ 0, are skipped) and the expansion when a namespace is set;
    superseded memories are left out inside retrieval unless `history` (core/memory/supersession.py)."""
    tasks = tuple(
        SourceTask(spec, current_only(spec.filters(caller, namespace), history), weights[spec.name])
        for spec in specs
        if weights[spec.name] > 0
    )
    expansion = (
        current_only(union_filters([t.spec for t in tasks]), history)
        if tasks and namespace is not None and expand
        else None
    )
    return FanOutPlan(tasks, caller, namespace, expansion)


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
                    str(link.entity),
                    EXPLICIT_LINK_SOURCE,
                    title,
                    text[:max_chars],
                    1.0,
                    1.0,
                    entity.created_at,
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

    def _retrieve_all(
        self, tenant_id: str, specs: list[CandidateQuery]
    ) -> list[CandidateLists] | UnavailableError:
        """Every source's retrieval (and the expansion's) in one index round trip."""
        try:
            return self._index.retrieve_many(tenant_id, specs)
        except UnavailableError as exc:
            return exc

    @staticmethod
    def _expanded(plan: FanOutPlan, got: CandidateLists, scoring: Mapping[str, Any]) -> list[ContextItem]:
        """Other namespaces' hits, split per source and scored at the cross-namespace discount."""
        items: list[ContextItem] = []
        for task in plan.tasks:
            mine = CandidateLists(
                tuple(
                    c
                    for c in got.lexical
                    if c.namespace != plan.namespace and task.spec.matches(c, plan.caller)
                ),
                tuple(
                    c
                    for c in got.vector
                    if c.namespace != plan.namespace and task.spec.matches(c, plan.caller)
                ),
            )
            items += score_source(task.spec.name, mine, task.weight, cross_namespace=True, **scoring)
        return items

    def _graph(self, tenant_id: str, query: str, now: float) -> list[str] | UnavailableError:
        """`[GRAPH]` lines about the entities the query names."""
        entities = extract_entities(query)
        if not entities or self._triples is None:
            return []
        try:
            found = self._triples.triples(tenant_id, entities, MAX_TRIPLES_PER_ENTITY)
        except UnavailableError as exc:
            return exc
        return graph_lines(found, now)

    def gather(
        self,
        tenant_id: str,
        plan: FanOutPlan,
        query: tuple[LexicalQuery | None, Vector | None],
        depth: int,
        scoring: Mapping[str, Any],
        graph_query: str | None,
    ) -> Gathered:
        """Retrieve every source and the expansion in ONE index call (`retrieve_many`: one `_msearch` on
        OpenSearch), the graph facts alongside it, then score each source."""
        specs = [CandidateQuery(query[0], query[1], t.filters, depth) for t in plan.tasks]
        if plan.expansion is not None:
            specs.append(CandidateQuery(query[0], query[1], plan.expansion, depth * len(plan.tasks)))
        jobs: list[Callable[[], Any]] = [partial(self._retrieve_all, tenant_id, specs)] if specs else []
        if graph_query is not None:
            jobs.append(partial(self._graph, tenant_id, graph_query, scoring["now"]))
        results = list(self._map(_call, jobs))
        out = Gathered()
        if graph_query is not None:
            facts = results.pop()
            if isinstance(facts, UnavailableError):
                out.warnings.append(f"knowledge-graph enrichment skipped: {facts.message}")
            else:
                out.graph = facts
        got = results[0] if specs else []
        if plan.expansion is not None:
            expanded = got if isinstance(got, UnavailableError) else self._expanded(plan, got[-1], scoring)
            _take(out, expanded, "cross-namespace expansion")
        for n, task in enumerate(plan.tasks):
            scored = (
                got
                if isinstance(got, UnavailableError)
                else score_source(task.spec.name, got[n], task.weight, **scoring)
            )
            out.failed_sources += not _take(out, scored, f"source '{task.spec.name}'")
        return out


def _take(out: Gathered, result: Any, what: str) -> bool:
    """Collect a job's result, or its failure as a warning; True when it succeeded."""
    if isinstance(result, UnavailableError):
        out.warnings.append(f"{what} skipped: {result.message}")
        return False
    out.items.extend(result)
    return True
