"""Streamable HTTP for `quarry mcp --transport http`: the SDK's Starlette app behind the API's bearer keys.

Every HTTP request needs `Authorization: Bearer <key>` naming an entry of QUARRY_API_KEYS (401 with the
API's error body, saying where the key comes from, otherwise); the tools then read the same header to act for that key's tenant and
scopes. With no keys configured the data directory's local key (handlers/local_server/local_key.py, the one `quarry
serve` prints) is accepted for tenant `dev`.

A 401 names the server's OAuth 2.0 Protected Resource Metadata (RFC 9728, as the MCP authorization spec
asks: `WWW-Authenticate: Bearer resource_metadata="…"`), served without a key at
`/.well-known/oauth-protected-resource/mcp` (RFC 9728's path for the resource `/mcp`) and at
`/.well-known/oauth-protected-resource`. The keys are static (QUARRY_API_KEYS): no authorization server
issues them, so the document names none (`authorization_servers` is optional) and says where keys come
from instead; an MCP client then reports that a key is needed rather than a bare "error response".
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from core.errors import UnauthorizedError
from handlers.http_api.auth import SCOPES
from handlers.mcp.server import Gate

MCP_PATH = "/mcp"
METADATA_PATH = "/.well-known/oauth-protected-resource"
METADATA_PATHS = frozenset({METADATA_PATH, METADATA_PATH + MCP_PATH})
RESOURCE_NAME = (
    "Quarry MCP: a bearer key of QUARRY_API_KEYS (static keys; no authorization server issues them)"
)

Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]]


class BearerKeys:
    """ASGI middleware: refuse HTTP requests without a known bearer key before the MCP app sees them."""

    def __init__(self, app: ASGIApp, gate: Gate) -> None:
        self._app = app
        self._gate = gate

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        if scope.get("path") in METADATA_PATHS and scope.get("method") in ("GET", "HEAD"):
            await _answer(send, 200, [], protected_resource(base_url(scope, headers)))
            return
        authorization = headers.get("authorization", "")
        try:
            self._gate.bearer(authorization)
        except UnauthorizedError as exc:
            fields = {"authorization": self._gate.hint} if self._gate.hint else {}
            body = {"error": {"code": exc.code, "message": exc.message, "fields": fields}}
            await _answer(
                send, 401, [(b"www-authenticate", challenge(base_url(scope, headers), authorization))], body
            )
            return
        await self._app(scope, receive, send)


def base_url(scope: Scope, headers: dict[str, str]) -> str:
    """scheme://host[:port] the client used (its Host header), for the URLs the metadata names."""
    host = headers.get("host") or "{}:{}".format(*(scope.get("server") or ("127.0.0.1", 80)))
    return f"{scope.get('scheme', 'http')}://{host}"


def challenge(base: str, authorization: str) -> bytes:
    """The 401's `WWW-Authenticate`: where the resource metadata is, and `invalid_token` when a bearer
    token came but is not a key (RFC 6750 §3: no error code when no credentials came)."""
    parts = [f'resource_metadata="{base}{METADATA_PATH}{MCP_PATH}"']
    if authorization.strip():
        parts.insert(0, 'error="invalid_token"')
    return ("Bearer " + ", ".join(parts)).encode("latin-1")


def protected_resource(base: str) -> dict[str, Any]:
    """RFC 9728 metadata of the MCP endpoint (static keys: no `authorization_servers`)."""
    return {
        "resource": base + MCP_PATH,
        "bearer_methods_supported": ["header"],
        "scopes_supported": sorted(SCOPES),
        "resource_name": RESOURCE_NAME,
    }


async def _answer(send: Any, status: int, headers: list[tuple[bytes, bytes]], body: dict[str, Any]) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), *headers],
        }
    )
    await send({"type": "http.response.body", "body": json.dumps(body).encode()})


def http_app(server: Any, gate: Gate) -> Any:
    """The streamable HTTP ASGI app (path /mcp) wrapped in the bearer-key check."""
    return BearerKeys(server.streamable_http_app(streamable_http_path=MCP_PATH), gate)


def serve_http(server: Any, gate: Gate, host: str, port: int) -> None:
    """Run the app with uvicorn until interrupted."""
    import uvicorn

    uvicorn.run(http_app(server, gate), host=host, port=port, log_level="warning")
