"""FakeStateStore (tests/fakes/state.py) against the StateStore contract, so the use-case tests that run on
it stand for the real stores."""

from __future__ import annotations

import pytest

from tests.adapters.statestore_contract import StateStoreContract
from tests.fakes.state import FakeStateStore


@pytest.fixture
def store():
    return FakeStateStore()


class TestFakeStateStore(StateStoreContract):
    """The shared contract, in memory."""
