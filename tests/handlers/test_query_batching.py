"""Query batching in `quarry serve` (docs/architecture.md#query-batching): the searches waiting in a worker's
queue have their query embeddings made in one model call, and each answers as it would alone — the same
results in the same order, scores within the float tolerance of a batched forward pass; every tenant gets
only its own answers, and a request that fails its checks, or a model that fails, changes nothing."""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from core.errors import UnavailableError
from core.ports import Embedder
from core.search.query_batch import AheadVector, WaitingSearch
from handlers.lambda_functions import api
from handlers.local_server.devserver import make_server
from handlers.local_server.query_batching import SearchBatcher
from infra.text_models.ahead_embedder import AheadEmbedder
from infra.wiring.root import set_container
from tests.conftest import FakeEmbedder, make_container

ROOT = Path(__file__).resolve().parents[2]
KEYS = {
    "key-one": {"tenant": "t1", "scopes": ["read", "write", "admin"]},
    "key-two": {"tenant": "t2", "scopes": ["read", "write", "admin"]},
    "key-blind": {"tenant": "t1", "scopes": ["write"]},
}
SCORE_TOLERANCE = 2e-6  # a batched query vector moves ≤ 5e-8 a component; answers round scores to 6 decimals
WAIT_SECONDS = 30


class CallCounter(Embedder):
    """An embedder that embeds honestly with `inner` and records each `embed_query` call's texts."""

    def __init__(self, inner: Any, fail: bool = False) -> None:
        self.inner = inner
        self.query_calls: list[list[str]] = []
        self.fail = fail

    @property
    def dimension(self) -> int:
        return int(self.inner.dimension)

    @property
    def model_id(self) -> str:
        return str(self.inner.model_id)

    def embed(self, texts: Sequence[str]) -> list[Any]:
        return list(self.inner.embed(texts))

    def embed_query(self, texts: Sequence[str]) -> list[Any]:
        self.query_calls.append(list(texts))
        if self.fail:
            raise UnavailableError("embedder", "the model is down (test)")
        return list(self.inner.embed_query(texts))


