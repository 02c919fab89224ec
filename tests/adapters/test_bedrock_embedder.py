"""BedrockEmbedder against a real botocore `bedrock-runtime` client: requests checked with Stubber, and a
loopback-free transport (a `before-send` hook answering like Titan v2, or failing as scripted) under
botocore's own retry loop (standard mode, the embedder's default client) for retries and batches."""

from __future__ import annotations

import io
import json
import threading
import time
from typing import Any

import numpy as np
import pytest
import urllib3
from botocore.awsrequest import AWSResponse
from botocore.exceptions import EndpointConnectionError
from botocore.response import StreamingBody
from botocore.stub import Stubber

from core.errors import InvalidInputError, UnavailableError
from infra.text_models.bedrock import MAX_INPUT_CHARS, TITAN_V2_MODEL_ID, BedrockEmbedder, default_client

REGION = "us-east-1"


class JsonBody:
    """Matches a request body by its parsed JSON, so key order does not matter."""

    def __init__(self, expected: dict[str, Any]) -> None:
        self.expected = expected

    def __eq__(self, other: object) -> bool:
        return isinstance(other, (str, bytes)) and json.loads(other) == self.expected

    def __repr__(self) -> str:
        return f"JsonBody({self.expected!r})"


def make_client(**plan: Any) -> Any:
    """The embedder's default client (botocore standard-mode retries sized to the budget) with throwaway
    credentials; it never reaches the network in tests."""
    return default_client(REGION, aws_access_key_id="testing", aws_secret_access_key="testing", **plan)


def titan_body(embedding: list[float]) -> StreamingBody:
    """A Titan v2 response body as InvokeModel returns it (a stream)."""
    raw = json.dumps(
        {"embedding": embedding, "inputTextTokenCount": 3, "embeddingsByType": {"float": embedding}}
    ).encode()
    return StreamingBody(io.BytesIO(raw), len(raw))


def expected_request(text: str, dimensions: int) -> dict[str, Any]:
    return {
        "modelId": TITAN_V2_MODEL_ID,
        "contentType": "application/json",
        "accept": "application/json",
        "body": JsonBody({"inputText": text, "dimensions": dimensions, "normalize": True}),
    }


def ok(stub: Stubber, text: str, embedding: list[float], dimensions: int) -> None:
    stub.add_response(
        "invoke_model",
        {"body": titan_body(embedding), "contentType": "application/json"},
        expected_request(text, dimensions),
    )


def almost_unit(dimensions: int, hot: int) -> list[float]:
    """What Titan returns with normalize=true: unit length up to float rounding, a few significant axes."""
    vector = np.full(dimensions, 0.01)
    vector[hot] = 1.0
    return [float(round(x, 6)) for x in vector / np.linalg.norm(vector)]


@pytest.fixture
def client() -> Any:
    return make_client()


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """botocore's backoff waits (botocore.endpoint sleeps between attempts), recorded instead of slept."""
    import types

    import botocore.endpoint

    waits: list[float] = []
    monkeypatch.setattr(botocore.endpoint, "time", types.SimpleNamespace(sleep=waits.append))
    return waits


def test_request_shape_and_response_become_float32_unit_vectors(client: Any, sleeps: list[float]) -> None:
    # Given an embedder configured for 256 dimensions
    embedder = BedrockEmbedder(client, dimensions=256)
    with Stubber(client) as stub:
        ok(stub, "fix the login bug", almost_unit(256, hot=7), 256)
        # When one text is embedded
        [vector] = embedder.embed(["fix the login bug"])
        stub.assert_no_pending_responses()
    # Then the request named Titan v2, asked for 256 normalised dimensions, and the answer is a unit vector
    assert vector.dtype == np.float32
    assert vector.shape == (256,)
    assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-6
    assert int(np.argmax(vector)) == 7
    assert embedder.dimension == 256
    assert embedder.model_id == TITAN_V2_MODEL_ID
    assert sleeps == []


