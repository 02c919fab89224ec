"""OpenSearch failures become core errors, and transient ones are retried a bounded number of times with
exponential backoff. The real opensearch-py client, Transport and exception classes run unchanged; only
the network connection (FakeConnection) or the server (FakeOpenSearch) is simulated."""

from __future__ import annotations

from typing import Any

import pytest
from opensearchpy import OpenSearch
from opensearchpy import exceptions as os_errors

from core.errors import ConfigurationError, ConflictError, InvalidInputError, UnavailableError
from core.models import EntityKey, Filters, LexicalQuery, WriteOutcome
from infra.config.settings import Settings, load_settings
from infra.opensearch import OpenSearchIndex, RetryPolicy, build_client, build_index, build_opensearch_index
from infra.opensearch.errors import translate, translated
from tests.adapters.opensearch_fakes import (
    FakeConnection,
    FakeOpenSearch,
    error_item,
    search_response,
    throttled_item,
)
from tests.adapters.search_index_contract import DIM, record, unit

KEY = EntityKey("memory", "a")
REFUSED = os_errors.ConnectionError("N/A", "connection refused", OSError("refused"))


def scripted(script: list[Any], max_retries: int = 3) -> tuple[Any, list[Any], list[float]]:
    """A real OpenSearch client over FakeConnection, retrying as build_client configures opensearch-py's
    own Transport; returns (client, attempts, sleeps) — the transport never sleeps between attempts."""
    attempts: list[Any] = []
    client = OpenSearch(
        hosts=["http://localhost:9200"],
        connection_class=FakeConnection,
        max_retries=max_retries,
        retry_on_status=(429, 502, 503, 504),
        retry_on_timeout=True,
        script=script,
        attempts=attempts,
    )
    return client, attempts, []


