"""The ports: what core needs from the outside world, as Protocols grouped by role, one module per group.
Adapters live in `infra/` (docs/architecture.md, Ports and adapters).

Every method takes the tenant explicitly; an adapter never returns another tenant's data. Every port is
importable from here: `from core.ports import SearchIndex`.
"""

from core.ports.caching import Cache, SearchSnapshots
from core.ports.encoders import Embedder, TokenCounters
from core.ports.outside import Clock, LinkReader, TripleStore
from core.ports.queueing import JobQueue, JobStore
from core.ports.search_index import EntityCatalog, IndexWriter, MetadataTouch, Retriever, SearchIndex
from core.ports.state_store import (
    AssemblyLog,
    CallerSettings,
    EvalStore,
    FeedbackLoop,
    OverlayStore,
    StateStore,
    TenantFences,
)

__all__ = [
    "AssemblyLog",
    "Cache",
    "CallerSettings",
    "Clock",
    "Embedder",
    "EntityCatalog",
    "EvalStore",
    "FeedbackLoop",
    "IndexWriter",
    "JobQueue",
    "JobStore",
    "LinkReader",
    "MetadataTouch",
    "OverlayStore",
    "Retriever",
    "SearchIndex",
    "SearchSnapshots",
    "StateStore",
    "TenantFences",
    "TokenCounters",
    "TripleStore",
]
