"""The local server: HTTP requests → API Gateway HTTP API v2 events → the same Lambda handler, as
`sam local start-api` would do, with bearer keys (QUARRY_API_KEYS, else the data directory's local key,
handlers/local_server/local_key.py) checked here — the authorizer's job in AWS — and injected as the Lambda authorizer
context. It also answers CORS (handlers/local_server/cors.py; API Gateway's job in AWS) and writes one access-log line
per request: method, path (no query), status, milliseconds and tenant; never a body or a key.

Concurrency (docs/architecture.md, Entry points). Powertools keeps the current event, Lambda context and route
on the resolver *class* (`BaseRouter.current_event`), i.e. per process: two requests resolved at once in one
process can swap tenants. So each process runs the handler on ONE engine thread, one request at a time
(`Engine`), while connection threads only read and write sockets; parallelism comes from worker
processes (`serve_workers`) that share the listening socket and the SQLite WAL file. Each engine admits
one running request plus a small queue; beyond that a request is answered 503 with Retry-After at once.

Size: longer than ~300 lines because the request → event translation, the engine thread and the
connection handling are one server; the engine thread is handlers/local_server/devserver_engine.py, the worker
processes are handlers/local_server/devserver_workers.py, uploads handlers/http_api/gate.py, CORS
handlers/local_server/cors.py.
"""

from __future__ import annotations

import base64
import logging
import socket
import threading
import time
import uuid
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal
from urllib.parse import parse_qsl, urlsplit

from handlers.http_api.auth import PUBLIC_PATHS
from handlers.http_api.gate import UPLOAD, UPLOAD_FILE
from handlers.local_server import cors
from handlers.local_server.console_static import console_file, is_console_path
from handlers.local_server.devserver_engine import DEFAULT_QUEUE, Batcher, Engine, FakeLambdaContext, Handler
from handlers.local_server.devserver_http import (
    copy_body,
    read_body,
    read_upload,
    refuse,
    shed,
    withholds_continue,
    write_access_line,
)
from handlers.local_server.local_key import CONFIGURED_KEY_HINT

RETRY_AFTER_SECONDS = 1  # an overloaded engine drains its queue in about this long
IDLE_TIMEOUT_SECONDS = 30  # a keep-alive connection with no request for this long is closed
MAX_CONNECTIONS = 256  # open connections per worker, a thread each: bounds threads against slow clients


def build_event(
    method: str, target: str, headers: Mapping[str, str], body: bytes, authorizer: Mapping[str, Any] | None
) -> dict[str, Any]:
    """An API Gateway HTTP API (payload 2.0) event for one HTTP request."""
    parts = urlsplit(target)
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    lowered = {k.lower(): v for k, v in headers.items()}
    text: str | None = None
    encoded = False
    if body:
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            text, encoded = base64.b64encode(body).decode(), True
    now = time.time()
    return {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": parts.path,
        "rawQueryString": parts.query,
        "headers": lowered,
        "queryStringParameters": query or None,
        "requestContext": {
            "accountId": "000000000000",
            "apiId": "local",
            "authorizer": {"lambda": dict(authorizer)} if authorizer else None,
            "domainName": lowered.get("host", "localhost"),
            "http": {
                "method": method,
                "path": parts.path,
                "protocol": "HTTP/1.1",
                "sourceIp": "127.0.0.1",
                "userAgent": lowered.get("user-agent", ""),
            },
            "requestId": str(uuid.uuid4()),
            "routeKey": "$default",
            "stage": "$default",
            "time": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now)),
            "timeEpoch": int(now * 1000),
        },
        "body": text,
        "isBase64Encoded": encoded,
    }


