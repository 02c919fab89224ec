"""Shared fixtures: the real local embedder (loaded once), deterministic fakes, fresh local containers,
and API Gateway v2 events built from the samples in events/."""

from __future__ import annotations

import copy
import hashlib
import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from core.ports import Embedder

os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "QuarryTests")
os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")

ROOT = Path(__file__).resolve().parent.parent
EVENTS = ROOT / "events"


class FakeEmbedder(Embedder):
    """Deterministic bag-of-words hashing embedder: similar wording → similar vectors. Counts calls."""

    def __init__(self, dimension: int = 64) -> None:
        self._dim = dimension
        self.calls = 0
        self.texts: list[str] = []

    @property
    def dimension(self) -> int:
        return self._dim

    @property
    def model_id(self) -> str:
        return "fake-hashing"

    def embed(self, texts: Sequence[str]) -> list[np.ndarray]:
        self.calls += 1
        self.texts.extend(texts)
        out = []
        for text in texts:
            vec = np.zeros(self._dim, dtype=np.float32)
            for word in text.lower().split():
                vec[int(hashlib.md5(word.encode()).hexdigest(), 16) % self._dim] += 1.0
            norm = float(np.linalg.norm(vec)) or 1.0
            out.append(vec / norm)
        return out

    def embed_query(self, texts: Sequence[str]) -> list[np.ndarray]:
        return self.embed(texts)


class CountingEmbedder(Embedder):
    """Wraps a real embedder and counts the texts it was asked to embed."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.texts: list[str] = []

    @property
    def dimension(self) -> int:
        return int(self.inner.dimension)

    @property
    def model_id(self) -> str:
        return str(self.inner.model_id)

    def embed(self, texts: Sequence[str]) -> list[np.ndarray]:
        self.texts.extend(texts)
        return list(self.inner.embed(texts))

    def embed_query(self, texts: Sequence[str]) -> list[np.ndarray]:
        self.texts.extend(texts)
        return list(self.inner.embed_query(texts))


@pytest.fixture(scope="session")
def real_embedder() -> Any:
    """all-MiniLM-L6-v2, loaded offline once per test session."""
    from infra.local.onnx.embedder import LocalEmbedder

    embedder = LocalEmbedder()
    embedder.embed(["warm up"])
    return embedder


@pytest.fixture
def fake_embedder() -> FakeEmbedder:
    return FakeEmbedder()


def make_container(data_dir: Path, embedder: Any | None = None, clock: Any = None, **settings: Any) -> Any:
    """A fresh local Container on `data_dir`, optionally with a given embedder and clock."""
    from infra.config.settings import load_settings
    from infra.wiring.root import Container

    c = Container(load_settings(data_dir=data_dir, **settings), **({"clock": clock} if clock else {}))
    if embedder is not None:
        c.override(embedder=embedder, configured_embedder=embedder)  # the latter sizes an OpenSearch index
    return c


@pytest.fixture
def local(tmp_path: Path, fake_embedder: FakeEmbedder) -> Iterator[Any]:
    """A fresh local container (fake embedder) installed as the handlers' composition root."""
    from infra.wiring.root import set_container

    c = make_container(tmp_path / "data", fake_embedder)
    set_container(c)
    yield c
    set_container(None)


@pytest.fixture
def semantic(tmp_path: Path, real_embedder: Any) -> Iterator[Any]:
    """A fresh local container with the real MiniLM embedder, installed for the handlers."""
    from infra.wiring.root import set_container

    c = make_container(tmp_path / "data", CountingEmbedder(real_embedder))
    set_container(c)
    yield c
    set_container(None)


OPENSEARCH_HOWTO = (
    "no OpenSearch node: QUARRY_OPENSEARCH_URL is not set. `make test` starts a local node (needs java 17 "
    "and mvn); or `make opensearch-up` and QUARRY_OPENSEARCH_URL=http://127.0.0.1:9200 pytest -m live"
)


@pytest.fixture(scope="session")
def opensearch_url() -> str:
    """The live cluster's URL; without one the test skips, or fails when QUARRY_REQUIRE_OPENSEARCH=1 (CI)."""
    url = os.environ.get("QUARRY_OPENSEARCH_URL", "")
    if not url:
        if os.environ.get("QUARRY_REQUIRE_OPENSEARCH", "") not in ("", "0"):
            pytest.fail(f"QUARRY_REQUIRE_OPENSEARCH is set but there is {OPENSEARCH_HOWTO}", pytrace=False)
        pytest.skip(OPENSEARCH_HOWTO)
    return url


TOKENS_HOWTO = (
    "the `tokens` extra (bpe-openai) is not importable: `make test` installs it into .cache/tokens-site and "
    "puts that on PYTHONPATH; or `make setup-tokens`"
)


def require_tokens_extra() -> None:
    """Skip unless the tokens extra is importable; fail instead when QUARRY_REQUIRE_TOKENS=1 (CI)."""
    import importlib.util

    if importlib.util.find_spec("bpe_openai") is not None:
        return
    if os.environ.get("QUARRY_REQUIRE_TOKENS", "") not in ("", "0"):
        pytest.fail(f"QUARRY_REQUIRE_TOKENS is set but {TOKENS_HOWTO}", pytrace=False)
    pytest.skip(TOKENS_HOWTO)


def load_event(name: str) -> dict[str, Any]:
    """A sample event from events/ (a deep copy, free to modify)."""
    return copy.deepcopy(json.loads((EVENTS / f"{name}.json").read_text()))


def api_event(
    name: str,
    *,
    tenant: str = "acme",
    scopes: Sequence[str] = ("read", "write", "admin"),
    body: Any = None,
    path: str | None = None,
    raw_body: str | None = None,
    headers: dict[str, str] | None = None,
    method: str | None = None,
    query: dict[str, str] | None = None,
) -> dict[str, Any]:
    """An events/ sample with the authorizer context, body, path or method replaced."""
    event = load_event(name)
    auth = event["requestContext"].setdefault("authorizer", {}) or {}
    event["requestContext"]["authorizer"] = auth
    if tenant is None:
        event["requestContext"]["authorizer"] = None
    else:
        auth["lambda"] = {"tenant": tenant, "scopes": list(scopes)}
    if body is not None:
        event["body"] = json.dumps(body)
    if raw_body is not None:
        event["body"] = raw_body
    if path is not None:
        event["rawPath"] = path
        event["requestContext"]["http"]["path"] = path
    if method is not None:
        event["requestContext"]["http"]["method"] = method
    if headers:
        event["headers"].update(headers)
    if query is not None:
        event["queryStringParameters"] = query
        event["rawQueryString"] = "&".join(f"{k}={v}" for k, v in query.items())
    return event


def invoke(event: dict[str, Any]) -> tuple[int, Any]:
    """Run the HTTP API Lambda on an event; (status, decoded JSON body)."""
    from handlers.lambda_functions.api import lambda_handler
    from handlers.local_server.devserver import FakeLambdaContext

    result = lambda_handler(event, FakeLambdaContext(aws_request_id="test"))
    body = result.get("body")
    return int(result["statusCode"]), json.loads(body) if body else None
