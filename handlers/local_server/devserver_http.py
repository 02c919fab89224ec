"""HTTP framing for the local server: read a request body (Content-Length or chunked) within the size
limit — an NDJSON upload streamed into a temporary file, never held whole in memory — and refuse a request
with the JSON error body: an oversized body is read and thrown away before the 413 is sent, so the client
sees the 413 rather than a connection reset."""

from __future__ import annotations

import contextlib
import json
import socket
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler
from typing import IO, Any

from handlers.http_api import json_answers

DRAIN_LIMIT = 64 * 1024 * 1024  # read and discard at most this much of a refused body (then just close)
DRAIN_SECONDS = 5.0  # and for at most this long
CHUNK = 65536
UPLOAD_IN_MEMORY = 1_048_576  # an upload above this spills from memory to a temporary file


def refuse(
    conn: Any,
    status: int,
    code: str,
    message: str,
    fields: Mapping[str, str],
    headers: Mapping[str, str] | None = None,
    close: bool = False,
) -> None:
    """Answer with the `{error: {code, message, fields}}` body every Quarry error uses."""
    data = json_answers.dumps({"error": {"code": code, "message": message, "fields": dict(fields)}}).encode()
    conn.reply(status, data, {"Content-Type": "application/json", **(headers or {})}, close=close)


def _drain(conn: BaseHTTPRequestHandler, remaining: int | None) -> None:
    """Read and discard up to `remaining` bytes (or until EOF) within the drain limits."""
    deadline = time.monotonic() + DRAIN_SECONDS
    budget = DRAIN_LIMIT if remaining is None else min(remaining, DRAIN_LIMIT)
    try:
        conn.connection.settimeout(1.0)
        while budget > 0 and time.monotonic() < deadline:
            data = conn.rfile.read1(min(CHUNK, budget))  # type: ignore[attr-defined]
            if not data:
                return
            budget -= len(data)
    except OSError:
        return


def _too_large(conn: BaseHTTPRequestHandler, limit: int, remaining: int | None) -> None:
    if conn.headers.get("expect", "").lower() != "100-continue":  # else the client never sent it
        _drain(conn, remaining)
    refuse(
        conn,
        413,
        "payload_too_large",
        f"request body exceeds {limit} bytes",
        {"body": f"must be at most {limit} bytes"},
        close=True,
    )


def _truncated(conn: BaseHTTPRequestHandler, message: str) -> bool:
    """Answer 400 for a body the client stopped sending before its end (HTTP/1.1, RFC 9112 section 8: an
    incomplete message); nothing of it reaches the handler. Always False, for the caller to return."""
    refuse(conn, 400, "invalid_input", message, {"body": "is incomplete: " + message}, close=True)
    return False


def _chunk_size(conn: BaseHTTPRequestHandler) -> int | None:
    """The next chunk's size; None after answering 400 for a malformed or missing size line."""
    raw = conn.rfile.readline(1024)
    if not raw:
        _truncated(conn, "chunked body ended before its last chunk")
        return None
    try:
        return int(raw.split(b";", 1)[0].strip(), 16)
    except ValueError:
        refuse(conn, 400, "invalid_input", "malformed chunked body", {"body": "bad chunk size"}, close=True)
        return None


def _chunked(conn: BaseHTTPRequestHandler, limit: int, write: Callable[[bytes], Any]) -> bool:
    """Copy a chunked body to `write`; False after answering 400/413."""
    size = 0
    while True:
        length = _chunk_size(conn)
        if length is None:
            return False
        if length == 0:
            while conn.rfile.readline(1024).strip():  # trailers
                pass
            return True
        size += length
        if size > limit:
            _too_large(conn, limit, None)
            return False
        if _copy(conn, length, write) < length or not conn.rfile.readline(8):  # the chunk, then its CRLF
            return _truncated(conn, "chunked body ended before its last chunk")


