"""The time an invocation has left to answer, which blocking backend calls honour.

A Lambda function is stopped at its timeout: whatever it was waiting for, the caller gets API Gateway's
500 instead of Quarry's 503 with Retry-After. So the API handler sets a deadline from its context's
remaining time (less the moments needed to send the answer) and the OpenSearch connection clamps each
attempt's timeout to what is left, then stops retrying (infra/opensearch/client.py): a hung node costs
the invocation its remaining time and no more, and the answer is the backend-unavailable 503.

Process-wide rather than per thread: Lambda runs one invocation per process at a time (as the dev server
does per engine), and an assembly's fan-out threads must see their invocation's deadline.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

_deadline: float | None = None  # time.monotonic() by which the current invocation must have answered


@contextmanager
def answer_within(seconds: float) -> Iterator[None]:
    """Backend calls made inside the block end within `seconds` (the previous deadline is restored)."""
    global _deadline
    previous, _deadline = _deadline, time.monotonic() + max(0.0, seconds)
    try:
        yield
    finally:
        _deadline = previous


def remaining() -> float | None:
    """Seconds left before the deadline (0 once it has passed), or None outside an invocation."""
    deadline = _deadline
    return None if deadline is None else max(0.0, deadline - time.monotonic())
