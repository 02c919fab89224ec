"""How the composition root (infra/wiring/root.py) builds each adapter: one function per part, taking the
container it reads its settings and inputs from. Which inputs each reads is declared beside it, in the
container's table; an SDK is imported inside the function that needs it (cold start)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from core.errors import ConfigurationError, InvalidInputError
from core.indexing.entity_types import EntityTypeRegistry
from infra.timing.clock import SystemClock

if TYPE_CHECKING:
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
    from infra.jobs.s3_payloads import S3JobPayloads
    from infra.opensearch import OpenSearchIndex, TenantIndexes
    from infra.text_models.ahead_embedder import AheadEmbedder
    from infra.wiring.root import Container

ModelLoader = Callable[[str | Path], "Embedder"]


def clock(_c: Container) -> Clock:
    return SystemClock()


def registry(c: Container) -> EntityTypeRegistry:
    """The entity types: the built-in ones, or QUARRY_ENTITY_TYPES_FILE's."""
    path = c.settings.entity_types_file
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


def opensearch(c: Container) -> OpenSearchIndex | TenantIndexes:
    """The OpenSearch adapter; besides the SearchIndex port it answers which model folder built each
    tenant's index generation (`live_model_dir`), which `embedder` follows."""
    from infra.opensearch import build_index

    # The configured model's dimension; a reindexed generation's own (its `_meta`) wins at start.
    return build_index(c.settings, c.configured_embedder.dimension)


def index(c: Container) -> SearchIndex:
    if c.settings.index_kind == "opensearch":
        return c.opensearch
    from infra.local.sqlite.index import build_sqlite_index

    return build_sqlite_index(
        c.settings.sqlite_path,
        ann_min_chunks=c.settings.ann_min_chunks,
        ann_probe=c.settings.ann_probe,
        keyword_engine=c.settings.keyword_engine,
    )


def configured_embedder(c: Container) -> Embedder:
    """The model configuration names (QUARRY_EMBEDDER, QUARRY_EMBEDDER_MODEL_DIR…)."""
    s = c.settings
    if s.embedder_kind == "bedrock":
        from infra.text_models.bedrock import BedrockEmbedder

        return BedrockEmbedder(
            model_id=s.bedrock_model_id,
            dimensions=s.bedrock_dimensions,
            region=s.bedrock_region,
            budget_seconds=s.bedrock_budget_seconds,
        )
    from infra.local.onnx.embedder import LocalEmbedder

    return LocalEmbedder(
        s.embedder_model_dir,
        pooling=s.embedder_pooling,
        query_prefix=s.embedder_query_prefix,
        threads=s.embedder_threads,
        runtime=s.embedder_runtime,
        cache_dir=s.onnx_cache_dir,
    )


def load_embedder(c: Container) -> ModelLoader:
    """What loads a local model folder's embedder (the one `quarry reindex` switched to)."""
    s = c.settings

    def load(folder: str | Path) -> Embedder:
        from infra.local.onnx.embedder import LocalEmbedder

        return LocalEmbedder(
            Path(folder), threads=s.embedder_threads, runtime=s.embedder_runtime, cache_dir=s.onnx_cache_dir
        )

    return load


def embedder(c: Container) -> Embedder:
    """The configured model until `quarry reindex` switches to a model folder: then that one (per
    tenant on the embedded backend; the generation behind the alias on OpenSearch)."""
    configured = c.configured_embedder
    if c.settings.embedder_kind == "bedrock":
        return configured
    from infra.text_models.switching_embedder import ActiveModel, SwitchingEmbedder

    if c.settings.index_kind == "opensearch":
        return SwitchingEmbedder(configured, c.load_embedder, c.opensearch.live_model_dir)
    return SwitchingEmbedder(configured, c.load_embedder, ActiveModel(c.settings.sqlite_path))


def vectors(c: Container) -> AheadEmbedder:
    """The embedder services use: `embedder`, except for tenants that bring their own vectors
    (QUARRY_BYO_VECTOR_TENANTS), which have none (core/indexing/caller_vectors.py); a request may be served
    the query vector made for it ahead, in a batch (infra/text_models/ahead_embedder.py)."""
    from infra.text_models.ahead_embedder import AheadEmbedder

    if not c.settings.byo_vector_tenants:
        return AheadEmbedder(c.embedder)
    from core.indexing.caller_vectors import CallerVectorTenants

    return AheadEmbedder(CallerVectorTenants(c.embedder, c.settings.byo_vector_tenants))


