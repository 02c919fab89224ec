"""The local dev server: HTTP requests → API Gateway HTTP API v2 events → the same Lambda handler, as
`sam local start-api` would do, with bearer keys from QUARRY_API_KEYS checked here (the authorizer's job
in AWS) and injected as the Lambda authorizer context."""

from __future__ import annotations

import base64
import json
import secrets
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

PUBLIC_PATHS = frozenset({"/health"})
ALL_SCOPES = ["read", "write", "admin"]
DEV_TENANT = "dev"

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]


@dataclass
class FakeLambdaContext:
    """Enough of a Lambda context for Powertools."""

    function_name: str = "quarry-local"
    memory_limit_in_mb: int = 1024
    invoked_function_arn: str = "arn:aws:lambda:local:000000000000:function:quarry-local"
    aws_request_id: str = ""

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


def local_keys(configured: Mapping[str, Any]) -> tuple[dict[str, Any], str | None]:
    """The keys to accept; with none configured, one fresh key for tenant `dev` with every scope."""
    if configured:
        return dict(configured), None
    key = "qk_" + secrets.token_urlsafe(24)
    return {key: {"tenant": DEV_TENANT, "scopes": ALL_SCOPES}}, key


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


def make_server(
    host: str, port: int, keys: Mapping[str, Any], handler: Handler, max_body_bytes: int
) -> ThreadingHTTPServer:
    """A threaded HTTP server that authenticates and forwards every request to `handler`."""

    class Forwarder(BaseHTTPRequestHandler):
        server_version = "quarry-dev"

        def log_message(self, fmt: str, *args: Any) -> None:  # quiet: the handler logs as JSON
            return

        def _reply(self, status: int, payload: Any, headers: Mapping[str, str] | None = None) -> None:
            data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
            self.send_response(status)
            for name, value in (headers or {"content-type": "application/json"}).items():
                self.send_header(name, value)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _error(self, status: int, code: str, message: str, fields: Mapping[str, str]) -> None:
            self._reply(status, {"error": {"code": code, "message": message, "fields": dict(fields)}})

        def _handle(self) -> None:
            path = urlsplit(self.path).path
            authorizer = None
            if path not in PUBLIC_PATHS:
                auth = self.headers.get("authorization", "")
                token = auth[7:].strip() if auth.lower().startswith("bearer ") else ""
                if token not in keys:
                    self._error(
                        401,
                        "unauthorized",
                        "missing or unknown bearer token",
                        {"authorization": "must be 'Bearer <key>' with a key from QUARRY_API_KEYS"},
                    )
                    return
                authorizer = keys[token]
            length = int(self.headers.get("content-length") or 0)
            if length > max_body_bytes:
                self._error(
                    413,
                    "payload_too_large",
                    f"request body exceeds {max_body_bytes} bytes",
                    {"body": f"must be at most {max_body_bytes} bytes"},
                )
                self.close_connection = True
                return
            body = self.rfile.read(length) if length else b""
            event = build_event(self.command, self.path, dict(self.headers.items()), body, authorizer)
            context = FakeLambdaContext(aws_request_id=event["requestContext"]["requestId"])
            result = handler(event, context)
            raw = result.get("body") or ""
            data = base64.b64decode(raw) if result.get("isBase64Encoded") else raw.encode()
            headers = {
                k: v for k, v in (result.get("headers") or {}).items() if k.lower() != "content-length"
            }
            self._reply(int(result.get("statusCode", 200)), data, headers)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle

    return ThreadingHTTPServer((host, port), Forwarder)
