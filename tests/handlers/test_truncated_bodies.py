"""A request body the client stops sending before its end (fewer bytes than its Content-Length, or a chunked
body without its last chunk) is an incomplete HTTP message: `quarry serve` answers 400 naming it and
indexes nothing of it — an NDJSON upload, streamed to a file, as much as a JSON body."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from infra.wiring import root as wiring
from tests.conftest import FakeEmbedder, api_event, invoke, make_container
from tests.handlers.serving import serving

READ_SECONDS = 30.0
LINES = 300


def _line(i: int) -> bytes:
    return json.dumps({"type": "task", "id": f"t-{i}", "title": f"quarterly ledger zebra{i}"}).encode()


@pytest.fixture
def server(tmp_path: Path, fake_embedder: FakeEmbedder) -> Iterator[tuple[str, Any]]:
    container = make_container(tmp_path / "data", fake_embedder)
    wiring.set_container(container)
    try:
        keys = {"k": {"tenant": "acme", "scopes": ["read", "write"]}}
        with serving(keys, 1 << 20, ndjson_limit=1 << 20) as url:
            yield url, container
    finally:
        wiring.set_container(None)


def _send(url: str, head: str, pieces: list[bytes]) -> tuple[int, dict[str, Any]]:
    """Send `head` and `pieces`, half-close, and read the whole answer: (status, JSON body)."""
    address = urlsplit(url)
    with socket.create_connection((address.hostname, address.port), timeout=READ_SECONDS) as sock:
        sock.sendall(head.encode())
        for piece in pieces:
            sock.sendall(piece)
        sock.shutdown(socket.SHUT_WR)
        received, deadline = b"", time.monotonic() + READ_SECONDS
        while time.monotonic() < deadline:
            data = sock.recv(65536)
            if not data:
                break
            received += data
    status_line, _, rest = received.partition(b"\r\n")
    body = rest.split(b"\r\n\r\n", 1)[1]
    return int(status_line.split()[1]), json.loads(body)


def _head(path: str, media: str, framing: str) -> str:
    return (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer k\r\n"
            f"Content-Type: {media}\r\n{framing}\r\n")  # fmt: skip


def _nothing_indexed(container: Any) -> None:
    container.job_queue.drain()
    _, answer = invoke(api_event("search", body={"query": "ledger", "strategy": "keyword"}))
    assert answer["results"] == [], answer


def _chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def test_an_upload_cut_short_of_its_content_length_is_a_400_and_indexes_nothing(server: Any) -> None:
    url, container = server
    whole = b"\n".join(_line(i) for i in range(LINES)) + b"\n"
    sent = b"\n".join(_line(i) for i in range(LINES // 2)) + b"\n"
    head = _head("/entities/ndjson", "application/x-ndjson", f"Content-Length: {len(whole)}\r\n")
    status, answer = _send(url, head, [sent])
    assert status == 400, answer
    assert answer["error"]["message"] == f"the request body ended after {len(sent)} of {len(whole)} bytes"
    _nothing_indexed(container)


def test_a_chunked_upload_cut_inside_a_chunk_is_a_400_and_indexes_nothing(server: Any) -> None:
    url, container = server
    first = b"\n".join(_line(i) for i in range(100)) + b"\n"
    second = b"\n".join(_line(i) for i in range(100, 200)) + b"\n"
    cut = f"{len(second):x}\r\n".encode() + second[: len(second) // 2]
    head = _head("/entities/ndjson", "application/x-ndjson", "Transfer-Encoding: chunked\r\n")
    status, answer = _send(url, head, [_chunk(first), cut])
    assert status == 400, answer
    assert answer["error"]["message"] == "chunked body ended before its last chunk"
    _nothing_indexed(container)


def test_a_chunked_upload_without_its_last_chunk_is_a_400_and_indexes_nothing(server: Any) -> None:
    url, container = server
    pieces = [_chunk(b"\n".join(_line(i) for i in range(s, s + 50)) + b"\n") for s in range(0, LINES, 50)]
    head = _head("/entities/ndjson", "application/x-ndjson", "Transfer-Encoding: chunked\r\n")
    status, answer = _send(url, head, pieces)  # every chunk whole, but no terminating 0-chunk
    assert status == 400, answer
    assert answer["error"]["message"] == "chunked body ended before its last chunk"
    _nothing_indexed(container)


def test_a_json_body_cut_short_of_its_content_length_is_a_400_and_writes_nothing(server: Any) -> None:
    url, container = server
    whole = json.dumps({"items": [json.loads(_line(i)) for i in range(20)]}).encode()
    head = _head("/entities", "application/json", f"Content-Length: {len(whole) + 100}\r\n")
    status, answer = _send(url, head, [whole])  # a complete JSON document, short of what was announced
    assert status == 400, answer
    assert (
        answer["error"]["message"] == f"the request body ended after {len(whole)} of {len(whole) + 100} bytes"
    )
    _nothing_indexed(container)
