"""The HTTP contract — the OpenAPI document tells the truth about errors, auth and
bodies; wrong methods are a JSON 405 with Allow (on the local server too); a body without Content-Type
is a 415; an oversized body is a 413 the client can read; GET /context/weights is paged."""

from __future__ import annotations

import http.client
import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import api_event, invoke
from tests.handlers.serving import serving

KEY = "contract-key"
LIMIT = 1 << 20


@pytest.fixture
def port(local: Any) -> Iterator[int]:
    with serving({KEY: {"tenant": "acme", "scopes": ["read", "write", "admin"]}}, LIMIT) as url:
        yield int(url.rsplit(":", 1)[1])


def request(
    port: int, method: str, path: str, body: bytes | None = None, **headers: str
) -> tuple[int, Any, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request(method, path, body, {"authorization": f"Bearer {KEY}", **headers})
        response = conn.getresponse()
        data = response.read()
        return response.status, response.headers, json.loads(data) if data else None
    finally:
        conn.close()


def test_openapi_documents_the_real_errors_auth_and_bodies(local: Any) -> None:
    status, doc = invoke(api_event("openapi"))
    assert status == 200
    assert '"422"' not in json.dumps(doc)
    assert doc["components"]["securitySchemes"]["bearer"] == {
        "type": "http",
        "scheme": "bearer",
        "description": doc["components"]["securitySchemes"]["bearer"]["description"],
    }
    assert doc["security"] == [{"bearer": []}]
    assert doc["paths"]["/health"]["get"]["security"] == []
    error = doc["components"]["schemas"]["Error"]["properties"]["error"]
    assert error["required"] == ["code", "message", "fields"]
    responses = doc["components"]["responses"]
    assert len(responses) == 10 and all(
        r["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Error"}
        for r in responses.values()
    )
    answered = {code for ops in doc["paths"].values() for op in ops.values() for code in op["responses"]}
    assert answered == {
        "200",
        "202",
        "400",
        "401",
        "403",
        "404",
        "409",
        "410",
        "413",
        "415",
        "503",
    }  # 405: not per operation
    put = doc["paths"]["/entities/{entity_type}/{entity_id}"]["put"]
    assert set(put["responses"]) == answered  # a write, or a job (202)
    assert all("202" in doc["paths"][p]["post"]["responses"] for p in ("/entities", "/corpus"))  # jobs
    assert put["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/EntityFields"
    }
    body = doc["paths"]["/overlays/{role_id}"]["put"]["requestBody"]["content"]["application/json"]
    assert body["schema"] == {"$ref": "#/components/schemas/RoleOverlayBody"}
    body = doc["paths"]["/corpus"]["post"]["requestBody"]["content"]["application/json"]
    assert body["schema"] == {"$ref": "#/components/schemas/Corpus"}
    items = doc["components"]["schemas"]["BulkRequest"]["properties"]["items"]["items"]
    assert items == {"$ref": "#/components/schemas/BulkItem"}
    unavailable = doc["components"]["responses"]["Unavailable"]
    assert "Retry-After" in unavailable["headers"]
    assert "Allow" in doc["components"]["responses"]["MethodNotAllowed"]["headers"]


def test_a_body_without_content_type_is_the_documented_415(local: Any) -> None:
    event = api_event("search", body={"query": "x"})
    del event["headers"]["content-type"]
    status, body = invoke(event)
    assert status == 415 and body["error"]["code"] == "unsupported_media_type"
    assert body["error"]["fields"] == {"content-type": "must be application/json"}
    ok = api_event("search", body={"query": "x"}, headers={"content-type": "application/json; charset=utf-8"})
    assert invoke(ok)[0] == 200


@pytest.mark.parametrize("method", ["OPTIONS", "TRACE", "PROPFIND", "CONNECT", "GET"])
def test_the_local_server_answers_wrong_methods_with_a_json_405_and_allow(port: int, method: str) -> None:
    status, headers, body = request(port, method, "/search")
    assert status == 405 and headers["Allow"] == "POST"
    assert headers["Content-Type"] == "application/json"
    assert body["error"]["code"] == "method_not_allowed"


def test_head_is_a_405_without_a_body(port: int) -> None:
    status, headers, body = request(port, "HEAD", "/context/weights")
    assert status == 405 and headers["Allow"] == "GET" and body is None


def test_an_oversized_body_gets_a_413_the_client_can_read(port: int) -> None:
    # http.client sends the whole body before reading, as most clients do: the server must read (and
    # throw away) the body, or the client sees a reset instead of the answer.
    status, headers, body = request(
        port,
        "POST",
        "/search",
        b'{"query": "' + b"x" * (3 * LIMIT) + b'"}',
        **{"content-type": "application/json"},
    )
    assert status == 413 and body["error"]["code"] == "payload_too_large"
    assert headers["Connection"] == "close"


def test_a_chunked_body_is_read_and_a_bad_content_length_is_a_400(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        payload = b'{"query": "chunked"}'
        sock.sendall(
            b"POST /search HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
            + KEY.encode()
            + b"\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
            + f"{len(payload):x}\r\n".encode()
            + payload
            + b"\r\n0\r\n\r\n"
        )
        answer = b"".join(iter(lambda: sock.recv(65536), b""))
    assert answer.startswith(b"HTTP/1.1 200")
    status, _, body = request(port, "POST", "/search", None, **{"content-length": "12x"})
    assert status == 400 and "content-length" in body["error"]["fields"]


def test_context_weights_are_paged_with_a_cursor(local: Any) -> None:
    for n in range(25):
        event = api_event(
            "context_put_weight", path=f"/context/weights/agent-{n:02d}/vault_index", body={"weight": 1}
        )
        assert invoke(event)[0] == 200
    seen: list[tuple[str, str]] = []
    cursor: str | None = None
    pages = 0
    while True:
        query = {"limit": "10", **({"cursor": cursor} if cursor else {})}
        status, body = invoke(api_event("context_weights", query=query))
        assert status == 200 and len(body["weights"]) <= 10
        seen += [(w["caller"], w["source"]) for w in body["weights"]]
        pages += 1
        cursor = body["next_cursor"]
        if cursor is None:
            break
    assert pages == 3 and seen == sorted(seen) and len(set(seen)) == 25
    for query, field in (
        ({"cursor": "nonsense!"}, "cursor"),
        ({"limit": "0"}, "limit"),
        ({"limit": "1001"}, "limit"),
    ):
        status, body = invoke(api_event("context_weights", query=query))
        assert status == 400 and field in body["error"]["fields"], body
