"""The one composition root: settings → adapters → services, built lazily on first use and cached per
process (a warm Lambda container reuses its clients). `container()` is what handlers call.

Size: longer than the ~300 lines a module keeps to, because it is the one page where every part is built —
one cached property per port, adapter and service, each choosing its adapter from the settings. Split,
the graph that `override` walks (infra/wiring_graph.py) would be spread over several classes.
"""

from __future__ import annotations

import json
import os
import threading
import uuid
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.errors import ConfigurationError, InvalidInputError
from core.indexing.entity_types import EntityTypeRegistry
from infra.clock import SystemClock

# Services and settings are imported where they are first built, not here: a handler's cold start pays
# only for the services its first request uses (tests/infra/test_cold_start.py, bench/cold_start.py).
if TYPE_CHECKING:
    from core.context.context_service import ContextService, ContextSettings
    from core.context.learning_service import LearningService
    from core.governance.governed_retrieval import GovernedRetrievalService
    from core.indexing.catalog_service import CatalogService
    from core.indexing.entity_writes import EntityWrites
    from core.indexing.indexing_service import IndexingService
    from core.indexing.write_job_service import JobService
    from core.memory.integrity import Integrity
    from core.memory.reinforcement import Reinforcement
    from core.ports import (
        Cache,
        Clock,
        Embedder,
        JobQueue,
        JobStore,
        SearchIndex,
        SearchSnapshots,
        StateStore,
        TenantFences,
        TokenCounters,
        TripleStore,
    )
    from core.search.embedding import EmbeddingService
    from core.search.planning import SearchSettings
    from core.search.search_service import SearchService
    from core.search.tuning_service import FusionTuningService
    from core.tenancy.fencing import TenantGate
    from core.tenancy.lifecycle import LifecycleService
    from infra.job_payloads import S3JobPayloads
    from infra.settings import Settings


