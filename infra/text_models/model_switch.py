"""`quarry reindex`: switch stored vectors to another embedding model with searches answering throughout
(docs/architecture.md, A tenant's data lifecycle). One entry point for both backends, which the CLI calls:

- embedded (SQLite): the whole data file, or one tenant (`tenant`), shadowed, swapped in one transaction
  and settled (infra/local/reindex.py); other tenants keep their model.
- OpenSearch: a new index generation behind the alias, copied, caught up, swapped in one `_aliases` call,
  settled, the old one deleted (infra/opensearch/reindex.py). Every tenant shares the index, so the run is
  of the whole index: `tenant` is refused.

After the swap, each affected tenant's cache generation moves on, so no cached search of the old model
is served.

Tenants bringing their own vectors (QUARRY_BYO_VECTOR_TENANTS) are never re-embedded: no model can
recompute a caller's vector. `--tenant` naming one is refused; on the embedded backend a whole-file run is
refused while one of them has entities in the file (reindex the others one by one with `--tenant`); on
OpenSearch their own indexes are left alone and reported (`skipped_caller_vector_tenants`). Entities of
other tenants written with their own `embedding` are in the deployment model's space (their dimension was
checked against it): a reindex moves the tenant to the new model, so they are re-embedded from their text
like every other entity (docs/api.md, "Your own vectors").
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.errors import InvalidInputError
from core.search.cache_key import generation_key
from infra.opensearch.reindex import DEFAULT_SETTLE_SECONDS, MAX_CATCH_UP_PASSES, OpenSearchReindexer

if TYPE_CHECKING:
    from infra.wiring.root import Container


def reindex_store(
    c: Container,
    model_dir: str | Path,
    tenant: str | None = None,
    settle_seconds: float = DEFAULT_SETTLE_SECONDS,
) -> dict[str, Any]:
    """Re-embed the configured index (or one tenant of the embedded one) with the model in `model_dir`;
    what was done, as JSON-ready fields."""
    folder = Path(model_dir).resolve()
    if not folder.is_dir():
        raise InvalidInputError(f"no model folder at {folder}", {"--model-dir": "must be a directory"})
    if tenant is not None and tenant in c.settings.byo_vector_tenants:
        raise InvalidInputError(
            f"tenant {tenant!r} brings its own vectors (QUARRY_BYO_VECTOR_TENANTS): no model can recompute them",
            {"--tenant": "must name a tenant whose vectors a model makes"},
        )
    if c.settings.index_kind == "opensearch":
        if tenant is not None:
            raise InvalidInputError(
                "on OpenSearch every tenant shares one index: reindex it whole (leave out --tenant)",
                {"--tenant": "only on the embedded (SQLite) index"},
            )
        return _reindex_opensearch(c, folder, settle_seconds)
    return dataclasses.asdict(_reindex_sqlite(c, folder, tenant, settle_seconds))


def _invalidator(c: Container) -> Callable[[list[str]], None]:
    def invalidate(tenants: list[str]) -> None:
        for t in tenants:
            c.cache.incr(generation_key(t))  # cached searches and page cursors of the old model

    return invalidate


def _reindex_sqlite(c: Container, folder: Path, tenant: str | None, settle_seconds: float) -> Any:
    from infra.local.reindex import SqliteReindexer, reindex

    if tenant is None:
        _refuse_caller_vector_tenants(c)
    reindexer = SqliteReindexer(c.settings.sqlite_path, c.registry, tenant=tenant)
    try:
        if not reindexer.has_tenant():
            raise InvalidInputError(
                f"tenant {tenant!r} has nothing indexed in {c.settings.sqlite_path}",
                {"--tenant": "must name a tenant with indexed entities"},
            )
        invalidate = _invalidator(c)
        embedder = c.load_embedder(folder)
        report = reindex(
            reindexer, embedder, str(folder), settle_seconds, on_swap=lambda: invalidate(reindexer.tenants())
        )
        invalidate(reindexer.tenants())  # again: searches cached between the swap and the settle pass
        return report
    finally:
        reindexer.close()


def _refuse_caller_vector_tenants(c: Container) -> None:
    """A whole-file run would re-embed every tenant's chunks: refused while a tenant bringing its own
    vectors has entities in the file."""
    from infra.local.reindex import SqliteReindexer

    present = []
    for tenant in sorted(c.settings.byo_vector_tenants):
        probe = SqliteReindexer(c.settings.sqlite_path, c.registry, tenant=tenant)
        try:
            if probe.has_tenant():
                present.append(tenant)
        finally:
            probe.close()
    if present:
        raise InvalidInputError(
            f"tenants {', '.join(present)} bring their own vectors (QUARRY_BYO_VECTOR_TENANTS), which no "
            "model can recompute: reindex the other tenants one by one with --tenant",
            {"--tenant": "is required while the data file holds tenants that bring their own vectors"},
        )


def _reindex_opensearch(c: Container, folder: Path, settle_seconds: float) -> dict[str, Any]:
    """The shared alias, then each tenant's own index (infra/opensearch/tenancy.py) in turn."""
    from infra.opensearch import layout
    from infra.opensearch.tenancy import own_layout

    index: Any = c.index
    aliases = index.aliases() if hasattr(index, "aliases") else [index.alias]
    shared = layout(c.settings)
    invalidate = _invalidator(c)
    reports = []
    for alias in aliases:
        reindexer = OpenSearchReindexer(
            index.client,
            alias,
            c.registry,
            c.load_embedder(folder),
            str(folder),
            layout=shared if alias == index.alias else own_layout(shared),
        )
        report = reindex_opensearch(reindexer, settle_seconds, on_swap=invalidate)
        invalidate(report.tenants)
        reports.append(dataclasses.asdict(report))
    index.recheck_model()
    out = {**reports[0], "own_indexes": reports[1:]} if len(reports) > 1 else reports[0]
    skipped = index.caller_vector_tenants() if hasattr(index, "caller_vector_tenants") else []
    return {**out, "skipped_caller_vector_tenants": skipped} if skipped else out


