"""The ports: what core needs from the outside world, as Protocols. Adapters live in `infra/`.

Every method takes the tenant explicitly; an adapter never returns another tenant's data.

Longer than the ~300 lines a module keeps to, on purpose: it is the one page listing everything core asks of
the outside world (docs/architecture.md, Ports and adapters), and its length is the ports' docstrings.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from core.context.graph import Triple
from core.indexing.catalog import EmbeddingStatus, EntityPosition
from core.indexing.write_jobs import Job
from core.models import (
    Candidate,
    CandidateLists,
    CandidateQuery,
    EntityKey,
    EntityRecord,
    Filters,
    LexicalQuery,
    Placement,
    StoredEntity,
    Vector,
    WriteOutcome,
)
from core.search.paging import SearchSnapshot
from core.state import (
    AssemblyLogEntry,
    CallerBudget,
    EvalRecord,
    LearningUpdate,
    LogPage,
    SourceWeight,
    TenantFence,
    WeightChange,
)
from core.tokens import TokenCounter


@dataclass(frozen=True, slots=True)
class MetadataTouch:
    """Changes to one entity's metadata at the version they were computed from (SearchIndex.touch_metadata)."""

    key: EntityKey
    version: int
    changes: Mapping[str, Any]


class Clock(Protocol):
    """Time, injected so core never reads the clock itself."""

    def now(self) -> float:
        """Wall-clock seconds since the epoch."""
        ...

    def monotonic(self) -> float:
        """Seconds from an arbitrary origin, for durations."""
        ...


class IndexWriter(Protocol):
    """Writes of entity versions into BM25 and k-NN retrieval, versioned per entity."""

    @property
    def visibility_delay_seconds(self) -> float:
        """How long an applied write may stay invisible to search (0: visible on return; OpenSearch without
        a refresh per write: its refresh interval). The search cache waits that long for writes to settle."""
        ...

    def upsert(self, record: EntityRecord) -> WriteOutcome:
        """Store a whole entity version; older than stored → STALE, equal → DUPLICATE, else APPLIED."""
        ...

    def upsert_many(self, records: Sequence[EntityRecord]) -> list[WriteOutcome]:
        """`upsert` for many records in one round trip / transaction; one outcome per record, in order."""
        ...

    def update_metadata(
        self,
        tenant_id: str,
        key: EntityKey,
        version: int,
        body: Mapping[str, Any],
        metadata: Mapping[str, Any],
        updated_at: str,
        placement: Placement | None = None,
    ) -> WriteOutcome:
        """Change body, metadata and (when given) the indexed source/owner/namespace only (no text, no
        embedding); versioned like `upsert`."""
        ...

    def touch_metadata(self, tenant_id: str, touches: Sequence[MetadataTouch]) -> list[WriteOutcome]:
        """Merge each touch's changes into its entity's indexed metadata without moving the version, in one
        round trip (bookkeeping the service keeps, such as a memory's uses: core/memory/reinforcement.py;
        fields retrieval filters on by range inside the retriever, never through keyword-index tokens);
        NOT_FOUND for an entity not live at exactly the touch's version (a write since then wins and the
        change is dropped). One outcome per touch, in order."""
        ...

    def delete(self, tenant_id: str, key: EntityKey, version: int | None) -> WriteOutcome:
        """Remove from lexical and vector retrieval; a tombstone keeps the version so older writes lose.

        `version` None: the stored version + 1 (unknown → NOT_FOUND). An unknown entity with a version gets
        a tombstone alone (APPLIED). A live entity at exactly `version` is deleted: a delete wins a tie.
        An older version → STALE; a tombstone already at `version` → DUPLICATE.
        """
        ...

    def purge_tenant(self, tenant_id: str) -> int:
        """Erase every entity, tombstone, chunk, vector and keyword row of the tenant; how many entities."""
        ...


class EntityCatalog(Protocol):
    """Stored entities read back by key or listed, as written (not ranked)."""

    def get(self, tenant_id: str, keys: Sequence[EntityKey]) -> dict[EntityKey, StoredEntity]:
        """The stored entities among `keys` (tombstones included, flagged `deleted`)."""
        ...

    def list_entities(
        self, tenant_id: str, entity_type: str | None, limit: int, after: EntityPosition | None
    ) -> list[StoredEntity]:
        """Live entities (no tombstones), newest first by (created_at, entity_type, entity_id) descending,
        strictly after `after`; at most `limit`."""
        ...

    def embedding_status(self, tenant_id: str, keys: Sequence[EntityKey]) -> dict[EntityKey, EmbeddingStatus]:
        """Chunk and embedded-chunk counts of the live entities among `keys`."""
        ...


