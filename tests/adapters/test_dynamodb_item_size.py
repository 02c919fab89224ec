"""A value DynamoDB refuses for its size (an item holds at most 400 KB) is the caller's 413, never a 500:
the state store on moto, given an overlay no core check bounded."""

from __future__ import annotations

import pytest

from core.errors import PayloadTooLargeError
from infra.dynamodb.state import DynamoStateStore
from tests.adapters.moto_support import moto_dynamodb


def test_an_item_over_dynamodbs_size_limit_is_payload_too_large(monkeypatch: pytest.MonkeyPatch) -> None:
    with moto_dynamodb(monkeypatch) as client:
        store = DynamoStateStore("state-size", client=client)
        store.ensure_tables()
        with pytest.raises(PayloadTooLargeError) as refused:
            store.put_overlay("acme", "big", {"mission": "x" * 500_000})
        assert refused.value.limit == 400 * 1024 and "exceeds" in refused.value.message
        assert store.get_overlay("acme", "big") is None
