"""What core reads from outside Quarry's own stores: the clock, linked files and knowledge-graph facts
(docs/architecture.md, Ports and adapters).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from core.context.graph import Triple


class Clock(Protocol):
    """Time, injected so core never reads the clock itself."""

    def now(self) -> float:
        """Wall-clock seconds since the epoch."""
        ...

    def monotonic(self) -> float:
        """Seconds from an arbitrary origin, for durations."""
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
