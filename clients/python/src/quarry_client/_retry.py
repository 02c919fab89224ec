"""When to try a request again: 429 and 503 (the server did not do the work, or did it in a way a retry
completes: Quarry's writes are versioned, so a repeat is a duplicate, never a second change), and a
connection that could not be opened. Waits honour `Retry-After` plus a random share of it (so clients told
the same delay do not all come back in the same instant); every wait fits a total time budget."""

from __future__ import annotations

import random
from dataclasses import dataclass

RETRIED_STATUSES = frozenset({429, 503})


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """`total_seconds` bounds the whole call, waits included; `attempts` bounds the tries."""

    total_seconds: float = 30.0
    attempts: int = 6
    backoff_seconds: float = 0.25  # the first wait without Retry-After; doubled each time, with jitter
    max_backoff_seconds: float = 8.0
    # Up to this share of Retry-After is added at random: 20 %, the top of the 10-20 % spread that keeps
    # clients refused together from retrying together, while never retrying before the server asked.
    retry_after_jitter: float = 0.2

    def wait(self, attempt: int, retry_after: float | None, remaining: float) -> float | None:
        """Seconds to wait before try `attempt + 1`, or None when no further try fits."""
        if attempt >= self.attempts:
            return None
        if retry_after is None:
            ceiling = min(self.max_backoff_seconds, self.backoff_seconds * 2 ** (attempt - 1))
            retry_after = random.uniform(ceiling / 2, ceiling)  # noqa: S311 - jitter, not security
        elif retry_after < remaining:
            spread = retry_after * random.uniform(0.0, self.retry_after_jitter)  # noqa: S311 - jitter
            return min(retry_after + spread, remaining)
        return retry_after if retry_after < remaining else None


NO_RETRIES = RetryPolicy(attempts=1)
