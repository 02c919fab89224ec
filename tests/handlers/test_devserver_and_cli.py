"""The local dev server (HTTP → API Gateway v2 events → the Lambda handler) and the quarry CLI."""

from __future__ import annotations

import json
import socket
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from handlers.cli.main import main
from handlers.lambda_functions import api
from handlers.local_server.devserver import make_server
from handlers.local_server.local_key import local_keys


@pytest.fixture
def server(local: Any, tmp_path: Path) -> Iterator[tuple[str, str]]:
    keys, key = local_keys({}, tmp_path)
    httpd = make_server("127.0.0.1", 0, keys, api.lambda_handler, 4096)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", str(key)
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def call(
    url: str, method: str = "GET", body: Any = None, key: str | None = None, data: bytes | None = None
) -> tuple[int, Any]:
    headers = {"content-type": "application/json"}
    if key:
        headers["authorization"] = f"Bearer {key}"
    payload = data if data is not None else (json.dumps(body).encode() if body is not None else None)
    request = urllib.request.Request(url, data=payload, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"null")


def test_server_checks_bearer_keys_and_serves_the_api(server: tuple[str, str]) -> None:
    url, key = server
    assert call(f"{url}/health")[0] == 200
    status, body = call(f"{url}/search", "POST", {"query": "x"})
    assert status == 401 and body["error"]["code"] == "unauthorized"
    assert call(f"{url}/search", "POST", {"query": "x"}, key="wrong")[0] == 401
    status, body = call(f"{url}/entities/task/t1", "PUT", {"title": "Write the README"}, key=key)
    assert status == 200 and body["outcome"] == "applied"
    status, body = call(f"{url}/search", "POST", {"query": "readme"}, key=key)
    assert status == 200 and body["results"][0]["entity_id"] == "t1"
    status, body = call(f"{url}/entities/task/t1", "DELETE", key=key)
    assert status == 200
    assert call(f"{url}/search", "POST", {"query": "readme"}, key=key)[1]["results"] == []


def test_server_refuses_oversized_bodies_with_413(server: tuple[str, str]) -> None:
    url, key = server
    status, body = call(f"{url}/search", "POST", key=key, data=b'{"query": "' + b"x" * 5000 + b'"}')
    assert status == 413 and body["error"]["code"] == "payload_too_large"


def expect_continue(url: str, key: str, length: int) -> bytes:
    """What the server says to a POST /search announcing `length` bytes with `Expect: 100-continue`, before
    any of the body is sent."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        head = (f"POST /search HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {key}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {length}\r\nExpect: 100-continue\r\n\r\n")  # fmt: skip
        sock.sendall(head.encode())
        answer = sock.recv(4096)
        while answer.startswith(b"HTTP/1.1 4") and b"}" not in answer:  # the refusal's body, then the close
            more = sock.recv(4096)
            if not more:
                break
            answer += more
        return answer


def test_an_announced_body_over_the_limit_gets_its_413_before_it_is_sent(server: tuple[str, str]) -> None:
    url, key = server
    assert expect_continue(url, key, 100).startswith(b"HTTP/1.1 100 Continue")
    refused = expect_continue(url, key, 5000)
    assert refused.startswith(b"HTTP/1.1 413") and b"payload_too_large" in refused


def test_cli_ingest_reports_bad_lines_by_number_and_search_finds_the_rest(
    tmp_path: Path, local: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "tasks.jsonl"
    data.write_text(
        '{"id": "a", "title": "Plan the offsite"}\n'
        "not json\n"
        '{"id": "b"}\n'
        "\n"
        '{"id": "c", "title": "Book the offsite venue"}\n'
    )
    code = main(["ingest", str(data), "--type", "task", "--tenant", "dev", "--quiet"])
    out, err = capsys.readouterr()
    assert code == 1
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary == {"file": str(data), "lines": 4, "indexed": 2, "skipped_stale": 0, "errors": 2}
    assert "line 2: not valid JSON" in err and "line 3:" in err and "title" in err
    assert main(["search", "offsite venue", "--tenant", "dev", "--json"]) == 0
    results = json.loads(capsys.readouterr().out)["results"]
    assert results[0]["entity_id"] == "c"


def test_server_workers_together_run_no_more_busy_threads_than_cores() -> None:
    from handlers.cli.main import BLAS_THREAD_VARIABLES, model_on_blas, thread_budget

    assert set(thread_budget(2, 2).values()) == {"1"}  # two workers on two cores: one thread each
    assert thread_budget(2, 2)["QUARRY_EMBEDDER_THREADS"] == "1"  # the model's threads too
    assert set(thread_budget(8, 2).values()) == {"1"}
    # One worker on two cores: the model runs on both, NumPy on one. Its work at search time is small
    # matvecs, and an idle OpenBLAS thread busy-waits: a second one doubled a search's CPU for no time saved.
    alone = thread_budget(1, 2)
    assert alone["QUARRY_EMBEDDER_THREADS"] == "2"
    assert {alone[name] for name in BLAS_THREAD_VARIABLES} == {"1"}
    # ... unless the model itself runs on NumPy (no onnxruntime): then its matrix products want both
    assert set(thread_budget(1, 2, model_on_blas=True).values()) == {"2"}
    assert model_on_blas("numpy") and not model_on_blas("onnx") and not model_on_blas("onnx-int8")
