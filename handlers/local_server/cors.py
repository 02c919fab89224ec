"""Cross-origin requests to `quarry serve` (the Fetch standard's CORS protocol), off unless
QUARRY_CORS_ORIGINS lists the origins a browser app may call from. The key travels in the Authorization
header, never a cookie, so no credentials mode is involved. In AWS the HTTP API answers CORS itself
(template.yaml, `CorsAllowOrigins`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

ANY_ORIGIN = "*"
ALLOWED_METHODS = "GET, POST, PUT, PATCH, DELETE"
ALLOWED_HEADERS = "Authorization, Content-Type"
EXPOSED_HEADERS = "Retry-After, Location, Allow"  # what an error or a job answer tells beyond the body
MAX_AGE_SECONDS = 600  # how long a browser may reuse a preflight's answer (Chromium caps it at 7200)


def allowed_origin(origin: str | None, allowed: Sequence[str]) -> str | None:
    """The value of Access-Control-Allow-Origin for a request from `origin`, or None (not allowed)."""
    if not origin or not allowed:
        return None
    if ANY_ORIGIN in allowed:
        return ANY_ORIGIN
    return origin if origin.lower().rstrip("/") in allowed else None


def is_preflight(method: str, headers: Mapping[str, str]) -> bool:
    """An OPTIONS request a browser sends before a cross-origin call (it names the method it wants)."""
    return (
        method == "OPTIONS"
        and bool(headers.get("origin"))
        and bool(headers.get("access-control-request-method"))
    )


def preflight_headers(allow: str) -> dict[str, str]:
    """The answer to an allowed preflight (204, no key needed: it carries none)."""
    return {
        "Access-Control-Allow-Origin": allow,
        "Access-Control-Allow-Methods": ALLOWED_METHODS,
        "Access-Control-Allow-Headers": ALLOWED_HEADERS,
        "Access-Control-Max-Age": str(MAX_AGE_SECONDS),
        "Vary": "Origin",
    }


def response_headers(allow: str) -> dict[str, str]:
    """What every answer to an allowed origin carries, errors included (so the app can read them)."""
    return {
        "Access-Control-Allow-Origin": allow,
        "Access-Control-Expose-Headers": EXPOSED_HEADERS,
        "Vary": "Origin",
    }
