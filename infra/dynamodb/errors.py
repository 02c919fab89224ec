"""The one place where botocore errors from DynamoDB become core errors.

Throttling, capacity, service faults, a missing table and every connection-level failure mean "try again
later" (UnavailableError → 503 with Retry-After); anything else is a request this code should never have
sent and surfaces as a plain QuarryError naming the DynamoDB error code.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from core.errors import PayloadTooLargeError, QuarryError, UnavailableError

BACKEND = "dynamodb"
# Seconds a caller should wait after throttling or an outage: DynamoDB adapts on-demand capacity within
# minutes, but single throttling bursts clear within seconds (matches UnavailableError's default).
RETRY_AFTER_SECONDS = 5
# An item holds at most 400 KB (Amazon DynamoDB Developer Guide, "Service, account, and table quotas");
# DynamoDB refuses a bigger one with a ValidationException whose message says so.
ITEM_BYTES = 400 * 1024
ITEM_TOO_LARGE = "item size has exceeded the maximum allowed size"

UNAVAILABLE_CODES = frozenset(
    {
        "ProvisionedThroughputExceededException",
        "ThrottlingException",
        "RequestLimitExceeded",
        "LimitExceededException",
        "InternalServerError",
        "ServiceUnavailable",
        "ResourceNotFoundException",
        "TransactionInProgressException",
    }
)


def error_code(exc: BaseException) -> str | None:
    """The DynamoDB error code of a ClientError (None for anything else)."""
    if isinstance(exc, ClientError):
        return str(exc.response.get("Error", {}).get("Code", "Unknown"))
    return None


def cancellation_codes(exc: BaseException) -> list[str]:
    """Per-item reasons of a cancelled transaction (`ConditionalCheckFailed`, `TransactionConflict`…)."""
    if not isinstance(exc, ClientError):
        return []
    reasons: list[dict[str, Any]] = exc.response.get("CancellationReasons", [])
    return [str(r.get("Code", "None")) for r in reasons]


def translate(exc: Exception) -> QuarryError:
    """The core error for a botocore failure."""
    if isinstance(exc, ClientError):
        code = error_code(exc)
        message = exc.response.get("Error", {}).get("Message", str(exc))
        if code in UNAVAILABLE_CODES:
            return UnavailableError(BACKEND, f"{code}: {message}", retry_after=RETRY_AFTER_SECONDS)
        if code == "ValidationException" and ITEM_TOO_LARGE in message.lower():  # caused by the input
            return PayloadTooLargeError(f"the value to store exceeds {BACKEND}'s item size limit", ITEM_BYTES)
        return QuarryError(f"{BACKEND} rejected the request: {code}: {message}")
    return UnavailableError(BACKEND, f"{type(exc).__name__}: {exc}", retry_after=RETRY_AFTER_SECONDS)


@dataclass(slots=True)
class Refusal:
    """What `dynamodb_errors` yields: the expected refusal that ended its block, if one did."""

    code: str | None = None  # the error code, or the cancellation reason of a cancelled transaction
    message: str = ""
    error: ClientError | None = None

    def __bool__(self) -> bool:
        return self.code is not None


def _expected(exc: ClientError, expected: Collection[str]) -> str | None:
    """The code among `expected` that `exc` carries: its own, or one reason of a cancelled transaction."""
    code = error_code(exc)
    if code in expected:
        return code
    if code == "TransactionCanceledException":
        return next((r for r in cancellation_codes(exc) if r in expected), None)
    return None


@contextmanager
def dynamodb_errors(*expected: str) -> Iterator[Refusal]:
    """Run a block of DynamoDB calls, raising core errors instead of botocore ones.

    A refusal the caller expects (`ConditionalCheckFailedException` for a conditional write, a transaction
    cancelled for `ConditionalCheckFailed`, `ResourceInUseException` for a table someone else created…)
    is not an error: it ends the block and is recorded on the yielded Refusal, which is then truthy."""
    refusal = Refusal()
    try:
        yield refusal
    except ClientError as exc:
        code = _expected(exc, expected)
        if code is None:
            raise translate(exc) from exc
        refusal.code, refusal.error = code, exc
        refusal.message = str(exc.response.get("Error", {}).get("Message", ""))
    except BotoCoreError as exc:
        raise translate(exc) from exc