@dataclass(slots=True)
class OpenSearchReindexReport:
    """What a reindex did (JSON-printed by the CLI)."""

    model_dir: str
    model_id: str
    dimension: int
    old_index: str
    new_index: str
    documents: int = 0
    chunks: int = 0
    catch_up_passes: int = 0
    caught_up: int = 0
    settled: int = 0
    tenants: list[str] = field(default_factory=list)
    took_s: float = 0.0


def reindex_opensearch(
    reindexer: OpenSearchReindexer,
    settle_seconds: float = DEFAULT_SETTLE_SECONDS,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
    on_swap: Callable[[list[str]], None] | None = None,
) -> OpenSearchReindexReport:
    """Create, copy, catch up, swap, settle, drop the old generation; `on_swap(tenants)` runs after the swap."""
    started = clock()
    reindexer.create()
    documents, chunks = reindexer.copy()
    passes = caught = 0
    for passes in range(1, MAX_CATCH_UP_PASSES + 1):  # noqa: B007 - the count is reported
        found, changed = reindexer.catch_up()
        caught += found
        if not changed:
            break
    reindexer.swap()
    if on_swap is not None:
        on_swap(reindexer.tenants())
    sleep(settle_seconds)
    settled = reindexer.settle()
    reindexer.drop_old()
    return OpenSearchReindexReport(
        model_dir=reindexer.model_dir,
        model_id=reindexer.embedder.model_id,
        dimension=reindexer.embedder.dimension,
        old_index=reindexer.old,
        new_index=reindexer.new,
        documents=documents,
        chunks=chunks,
        catch_up_passes=passes,
        caught_up=caught,
        settled=settled,
        tenants=reindexer.tenants(),
        took_s=round(clock() - started, 3),
    )