def call(port: int, method: str, path: str, body: Any = None, key: str = "key-one") -> tuple[int, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        headers = {"authorization": f"Bearer {key}", "content-type": "application/json"}
        conn.request(method, path, json.dumps(body) if body is not None else None, headers)
        response = conn.getresponse()
        return response.status, json.loads(response.read() or b"null")
    finally:
        conn.close()


class Held:
    """A server whose engine can be held busy (a GET /health that waits), so requests queue behind it."""

    def __init__(self, max_batch: int) -> None:
        self.hold = threading.Event()
        self.entered = threading.Event()

        def gated(event: dict[str, Any], context: Any) -> dict[str, Any]:
            if event["rawPath"] == "/health" and not self.hold.is_set():
                self.entered.set()
                self.hold.wait(WAIT_SECONDS)
            return api.lambda_handler(event, context)

        batcher = SearchBatcher(max_batch) if max_batch > 1 else None
        self.httpd = make_server("127.0.0.1", 0, KEYS, gated, 1 << 20, batcher=batcher)
        self.port = int(self.httpd.server_address[1])
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def queued(self, requests: Sequence[tuple[str, Any, str]]) -> list[tuple[int, Any]]:
        """The answers to `requests` (method and path POST /search, body, key) sent at once while the engine
        is held, released once all of them wait in its queue."""
        self.hold.clear()
        self.entered.clear()
        holder = threading.Thread(target=call, args=(self.port, "GET", "/health"))
        holder.start()
        assert self.entered.wait(WAIT_SECONDS)
        answers: list[tuple[int, Any]] = [(0, None)] * len(requests)

        def send(i: int, body: Any, key: str) -> None:
            answers[i] = call(self.port, "POST", "/search", body, key)

        senders = [threading.Thread(target=send, args=(i, b, k)) for i, (_, b, k) in enumerate(requests)]
        for s in senders:
            s.start()
        deadline = time.monotonic() + WAIT_SECONDS
        while self.httpd.engine.waiting() < len(requests) and time.monotonic() < deadline:
            time.sleep(0.005)
        self.hold.set()
        for s in (*senders, holder):
            s.join(WAIT_SECONDS)
        return answers

    def close(self) -> None:
        self.hold.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(10)


@contextmanager
def held_server(container: Any, max_batch: int = 4) -> Iterator[Held]:
    set_container(container)
    server = Held(max_batch)
    try:
        yield server
    finally:
        server.close()
        set_container(None)


def ranking(answer: tuple[int, Any]) -> list[str]:
    status, body = answer
    assert status == 200, body
    return [f"{r['entity_type']}:{r['entity_id']}" for r in body["results"]]


def assert_same_answer(batched: tuple[int, Any], alone: tuple[int, Any]) -> None:
    """The same results in the same order, scores within the tolerance, the rest of the answer identical."""
    assert ranking(batched) == ranking(alone)
    got, want = batched[1], alone[1]
    for a, b in zip(got["results"], want["results"], strict=True):
        assert abs(a.pop("score") - b.pop("score")) <= SCORE_TOLERANCE
        for leg in ("lexical", "vector"):
            x, y = (a.get("explain") or {}).get(leg) or {}, (b.get("explain") or {}).get(leg) or {}
            if x.get("score") is not None:
                assert abs(x.pop("score") - y.pop("score")) <= SCORE_TOLERANCE
    for body in (got, want):
        body.pop("took_ms", None)
    assert got == want


def write_corpus(port: int, key: str, texts: Sequence[str], prefix: str) -> None:
    for i, text in enumerate(texts):
        status, body = call(
            port, "PUT", f"/entities/task/{prefix}{i}", {"title": text[:60], "description": text}, key
        )
        assert status == 200, body


FAKE_TEXTS = [
    "quarterly report draft for the board",
    "plan the garden beds and the compost bin",
    "fix the sign-in page for locked-out users",
    "invoice customers by metered usage",
    "report the quarterly usage to finance",
    "passkeys for the sign-in page",
]
FAKE_QUERIES = ["quarterly report", "sign-in users", "garden compost", "usage invoices", "board draft"]


@pytest.fixture
def counted(tmp_path: Path) -> CallCounter:
    return CallCounter(FakeEmbedder())


def test_waiting_searches_embed_in_one_call_and_answer_as_alone(tmp_path: Path, counted: CallCounter) -> None:
    c = make_container(tmp_path / "data", counted, cache_ttl_seconds=0)
    with held_server(c) as server:
        write_corpus(server.port, "key-one", FAKE_TEXTS, "e")
        searches = [
            ("POST", {"query": q, "strategy": "hybrid", "explain": True}, "key-one") for q in FAKE_QUERIES[:4]
        ]
        counted.query_calls.clear()
        batched = server.queued(searches)
        assert [sorted(texts) for texts in counted.query_calls] == [
            sorted(FAKE_QUERIES[:4])
        ]  # one call, four
        counted.query_calls.clear()
        alone = [call(server.port, "POST", "/search", body, key) for _, body, key in searches]
        assert counted.query_calls == [[q] for q in FAKE_QUERIES[:4]]  # one at a time: each its own
    for b, a in zip(batched, alone, strict=True):
        assert_same_answer(b, a)


def test_searches_that_embed_nothing_or_fail_their_checks_are_skipped(
    tmp_path: Path, counted: CallCounter
) -> None:
    c = make_container(tmp_path / "data", counted, cache_ttl_seconds=0)
    with held_server(c, max_batch=8) as server:
        write_corpus(server.port, "key-one", FAKE_TEXTS, "e")
        searches = [
            ("POST", {"query": "quarterly report", "strategy": "semantic"}, "key-one"),
            ("POST", {"query": "garden compost", "strategy": "keyword"}, "key-one"),
            ("POST", {"query": "sign-in users", "limit": 0}, "key-one"),  # a 400
            ("POST", {"query": "usage invoices"}, "key-blind"),  # no read scope: a 403
            ("POST", {"query": "   "}, "key-one"),  # empty: nothing to embed
            ("POST", {"query": "board draft", "strategy": "auto"}, "key-one"),
        ]
        counted.query_calls.clear()
        batched = server.queued(searches)
        assert [sorted(texts) for texts in counted.query_calls] == [["board draft", "quarterly report"]]
        counted.query_calls.clear()
        alone = [call(server.port, "POST", "/search", body, key) for _, body, key in searches]
    assert [s for s, _ in batched] == [s for s, _ in alone] == [200, 200, 400, 403, 200, 200]
    for b, a in zip(batched, alone, strict=True):
        if b[0] == 200:
            assert_same_answer(b, a)
        else:
            assert b == a


def test_each_tenant_gets_its_own_answers_from_one_batch(tmp_path: Path, counted: CallCounter) -> None:
    c = make_container(tmp_path / "data", counted, cache_ttl_seconds=0)
    with held_server(c) as server:
        write_corpus(server.port, "key-one", FAKE_TEXTS[:3], "one-")
        write_corpus(server.port, "key-two", FAKE_TEXTS[3:], "two-")
        body = {"query": "quarterly report usage sign-in", "strategy": "hybrid"}
        counted.query_calls.clear()
        batched = server.queued(
            [("POST", body, "key-one"), ("POST", body, "key-two"), ("POST", body, "key-one")]
        )
        assert len(counted.query_calls) == 1  # one call for both tenants' searches
        alone = {k: call(server.port, "POST", "/search", body, k) for k in ("key-one", "key-two")}
    assert all(i.startswith("task:one-") for i in ranking(batched[0]) + ranking(batched[2]))
    assert ranking(batched[1]) and all(i.startswith("task:two-") for i in ranking(batched[1]))
    assert_same_answer(batched[0], alone["key-one"])
    assert_same_answer(batched[1], alone["key-two"])


def test_a_model_failure_ahead_changes_no_answer(tmp_path: Path) -> None:
    failing = CallCounter(FakeEmbedder(), fail=True)
    c = make_container(tmp_path / "data", failing, cache_ttl_seconds=0)
    with held_server(c) as server:
        write_corpus(server.port, "key-one", FAKE_TEXTS, "e")
        searches = [("POST", {"query": q, "strategy": "hybrid"}, "key-one") for q in FAKE_QUERIES[:3]]
        batched = server.queued(searches)
        alone = [call(server.port, "POST", "/search", body, key) for _, body, key in searches]
    for b, a in zip(batched, alone, strict=True):
        assert b[1]["query_info"]["degraded"] and b[1]["query_info"]["strategy"] == "keyword"
        assert_same_answer(b, a)


def test_query_batch_of_one_turns_it_off(tmp_path: Path, counted: CallCounter) -> None:
    c = make_container(tmp_path / "data", counted, cache_ttl_seconds=0)
    with held_server(c, max_batch=1) as server:
        write_corpus(server.port, "key-one", FAKE_TEXTS, "e")
        counted.query_calls.clear()
        server.queued([("POST", {"query": q}, "key-one") for q in FAKE_QUERIES[:3]])
    assert sorted(counted.query_calls) == sorted([q] for q in FAKE_QUERIES[:3])


def test_real_model_rankings_identical_batched_and_alone(tmp_path: Path, real_embedder: Any) -> None:
    """The real model over a real corpus (the MiniLM reference texts, SciFact abstracts): every query's
    ranking is the same embedded in a batch of four as alone."""
    lines = (ROOT / "tests" / "fixtures" / "minilm-reference.jsonl").read_text().splitlines()
    texts = [json.loads(line)["text"] for line in lines]
    lengths = [3, 6, 9, 14] * len(texts)  # words from the middle of each text, of four lengths
    queries = [" ".join(t.split()[10 : 10 + n])[:300] for t, n in zip(texts, lengths, strict=False)]
    counted = CallCounter(real_embedder)
    c = make_container(tmp_path / "data", counted, cache_ttl_seconds=0)
    with held_server(c) as server:
        write_corpus(server.port, "key-one", texts, "doc")
        searches = [("POST", {"query": q, "strategy": "hybrid", "limit": 10}, "key-one") for q in queries]
        counted.query_calls.clear()
        batched = [
            a for start in range(0, len(searches), 4) for a in server.queued(searches[start : start + 4])
        ]
        assert max(len(texts) for texts in counted.query_calls) == 4
        alone = [call(server.port, "POST", "/search", body, key) for _, body, key in searches]
    for b, a in zip(batched, alone, strict=True):
        assert_same_answer(b, a)


class TestAheadEmbedder:
    """The vector made ahead goes to its own request's search only: its tenant, its model, its text, once."""

    def setup_method(self) -> None:
        self.inner = CallCounter(FakeEmbedder())
        self.ahead = AheadEmbedder(self.inner)
        self.marker = np.full(64, 0.125, dtype=np.float32)  # not what the model makes: shows who answered

    def made(self, tenant: str = "t1", vectors_id: str = "fake-hashing", text: str = "hello") -> AheadVector:
        return AheadVector(tenant, vectors_id, text, self.marker)

    def test_served_once_to_its_tenant_model_and_text(self) -> None:
        with self.ahead.serving(self.made()):
            assert self.ahead.for_tenant("t2").embed_query(["hello"])[0] is not self.marker
            assert self.ahead.for_tenant("t1").embed_query(["other"])[0] is not self.marker
            assert self.ahead.embed_query(["hello"])[0] is not self.marker  # no tenant named
            view = self.ahead.for_tenant("t1")
            assert view is self.ahead.for_tenant("t1")  # one view per request: a search sees no model switch
            assert view.embed_query(["hello"])[0] is self.marker
            assert view.embed_query(["hello"])[0] is not self.marker  # taken once
        assert self.ahead.for_tenant("t1") is self.inner  # outside a request, the embedder itself
        assert self.inner.query_calls == [["hello"], ["other"], ["hello"], ["hello"]]

    def test_a_switched_model_embeds_again(self) -> None:
        with self.ahead.serving(self.made(vectors_id="the-model-before-a-reindex")):
            assert self.ahead.for_tenant("t1").embed_query(["hello"])[0] is not self.marker

    def test_another_thread_sees_nothing(self) -> None:
        seen: list[Any] = []
        with self.ahead.serving(self.made()):
            other = threading.Thread(
                target=lambda: seen.append(self.ahead.for_tenant("t1").embed_query(["hello"]))
            )
            other.start()
            other.join()
        assert seen[0][0] is not self.marker


def test_embed_ahead_plans_each_search_as_the_search_does(tmp_path: Path, counted: CallCounter) -> None:
    c = make_container(tmp_path / "data", counted, query_batch=2)
    waiting = [
        WaitingSearch("t1", json.dumps({"query": "alpha beta", "strategy": "semantic"})),
        None,
        WaitingSearch("t1", "{not json"),
        WaitingSearch("t2", json.dumps({"query": "gamma", "query_vector": [1.0] * 64})),
        WaitingSearch("t2", json.dumps({"query": "delta epsilon"})),
        WaitingSearch("t1", json.dumps({"query": "zeta"})),
    ]
    got = c.query_batch.embed_ahead(waiting)
    # two a call at most; "zeta", left alone, is its search's to embed
    assert [g.text if g else None for g in got] == ["alpha beta", None, None, None, "delta epsilon", None]
    assert counted.query_calls == [["alpha beta", "delta epsilon"]]
    assert [g.tenant_id for g in got if g] == ["t1", "t2"]
    alone = FakeEmbedder().embed_query(["alpha beta"])[0]
    assert got[0] is not None and np.allclose(got[0].vector, alone)