def test_default_dimension_is_1024_and_other_sizes_are_rejected(client: Any) -> None:
    embedder = BedrockEmbedder(client)
    with Stubber(client) as stub:
        ok(stub, "hello", almost_unit(1024, hot=0), 1024)
        [vector] = embedder.embed(["hello"])
    assert vector.shape == (1024,)
    with pytest.raises(ValueError, match="256, 512, 1024"):
        BedrockEmbedder(client, dimensions=384)


def scripted(client: Any, failures: list[tuple[int, str]], dimensions: int = 256) -> TitanTransport:
    """Answer InvokeModel through `client`'s own retry loop: the scripted failures first, then Titan."""
    transport = TitanTransport(dimensions, failures=failures)
    client.meta.events.register("before-send.bedrock-runtime.InvokeModel", transport)
    return transport


@pytest.mark.parametrize(
    ("failures", "longest_waits"),
    [
        ([(429, "ThrottlingException"), (429, "ThrottlingException")], [1.0, 2.0]),  # throttling: 1 s base
        ([(429, "ModelNotReadyException"), (503, "ServiceUnavailableException")], [0.05, 0.1]),
        ([(500, "InternalServerException"), (502, "")], [0.05, 0.1]),
    ],
)
def test_transient_failures_are_retried_by_botocore_with_jittered_backoff(
    client: Any, sleeps: list[float], failures: list[tuple[int, str]], longest_waits: list[float]
) -> None:
    transport = scripted(client, failures, dimensions=512)
    [vector] = BedrockEmbedder(client, dimensions=512).embed(["retry me 3"])
    assert int(np.argmax(vector)) == 3 and transport.calls == 3
    # two waits, each within botocore's standard-mode window for its kind of failure
    assert len(sleeps) == 2 and all(0.0 <= w <= top for w, top in zip(sleeps, longest_waits, strict=True))


def test_persistent_throttling_becomes_unavailable_after_bounded_attempts(
    client: Any, sleeps: list[float]
) -> None:
    transport = scripted(client, [(429, "ThrottlingException")] * 5)
    with pytest.raises(UnavailableError) as caught:
        BedrockEmbedder(client, dimensions=256).embed(["busy 1"])
    assert transport.calls == 3 and len(sleeps) == 2  # the default budget buys three attempts
    assert caught.value.backend == "bedrock"
    assert "ThrottlingException" in caught.value.message
    assert caught.value.retry_after > 0


def test_a_short_budget_buys_fewer_attempts() -> None:
    from infra.text_models.bedrock import DEFAULT_BUDGET_SECONDS, retry_plan, worst_backoff

    for budget in (1.2, 3.0, 5.0, DEFAULT_BUDGET_SECONDS, 20.0):
        attempts, connect, read = retry_plan(budget)
        # every attempt timing out and botocore's longest waits still end within the budget
        assert attempts * (connect + read) + worst_backoff(attempts) <= budget + 1e-9
    assert retry_plan(1.2)[0] == 1 and retry_plan(DEFAULT_BUDGET_SECONDS)[0] == 3
    client = make_client(budget_seconds=1.2)
    assert client.meta.config.retries == {"mode": "standard", "total_max_attempts": 1}


@pytest.mark.parametrize(
    ("code", "status"), [("AccessDeniedException", 403), ("ResourceNotFoundException", 404)]
)
def test_configuration_errors_are_unavailable_without_retry(
    client: Any, sleeps: list[float], code: str, status: int
) -> None:
    transport = scripted(client, [(status, code)])
    with pytest.raises(UnavailableError, match=code):
        BedrockEmbedder(client, dimensions=256).embed(["anything 1"])
    assert transport.calls == 1 and sleeps == []


def test_validation_error_is_invalid_input_naming_the_text(client: Any, sleeps: list[float]) -> None:
    transport = scripted(client, [(400, "ValidationException")])
    with pytest.raises(InvalidInputError) as caught:
        BedrockEmbedder(client, dimensions=256).embed(["too strange 2"])
    assert (
        list(caught.value.fields) == ["texts[0]"] and "scripted ValidationException" in caught.value.message
    )
    assert transport.calls == 1 and sleeps == []


