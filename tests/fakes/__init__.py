"""In-memory fakes of the ports (core/ports/) for fast use-case tests through the composition root
(infra/wiring/root.py: `Container(settings, index=..., embedder=...)`), in the manner of cosmicpython's unit tests: the
fakes are passed to the root and hold state the tests assert on. FakeSearchIndex (tests/fakes/index.py)
and FakeStateStore (tests/fakes/state.py) pass their ports' contract suites in tests/adapters; the cache is
infra/local/cache.py's MemoryCache (already in the Cache contract) with its entries made readable."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from core.errors import UnavailableError
from core.models import Vector
from core.ports import Embedder
from infra.local.cache import MemoryCache
from tests.conftest import FakeEmbedder
from tests.fakes.index import FakeSearchIndex
from tests.fakes.snapshots import FakeSearchSnapshots
from tests.fakes.state import FakeStateStore

NOW = 1_768_435_200.0  # 2026-01-15T00:00:00Z


class FakeClock:
    """A wall clock that stands still until moved (`advance`); the monotonic clock advances 1 ms per reading."""

    def __init__(self, now: float = NOW) -> None:
        self._now = now
        self._mono = 0.0

    def now(self) -> float:
        return self._now

    def monotonic(self) -> float:
        self._mono += 0.001
        return self._mono

    def advance(self, seconds: float) -> None:
        self._now += seconds


class FakeIds:
    """Predictable ids: `a-1`, `a-2`, … (the container's `new_id`)."""

    def __init__(self, prefix: str = "a") -> None:
        self._next = itertools.count(1)
        self._prefix = prefix

    def __call__(self) -> str:
        return f"{self._prefix}-{next(self._next)}"


class FakeCache(MemoryCache):
    """The in-process cache, with the keys it holds readable by a test."""

    def keys(self, prefix: str = "") -> list[str]:
        """Keys of the values held (live or not yet swept), starting with `prefix`."""
        with self._lock:
            return sorted(k for k in self._entries if k.startswith(prefix))


class RaisingEmbedder(Embedder):
    """An embedder that is down: every call raises UnavailableError (and is counted)."""

    model_id = "down"
    dimension = 64  # a plain attribute (the port's is a property), set per instance below

    def __init__(self, dimension: int = 64) -> None:
        self.dimension = dimension
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        self.calls += 1
        raise UnavailableError("embedder", "model endpoint unreachable")

    def embed_query(self, texts: Sequence[str]) -> list[Vector]:
        return self.embed(texts)


def fake_container(data_dir: Path, **parts: Any) -> Any:
    """A Container (infra/wiring/root.py) whose every port is a fake: index, state, cache, clock, embedder and id
    source, each replaceable by keyword. `data_dir` only satisfies the settings: nothing is written there."""
    from infra.config.settings import load_settings
    from infra.wiring.root import Container

    embedder = parts.pop("embedder", FakeEmbedder())
    fakes: dict[str, Any] = {
        "index": FakeSearchIndex(),
        "state": FakeStateStore(),
        "cache": FakeCache(),
        "snapshots": FakeSearchSnapshots(),
        "clock": FakeClock(),
        "new_id": FakeIds(),
        "embedder": embedder,
        "configured_embedder": embedder,
    }
    return Container(load_settings(data_dir=data_dir), **(fakes | parts))


__all__ = [
    "NOW",
    "FakeCache",
    "FakeClock",
    "FakeIds",
    "FakeSearchIndex",
    "FakeSearchSnapshots",
    "FakeStateStore",
    "RaisingEmbedder",
    "fake_container",
]