class QuarryHTTPServer(ThreadingHTTPServer):
    """ThreadingHTTPServer with an Engine; it can also serve a socket bound by a parent process."""

    daemon_threads = True
    request_queue_size = 128  # the kernel's accept backlog

    def __init__(
        self,
        address: tuple[str, int],
        forwarder: type[BaseHTTPRequestHandler],
        engine: Engine,
        sock: socket.socket | None = None,
        max_connections: int = MAX_CONNECTIONS,
    ) -> None:
        self.engine = engine
        self.max_connections = max_connections
        self._open = 0
        self._open_lock = threading.Lock()
        super().__init__(address, forwarder, bind_and_activate=sock is None)
        if sock is not None:
            self.socket.close()
            self.socket = sock
            self.server_address = sock.getsockname()[:2]

    def process_request(self, request: Any, client_address: Any) -> None:
        """A thread per connection, up to `max_connections`; beyond, a 503 at once and close."""
        with self._open_lock:
            admitted = self._open < self.max_connections
            self._open += admitted
        if admitted:
            super().process_request(request, client_address)
        else:
            shed(request, RETRY_AFTER_SECONDS)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self._open_lock:
                self._open -= 1

    def server_close(self) -> None:
        super().server_close()
        self.engine.close()


class _Forwarder(BaseHTTPRequestHandler):
    """One connection: authenticate, read the body, hand the event to the engine, write the answer."""

    server_version = "quarry-local"
    protocol_version = "HTTP/1.1"  # keep-alive, so load generators reuse connections
    # Headers and body go out in two writes: with Nagle on, the body waits for the client's delayed ACK
    # (~40 ms) on every request but a connection's first.
    disable_nagle_algorithm = True
    timeout = IDLE_TIMEOUT_SECONDS
    server: QuarryHTTPServer
    keys: Mapping[str, Any] = {}
    max_body_bytes: int = 0
    max_ndjson_bytes: int = 0  # an NDJSON upload's own limit (QUARRY_MAX_NDJSON_BYTES)
    key_hint: str = CONFIGURED_KEY_HINT  # what a 401 says about where the key comes from
    origins: tuple[str, ...] = ()  # QUARRY_CORS_ORIGINS
    access_log: bool = False
    _status = 0
    _cors: dict[str, str] = {}

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet: the handler logs as JSON
        return

    def log_request(self, code: Any = "-", size: Any = "-") -> None:
        self._status = int(code) if str(code).isdigit() else 0  # for the access line

    def __getattr__(self, name: str) -> Any:
        # Every method (OPTIONS, HEAD, TRACE, PROPFIND…) reaches the API, which answers a JSON 405 with
        # Allow, instead of http.server's HTML 501.
        if name.startswith("do_"):
            return self._handle
        raise AttributeError(name)

    def reply(self, status: int, data: bytes, headers: Mapping[str, str], close: bool = False) -> None:
        """Write one response (no body for HEAD, as HTTP requires)."""
        self.send_response(status)
        for name, value in {**headers, **self._cors}.items():
            if name.lower() not in ("content-length", "connection"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        try:
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)
        except OSError:  # the client went away (timed out, reset): nothing left to tell it
            self.close_connection = True

    def _unauthorized(self) -> None:
        refuse(self, 401, "unauthorized", "missing or unknown bearer token", {"authorization": self.key_hint})

    def _is_upload(self) -> bool:
        return (self.command, urlsplit(self.path).path) == UPLOAD

    def handle_expect_100(self) -> bool:
        """`Expect: 100-continue`: a 100 only when the announced body fits the limit."""
        return withholds_continue(self.headers, self.body_limit()) or super().handle_expect_100()

    def body_limit(self) -> int:
        """The size limit of this request's body: an NDJSON upload's own, else QUARRY_MAX_BODY_BYTES."""
        return self.max_ndjson_bytes if self._is_upload() else self.max_body_bytes

    def _principal(self) -> Mapping[str, Any] | Literal[False] | None:
        """The authorizer context for the bearer key; None on a public path; False when refused."""
        if urlsplit(self.path).path in PUBLIC_PATHS:
            return None
        auth = self.headers.get("authorization", "")
        token = auth[7:].strip() if auth.lower().startswith("bearer ") else ""
        grant: Mapping[str, Any] | None = self.keys.get(token) if token else None
        return grant if grant is not None else False

    def _handle(self) -> None:
        started, self._status = time.perf_counter(), 0
        tenant = self._serve()
        if self.access_log:
            ms = (time.perf_counter() - started) * 1000
            write_access_line(self.command, urlsplit(self.path).path, self._status, ms, tenant)

    def _cross_origin(self) -> bool:
        """Set the CORS headers of this request's answers; True when it was a preflight, answered here."""
        allow = cors.allowed_origin(self.headers.get("origin"), self.origins)
        self._cors = cors.response_headers(allow) if allow else {}
        if not cors.is_preflight(self.command, {k.lower(): v for k, v in self.headers.items()}):
            return False
        if read_body(self, self.max_body_bytes) is None:
            return True  # refused (400, 413): answered
        if allow is None:
            origin = self.headers.get("origin", "")
            fields = {"origin": "is not in QUARRY_CORS_ORIGINS (cross-origin calls are off by default)"}
            refuse(self, 403, "forbidden", f"cross-origin requests from {origin} are not allowed", fields)
        else:
            self._cors = {}
            self.reply(204, b"", cors.preflight_headers(allow))
        return True

    def _serve(self) -> str | None:
        """Answer the request; the tenant it acted for, if any."""
        if self._cross_origin():
            return None
        if self._is_upload():  # streamed to a file, handed to the handler as one (handlers/http_api/gate.py)
            if self._principal() is False:  # a stranger's upload is read and thrown away, never stored
                if copy_body(self, self.max_ndjson_bytes, lambda _: None):
                    self._unauthorized()
                return None
            upload = read_upload(self, self.max_ndjson_bytes)
            if upload is None:
                return None  # read_upload answered (400 or 413)
            with upload:
                return self._forward(b"", upload)
        body = read_body(self, self.max_body_bytes)
        if body is None:
            return None  # read_body answered (400, 411 or 413)
        return self._forward(body, None)

    def _forward(self, body: bytes, upload: Any) -> str | None:
        """Authenticate and hand the request to the engine; the tenant it acted for, if any."""
        if self.command in ("GET", "HEAD") and is_console_path(self.path):
            self.reply(*console_file(self.path))  # the console's files: public, they hold no data
            return None
        principal = self._principal()
        if principal is False:
            self._unauthorized()
            return None
        tenant = str(principal["tenant"]) if principal else None
        event = build_event(self.command, self.path, dict(self.headers.items()), body, principal or None)
        if upload is not None:
            event[UPLOAD_FILE] = upload
        try:
            result = self.server.engine.run(event)
        except Exception:  # the handler answers its own errors; this is a fault of the server itself
            logging.getLogger(__name__).exception("local server: the handler raised")
            refuse(self, 500, "internal", "internal error; it has been logged", {})
            return tenant
        if result is None:
            refuse(
                self,
                503,
                "overloaded",
                "the server is at capacity; retry shortly",
                {},
                {"Retry-After": str(RETRY_AFTER_SECONDS)},
            )
            return tenant
        raw = result.get("body") or ""
        data = base64.b64decode(raw) if result.get("isBase64Encoded") else raw.encode()
        self.reply(int(result.get("statusCode", 200)), data, result.get("headers") or {})
        return tenant


