"""How the composition root (infra/wiring/root.py) builds each use case from its parts: one function per
service, taking the container. Services and their settings are imported where they are built, so a
handler's cold start pays only for the services its first request uses (tests/infra/test_cold_start.py,
bench/cold_start.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from core.context.context_service import ContextService, ContextSettings
    from core.context.learning_service import LearningService
    from core.governance.golden_sets import OverlayEvaluation
    from core.governance.governed_retrieval import GovernedRetrievalService
    from core.indexing.catalog_service import CatalogService
    from core.indexing.entity_writes import EntityWrites
    from core.indexing.indexing_service import IndexingService
    from core.indexing.write_job_service import JobService
    from core.memory.integrity import Integrity
    from core.memory.reinforcement import Reinforcement
    from core.search.embedding import EmbeddingService
    from core.search.planning import SearchSettings
    from core.search.query_batch import QueryBatch
    from core.search.search_service import SearchService
    from core.search.tuning_service import FusionTuningService
    from core.tenancy.fencing import TenantGate
    from core.tenancy.lifecycle import LifecycleService
    from infra.wiring.root import Container


def search_settings(c: Container) -> SearchSettings:
    """The deployment's search behaviour (also what `quarry eval` reports as the default)."""
    from core.search.fusion import FusionMethod
    from core.search.planning import SearchSettings, default_alpha

    s = c.settings
    return SearchSettings(
        fusion=FusionMethod(s.fusion),
        alpha=(default_alpha(s.feedback_docs) if s.alpha is None else s.alpha)
        if s.fusion == "convex"
        else 0.5,
        rrf_k=s.rrf_k,
        feedback_docs=s.feedback_docs,
        feedback_weight=s.feedback_weight,
        feedback_mode=s.feedback_ranking,
        feedback_pool=s.feedback_pool,
        max_query_chars=s.max_query_chars,
        max_limit=s.max_limit,
        cache_ttl_seconds=s.cache_ttl_seconds,
        memory_relevance_blend=s.memory_relevance_blend,
    )


def reinforcement(c: Container) -> Reinforcement:
    """The buffer of memory uses, written to the index in batches (core/memory/reinforcement.py)."""
    from core.memory.reinforcement import Reinforcement

    return Reinforcement(c.index)


def integrity(_c: Container) -> Integrity:
    """Counts memories left out because their content no longer matches its hash (core/memory/integrity.py)."""
    from core.memory.integrity import Integrity

    return Integrity()


def search(c: Container) -> SearchService:
    from core.search.search_service import SearchService

    return SearchService(
        c.index,
        c.vectors,
        c.cache,
        c.registry,
        c.clock,
        c.search_settings,
        snapshots=c.snapshots,
        new_id=c.new_id,
        integrity=c.integrity,
    )


def query_batch(c: Container) -> QueryBatch:
    """`quarry serve`'s waiting searches' queries embedded in one call (QUARRY_QUERY_BATCH)."""
    from core.search.query_batch import QueryBatch

    return QueryBatch(c.search, c.vectors, c.settings.query_batch)


def embedding(c: Container) -> EmbeddingService:
    """POST /embed and `quarry embed`: texts → the tenant's vectors."""
    from core.search.embedding import EmbeddingService

    return EmbeddingService(c.vectors)


def fusion_tuning(c: Container) -> FusionTuningService:
    """Grid-searches the fusion setting on judged queries (`quarry eval --tune`, infra/beir/evaluation.py)."""
    from core.search.tuning_service import FusionTuningService

    return FusionTuningService(c.index, c.embedder, c.registry, c.search_settings)


def indexing(c: Container) -> IndexingService:
    from core.indexing.indexing_service import IndexingService

    return IndexingService(
        c.index,
        c.vectors,
        c.registry,
        c.cache,
        clock=c.clock,
        max_skew_seconds=c.settings.max_clock_skew_seconds,
    )


def catalog(c: Container) -> CatalogService:
    """Reads of stored entities, weight history and eval records (docs/architecture.md, A tenant's data
    lifecycle)."""
    from core.indexing.catalog_service import CatalogService

    return CatalogService(c.index, c.state, c.registry)