class Retriever(Protocol):
    """Ranked candidates: BM25 and cosine k-NN lists, facets, and the stored chunk vectors behind them."""

    @property
    def visibility_delay_seconds(self) -> float:
        """As IndexWriter's: how long a write may take to show in these answers."""
        ...

    def lexical(self, tenant_id: str, query: LexicalQuery, filters: Filters, k: int) -> list[Candidate]:
        """BM25 over the boosted fields, best first, one candidate per entity."""
        ...

    def facets(
        self, tenant_id: str, query: LexicalQuery | None, filters: Filters, fields: Sequence[str], size: int
    ) -> dict[str, dict[str, int]]:
        """Per field, entities per value (core.search.filters.facet_key) over every entity the query's words match
        within the filters (every entity within them without a query): the `size` most frequent values,
        ties by value. A list field counts each of its values once per entity."""
        ...

    def vector(self, tenant_id: str, embedding: Vector, filters: Filters, k: int) -> list[Candidate]:
        """Cosine k-NN, best first, one candidate per entity."""
        ...

    def retrieve(
        self,
        tenant_id: str,
        query: LexicalQuery | None,
        embedding: Vector | None,
        filters: Filters,
        k: int,
    ) -> CandidateLists:
        """Both lists in one round trip where the backend allows (OpenSearch `_msearch`)."""
        ...

    def chunk_vectors(
        self, tenant_id: str, chunks: Sequence[tuple[EntityKey, int]]
    ) -> dict[tuple[EntityKey, int], Vector]:
        """The stored embeddings of these (entity, chunk_no) pairs, in one round trip; missing ones are left
        out (for MMR over retrieved candidates: nothing is embedded again). A pair with chunk_no ALL_CHUNKS
        asks for every stored chunk of the entity, each keyed by its own chunk number."""
        ...

    def retrieve_many(self, tenant_id: str, specs: Sequence[CandidateQuery]) -> list[CandidateLists]:
        """`retrieve` for every spec, in order, in ONE round trip where the backend allows (OpenSearch: one
        `_msearch` for all the lexical and vector queries); UnavailableError fails them all."""
        ...


class SearchIndex(IndexWriter, EntityCatalog, Retriever, Protocol):
    """One backend's documents in every role: what an adapter implements and the composition root hands
    to the services that write, read back and rank alike."""


class Embedder(Protocol):
    """Text → unit-length vectors."""

    @property
    def dimension(self) -> int: ...

    @property
    def model_id(self) -> str: ...

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        """One L2-normalised vector per passage; raises UnavailableError when the model cannot answer."""
        ...

    def embed_query(self, texts: Sequence[str]) -> list[Vector]:
        """Like `embed`, for search queries (models such as E5 or BGE embed queries with a prefix)."""
        ...

    # Capabilities with a default, inherited by the embedders that subclass this port: one model for every
    # tenant, vectors filed under the model's name, no tenant bringing its own.

    @property
    def vectors_id(self) -> str:
        """What an embedding cache files this embedder's vectors under (the model, and for local models the
        runtime and pooling that change the vectors' last bits)."""
        return self.model_id

    def for_tenant(self, tenant_id: str) -> Embedder:
        """The embedder of the model `tenant_id`'s vectors were built with (another one after `quarry reindex
        --tenant`; one without a model for a tenant that brings its own vectors). Resolve once per call,
        then embed and read `model_id` from the result, so both name the same model even if a reindex
        switches it meanwhile."""
        return self

    def brings_own(self, tenant_id: str) -> bool:
        """Whether `tenant_id`'s callers bring their own vectors (QUARRY_BYO_VECTOR_TENANTS): a lookup, where
        `for_tenant` may read which model a reindex switched the tenant to."""
        return False


class TokenCounters(Protocol):
    """Token counters by encoding name (core/tokens.py TOKEN_ENCODINGS)."""

    def counter(self, encoding: str) -> TokenCounter:
        """The counter for `encoding`; InvalidInputError naming `token_encoding` when this deployment
        cannot count in it (its tokenizer is not installed)."""
        ...