def mget_found(entity: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    return 200, {
        "docs": [{"_index": "quarry-v1", "_id": "x", "found": True, "_version": 3, "_source": entity}]
    }


def stored_source() -> dict[str, Any]:
    from infra.opensearch.documents import entity_source

    return entity_source(record("t", "memory", "a", "some text", version=3))


# -- whole requests: retried in the transport -----------------------------------------------------------


def test_connection_errors_are_retried_then_reported_unavailable() -> None:
    client, attempts, _ = scripted([REFUSED] * 10, max_retries=3)
    index = build_opensearch_index(client, dimension=DIM)
    with pytest.raises(UnavailableError) as raised:
        index.get("t", [KEY])
    assert raised.value.backend == "opensearch" and "cannot connect" in raised.value.message
    assert len(attempts) == 4  # one try + max_retries


def test_throttling_and_gateway_errors_are_retried_until_an_answer_arrives() -> None:
    script = [
        (429, {"error": "too many requests"}),
        (503, {"error": "unavailable"}),
        mget_found(stored_source()),
    ]
    client, attempts, _ = scripted(script)
    found = build_opensearch_index(client, dimension=DIM, auto_create=False).get("t", [KEY])
    assert found[KEY].version == 3 and len(attempts) == 3


def test_timeouts_are_retried_and_reported_as_unavailable() -> None:
    timeout = os_errors.ConnectionTimeout("TIMEOUT", "read timed out", OSError("slow"))
    client, attempts, _ = scripted([timeout] * 3, max_retries=2)
    with pytest.raises(UnavailableError, match="timed out"):
        build_opensearch_index(client, dimension=DIM).get("t", [KEY])
    assert len(attempts) == 3


@pytest.mark.parametrize(
    ("status", "error", "expected"),
    [
        (400, "mapper_parsing_exception", InvalidInputError),
        (401, "security_exception", UnavailableError),
        (403, "security_exception", UnavailableError),
        (409, "version_conflict_engine_exception", ConflictError),
        (500, "exception", UnavailableError),
    ],
)
def test_other_statuses_fail_at_once_as_the_matching_core_error(
    status: int, error: str, expected: type
) -> None:
    body = {
        "error": {"root_cause": [{"type": error, "reason": "why"}], "type": error, "reason": "why"},
        "status": status,
    }
    client, attempts, sleeps = scripted([(status, body)] * 3)
    with pytest.raises(expected) as raised:
        build_opensearch_index(client, dimension=DIM).get("t", [KEY])
    assert len(attempts) == 1 and sleeps == []
    assert error in raised.value.message and "why" in raised.value.message


def test_a_rejected_document_names_the_problem() -> None:
    reason = "failed to parse field [chunks.embedding] of type [knn_vector]"
    body = {"error": {"type": "mapper_parsing_exception", "reason": reason}, "status": 400}
    client, _, _ = scripted([(400, body)])
    index = build_opensearch_index(client, dimension=DIM, auto_create=False)
    with pytest.raises(InvalidInputError) as raised:
        index.upsert(record("t", "memory", "a", "text", vec=unit(1, 0)))
    assert reason in raised.value.fields["opensearch"]


def test_zero_retries_means_one_attempt() -> None:
    client, attempts, sleeps = scripted([REFUSED] * 3, max_retries=0)
    with pytest.raises(UnavailableError):
        build_opensearch_index(client, dimension=DIM).get("t", [KEY])
    assert len(attempts) == 1 and sleeps == []


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (os_errors.ConnectionError("N/A", "refused", OSError()), UnavailableError),
        (os_errors.SSLError("N/A", "bad certificate", OSError()), UnavailableError),
        (os_errors.ConnectionTimeout("TIMEOUT", "timed out", OSError()), UnavailableError),
        (os_errors.TransportError(429, "too_many_requests", {}), UnavailableError),
        (os_errors.TransportError(502, "bad gateway", "<html>"), UnavailableError),
        (os_errors.NotFoundError(404, "index_not_found_exception", {}), UnavailableError),
        (
            os_errors.RequestError(400, "parsing_exception", {"error": {"type": "parsing_exception"}}),
            InvalidInputError,
        ),
        (os_errors.ConflictError(409, "version_conflict_engine_exception", {}), ConflictError),
        (os_errors.AuthenticationException(401, "security_exception", {}), UnavailableError),
        (os_errors.AuthorizationException(403, "security_exception", {}), UnavailableError),
        (os_errors.SerializationError("cannot serialise NaN"), InvalidInputError),
        (os_errors.ImproperlyConfigured("no requests"), UnavailableError),
    ],
)
def test_every_opensearch_exception_class_maps_to_a_core_error(exc: Exception, expected: type) -> None:
    assert type(translate(exc)) is expected
    with pytest.raises(expected) as raised, translated():
        raise exc
    assert raised.value.__cause__ is exc


def test_throttled_requests_ask_callers_to_come_back_sooner() -> None:
    assert translate(os_errors.TransportError(429, "x", {})).retry_after < translate(REFUSED).retry_after


# -- parts of a 200 response: resent by streaming_bulk (_bulk) and tenacity (_msearch) -------------------


def adapter(server: FakeOpenSearch, max_retries: int = 2) -> tuple[OpenSearchIndex, list[float]]:
    """The adapter with tenacity's waits between `_msearch` attempts recorded instead of slept."""
    sleeps: list[float] = []
    index = build_opensearch_index(
        server, dimension=DIM, retry=RetryPolicy(max_retries=max_retries), sleep=sleeps.append
    )
    return index, sleeps


@pytest.fixture
def bulk_sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """opensearch-py's streaming_bulk waits (time.sleep in opensearchpy.helpers.actions), recorded."""
    import types

    from opensearchpy.helpers import actions

    waits: list[float] = []
    monkeypatch.setattr(actions, "time", types.SimpleNamespace(sleep=waits.append))
    return waits


