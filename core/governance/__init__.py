"""Governed retrieval (docs/architecture.md, Governed retrieval): role overlays, overlay-aware query building,
governance filters, diversity-aware rerank, warning states and the RetrievalBundle — pure functions over what
the ports return.

Pipeline (core/governance/governed_retrieval.py coordinates it):
build_query → SearchIndex.retrieve → screen (score + filters) → select_mmr → assemble_bundle.
"""

from core.governance.bundle import RejectReason, RetrievalBundle, WarningState
from core.governance.overlay import RoleOverlay
from core.governance.requests import CorpusReport, RetrieveRequest

__all__ = [
    "CorpusReport",
    "RejectReason",
    "RetrieveRequest",
    "RetrievalBundle",
    "RoleOverlay",
    "WarningState",
]
