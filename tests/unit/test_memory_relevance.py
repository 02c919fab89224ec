"""A memory's decayed relevance (core/memory/relevance.py) and the batching of its uses
(core/memory/reinforcement.py): the floor on the stored key agrees with the decay it stands for, and uses
wait in a bounded buffer."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from core.memory.reinforcement import Reinforcement
from core.memory.relevance import (
    HALF_LIFE_SECONDS,
    RELEVANCE_BLEND,
    blended,
    relevance_at,
    relevance_floor,
    relevance_key,
)
from core.models import EntityKey
from core.timestamps import iso_timestamp
from tests.fakes import NOW, FakeSearchIndex

CREATED = iso_timestamp(NOW)


def test_relevance_halves_every_half_life_and_a_pinned_memory_keeps_its_base() -> None:
    memory = {"relevance_score": 0.8}
    assert relevance_at(memory, CREATED, NOW) == 0.8
    assert math.isclose(relevance_at(memory, CREATED, NOW + HALF_LIFE_SECONDS), 0.4)
    assert math.isclose(relevance_at(memory, CREATED, NOW + 3 * HALF_LIFE_SECONDS), 0.1)
    assert relevance_at({**memory, "pinned": True}, CREATED, NOW + 100 * HALF_LIFE_SECONDS) == 0.8
    used = {**memory, "last_accessed_at": iso_timestamp(NOW + HALF_LIFE_SECONDS)}
    assert relevance_at(used, CREATED, NOW + HALF_LIFE_SECONDS) == 0.8  # a use restarts the decay


def test_the_seeds_blend() -> None:
    assert RELEVANCE_BLEND == 0.3
    assert math.isclose(blended(0.5, 1.0), 0.7 * 0.5 + 0.3 * 1.0)


@given(
    base=st.floats(0.001, 1.0),
    age_days=st.floats(0.0, 3650.0),
    floor=st.floats(0.001, 1.0),
)
def test_the_floor_on_the_stored_key_keeps_exactly_what_the_decay_keeps(
    base: float, age_days: float, floor: float
) -> None:
    memory = {"relevance_score": base}
    now = NOW + age_days * 86_400
    relevance = relevance_at(memory, CREATED, now)
    key = relevance_key(memory, CREATED)
    bound = relevance_floor(floor, now).values[0]
    assert key is not None and isinstance(bound, float)
    if not math.isclose(relevance, floor, rel_tol=1e-9):
        assert (key >= bound) == (relevance >= floor)


def test_uses_wait_until_the_interval_and_the_buffer_is_bounded() -> None:
    index = FakeSearchIndex()
    buffer = Reinforcement(index, flush_seconds=5.0, flush_uses=100, max_pending=2)
    keys = [EntityKey("memory", f"m{i}") for i in range(3)]
    buffer.used("t", keys, NOW)
    assert buffer.dropped == 1  # the third memory did not fit
    buffer.used("t", [EntityKey("task", "x")], NOW)  # only memories are counted
    assert buffer.flush(NOW) == 0  # none of them is stored: nothing written, nothing raised
    assert buffer.written == 0
