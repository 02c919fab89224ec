"""Write versions (docs/architecture.md, Write path): where a write's version comes from, and the two kinds
that must not mix.

A version is either a *sequence number* the caller keeps (`version`: 1, 2, 3…) or a *time in
milliseconds* (`updated_at`, or the arrival time when the write carries neither). Both are integers
compared as such, so an entity first written without a version is stored at ~1.7e12 and every later
`version: 7` would be refused as stale, forever. To make that trap impossible to fall into, versions
below CLOCK_VERSION_FLOOR are sequence numbers, versions at or above it are times, and a write whose
version is of the other kind than the stored one is refused with a 409 that explains (VersionSchemeError).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.errors import InvalidInputError, VersionConflictError, VersionSchemeError
from core.indexing.caller_vectors import vector_mark
from core.models import EntityKey, StoredEntity, WriteOutcome
from core.payload import INT64_MAX
from core.timestamps import parse_timestamp

MS = 1000.0
# 10^11 ms after the epoch is 1973-03-03: every time-derived version (arrival time, or the `updated_at`
# of any record from the last fifty years — archives from the 1990s included) is above it, and no sequence
# number anyone keeps reaches it (epoch *seconds* used as versions, ~1.7e9, stay sequence numbers too).
CLOCK_VERSION_FLOOR = 10**11
# How far ahead of the server's clock an `updated_at` may be (QUARRY_MAX_CLOCK_SKEW_SECONDS): five minutes,
# the skew between two machines' clocks MIT Kerberos tolerates by default (`clockskew` in krb5.conf).
MAX_CLOCK_SKEW_SECONDS = 300.0


def is_clock_version(version: int) -> bool:
    """True for a time-in-milliseconds version, False for a caller's sequence number."""
    return version >= CLOCK_VERSION_FLOOR


def write_version(
    body: Mapping[str, Any], now: float, max_skew_seconds: float = MAX_CLOCK_SKEW_SECONDS
) -> int:
    """The write's version: explicit `version`, else `updated_at` in ms, else arrival time in ms. An
    `updated_at` more than `max_skew_seconds` ahead of `now` is refused: stored as a version it would make
    every later write without a version stale until that date."""
    if body.get("version") is not None:
        return int(body["version"])
    stamp = parse_timestamp(body["updated_at"]) if body.get("updated_at") else None
    if stamp is not None and stamp > now + max_skew_seconds:
        raise InvalidInputError(
            "updated_at is in the future",
            {"updated_at": f"is more than {max_skew_seconds:g} s ahead of the server's clock"},
        )
    return int((stamp if stamp is not None else now) * MS)


def _kind(version: int) -> str:
    if is_clock_version(version):
        return f"{version}, a time in milliseconds (from `updated_at`, or the arrival time of a write without `version`)"
    return f"{version}, a sequence number (an explicit `version`)"


def check_scheme(key: EntityKey, stored_version: int, given_version: int) -> None:
    """VersionSchemeError when the given version is of the other kind than the stored one."""
    if is_clock_version(stored_version) == is_clock_version(given_version):
        return
    message = (
        f"'{key}' is stored at version {_kind(stored_version)}; this write carries version "
        f"{_kind(given_version)}. Mixing the two would let one kind win forever, so it is refused: "
        "send the same kind of version on every write of an entity (always `version`, or never)"
    )
    raise VersionSchemeError(str(key), stored_version, given_version, message)


def delete_version(given: int | None, stored_version: int | None, now: float) -> int | None:
    """The version a DELETE writes: the given one, else the next of the stored kind (None: unknown, unversioned)."""
    if given is not None:
        return given
    if stored_version is None:
        return None
    following = min(stored_version + 1, INT64_MAX)  # at the top, the delete ties and wins the tie
    if is_clock_version(stored_version):
        return max(following, min(int(now * MS), INT64_MAX))
    return following


def unchanged(
    prior: StoredEntity | None, version: int, body: Mapping[str, Any], mark: str = ""
) -> WriteOutcome | None:
    """`refused`, and VersionConflictError when a write at the stored version brings other content (a
    re-delivery is harmless; a different change at the same version would be lost). `mark`: the write's
    caller-vector fingerprint (core/indexing/caller_vectors.py; "" without one), content as much as the body is."""
    early = refused(prior, version)
    if early is WriteOutcome.DUPLICATE and prior is not None and not same_entity(prior, body, mark):
        raise VersionConflictError(str(prior.key), version)
    return early


def same_entity(stored: StoredEntity, body: Mapping[str, Any], mark: str) -> bool:
    """Whether a write holds what is stored: the same fields and the same caller vector (`mark`, its
    fingerprint: core/indexing/caller_vectors.py; "" for none)."""
    return vector_mark(stored.content_hash) == mark and same_content(stored.body, body)


def same_content(stored: Mapping[str, Any], body: Mapping[str, Any]) -> bool:
    """Whether two entity bodies hold the same fields (the `version` they carried aside)."""
    return {k: v for k, v in stored.items() if k != "version"} == {
        k: v for k, v in body.items() if k != "version"
    }


def refused(prior: StoredEntity | None, version: int) -> WriteOutcome | None:
    """STALE when older than stored (or equal to a tombstone: a delete wins a tie), DUPLICATE when equal."""
    if prior is None or version > prior.version:
        return None
    return WriteOutcome.STALE if version < prior.version or prior.deleted else WriteOutcome.DUPLICATE
