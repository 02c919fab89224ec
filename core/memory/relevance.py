"""A memory's relevance (docs/conformance.md#memory-decay): its base relevance decayed with the time since it was
last used, reinforced each time it is used, never decayed while pinned, and blended into a search's fused
score (`decayedScore = 0.7 × hybrid + 0.3 × decayed`, docs/conformance.md#memory-blend).

    relevance(now) = base × 2^(−(now − last_used) / HALF_LIFE)        (pinned: base)

`base` is the memory's `relevance_score` (0–1, default 1), `last_used` its `last_accessed_at`, or its
`created_at` before it was first used. The decay the memory lifecycle asks for has no stated formula;
the exponential half-life is our choice because it is the one decay for which `relevance(now) ≥ floor`
is a fixed threshold on a stored number that never changes while the memory sits unused:

    relevance_key = log2(base) + last_used / HALF_LIFE        relevance(now) ≥ m  ⇔  key ≥ log2(m) + now / HALF_LIFE

so `min_relevance` is a range filter inside both retrievers (`relevance_key` is indexed metadata), and a
memory's key moves only when it is written or reinforced. A pinned memory's key is raised by
PINNED_OFFSET half-lives so no floor cuts it inside retrieval; the search then drops a pinned memory
whose base is under the floor (`relevance_at` is exact).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from core.models import Condition
from core.search.filters import NUMBER
from core.timestamps import iso_timestamp, parse_timestamp

BASE = "relevance_score"
PINNED = "pinned"
ACCESS_COUNT = "access_count"
LAST_ACCESSED = "last_accessed_at"
RELEVANCE_KEY = "relevance_key"
# Fields of a memory's metadata the service keeps (a write carries them over; callers never set them).
KEPT_FIELDS = (ACCESS_COUNT, LAST_ACCESSED)

DAY_SECONDS = 86_400.0
# Thirty days: a memory untouched for a month counts half, for a quarter of a year an eighth. Our choice
# (none is specified); stored keys depend on it, so changing it means `quarry reindex`.
HALF_LIFE_SECONDS = 30 * DAY_SECONDS
# A pinned memory's key lies this many half-lives (~80,000 years) ahead: past every floor.
PINNED_OFFSET = 1_000_000.0
MIN_BASE = 1e-6  # log2 of a zero base: a memory with relevance 0 still has a (very low) key
DEFAULT_BASE = 1.0
# decayedScore = 0.7 × hybrid + 0.3 × decayed: the weight of the decayed relevance (docs/conformance.md#memory-blend).
RELEVANCE_BLEND = 0.3


def base_relevance(values: Mapping[str, Any]) -> float:
    """The memory's `relevance_score`, clamped to [MIN_BASE, 1] (1 when absent or not a number)."""
    raw = values.get(BASE)
    if not isinstance(raw, int | float) or isinstance(raw, bool):
        return DEFAULT_BASE
    return min(1.0, max(MIN_BASE, float(raw)))


def _last_used(metadata: Mapping[str, Any], created_at: str) -> float | None:
    stamp = metadata.get(LAST_ACCESSED) or created_at
    return parse_timestamp(stamp) if isinstance(stamp, str) and stamp else None


def relevance_key(metadata: Mapping[str, Any], created_at: str) -> float | None:
    """The stored key `min_relevance` compares (None: no usable time to decay from)."""
    last = _last_used(metadata, created_at)
    if last is None:
        return None
    key = math.log2(base_relevance(metadata)) + last / HALF_LIFE_SECONDS
    return key + PINNED_OFFSET if metadata.get(PINNED) is True else key


def relevance_at(metadata: Mapping[str, Any], created_at: str, now: float) -> float:
    """relevance(now) of a memory from its metadata (see the module docstring); pinned: its base."""
    base = base_relevance(metadata)
    last = _last_used(metadata, created_at)
    if metadata.get(PINNED) is True or last is None:
        return base
    return base * math.pow(2.0, -max(0.0, now - last) / HALF_LIFE_SECONDS)


def relevance_floor(min_relevance: float, now: float) -> Condition:
    """The retrieval condition keeping memories whose relevance at `now` is at least `min_relevance`."""
    bound = math.log2(max(MIN_BASE, min_relevance)) + now / HALF_LIFE_SECONDS
    return Condition(RELEVANCE_KEY, "gte", (bound,), NUMBER)


def memory_metadata(
    metadata: Mapping[str, Any], prior: Mapping[str, Any] | None, created_at: str
) -> dict[str, Any]:
    """A memory's metadata as written: the service's fields carried over from `prior`, its key computed."""
    out = {k: v for k, v in metadata.items() if k not in (*KEPT_FIELDS, RELEVANCE_KEY)}
    out.update({k: prior[k] for k in KEPT_FIELDS if prior and prior.get(k) is not None})
    key = relevance_key(out, created_at)
    if key is not None:
        out[RELEVANCE_KEY] = key
    return out


def reinforced(metadata: Mapping[str, Any], created_at: str, uses: int, last: float) -> dict[str, Any]:
    """The metadata changes of `uses` more uses, the last at `last` (a later stored use is kept)."""
    stored = _last_used({LAST_ACCESSED: metadata.get(LAST_ACCESSED)}, "")
    when = max(last, stored) if stored is not None else last
    count = metadata.get(ACCESS_COUNT)
    changes: dict[str, Any] = {
        ACCESS_COUNT: (count if isinstance(count, int) else 0) + uses,
        LAST_ACCESSED: iso_timestamp(when),
    }
    changes[RELEVANCE_KEY] = relevance_key({**metadata, **changes}, created_at)
    return changes


def blended(fused: float, relevance: float, weight: float = RELEVANCE_BLEND) -> float:
    """The blend (docs/conformance.md#memory-blend): (1 − weight) × fused + weight × relevance (weight 0.3: 0.7 / 0.3)."""
    return (1.0 - weight) * fused + weight * relevance
