"""Errors the client raises: one class per status the API documents, each carrying the API's error body
`{"error": {"code", "message", "fields"}}` (the shape of encode/httpx `httpx/_exceptions.py`: one tree)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx


class QuarryError(Exception):
    """Base of everything the client raises."""


class APIConnectionError(QuarryError):
    """The server could not be reached (refused, reset, timed out) within the retry budget, or the
    exchange broke off (an undecodable body, too many redirects)."""


class ResponseError(QuarryError):
    """A success answer the client cannot read: not JSON, or not the shape the OpenAPI document gives it
    (a proxy's HTML page, a truncated body, a server older than the client); `response` is what came."""

    def __init__(self, message: str, response: httpx.Response | None) -> None:
        super().__init__(message)
        self.response = response


class BulkWriteError(QuarryError):
    """Items of a bulk write the server refused one by one (a vector store's write): `errors` lists them
    (index, id, reason); the other items were written."""

    def __init__(self, message: str, errors: list[Any]) -> None:
        super().__init__(message)
        self.errors = errors


class WaitTimeoutError(QuarryError):
    """A write job was still running when `wait()` gave up; `job` is its last status."""

    def __init__(self, message: str, job: Any) -> None:
        super().__init__(message)
        self.job = job


class APIError(QuarryError):
    """An error answer: `status`, and the body's `code`, `message` and `fields` (field path → problem)."""

    status: int = 0

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self.status = response.status_code
        self.body: dict[str, Any] = _body(response)
        error = self.body.get("error") if isinstance(self.body.get("error"), Mapping) else {}
        self.code: str = str(error.get("code", "error"))
        self.message: str = str(error.get("message", response.reason_phrase))
        self.fields: dict[str, str] = dict(error.get("fields") or {})
        super().__init__(
            f"{self.status} {self.code}: {self.message}" + (f" {self.fields}" if self.fields else "")
        )


class BadRequestError(APIError):
    """400: invalid input; `fields` names each bad field."""


class AuthenticationError(APIError):
    """401: missing or unknown key."""


class PermissionDeniedError(APIError):
    """403: the key lacks the scope, or speaks for another caller."""


class NotFoundError(APIError):
    """404: no such object for this tenant."""


class MethodNotAllowedError(APIError):
    """405."""


class ConflictError(APIError):
    """409: a stale version (`fields.version`), a mixed version scheme, or an expired search cursor."""


class TenantErasedError(APIError):
    """410: the tenant was erased (`erase_tenant`); nothing is read or written for it until
    `reopen_tenant` (allowed once the server's reopen delay has passed)."""


class PayloadTooLargeError(APIError):
    """413: body or batch over the server's limit."""


class UnsupportedMediaTypeError(APIError):
    """415."""


class RateLimitError(APIError):
    """429: retried within the budget first; raised when it is spent."""


class InternalServerError(APIError):
    """500: the server's fault (its log has the detail)."""


class UnavailableError(APIError):
    """503: a backend is down or the server is at capacity; retried first. `retry_after` in seconds."""

    @property
    def retry_after(self) -> float | None:
        return retry_after(self.response)


STATUS_ERRORS: dict[int, type[APIError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    405: MethodNotAllowedError,
    409: ConflictError,
    410: TenantErasedError,
    413: PayloadTooLargeError,
    415: UnsupportedMediaTypeError,
    429: RateLimitError,
    500: InternalServerError,
    503: UnavailableError,
}


def error_for(response: httpx.Response) -> APIError:
    """The typed error of an error answer."""
    return STATUS_ERRORS.get(response.status_code, APIError)(response)


def _body(response: httpx.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def retry_after(response: httpx.Response) -> float | None:
    """`Retry-After` in seconds (RFC 9110 §10.2.3: delay-seconds or an HTTP-date), or None."""
    value = response.headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    from datetime import UTC, datetime
    from email.utils import parsedate_to_datetime

    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, (when - datetime.now(UTC)).total_seconds())