def test_throttled_bulk_items_are_resent_alone_after_a_backoff(bulk_sleeps: list[float]) -> None:
    server = FakeOpenSearch()
    rejected: list[int] = []

    def throttle_second_once(position: int, action: dict[str, Any]) -> dict[str, Any] | None:
        if position == 1 and not rejected:
            rejected.append(position)
            (kind, meta), *_ = action.items()
            return throttled_item("quarry-v1", meta["_id"], kind)
        return None

    server.bulk_interceptor = throttle_second_once
    index, _ = adapter(server)
    records = [record("t", "memory", "a", "one"), record("t", "memory", "b", "two")]
    assert index.upsert_many(records) == [WriteOutcome.APPLIED, WriteOutcome.APPLIED]
    first, second = server.calls("bulk")
    assert len(first[2]) == 4 and len(second[2]) == 2  # only the throttled action went again
    assert second[2][0]["create"]["_id"].endswith(":b") and bulk_sleeps == pytest.approx([0.1])
    assert {d["entity_id"] for _, d in server.docs.values()} == {"a", "b"}


def test_writes_that_keep_losing_to_concurrent_writers_end_as_unavailable() -> None:
    from infra.opensearch.writes import CAS_ROUNDS
    from tests.adapters.opensearch_fakes import conflict_item

    server = FakeOpenSearch()
    server.bulk_interceptor = lambda _, action: conflict_item(
        "quarry-v1", action["create"]["_id"], "exists", "create"
    )
    index, _ = adapter(server)
    with pytest.raises(UnavailableError):
        index.upsert(record("t", "memory", "a", "one"))
    assert len(server.calls("bulk")) == len(server.calls("mget")) == CAS_ROUNDS  # read, decide, write


def test_bulk_items_still_throttled_after_the_retries_fail_as_unavailable(bulk_sleeps: list[float]) -> None:
    server = FakeOpenSearch()
    server.bulk_interceptor = lambda _, action: throttled_item("quarry-v1", action["create"]["_id"], "create")
    index, _ = adapter(server, max_retries=2)
    with pytest.raises(UnavailableError) as raised:
        index.upsert(record("t", "memory", "a", "one"))
    assert len(server.calls("bulk")) == 3 and raised.value.retry_after == 1
    assert bulk_sleeps == pytest.approx([0.1, 0.2])  # RetryPolicy's base, doubled


def test_answers_match_their_writes_when_a_resent_item_comes_back_last(bulk_sleeps: list[float]) -> None:
    """streaming_bulk yields resent items after the others: each write still gets its own answer."""
    server = FakeOpenSearch()
    throttled: list[str] = []

    def throttle_first_once(position: int, action: dict[str, Any]) -> dict[str, Any] | None:
        (kind, meta), *_ = action.items()
        if position == 0 and not throttled:
            throttled.append(meta["_id"])
            return throttled_item("quarry-v1", meta["_id"], kind)
        if meta["_id"].endswith(":c"):
            return conflict_item("quarry-v1", meta["_id"], "exists", kind)  # c always loses to a writer
        return None

    from tests.adapters.opensearch_fakes import conflict_item

    server.bulk_interceptor = throttle_first_once
    index, _ = adapter(server)
    records = [record("t", "memory", n, n) for n in ("a", "b", "c")]
    with pytest.raises(UnavailableError):  # c: conflicts on every round → unavailable; a and b applied
        index.upsert_many(records)
    assert throttled and {d["entity_id"] for _, d in server.docs.values()} == {"a", "b"}


def test_throttled_msearch_items_are_rerun_alone() -> None:
    server = FakeOpenSearch()
    lexical_hits = search_response([])
    server.msearch_responses = [
        {
            "took": 2,
            "responses": [lexical_hits, error_item(429, "rejected_execution_exception", "queue full")],
        },
        {"took": 2, "responses": [search_response([])]},
    ]
    index, sleeps = adapter(server)
    got = index.retrieve("t", LexicalQuery(("word",)), unit(1, 0), Filters(), 5)
    assert got.lexical == () and got.vector == ()
    first, second = server.calls("msearch")
    assert len(first[2]) == 4 and len(second[2]) == 2 and "knn" in str(second[2][1])
    assert len(sleeps) == 1


@pytest.mark.parametrize(
    ("status", "expected"), [(400, InvalidInputError), (500, UnavailableError), (503, UnavailableError)]
)
def test_failed_msearch_items_become_core_errors(status: int, expected: type) -> None:
    server = FakeOpenSearch()
    server.msearch_responses = [
        {"took": 1, "responses": [error_item(status, "search_phase_execution_exception", "bad")]}
    ] * 4
    index, _ = adapter(server)
    with pytest.raises(expected):
        index.lexical("t", LexicalQuery(("word",)), Filters(), 5)