def _copy(conn: BaseHTTPRequestHandler, length: int, write: Callable[[bytes], Any]) -> int:
    """Copy `length` bytes to `write` in pieces of CHUNK (a client's chunk may be as large as the whole
    body); how many came (fewer when the client stopped sending first)."""
    copied = 0
    while copied < length:
        piece = conn.rfile.read(min(length - copied, CHUNK))
        if not piece:
            break
        write(piece)
        copied += len(piece)
    return copied


def copy_body(conn: BaseHTTPRequestHandler, limit: int, write: Callable[[bytes], Any]) -> bool:
    """Copy the body, CHUNK by CHUNK, to `write` (a file, or nothing to throw it away); False after
    answering 400/413 — a body that ends before its announced length or its last chunk included."""
    if "chunked" in conn.headers.get("transfer-encoding", "").lower():
        return _chunked(conn, limit, write)
    length = _length(conn, limit)
    if length is None:
        return False
    received = _copy(conn, length, write)
    if received < length:
        return _truncated(conn, f"the request body ended after {received} of {length} bytes")
    return True


def read_upload(conn: BaseHTTPRequestHandler, limit: int) -> IO[bytes] | None:
    """An upload's body in a temporary file (memory up to UPLOAD_IN_MEMORY, then disk); None after
    answering 400/413. The caller closes the file."""
    spool = tempfile.SpooledTemporaryFile(max_size=UPLOAD_IN_MEMORY)  # noqa: SIM115 - the caller closes it
    if not copy_body(conn, limit, spool.write):
        spool.close()
        return None
    return spool  # type: ignore[return-value]  # a SpooledTemporaryFile is a binary file


def read_body(conn: BaseHTTPRequestHandler, limit: int) -> bytes | None:
    """The request body, or None after answering 400/413 for a body that cannot or may not be read (one
    that ends before its announced length or its last chunk included)."""
    parts: list[bytes] = []
    return b"".join(parts) if copy_body(conn, limit, parts.append) else None


def _length(conn: BaseHTTPRequestHandler, limit: int) -> int | None:
    """The announced Content-Length (0 without one); None after answering 400/413 for a bad or large one."""
    raw = conn.headers.get("content-length")
    if raw is None:
        return 0
    if not raw.strip().isdigit():
        refuse(
            conn,
            400,
            "invalid_input",
            "invalid Content-Length header",
            {"content-length": "must be a non-negative integer"},
            close=True,
        )
        return None
    length = int(raw)
    if length > limit:
        _too_large(conn, limit, length)
        return None
    return length


def withholds_continue(headers: Any, limit: int) -> bool:
    """True when an `Expect: 100-continue` request announces a body over `limit`: no 100 is sent, so the
    client waits, gets the 413, and need not send the body."""
    raw = headers.get("content-length", "")
    return bool(raw.strip().isdigit() and int(raw) > limit)


def write_access_line(method: str, path: str, status: int, ms: float, tenant: str | None) -> None:
    """One JSON line per request on stdout, written whole (workers share the stream)."""
    line = {"message": "request", "method": method, "path": path, "status": status, "ms": round(ms, 2),
            "tenant": tenant}  # fmt: skip
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()


SHED_READ_SECONDS = 0.01  # how long a shed connection's request may take to arrive before the 503


def shed(conn: socket.socket, retry_after: int) -> None:
    """Answer a connection the server has no room for: 503 + Retry-After, then close (on the accepting
    thread, so it must stay quick)."""
    body = json.dumps(
        {"error": {"code": "overloaded", "message": "the server is at capacity; retry shortly", "fields": {}}}
    ).encode()
    head = (
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
        f"Retry-After: {retry_after}\r\nConnection: close\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    with contextlib.suppress(OSError):
        conn.settimeout(SHED_READ_SECONDS)
        with contextlib.suppress(OSError):
            conn.recv(CHUNK)  # take the request off the socket, so closing does not reset the answer
        conn.sendall(head.encode() + body)
        conn.shutdown(socket.SHUT_WR)
    conn.close()
