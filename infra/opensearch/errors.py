"""The one place where OpenSearch failures become core errors.

- opensearch-py exceptions (`translate`): connection failures and timeouts, and HTTP 429/5xx, become
  `UnavailableError("opensearch")` (→ 503 with Retry-After upstream); 400s (a mapping problem, e.g. a
  vector of the wrong dimension) and 413s (a request above the domain's size cap) become
  `InvalidInputError`; 409s `ConflictError`; auth failures are our
  own misconfiguration, so they are `UnavailableError` too (the caller can do nothing about them).
- Errors reported inside a 200 response (a `_bulk` item, an `_msearch` item) go through the same
  `classify`, so both paths agree.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from core.errors import ConflictError, InvalidInputError, QuarryError, UnavailableError

BACKEND = "opensearch"
RETRYABLE_STATUSES = frozenset({429, 502, 503, 504})  # throttled, or a gateway/node that may recover
THROTTLED_RETRY_AFTER = 1  # seconds: a 429 clears as soon as the queues drain
UNAVAILABLE_RETRY_AFTER = 5  # seconds: core.errors.UnavailableError's default
INDEX_MISSING = "index_not_found_exception"


def classify(status: int, error_type: str | None, reason: str) -> QuarryError:
    """The core error for an OpenSearch status and error type (from an exception or a response item)."""
    detail = f"{status} {error_type or 'error'}: {reason}".strip()
    if status == 429:
        return UnavailableError(BACKEND, detail, THROTTLED_RETRY_AFTER)
    if status == 400:
        return InvalidInputError(f"OpenSearch rejected the request: {detail}", {BACKEND: detail})
    if status == 413:
        return InvalidInputError(f"too large for OpenSearch: {detail}", {BACKEND: detail})
    if status == 409:
        return ConflictError(f"OpenSearch refused a conflicting write: {detail}")
    return UnavailableError(BACKEND, detail, UNAVAILABLE_RETRY_AFTER)


def error_parts(info: Any) -> tuple[str | None, str]:
    """(type, reason) of an OpenSearch error body (`{"error": {"type", "reason"}}`) or item error."""
    error = info.get("error", info) if isinstance(info, Mapping) else info
    if isinstance(error, Mapping):
        root = (error.get("root_cause") or [{}])[0]
        reason = error.get("reason") or (root.get("reason") if isinstance(root, Mapping) else None)
        return error.get("type"), str(reason or "")
    return None, str(error or "")


def translate(exc: Exception) -> QuarryError:
    """An opensearch-py exception as the core error it means."""
    from opensearchpy import exceptions as os_errors

    if isinstance(exc, os_errors.ConnectionTimeout):
        return UnavailableError(BACKEND, f"timed out: {exc.info}", UNAVAILABLE_RETRY_AFTER)
    if isinstance(exc, os_errors.ConnectionError):
        return UnavailableError(BACKEND, f"cannot connect: {exc.info}", UNAVAILABLE_RETRY_AFTER)
    if isinstance(exc, os_errors.TransportError):
        status = exc.status_code if isinstance(exc.status_code, int) else 0
        error_type, reason = error_parts(exc.info)
        return classify(status, error_type or str(exc.error), reason)
    if isinstance(exc, os_errors.SerializationError):
        return InvalidInputError(f"cannot serialise for OpenSearch: {exc}", {BACKEND: str(exc)})
    return UnavailableError(BACKEND, f"{type(exc).__name__}: {exc}", UNAVAILABLE_RETRY_AFTER)


@contextmanager
def translated() -> Iterator[None]:
    """Run a client call; any opensearch-py (or transport) failure leaves as a core error."""
    from opensearchpy import exceptions as os_errors
    from opensearchpy.helpers.errors import ScanError

    try:
        yield
    except (os_errors.OpenSearchException, os_errors.ImproperlyConfigured) as exc:
        raise translate(exc) from exc
    except ScanError as exc:  # a scroll page some shards did not answer (helpers.scan refuses it)
        raise UnavailableError(BACKEND, f"a scan answered partially: {exc}", UNAVAILABLE_RETRY_AFTER) from exc
