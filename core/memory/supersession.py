"""Supersession (docs/conformance.md, Memory): a memory written with `supersedes: <id>` marks the older one
`superseded_by: <newer id>`; superseded memories are left out of retrieval inside both retrievers (an
`exists: false` condition on the indexed `superseded_by` field) unless a request asks for history.

The mark is a metadata-only write to the older memory at the next version of its kind (the rule a DELETE
without a version follows, core/indexing/versioning.py delete_version), made between the write's two cache
bumps, so no cached answer outlives it. Two newer memories superseding the same one: the newer write wins
— higher version, then the greater id — whatever order they arrive in. Deleting the newer memory clears
the mark it set (only its own), which restores the older one.

Not atomic with the newer memory's write: a crash in between leaves the newer memory stored and the older
one unmarked until the write is retried (a retry, answered as a duplicate, marks it again).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from core.errors import InvalidInputError
from core.indexing.entity_types import EntityType
from core.indexing.versioning import delete_version
from core.memory.metadata import MEMORY_TYPE, indexed_metadata
from core.models import Condition, EntityKey, Filters, StoredEntity, WriteOutcome
from core.ports import SearchIndex
from core.timestamps import iso_timestamp

_log = logging.getLogger(__name__)


SUPERSEDES = "supersedes"
SUPERSEDED_BY = "superseded_by"
# Both legs keep `superseded_by IS NULL` (docs/conformance.md#supersession); entities of other types have no such field and pass.
NOT_SUPERSEDED = Condition(SUPERSEDED_BY, "exists", (False,))
# A mark lost to a racing write (compare-and-set refused it) is read and decided again, this many times.
MARK_ATTEMPTS = 3


def current_only(filters: Filters, history: bool = False) -> Filters:
    """`filters` leaving out superseded memories (unchanged when the request asks for history)."""
    if history or NOT_SUPERSEDED in filters.conditions:
        return filters
    return replace(filters, conditions=(*filters.conditions, NOT_SUPERSEDED))


def check_supersedes(entity_type: str, entity_id: str, body: Mapping[str, Any], path: str = "") -> None:
    """InvalidInputError when a memory's `supersedes` is not another memory's id."""
    target = body.get(SUPERSEDES)
    if entity_type != MEMORY_TYPE or target is None:
        return
    if not isinstance(target, str) or not target:
        raise InvalidInputError("invalid supersedes", {path + SUPERSEDES: "must be a memory's id"})
    if target == entity_id:
        raise InvalidInputError("invalid supersedes", {path + SUPERSEDES: "a memory cannot supersede itself"})


def carried_mark(prior: StoredEntity | None, body: Mapping[str, Any]) -> dict[str, Any]:
    """A replacement's body keeping the stored `superseded_by` when the replacement does not name it (the
    mark is set by the newer memory's write, not by whoever rewrites the older one)."""
    if prior is None or prior.deleted or SUPERSEDED_BY in body or prior.body.get(SUPERSEDED_BY) is None:
        return dict(body)
    return {**body, SUPERSEDED_BY: prior.body[SUPERSEDED_BY]}


def _newer(a: StoredEntity, b_version: int, b_id: str) -> bool:
    """Whether stored memory `a` wins over a write at (`b_version`, `b_id`): version, then id."""
    return (a.version, a.key.entity_id) > (b_version, b_id)


def _rewrite(
    index: SearchIndex, tenant_id: str, etype: EntityType, old: StoredEntity, mark: str | None, now: float
) -> WriteOutcome:
    body = {k: v for k, v in old.body.items() if k != SUPERSEDED_BY}
    if mark is not None:
        body[SUPERSEDED_BY] = mark
    metadata = indexed_metadata(etype, body, old, old.created_at)
    version = delete_version(None, old.version, now)
    assert version is not None  # a stored entity always yields a version
    return index.update_metadata(tenant_id, old.key, version, body, metadata, iso_timestamp(now))


def mark_superseded(
    index: SearchIndex,
    tenant_id: str,
    etype: EntityType,
    newer: EntityKey,
    version: int,
    now: float,
    body: Mapping[str, Any],
) -> None:
    """Mark the memory `body` supersedes (within `tenant_id`) as superseded by `newer` (written at
    `version`), unless a newer write already superseded it; an unknown or deleted target is left alone."""
    target = body.get(SUPERSEDES)
    if newer.entity_type != MEMORY_TYPE or not isinstance(target, str):
        return
    key = EntityKey(MEMORY_TYPE, target)
    for _ in range(MARK_ATTEMPTS):
        old = index.get(tenant_id, [key]).get(key)
        if old is None or old.deleted or old.body.get(SUPERSEDED_BY) == newer.entity_id:
            return
        rival_id = old.body.get(SUPERSEDED_BY)
        if isinstance(rival_id, str):
            rival_key = EntityKey(MEMORY_TYPE, rival_id)
            rival = index.get(tenant_id, [rival_key]).get(rival_key)
            if rival is not None and not rival.deleted and _newer(rival, version, newer.entity_id):
                return
        if _rewrite(index, tenant_id, etype, old, newer.entity_id, now) is WriteOutcome.APPLIED:
            return
    _log.warning("memory %s not marked superseded by %s: kept losing to racing writes", key, newer)


def restore_superseded(
    index: SearchIndex, tenant_id: str, etype: EntityType, deleted: StoredEntity, now: float
) -> None:
    """After the memory `deleted` is deleted: clear the mark it set on the memory it superseded."""
    target = deleted.body.get(SUPERSEDES)
    if deleted.key.entity_type != MEMORY_TYPE or not isinstance(target, str):
        return
    key = EntityKey(MEMORY_TYPE, target)
    for _ in range(MARK_ATTEMPTS):
        old = index.get(tenant_id, [key]).get(key)
        if old is None or old.deleted or old.body.get(SUPERSEDED_BY) != deleted.key.entity_id:
            return
        if _rewrite(index, tenant_id, etype, old, None, now) is WriteOutcome.APPLIED:
            return