def make_server(
    host: str,
    port: int,
    keys: Mapping[str, Any],
    handler: Handler,
    max_body_bytes: int,
    *,
    max_ndjson_bytes: int | None = None,
    queue: int = DEFAULT_QUEUE,
    sock: socket.socket | None = None,
    max_connections: int = MAX_CONNECTIONS,
    key_hint: str = CONFIGURED_KEY_HINT,
    origins: tuple[str, ...] = (),
    access_log: bool = False,
    batcher: Batcher | None = None,
) -> QuarryHTTPServer:
    """A server that authenticates and forwards every request to `handler` through one Engine; an NDJSON
    upload may be `max_ndjson_bytes` (default: `max_body_bytes`); `origins` may call it from a browser
    (CORS), `access_log` writes a line per request, and a `batcher` prepares waiting requests together."""
    options = {"keys": dict(keys), "max_body_bytes": max_body_bytes, "key_hint": key_hint,
               "max_ndjson_bytes": max_body_bytes if max_ndjson_bytes is None else max_ndjson_bytes,
               "origins": tuple(origins), "access_log": access_log}  # fmt: skip
    forwarder = type("Forwarder", (_Forwarder,), options)
    return QuarryHTTPServer((host, port), forwarder, Engine(handler, queue, batcher), sock, max_connections)


__all__ = [
    "DEFAULT_QUEUE",
    "Batcher",
    "Engine",
    "FakeLambdaContext",
    "QuarryHTTPServer",
    "build_event",
    "make_server",
]