def test_a_missing_index_reads_as_empty_not_as_an_outage() -> None:
    server = FakeOpenSearch()  # nothing created: no alias
    server.msearch_responses = [
        {"took": 1, "responses": [error_item(404, "index_not_found_exception", "no such index [quarry]")] * 2}
    ]
    index, _ = adapter(server)
    assert index.get("t", [KEY]) == {}
    got = index.retrieve("t", LexicalQuery(("word",)), unit(1, 0), Filters(), 5)
    assert got.lexical == () and got.vector == ()


# -- building the client ---------------------------------------------------------------------------------


def _connection(client: Any) -> Any:
    return client.transport.get_connection()


def test_sigv4_signs_for_managed_opensearch_and_serverless(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    for service in ("es", "aoss"):
        url = "https://search-quarry.eu-west-1.es.amazonaws.com"
        client = build_client(url, region="eu-west-1", service=service, timeout=3.0, max_retries=4)
        connection = _connection(client)
        signed = connection.http_auth("POST", f"{url}/_msearch", b"{}\n")
        assert f"AKIDEXAMPLE/{_today()}/eu-west-1/{service}/aws4_request" in signed["Authorization"]
        transport = client.transport
        assert connection.timeout == 3.0 and transport.max_retries == 4 and transport.retry_on_timeout
        assert set(transport.retry_on_status) == {429, 502, 503, 504}
    with pytest.raises(ValueError, match="service"):
        build_client("https://x", region="eu-west-1", service="s3")


def _today() -> str:
    from datetime import UTC, datetime

    return datetime.now(UTC).strftime("%Y%m%d")


def test_a_plain_url_uses_basic_auth_from_its_userinfo_and_no_signing() -> None:
    import base64

    client = build_client("http://admin:p%40ss@localhost:9200", timeout=2.0, max_retries=1)
    connection = _connection(client)
    assert connection.headers["authorization"] == "Basic " + base64.b64encode(b"admin:p@ss").decode()
    assert "admin" not in connection.host and connection.host == "http://localhost:9200"
    assert "authorization" not in _connection(build_client("http://localhost:9200")).headers


def test_several_nodes_are_one_client_that_never_asks_for_compressed_answers() -> None:
    # A node gzips its answer when asked; on a search's answer that cost more than the transfer saved.
    client = build_client("http://127.0.0.1:9201, http://127.0.0.1:9202", timeout=2.0, max_retries=1)
    connections = client.transport.connection_pool.connections
    assert sorted(c.host for c in connections) == ["http://127.0.0.1:9201", "http://127.0.0.1:9202"]
    assert all("accept-encoding" not in c.headers for c in connections)


def test_serverless_is_refused_at_start_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QUARRY_OPENSEARCH_SERVICE", "aoss")
    with pytest.raises(ConfigurationError) as raised:
        load_settings(index="opensearch", opensearch_url="https://x.aoss.amazonaws.com")
    assert "custom document ids" in raised.value.variables["QUARRY_OPENSEARCH_SERVICE"]


def test_build_index_names_the_missing_url_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("QUARRY_OPENSEARCH_URL", raising=False)  # set by `make test` for the live suite
    with pytest.raises(ConfigurationError) as raised:
        load_settings(index="opensearch")
    assert "QUARRY_OPENSEARCH_URL" in raised.value.variables
    settings = Settings(index="opensearch")  # built around load_settings' check
    with pytest.raises(ConfigurationError) as raised:
        build_index(settings, DIM)
    assert "QUARRY_OPENSEARCH_URL" in raised.value.variables
    built = build_index(
        load_settings(opensearch_url="http://localhost:9200", opensearch_refresh="wait_for"), DIM
    )
    assert built.alias == "quarry"


def test_the_retry_settings_stay_within_the_time_budget() -> None:
    from infra.config.settings import load_settings
    from infra.opensearch.client import OPENSEARCH_TIME_BUDGET

    settings = load_settings()
    assert settings.opensearch_timeout * (settings.opensearch_max_retries + 1) <= OPENSEARCH_TIME_BUDGET < 29
    from core.errors import ConfigurationError

    with pytest.raises(ConfigurationError) as refused:
        load_settings(opensearch_timeout=10.0, opensearch_max_retries=3)
    assert "QUARRY_OPENSEARCH_MAX_RETRIES" in refused.value.variables


# -- nothing silently partial ----------------------------------------------------------------------------


def shards_missing(failed: int = 1, total: int = 2) -> dict[str, Any]:
    """A 200 search answer from some shards only (what a search may answer while a node is lost)."""
    answer = search_response([])
    cause = {"type": "node_not_connected_exception", "reason": "[quarry-node-2] disconnected"}
    answer["_shards"] = {
        "total": total,
        "successful": total - failed,
        "skipped": 0,
        "failed": failed,
        "failures": [{"shard": 1, "index": "quarry-v1", "reason": cause}],
    }
    return answer


def test_a_search_answered_by_some_shards_only_is_asked_again() -> None:
    server = FakeOpenSearch()
    server.msearch_responses = [
        {"took": 1, "responses": [shards_missing()]},
        {"took": 1, "responses": [search_response([])]},
    ]
    index, sleeps = adapter(server)
    assert index.lexical("t", LexicalQuery(("word",)), Filters(), 5) == []
    assert len(server.calls("msearch")) == 2 and len(sleeps) == 1


@pytest.mark.parametrize(
    "answer",
    [shards_missing(), {**search_response([]), "timed_out": True}, shards_missing(failed=0)],
    ids=["a shard failed", "timed out", "a shard did not answer"],
)
def test_a_search_still_partial_after_the_retries_is_unavailable_naming_why(answer: dict[str, Any]) -> None:
    server = FakeOpenSearch()
    server.msearch_responses = [{"took": 1, "responses": [answer]}] * 4
    index, _ = adapter(server)
    with pytest.raises(UnavailableError) as raised:
        index.lexical("t", LexicalQuery(("word",)), Filters(), 5)
    assert "partially" in raised.value.message and raised.value.retry_after > 0


def test_one_list_unavailable_fails_the_retrieval_rather_than_answering_with_the_other() -> None:
    server = FakeOpenSearch()
    lost = error_item(503, "search_phase_execution_exception", "all shards failed")
    server.msearch_responses = [{"took": 1, "responses": [search_response([]), lost]}]
    server.msearch_responses += [{"took": 1, "responses": [lost]}] * 3  # the vector search asked again
    index, _ = adapter(server)
    with pytest.raises(UnavailableError):
        index.retrieve("t", LexicalQuery(("word",)), unit(1, 0), Filters(), 5)


def test_a_document_whose_shard_cannot_be_read_is_an_outage_not_a_missing_entity() -> None:
    unreadable = {
        "_index": "quarry-v1",
        "_id": "t:memory:a",
        "error": {"type": "no_shard_available_action_exception", "reason": "No shard available"},
    }
    for call in (lambda i: i.get("t", [KEY]), lambda i: i.delete("t", KEY, None)):
        client, _, _ = scripted([(200, {"docs": [unreadable]})])
        with pytest.raises(UnavailableError) as raised:
            call(build_opensearch_index(client, dimension=DIM, auto_create=False))
        assert "could not be read" in raised.value.message


def test_answers_parse_as_the_standard_library_parses_them() -> None:
    # The client parses answers with orjson (infra/opensearch/client.py); what it refuses falls back.
    import json

    parse = build_client("http://127.0.0.1:9201").transport.deserializer.loads
    answer = '{"took": 3, "hits": {"hits": [{"_score": 1.25, "fields": {"title_value": ["Café 東京"]}}]}}'
    assert parse(answer, "application/json") == json.loads(answer)
    assert parse('{"v": 1e400}', "application/json") == {"v": float("inf")}  # beyond a double: stdlib
    with pytest.raises(os_errors.SerializationError):
        parse('{"v": ', "application/json")