def test_blank_text_is_rejected_before_any_call(client: Any) -> None:
    embedder = BedrockEmbedder(client, dimensions=256)
    with Stubber(client) as stub, pytest.raises(InvalidInputError) as caught:
        embedder.embed(["fine", "   "])
        stub.assert_no_pending_responses()
    assert caught.value.fields == {"texts[1]": "must not be blank"}


def test_over_long_text_is_cut_to_the_model_limit(client: Any) -> None:
    embedder = BedrockEmbedder(client, dimensions=256)
    text = "word " * (MAX_INPUT_CHARS // 4)
    with Stubber(client) as stub:
        ok(stub, text[:MAX_INPUT_CHARS], almost_unit(256, hot=1), 256)
        [vector] = embedder.embed([text])
        stub.assert_no_pending_responses()
    assert vector.shape == (256,)


@pytest.mark.parametrize(
    ("embedding", "reason"),
    [([0.5] * 255, "255 values"), ([0.0] * 256, "zero"), (None, "NoneType")],
)
def test_malformed_embedding_is_unavailable(client: Any, embedding: Any, reason: str) -> None:
    embedder = BedrockEmbedder(client, dimensions=256)
    raw = json.dumps({"embedding": embedding}).encode()
    with Stubber(client) as stub:
        body = StreamingBody(io.BytesIO(raw), len(raw))
        stub.add_response("invoke_model", {"body": body, "contentType": "application/json"})
        with pytest.raises(UnavailableError, match=reason):
            embedder.embed(["x"])


class TitanTransport:
    """Answers InvokeModel at `before-send` like Titan v2 (hot axis = the number ending the text); first
    fails with the scripted (status, error code) answers, and always fails for the text `fail_on`."""

    def __init__(
        self,
        dimensions: int,
        latency: float = 0.0,
        fail_on: str | None = None,
        failures: list[tuple[int, str]] | None = None,
    ) -> None:
        self.dimensions = dimensions
        self.latency = latency
        self.fail_on = fail_on
        self.failures = list(failures or [])
        self.in_flight = 0
        self.peak = 0
        self.calls = 0
        self._lock = threading.Lock()

    def __call__(self, request: Any, **_: Any) -> AWSResponse:
        text = json.loads(request.body)["inputText"]
        with self._lock:
            self.calls += 1
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
        try:
            time.sleep(self.latency)
            if text == self.fail_on:
                raise EndpointConnectionError(endpoint_url=request.url)
            with self._lock:
                failure = self.failures.pop(0) if self.failures else None
            if failure is not None:
                status, code = failure
                body = json.dumps({"message": f"scripted {code or status}"}).encode()
                headers = {"Content-Type": "application/json", "x-amzn-ErrorType": code}
                raw = urllib3.HTTPResponse(body=io.BytesIO(body), preload_content=False)
                return AWSResponse(request.url, status, headers, raw)
            payload = json.dumps({"embedding": almost_unit(self.dimensions, hot=int(text.split()[-1]))})
            raw = urllib3.HTTPResponse(body=io.BytesIO(payload.encode()), preload_content=False)
            return AWSResponse(request.url, 200, {"Content-Type": "application/json"}, raw)
        finally:
            with self._lock:
                self.in_flight -= 1


def test_batch_runs_concurrently_bounded_and_keeps_input_order(client: Any) -> None:
    # Given a transport that takes 20 ms per call, and an embedder allowed 4 calls at once
    transport = TitanTransport(dimensions=256, latency=0.02)
    client.meta.events.register("before-send.bedrock-runtime.InvokeModel", transport)
    embedder = BedrockEmbedder(client, dimensions=256, max_workers=4)
    texts = [f"chunk {i}" for i in range(24)]
    # When 24 texts are embedded
    vectors = embedder.embed(texts)
    # Then each vector belongs to its own text, and at most 4 (but more than 1) calls overlapped
    assert [int(np.argmax(v)) for v in vectors] == list(range(24))
    assert 1 < transport.peak <= 4
    assert transport.calls == 24


def test_network_failure_in_a_batch_is_retried_then_unavailable(sleeps: list[float]) -> None:
    client = make_client(max_attempts=2)
    transport = TitanTransport(dimensions=256, fail_on="chunk 2")
    client.meta.events.register("before-send.bedrock-runtime.InvokeModel", transport)
    embedder = BedrockEmbedder(client, dimensions=256, max_workers=2)
    with pytest.raises(UnavailableError, match="EndpointConnectionError"):
        embedder.embed([f"chunk {i}" for i in range(4)])
    assert len(sleeps) >= 1 and transport.calls >= 3  # chunk 2 went twice (botocore's retry)


def test_empty_list_makes_no_call(client: Any) -> None:
    with Stubber(client):
        assert BedrockEmbedder(client, dimensions=256).embed([]) == []


def test_settings_choose_the_bedrock_embedder_and_its_size(tmp_path: Any) -> None:
    from infra.config.settings import load_settings
    from infra.wiring.root import Container

    settings = load_settings(
        data_dir=tmp_path, embedder="bedrock", bedrock_dimensions=512, bedrock_region=REGION
    )
    embedder = Container(settings).embedder
    assert isinstance(embedder, BedrockEmbedder)
    assert (embedder.model_id, embedder.dimension) == (TITAN_V2_MODEL_ID, 512)


class HangingServer:
    """A loopback TCP server that accepts connections and never answers (a hanging Bedrock endpoint)."""

    def __init__(self) -> None:
        import socket

        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.accepted: list[Any] = []
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted.append(conn)

    def close(self) -> None:
        self.sock.close()
        for conn in self.accepted:
            conn.close()


@pytest.fixture
def hanging() -> Any:
    server = HangingServer()
    yield server
    server.close()


def hanging_embedder(server: HangingServer, budget: float) -> BedrockEmbedder:
    from infra.text_models.bedrock import default_client

    client = default_client(
        REGION,
        budget,
        endpoint_url=server.url,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    return BedrockEmbedder(client, budget_seconds=budget)


def test_a_hanging_bedrock_costs_at_most_the_time_budget(hanging: HangingServer) -> None:
    """Real botocore over a socket that never answers: the call ends within its budget, as an outage."""
    budget = 1.2
    embedder = hanging_embedder(hanging, budget)
    started = time.monotonic()
    with pytest.raises(UnavailableError):
        embedder.embed(["where is the login bug"])
    elapsed = time.monotonic() - started
    assert elapsed <= budget + 0.5, elapsed
    assert len(hanging.accepted) >= 1  # it really tried


def test_the_default_budget_fits_the_api_functions_timeout() -> None:
    from infra.text_models.bedrock import DEFAULT_BUDGET_SECONDS, retry_plan, worst_backoff
    from tests.infra.test_template import sam_template

    attempts, connect, read = retry_plan(DEFAULT_BUDGET_SECONDS)
    assert attempts * (connect + read) + worst_backoff(attempts) <= DEFAULT_BUDGET_SECONDS
    assert sam_template()["Globals"]["Function"]["Timeout"] / 2 >= DEFAULT_BUDGET_SECONDS


def test_search_degrades_to_keyword_in_time_when_bedrock_hangs(tmp_path: Any, hanging: HangingServer) -> None:
    from infra.wiring.root import set_container
    from tests.conftest import api_event, invoke, make_container

    budget = 1.2
    c = make_container(tmp_path / "data", hanging_embedder(hanging, budget))
    set_container(c)
    try:
        started = time.monotonic()
        status, body = invoke(api_event("search", body={"query": "where is the login bug"}))
        elapsed = time.monotonic() - started
    finally:
        set_container(None)
    assert status == 200 and body["query_info"]["degraded"] and body["query_info"]["strategy"] == "keyword"
    assert elapsed <= budget + 1.0, elapsed
