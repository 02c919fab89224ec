"""Streamable HTTP for `quarry mcp --transport http`: the SDK's Starlette app behind the API's bearer keys.

Every HTTP request needs `Authorization: Bearer <key>` naming an entry of QUARRY_API_KEYS (401 with the
API's error body, saying where the key comes from, otherwise); the tools then read the same header to act for that key's tenant and
scopes. With no keys configured the data directory's local key (handlers/local_key.py, the one `quarry
serve` prints) is accepted for tenant `dev`.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from core.errors import UnauthorizedError
from handlers.mcp_server import Gate

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
        try:
            self._gate.bearer(headers.get("authorization", ""))
        except UnauthorizedError as exc:
            fields = {"authorization": self._gate.hint} if self._gate.hint else {}
            body = json.dumps(
                {"error": {"code": exc.code, "message": exc.message, "fields": fields}}
            ).encode()
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"www-authenticate", b"Bearer"),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        await self._app(scope, receive, send)


def http_app(server: Any, gate: Gate) -> Any:
    """The streamable HTTP ASGI app (path /mcp) wrapped in the bearer-key check."""
    return BearerKeys(server.streamable_http_app(streamable_http_path="/mcp"), gate)


def serve_http(server: Any, gate: Gate, host: str, port: int) -> None:
    """Run the app with uvicorn until interrupted."""
    import uvicorn

    uvicorn.run(http_app(server, gate), host=host, port=port, log_level="warning")
