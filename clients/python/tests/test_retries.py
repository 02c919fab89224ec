"""Retries: 429 and 503 are tried again after `Retry-After` (or a backoff), never past the total time budget;
a connection that cannot be opened is retried too; the last error is raised, typed. A scripted loopback
server answers what each test needs (quarry serve's own 503 answers are covered in the main suite)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
from quarry_client import (
    APIConnectionError,
    Quarry,
    QuarryError,
    RateLimitError,
    ResponseError,
    RetryPolicy,
    UnavailableError,
)

from tests.conftest import free_port

OK = (200, {}, {"status": "ok", "version": "test"})


class Script:
    """The answers to give, in order (the last one repeats), and how many requests came."""

    def __init__(self, *answers: tuple[int, dict[str, str], dict[str, object]]) -> None:
        self.answers = list(answers)
        self.requests = 0


@pytest.fixture
def scripted() -> Iterator[tuple[str, list[Script]]]:
    holder: list[Script] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            script = holder[0]
            status, headers, body = script.answers[min(script.requests, len(script.answers) - 1)]
            script.requests += 1
            data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
            self.send_response(status)
            for name, value in {"Content-Type": "application/json", **headers}.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *_: object) -> None:
            pass

    httpd = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", holder
    finally:
        httpd.shutdown()
        httpd.server_close()


def unavailable(retry_after: str) -> tuple[int, dict[str, str], dict[str, object]]:
    body = {"error": {"code": "overloaded", "message": "at capacity; retry", "fields": {}}}
    return 503, {"Retry-After": retry_after}, body


def test_a_503_is_retried_after_retry_after_and_then_answers(scripted: tuple[str, list[Script]]) -> None:
    url, holder = scripted
    holder.append(Script(unavailable("0"), unavailable("0"), OK))
    with Quarry(url, "k") as client:
        assert client.health() == OK[2]
    assert holder[0].requests == 3


def test_a_retry_after_beyond_the_budget_is_not_waited_for(scripted: tuple[str, list[Script]]) -> None:
    url, holder = scripted
    holder.append(Script(unavailable("3600"), OK))
    with (
        Quarry(url, "k", retry=RetryPolicy(total_seconds=5)) as client,
        pytest.raises(UnavailableError) as err,
    ):
        client.health()
    assert holder[0].requests == 1  # an hour does not fit a 5 s budget: raised at once, body kept
    assert err.value.code == "overloaded" and err.value.retry_after == 3600


def test_attempts_are_bounded_and_the_last_error_is_raised(scripted: tuple[str, list[Script]]) -> None:
    url, holder = scripted
    holder.append(
        Script((429, {"Retry-After": "0"}, {"error": {"code": "slow_down", "message": "", "fields": {}}}))
    )
    with Quarry(url, "k", retry=RetryPolicy(attempts=4)) as client, pytest.raises(RateLimitError) as err:
        client.health()
    assert holder[0].requests == 4 and err.value.status == 429 and err.value.code == "slow_down"


def test_a_refused_connection_is_retried_then_reported() -> None:
    nobody = f"http://127.0.0.1:{free_port()}"
    policy = RetryPolicy(total_seconds=2, attempts=3, backoff_seconds=0.01)
    with Quarry(nobody, "k", retry=policy) as client, pytest.raises(APIConnectionError):
        client.health()


def test_the_http_date_form_of_retry_after_is_read(scripted: tuple[str, list[Script]]) -> None:
    url, holder = scripted
    holder.append(Script(unavailable("Wed, 21 Oct 2015 07:28:00 GMT"), OK))  # in the past: retry at once
    with Quarry(url, "k") as client:
        assert client.health() == OK[2]
    assert holder[0].requests == 2


def test_retry_after_waits_are_spread_by_jitter_within_the_budget() -> None:
    policy = RetryPolicy(total_seconds=100)
    waits = [policy.wait(1, 10.0, remaining=100.0) for _ in range(200)]
    assert all(w is not None and 10.0 <= w <= 10.0 * (1 + policy.retry_after_jitter) for w in waits)
    assert len(set(waits)) > 100  # clients told the same delay come back at different times
    assert policy.wait(1, 10.0, remaining=10.5) == pytest.approx(10.0, abs=0.5)  # capped by what is left
    assert policy.wait(1, 10.0, remaining=9.0) is None


def test_a_success_answer_the_client_cannot_read_is_a_quarry_error(
    scripted: tuple[str, list[Script]],
) -> None:
    url, holder = scripted
    holder.append(Script((200, {}, {"status": "ok"})))  # JSON, but not a SearchResponse
    with Quarry(url, "k") as client:
        with pytest.raises(ResponseError) as err:
            client.get_job("j1")
        assert isinstance(err.value, QuarryError) and err.value.response is not None
    holder[0] = Script((200, {"Content-Type": "text/html"}, "<html>proxy</html>"))  # type: ignore[arg-type]
    with Quarry(url, "k") as client, pytest.raises(ResponseError):
        client.health()