def cache(c: Container) -> Cache:
    kind = c.settings.cache_kind
    if kind == "memory":
        from infra.local.cache import MemoryCache

        return MemoryCache()
    if kind == "dynamodb":
        from infra.dynamodb import build_cache

        return build_cache(c.settings)
    from infra.local.cache import SqliteCache

    return SqliteCache(c.settings.sqlite_path)


def state(c: Container) -> StateStore:
    if c.settings.state_kind == "dynamodb":
        from infra.dynamodb import build_state_store

        return build_state_store(c.settings)
    from infra.local.sqlite.state import SqliteStateStore

    return SqliteStateStore(c.settings.sqlite_path)


def snapshots(c: Container) -> SearchSnapshots:
    """The snapshots search cursors page over, beside the state (core/search/paging.py)."""
    if c.settings.state_kind == "dynamodb":
        from infra.dynamodb.search_snapshots import DynamoSearchSnapshots

        c.state  # noqa: B018  the state store creates the table when it may
        return DynamoSearchSnapshots(c.settings.state_table)
    from infra.local.sqlite.snapshots import SqliteSearchSnapshots

    return SqliteSearchSnapshots(c.settings.sqlite_path)


def fences(c: Container) -> TenantFences:
    """Erased tenants' fences, beside the state (core/tenancy/fencing.py)."""
    if c.settings.state_kind == "dynamodb":
        from infra.dynamodb.fences import DynamoTenantFences

        c.state  # noqa: B018  the state store creates the table when it may
        return DynamoTenantFences(c.settings.state_table)
    from infra.local.sqlite.fences import SqliteTenantFences

    return SqliteTenantFences(c.settings.sqlite_path)


def fanout_executor(c: Container) -> ThreadPoolExecutor:
    """Threads for an assembly's parallel retrievals (I/O bound: SQLite, NumPy and HTTP release the GIL)."""
    return ThreadPoolExecutor(max_workers=c.settings.context_workers, thread_name_prefix="fanout")


def triples(c: Container) -> TripleStore | None:
    if c.settings.triples_file is None:
        return None
    from infra.local.triples import JsonlTripleStore

    return JsonlTripleStore(c.settings.triples_file)


def new_id(_c: Container) -> Callable[[], str]:
    """The id source of logged assemblies (a test overrides it with a predictable sequence)."""
    return lambda: uuid.uuid4().hex


def token_counters(_c: Container) -> TokenCounters:
    """Token counters by encoding; the tokenizer is imported on a caller's first real encoding."""
    from infra.text_models.token_counters import BpeTokenCounters

    return BpeTokenCounters()


def job_queue(c: Container) -> JobQueue:
    """SQS when a queue is configured, else the SQLite queue whose thread runs the parts in-process (its
    callbacks find the container's current `jobs` when a part runs, not when the queue is built)."""
    if c.settings.jobs_queue_url:
        from infra.jobs.sqs_queue import SqsJobQueue

        return SqsJobQueue(c.settings.jobs_queue_url, payloads=c.job_payloads)
    from infra.jobs.sqlite_queue import SqliteJobQueue

    later = c.later()
    return SqliteJobQueue(
        c.settings.sqlite_path,
        lambda message, retried: later.jobs.process(message, retried),
        lambda message, reason: later.jobs.fail(message, reason),
    )


def job_payloads(c: Container) -> S3JobPayloads | None:
    """Where a job part too big for one SQS message travels (QUARRY_JOBS_PAYLOAD_BUCKET), if set."""
    if not c.settings.jobs_payload_bucket:
        return None
    from infra.jobs.s3_payloads import S3JobPayloads

    return S3JobPayloads(c.settings.jobs_payload_bucket)


def eval_queue(c: Container) -> JobQueue:
    """Where the nightly run sends its tasks (QUARRY_EVAL_QUEUE_URL)."""
    from infra.jobs.sqs_queue import SqsJobQueue

    return SqsJobQueue(c.settings.eval_queue_url or "")


def job_store(c: Container) -> JobStore:
    if c.settings.state_kind == "dynamodb":
        from infra.dynamodb.jobs import DynamoJobStore

        c.state  # noqa: B018  the state store creates the table when it may
        return DynamoJobStore(c.settings.state_table)
    from infra.jobs.sqlite_store import SqliteJobStore

    return SqliteJobStore(c.settings.sqlite_path)