def lifecycle(c: Container) -> LifecycleService:
    """Export, erase and reopen of a tenant (docs/architecture.md, A tenant's data lifecycle); after an
    erase or a reopen, the container's current `gate` forgets its copy of the tenant's fence."""
    from core.tenancy.lifecycle import LifecycleService

    later = c.later()
    return LifecycleService(
        c.index,
        c.state,
        c.cache,
        c.job_store,
        c.job_queue,
        c.fences,
        c.clock,
        c.settings.reopen_after_seconds,
        snapshots=c.snapshots,
        fence_moved=lambda tenant: later.gate.forget(tenant),
    )


def gate(c: Container) -> TenantGate:
    """Admits and settles each unit of work for a tenant against its fence (the purge finds the
    container's current `lifecycle` when it runs)."""
    from core.tenancy.fencing import TenantGate

    scope, later = c.settings.erase_sweep, c.later()
    return TenantGate(c.fences, lambda tenant: later.lifecycle.purge(tenant, scope), c.clock)


def governed_retrieval(c: Container) -> GovernedRetrievalService:
    """Governed retrieval and overlays (docs/architecture.md, Governed retrieval); the embedder is only
    called when not lexical_only."""
    from core.governance.governed_retrieval import GovernedRetrievalService

    return GovernedRetrievalService(c.index, c.state, c.clock, c.vectors)


def overlay_evaluation(c: Container) -> OverlayEvaluation:
    """An overlay's golden set run on demand; the evaluation code loads with its first use."""
    from core.governance.golden_sets import OverlayEvaluation

    return OverlayEvaluation(c.governed_retrieval, c.state, c.clock)


def context_settings(c: Container) -> ContextSettings:
    from core.context.context_service import ContextSettings
    from core.context.sources import parse_sources

    s = c.settings
    return ContextSettings(
        sources=parse_sources(s.context_sources),
        default_budget=s.context_default_budget,
        max_query_chars=s.max_query_chars,
        min_vector_similarity=c.search_settings.min_vector_similarity,
        memory_relevance_blend=c.search_settings.memory_relevance_blend,
        token_encodings=dict(s.token_encodings),
    )


def context(c: Container) -> ContextService:
    from core.context.context_service import ContextService
    from infra.user_files.file_links import FileLinkReader

    root = c.settings.links_root
    return ContextService(
        c.index,
        c.vectors,
        c.state,
        c.registry,
        c.clock,
        new_id=c.new_id,
        settings=c.context_settings,
        map_fn=c.fanout_executor.map,
        links=FileLinkReader(root) if root is not None else None,
        triples=c.triples,
        reinforcement=c.reinforcement,
        integrity=c.integrity,
        counters=c.token_counters,
    )


def jobs(c: Container) -> JobService:
    """Bulk and corpus writes too big for one API call."""
    from core.indexing.write_job_service import JobService, JobSettings
    from core.indexing.write_jobs import SQS_MAX_MESSAGE_BYTES

    # SQS without a payload bucket carries a part of at most one message; the local queue any part
    sqs_only = bool(c.settings.jobs_queue_url) and not c.settings.jobs_payload_bucket
    settings = JobSettings(
        async_min_chunks=c.settings.async_min_chunks,
        max_message_bytes=SQS_MAX_MESSAGE_BYTES if sqs_only else None,
    )
    return JobService(c.job_store, c.job_queue, c.indexing, c.registry, c.clock, settings, gate=c.gate)


def writes(c: Container) -> EntityWrites:
    """Every entity write and corpus load, now or as a job (the one place that decides)."""
    from core.indexing.entity_writes import EntityWrites

    s = c.settings
    return EntityWrites(c.indexing, c.jobs, c.registry, c.clock, s.max_batch_items, s.max_body_bytes)


def learning(c: Container) -> LearningService:
    from core.context.learning_service import LearningService

    cs = c.context_settings
    return LearningService(c.state, c.clock, cs.sources, cs.default_budget)