class Cache(Protocol):
    """A key-value cache with time-to-live; values are JSON-serialisable."""

    def get(self, key: str, now: float) -> Any | None:
        """The live value under `key`, or None (expired entries are never returned)."""
        ...

    def set(self, key: str, value: Any, ttl_seconds: float, now: float) -> None: ...

    def incr(self, key: str) -> int:
        """Atomically increment an integer counter (no TTL) and return the new value."""
        ...

    def counter(self, key: str) -> int:
        """The counter's value, 0 when absent."""
        ...

    def purge_tenant(self, tenant_id: str) -> int:
        """Drop the tenant's cached searches, settling mark and generation counter (`search:<tenant>:…`,
        `settling:<tenant>`, `gen:<tenant>`); how many there were."""
        ...

    def drop_marks(self, tenant_id: str) -> int:
        """Drop only the tenant's generation counter and settling mark (what a write leaves behind)."""
        ...


class SearchSnapshots(Protocol):
    """Search snapshots that cursors page over (core/search/paging.py), per tenant, each with an expiry.

    A snapshot is readable only by its tenant and only until its expiry: `get` never returns a lapsed one,
    whether or not the store has removed it yet."""

    def put(self, snapshot: SearchSnapshot) -> None:
        """Store the snapshot (its body may be large: an adapter with an item limit splits it)."""
        ...

    def get(self, tenant_id: str, snapshot_id: str, now: float) -> SearchSnapshot | None:
        """The tenant's snapshot, or None when absent, another tenant's, or expired at `now`."""
        ...

    def extend(self, tenant_id: str, snapshot_id: str, expires_at: float, now: float) -> bool:
        """Move a live snapshot's expiry to `expires_at`; False when it is absent or lapsed at `now`."""
        ...

    def purge_tenant(self, tenant_id: str) -> int:
        """Remove every snapshot of the tenant (an erase); how many."""
        ...


class CallerSettings(Protocol):
    """Per caller: source weights and token shares, budgets, and the history of weight changes."""

    def list_weights(self, tenant_id: str) -> list[SourceWeight]: ...

    def get_weights(self, tenant_id: str, caller: str) -> list[SourceWeight]:
        """Rows for exactly this caller (the `*` fallback is resolved in core)."""
        ...

    def put_weight(self, tenant_id: str, weight: SourceWeight, change: WeightChange | None) -> None:
        """Upsert one row and, when given, append its history row."""
        ...

    def list_budgets(self, tenant_id: str) -> list[CallerBudget]: ...

    def get_budget(self, tenant_id: str, caller: str) -> CallerBudget | None: ...

    def put_budget(self, tenant_id: str, budget: CallerBudget) -> None: ...

    def list_history(self, tenant_id: str, caller: str | None, limit: int) -> list[WeightChange]: ...


class AssemblyLog(Protocol):
    """Every context assembly with its feedback, and the learning cycles that turn them into weights."""

    def log_assembly(self, entry: AssemblyLogEntry) -> None: ...

    def get_assembly(self, tenant_id: str, assembly_id: str) -> AssemblyLogEntry | None: ...

    def record_feedback(
        self, tenant_id: str, assembly_id: str, used_ids: Sequence[str], tokens_used: int | None, at: str
    ) -> bool:
        """Attach feedback; False when the assembly does not exist for this tenant."""
        ...

    def list_assemblies(
        self, tenant_id: str, caller: str | None, namespace: str | None, limit: int, cursor: str | None
    ) -> LogPage: ...

    def list_callers(self, tenant_id: str) -> list[str]: ...

    def pending_callers(self, min_rows: int, settled_before: str = "") -> list[tuple[str, str]]:
        """(tenant, caller) pairs with at least `min_rows` unprocessed assemblies ready for learning: with
        feedback, or logged before `settled_before` (an ISO timestamp; "": with feedback only)."""
        ...

    def unprocessed_assemblies(
        self, tenant_id: str, caller: str, limit: int, settled_before: str = ""
    ) -> list[AssemblyLogEntry]:
        """Oldest first: assemblies no learning cycle has processed yet, with feedback or logged before
        `settled_before` ("": with feedback only)."""
        ...

    def apply_learning(self, tenant_id: str, update: LearningUpdate) -> bool:
        """Write weights, history and budget and mark rows processed, all or nothing.

        Returns False (and writes nothing) when any of `processed_ids` was already processed (or is
        unknown to this tenant), so two concurrent cycles never double-apply. One update marks at most
        `core.state.MAX_LEARNING_ROWS` rows (the DynamoDB adapter's transaction bound).
        """
        ...