class Container:
    """Adapters and services for one set of settings; every part is built once, on first use.

    Any part can be swapped for another (a fake embedder, a failing index, a fixed clock):
    `Container(settings, overrides={"embedder": fake})` or `container.override(embedder=fake)`. An
    override also drops every part already built from the old one, so services rebuild around the new
    part on next use; an overridden part stays until overridden again."""

    def __init__(
        self, settings: Settings, clock: Clock | None = None, *, overrides: Mapping[str, Any] | None = None
    ) -> None:
        self.settings = settings
        self.clock = clock or SystemClock()
        self._overridden: set[str] = set()
        if overrides:
            self.override(**overrides)

    def override(self, **parts: Any) -> Container:
        """Use these parts instead of building them; drop the cached parts that were built from the old
        ones (their dependents, transitively). Returns the container, for chaining."""
        from infra.wiring_graph import built_from

        stale = built_from(Container, parts)  # TypeError naming a part the container does not have
        self._overridden |= parts.keys()
        for name in stale - self._overridden:
            self.__dict__.pop(name, None)
        self.__dict__.update(parts)
        return self

    def close(self) -> None:
        """Stop the background work of the parts built so far and close what they hold open: a tool that
        ingests in-process and then removes the data directory (a benchmark, the evaluation harness) calls
        it first. Parts given as overrides belong to the caller and are left alone."""
        for name in ("index", "state", "cache", "snapshots"):
            part = None if name in self._overridden else self.__dict__.get(name)
            close = getattr(part, "close", None)
            if callable(close):
                close()

    def check(self) -> None:
        """Build what configuration alone decides (no network): a wrong setting fails here, at start."""
        from infra.settings import configuration_error, missing_settings

        missing = missing_settings(self.settings) | self._data_dir_problems()
        if missing:
            raise configuration_error(missing)
        assert self.registry is not None and self.context_settings is not None

    def _data_dir_problems(self) -> dict[str, str]:
        """{"QUARRY_DATA_DIR": why} when a local adapter or the local key needs the directory and it cannot
        be made or written."""
        s = self.settings
        local = "sqlite" in (s.index_kind, s.state_kind, s.cache_kind) or not s.api_keys
        if not local:
            return {}
        try:
            s.data_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            return {"QUARRY_DATA_DIR": f"cannot be made: {exc.strerror} ({s.data_dir})"}
        if not os.access(s.data_dir, os.W_OK | os.X_OK):
            return {"QUARRY_DATA_DIR": f"is not writable ({s.data_dir})"}
        return {}

    @cached_property
    def registry(self) -> EntityTypeRegistry:
        path = self.settings.entity_types_file
        if path is None:
            return EntityTypeRegistry()
        try:
            config = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise ConfigurationError(
                f"invalid configuration: QUARRY_ENTITY_TYPES_FILE: {exc}",
                {"QUARRY_ENTITY_TYPES_FILE": str(exc)},
            ) from exc
        try:
            return EntityTypeRegistry.with_config(config)
        except InvalidInputError as exc:
            raise ConfigurationError(
                f"invalid configuration: QUARRY_ENTITY_TYPES_FILE: {exc.message}",
                {"QUARRY_ENTITY_TYPES_FILE": exc.message},
            ) from exc

    @cached_property
    def index(self) -> SearchIndex:
        if self.settings.index_kind == "opensearch":
            from infra.opensearch import build_index

            # The configured model's dimension; a reindexed generation's own (its `_meta`) wins at start.
            return build_index(self.settings, self.configured_embedder.dimension)
        from infra.local.sqlite_index import build_sqlite_index

        return build_sqlite_index(
            self.settings.sqlite_path,
            ann_min_chunks=self.settings.ann_min_chunks,
            ann_probe=self.settings.ann_probe,
            keyword_engine=self.settings.keyword_engine,
        )

    @cached_property
    def configured_embedder(self) -> Embedder:
        """The model configuration names (QUARRY_EMBEDDER, QUARRY_EMBEDDER_MODEL_DIR…)."""
        s = self.settings
        if s.embedder_kind == "bedrock":
            from infra.bedrock import BedrockEmbedder

            return BedrockEmbedder(
                model_id=s.bedrock_model_id,
                dimensions=s.bedrock_dimensions,
                region=s.bedrock_region,
                budget_seconds=s.bedrock_budget_seconds,
            )
        from infra.local.embedder import LocalEmbedder

        return LocalEmbedder(
            s.embedder_model_dir,
            pooling=s.embedder_pooling,
            query_prefix=s.embedder_query_prefix,
            threads=s.embedder_threads,
            runtime=s.embedder_runtime,
            cache_dir=s.embedder_cache_dir,
        )

    def load_embedder(self, folder: str | Path) -> Embedder:
        """A local model folder's embedder (the one `quarry reindex` switched to)."""
        from infra.local.embedder import LocalEmbedder

        s = self.settings
        return LocalEmbedder(
            Path(folder),
            threads=s.embedder_threads,
            runtime=s.embedder_runtime,
            cache_dir=s.embedder_cache_dir,
        )

    @cached_property
    def embedder(self) -> Embedder:
        """The configured model until `quarry reindex` switches to a model folder: then that one (per
        tenant on the embedded backend; the generation behind the alias on OpenSearch)."""
        configured = self.configured_embedder
        if self.settings.embedder_kind == "bedrock":
            return configured
        from infra.switching_embedder import ActiveModel, SwitchingEmbedder

        if self.settings.index_kind == "opensearch":
            index: Any = self.index
            pick = getattr(index, "for_tenant", lambda _tenant: index)  # a tenant's own index, or the one
            return SwitchingEmbedder(configured, self.load_embedder, lambda t: pick(t).live_model_dir())
        return SwitchingEmbedder(configured, self.load_embedder, ActiveModel(self.settings.sqlite_path))

    @cached_property
    def vectors(self) -> Embedder:
        """The embedder services use: `embedder`, except for tenants that bring their own vectors
        (QUARRY_BYO_VECTOR_TENANTS), which have none (core/indexing/caller_vectors.py)."""
        if not self.settings.byo_vector_tenants:
            return self.embedder
        from core.indexing.caller_vectors import CallerVectorTenants

        return CallerVectorTenants(self.embedder, self.settings.byo_vector_tenants)

    @cached_property
    def cache(self) -> Cache:
        kind = self.settings.cache_kind
        if kind == "memory":
            from infra.local.cache import MemoryCache

            return MemoryCache()
        if kind == "dynamodb":
            from infra.dynamodb import build_cache

            return build_cache(self.settings)
        from infra.local.cache import SqliteCache

        return SqliteCache(self.settings.sqlite_path)

    @cached_property
    def state(self) -> StateStore:
        if self.settings.state_kind == "dynamodb":
            from infra.dynamodb import build_state_store

            return build_state_store(self.settings)
        from infra.local.sqlite_state import SqliteStateStore

        return SqliteStateStore(self.settings.sqlite_path)

    @cached_property
    def search_settings(self) -> SearchSettings:
        """The deployment's search behaviour (also what `quarry eval` reports as the default)."""
        from core.search.fusion import FusionMethod
        from core.search.planning import SearchSettings, default_alpha

        s = self.settings
        return SearchSettings(
            fusion=FusionMethod(s.fusion),
            alpha=(default_alpha(s.feedback_docs) if s.alpha is None else s.alpha)
            if s.fusion == "convex"
            else 0.5,
            rrf_k=s.rrf_k,
            feedback_docs=s.feedback_docs,
            feedback_weight=s.feedback_weight,
            max_query_chars=s.max_query_chars,
            max_limit=s.max_limit,
            cache_ttl_seconds=s.cache_ttl_seconds,
            memory_relevance_blend=s.memory_relevance_blend,
        )

    @cached_property
    def reinforcement(self) -> Reinforcement:
        """The buffer of memory uses, written to the index in batches (core/memory/reinforcement.py)."""
        from core.memory.reinforcement import Reinforcement

        return Reinforcement(self.index)

    @cached_property
    def integrity(self) -> Integrity:
        """Counts memories left out because their content no longer matches its hash (core/memory/integrity.py)."""
        from core.memory.integrity import Integrity

        return Integrity()

    @cached_property
    def search(self) -> SearchService:
        from core.search.search_service import SearchService

        return SearchService(
            self.index,
            self.vectors,
            self.cache,
            self.registry,
            self.clock,
            self.search_settings,
            snapshots=self.snapshots,
            new_id=self.new_id,
            integrity=self.integrity,
        )

    @cached_property
    def snapshots(self) -> SearchSnapshots:
        """The snapshots search cursors page over, beside the state (core/search/paging.py)."""
        if self.settings.state_kind == "dynamodb":
            from infra.dynamodb.search_snapshots import DynamoSearchSnapshots

            self.state  # noqa: B018  the state store creates the table when it may
            return DynamoSearchSnapshots(self.settings.state_table)
        from infra.local.sqlite_snapshots import SqliteSearchSnapshots

        return SqliteSearchSnapshots(self.settings.sqlite_path)

    @cached_property
    def embedding(self) -> EmbeddingService:
        """POST /embed and `quarry embed`: texts → the tenant's vectors."""
        from core.search.embedding import EmbeddingService

        return EmbeddingService(self.vectors)

    @cached_property
    def fusion_tuning(self) -> FusionTuningService:
        """Grid-searches the fusion setting on judged queries (`quarry eval --tune`, infra/beir_evaluation.py)."""
        from core.search.tuning_service import FusionTuningService

        return FusionTuningService(self.index, self.embedder, self.registry, self.search_settings)

    @cached_property
    def indexing(self) -> IndexingService:
        from core.indexing.indexing_service import IndexingService

        return IndexingService(
            self.index,
            self.vectors,
            self.registry,
            self.cache,
            clock=self.clock,
            max_skew_seconds=self.settings.max_clock_skew_seconds,
        )

    @cached_property
    def catalog(self) -> CatalogService:
        """Reads of stored entities, weight history and eval records (docs/architecture.md, A tenant's data
        lifecycle)."""
        from core.indexing.catalog_service import CatalogService

        return CatalogService(self.index, self.state, self.registry)

    @cached_property
    def fences(self) -> TenantFences:
        """Erased tenants' fences, beside the state (core/tenancy/fencing.py)."""
        if self.settings.state_kind == "dynamodb":
            from infra.dynamodb.fences import DynamoTenantFences

            self.state  # noqa: B018  the state store creates the table when it may
            return DynamoTenantFences(self.settings.state_table)
        from infra.local.sqlite_fences import SqliteTenantFences

        return SqliteTenantFences(self.settings.sqlite_path)

    @cached_property
    def lifecycle(self) -> LifecycleService:
        """Export, erase and reopen of a tenant (docs/architecture.md, A tenant's data lifecycle)."""
        from core.tenancy.lifecycle import LifecycleService

        return LifecycleService(
            self.index,
            self.state,
            self.cache,
            self.job_store,
            self.job_queue,
            self.fences,
            self.clock,
            self.settings.reopen_after_seconds,
            snapshots=self.snapshots,
        )

    @cached_property
    def gate(self) -> TenantGate:
        """Admits and settles each unit of work for a tenant against its fence."""
        from core.tenancy.fencing import TenantGate

        scope = self.settings.erase_sweep
        return TenantGate(self.fences, lambda tenant: self.lifecycle.purge(tenant, scope), self.clock)

    @cached_property
    def governed_retrieval(self) -> GovernedRetrievalService:
        """Governed retrieval and overlays (docs/architecture.md, Governed retrieval); the embedder is only
        called when not lexical_only."""
        from core.governance.governed_retrieval import GovernedRetrievalService

        return GovernedRetrievalService(self.index, self.state, self.clock, self.vectors)

    @cached_property
    def context_settings(self) -> ContextSettings:
        from core.context.context_service import ContextSettings
        from core.context.sources import parse_sources

        s = self.settings
        return ContextSettings(
            sources=parse_sources(s.context_sources),
            default_budget=s.context_default_budget,
            max_query_chars=s.max_query_chars,
            min_vector_similarity=self.search_settings.min_vector_similarity,
            memory_relevance_blend=self.search_settings.memory_relevance_blend,
            token_encodings=dict(s.token_encodings),
        )

    @cached_property
    def fanout_executor(self) -> ThreadPoolExecutor:
        """Threads for an assembly's parallel retrievals (I/O bound: SQLite, NumPy and HTTP release the GIL)."""
        return ThreadPoolExecutor(max_workers=self.settings.context_workers, thread_name_prefix="fanout")

    @cached_property
    def triples(self) -> TripleStore | None:
        if self.settings.triples_file is None:
            return None
        from infra.local.triples import JsonlTripleStore

        return JsonlTripleStore(self.settings.triples_file)

    @cached_property
    def new_id(self) -> Callable[[], str]:
        """The id source of logged assemblies (a test overrides it with a predictable sequence)."""
        return lambda: uuid.uuid4().hex

    @cached_property
    def context(self) -> ContextService:
        from core.context.context_service import ContextService
        from infra.file_links import FileLinkReader

        root = self.settings.links_root
        return ContextService(
            self.index,
            self.vectors,
            self.state,
            self.registry,
            self.clock,
            new_id=self.new_id,
            settings=self.context_settings,
            map_fn=self.fanout_executor.map,
            links=FileLinkReader(root) if root is not None else None,
            triples=self.triples,
            reinforcement=self.reinforcement,
            integrity=self.integrity,
            counters=self.token_counters,
        )

    @cached_property
    def token_counters(self) -> TokenCounters:
        """Token counters by encoding; the tokenizer is imported on a caller's first real encoding."""
        from infra.token_counters import BpeTokenCounters

        return BpeTokenCounters()

    @cached_property
    def job_queue(self) -> JobQueue:
        if self.settings.jobs_queue_url:
            from infra.jobs import SqsJobQueue

            return SqsJobQueue(self.settings.jobs_queue_url, payloads=self.job_payloads)
        from infra.local.job_queue import SqliteJobQueue

        return SqliteJobQueue(
            self.settings.sqlite_path,
            lambda message, retried: self.jobs.process(message, retried),
            lambda message, reason: self.jobs.fail(message, reason),
        )

    @cached_property
    def job_payloads(self) -> S3JobPayloads | None:
        """Where a job part too big for one SQS message travels (QUARRY_JOBS_PAYLOAD_BUCKET), if set."""
        if not self.settings.jobs_payload_bucket:
            return None
        from infra.job_payloads import S3JobPayloads

        return S3JobPayloads(self.settings.jobs_payload_bucket)

    def resume_jobs(self) -> None:
        """Locally (no queue configured), run the job thread now, so parts a stopped server left resume."""
        if self.settings.jobs_queue_url:
            return
        from infra.local.job_queue import SqliteJobQueue

        queue = self.job_queue
        assert isinstance(queue, SqliteJobQueue)
        queue.start()

    @cached_property
    def eval_queue(self) -> JobQueue:
        """Where the nightly run sends its tasks (QUARRY_EVAL_QUEUE_URL)."""
        from infra.jobs import SqsJobQueue

        return SqsJobQueue(self.settings.eval_queue_url or "")

    @cached_property
    def job_store(self) -> JobStore:
        if self.settings.state_kind == "dynamodb":
            from infra.dynamodb.jobs import DynamoJobStore

            self.state  # noqa: B018  the state store creates the table when it may
            return DynamoJobStore(self.settings.state_table)
        from infra.jobs import SqliteJobStore

        return SqliteJobStore(self.settings.sqlite_path)

    @cached_property
    def jobs(self) -> JobService:
        """Bulk and corpus writes too big for one API call."""
        from core.indexing.write_job_service import JobService, JobSettings
        from core.indexing.write_jobs import SQS_MAX_MESSAGE_BYTES

        # SQS without a payload bucket carries a part of at most one message; the local queue any part
        sqs_only = bool(self.settings.jobs_queue_url) and not self.settings.jobs_payload_bucket
        settings = JobSettings(
            async_min_chunks=self.settings.async_min_chunks,
            max_message_bytes=SQS_MAX_MESSAGE_BYTES if sqs_only else None,
        )
        return JobService(
            self.job_store, self.job_queue, self.indexing, self.registry, self.clock, settings, gate=self.gate
        )

    @cached_property
    def writes(self) -> EntityWrites:
        """Every entity write and corpus load, now or as a job (the one place that decides)."""
        from core.indexing.entity_writes import EntityWrites

        s = self.settings
        return EntityWrites(
            self.indexing, self.jobs, self.registry, self.clock, s.max_batch_items, s.max_body_bytes
        )

    @cached_property
    def learning(self) -> LearningService:
        from core.context.learning_service import LearningService

        cs = self.context_settings
        return LearningService(self.state, self.clock, cs.sources, cs.default_budget)


_lock = threading.Lock()
_container: Container | None = None


def container(**overrides: Any) -> Container:
    """The process-wide container (built from the environment on first call)."""
    from infra.settings import load_settings

    global _container
    with _lock:
        if _container is None or overrides:
            _container = Container(load_settings(**overrides))
        return _container


def check_settings() -> None:
    """Read and validate the settings now, building nothing: a Lambda handler calls it at import (the
    function's init), so a wrong or missing setting is the runtime's init error naming the variable."""
    from infra.settings import load_settings

    load_settings()


def set_container(value: Container | None) -> None:
    """Install a container (tests, the dev server's --data-dir) or clear it."""
    global _container
    with _lock:
        _container = value
