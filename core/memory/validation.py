"""The rules a memory's body keeps beyond its type's (core/indexing/entity_validation.py): what it
supersedes (core/memory/supersession.py) and its trust level (core/memory/integrity.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.memory.integrity import check_trust
from core.memory.metadata import MEMORY_TYPE
from core.memory.supersession import check_supersedes


def check_memory(entity_type: str, entity_id: str, body: Mapping[str, Any], path: str = "") -> None:
    """InvalidInputError when a memory's body breaks a memory rule (its `supersedes`, its `trust_level`)."""
    if entity_type != MEMORY_TYPE:
        return
    check_supersedes(entity_type, entity_id, body, path)
    check_trust(body, path)