class OverlayStore(Protocol):
    """Governance overlays: one per (tenant, role)."""

    def put_overlay(self, tenant_id: str, role_id: str, overlay: Mapping[str, Any]) -> None: ...

    def get_overlay(self, tenant_id: str, role_id: str) -> Mapping[str, Any] | None: ...

    def delete_overlay(self, tenant_id: str, role_id: str) -> bool: ...

    def list_overlays(self, tenant_id: str) -> list[str]:
        """The tenant's overlay role ids, sorted."""
        ...

    def overlay_owners(self) -> list[tuple[str, str]]:
        """Every (tenant, role_id) with a stored overlay, sorted (for the nightly golden-set run)."""
        ...


class EvalStore(Protocol):
    """Stored evaluation results (golden sets, fusion tuning), newest first."""

    def put_eval(self, tenant_id: str, record: EvalRecord) -> None: ...

    def list_evals(self, tenant_id: str, name: str | None, limit: int) -> list[EvalRecord]: ...


class FeedbackLoop(CallerSettings, AssemblyLog, Protocol):
    """What context assembly and learning share: assemblies logged with their feedback, turned into the
    callers' weights and budgets."""


class StateStore(CallerSettings, AssemblyLog, OverlayStore, EvalStore, Protocol):
    """One backend's state in every role (the composition root hands each service the roles it uses)."""

    def purge_tenant(self, tenant_id: str) -> int:
        """Erase every weight, budget, history, log, overlay and eval row of the tenant; rows removed."""
        ...


class TenantFences(Protocol):
    """The durable marks of erased tenants, kept by the state store under `core.state.fence_mark` (never
    the tenant id), outside the tenant's own rows, so an erase's purge leaves them."""

    def fence(self, tenant_id: str, at: float) -> None:
        """Mark the tenant erased at `at` (closed; erasing again moves `erased_at` on and closes it), and
        start its count of what purges remove from zero (before the fence goes up: every purge this
        erase causes is counted)."""
        ...

    def count_removed(self, tenant_id: str, removed: Mapping[str, int]) -> None:
        """Add what one purge of the tenant removed ({what: how many}) to its count since its fence."""
        ...

    def removed_since_fence(self, tenant_id: str) -> dict[str, int]:
        """What every purge of the tenant removed since its fence went up, whoever purged (read strongly
        consistent); {} before any purge."""
        ...

    def fence_of(self, tenant_id: str) -> TenantFence | None:
        """The tenant's fence, read strongly consistent; None for a tenant never erased."""
        ...

    def reopen(self, tenant_id: str, at: float) -> None:
        """Serve the tenant again from `at` (its `erased_at` stays, for changes that predate the erase)."""
        ...


class LinkReader(Protocol):
    """Files an assembly may quote as explicit links, confined to one configured root directory."""

    def read(self, path: str, max_chars: int) -> str | None:
        """At most `max_chars` of the text at `path` (relative to the root); None when there is no such file.

        Raises InvalidInputError, without reading anything, when the path resolves outside the root
        (`..`, an absolute path, a symlink pointing out) or is not a regular file.
        """
        ...


class TripleStore(Protocol):
    """Knowledge-graph facts for context enrichment."""

    def triples(self, tenant_id: str, entities: Sequence[str], per_entity: int) -> list[Triple]:
        """Up to `per_entity` facts whose subject or object names each entity (case-insensitive), best first."""
        ...


class JobQueue(Protocol):
    """Where write-job parts wait for the indexing consumer (SQS in AWS; a background thread locally)."""

    def send(self, messages: Sequence[dict[str, Any]]) -> None:
        """Enqueue every message, or raise UnavailableError (then the caller gets 503 and nothing is queued
        that it was told about)."""
        ...

    def discard_tenant(self, tenant_id: str) -> int:
        """Drop the tenant's parts still waiting (an erase); a queue that cannot (SQS) returns 0 and its
        parts are discarded when processed, their job being gone."""
        ...


class JobStore(Protocol):
    """Write jobs and the report of each processed part — per tenant."""

    def create_job(self, job: Job) -> None: ...

    def get_job(self, tenant_id: str, job_id: str) -> Job | None: ...

    def delete_job(self, tenant_id: str, job_id: str) -> None:
        """Remove one job (its parts could not all be queued); nothing when it is already gone."""
        ...

    def record_part(self, tenant_id: str, job_id: str, part: int, report: dict[str, Any], at: str) -> None:
        """Store one part's report; recording a part twice (a queue re-delivery) keeps one report; a job
        that no longer exists (erased) stays absent."""
        ...

    def purge_tenant(self, tenant_id: str) -> int:
        """Erase every job of the tenant (they hold its entity ids and errors); how many."""
        ...
