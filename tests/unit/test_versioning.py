"""The two kinds of version (core/indexing/versioning.py): sequence numbers and times in ms never mix silently."""

from __future__ import annotations

import pytest

from core.errors import VersionSchemeError
from core.indexing.versioning import check_scheme, delete_version, write_version
from core.models import EntityKey

KEY = EntityKey("task", "t-1")
NOW = 1_795_000_000.0  # seconds


@pytest.mark.parametrize(
    ("stored", "given"),
    [
        (1, 2),  # sequence numbers
        (1_700_000_000, 1_700_000_100),  # epoch seconds used as versions: still sequence numbers
        (write_version({"updated_at": "1995-05-01T00:00:00Z"}, NOW), write_version({}, NOW)),  # archive → now
        (write_version({}, NOW), write_version({"updated_at": "2026-01-01T00:00:00Z"}, NOW)),
    ],
)
def test_versions_of_one_kind_compare_freely(stored: int, given: int) -> None:
    check_scheme(KEY, stored, given)
    check_scheme(KEY, given, stored)


@pytest.mark.parametrize(("stored", "given"), [(write_version({}, NOW), 7), (7, write_version({}, NOW))])
def test_mixing_the_kinds_is_refused_with_an_explanation(stored: int, given: int) -> None:
    with pytest.raises(VersionSchemeError) as raised:
        check_scheme(KEY, stored, given)
    assert "time in milliseconds" in raised.value.message and "sequence number" in raised.value.message
    assert raised.value.fields == {"version": raised.value.message}


def test_a_versionless_delete_takes_the_next_version_of_the_stored_kind() -> None:
    assert delete_version(None, 4, NOW) == 5
    assert delete_version(None, int(NOW * 1000) - 10, NOW) == int(NOW * 1000)
    assert delete_version(9, 4, NOW) == 9
    assert delete_version(None, None, NOW) is None


def test_a_versionless_delete_of_the_largest_version_ties_instead_of_overflowing() -> None:
    top = 2**63 - 1  # the largest version a store holds (core/payload.py INT64_MAX)
    assert delete_version(None, top, 0.0) == top
    assert delete_version(None, top - 1, 0.0) == top
