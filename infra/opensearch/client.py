"""Building the opensearch-py client: SigV4 (managed OpenSearch `es`, Serverless `aoss`) or basic/no auth,
a timeout, and bounded retries with exponential backoff.

opensearch-py's own Transport retries at once, without waiting, and never on 429. `BackoffTransport`
wraps each request instead: up to `max_retries` more attempts on connection errors, timeouts and
429/502/503/504, sleeping `base · 2^attempt` (capped, with equal jitter so a fleet of Lambdas does not
retry in lockstep) between them. Anything else fails at once.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from infra.opensearch.errors import RETRYABLE_STATUSES

SERVICES = ("es", "aoss")  # SigV4 service names: managed domains, Serverless collections
DEFAULT_TIMEOUT = 5.0  # seconds per attempt: 4 attempts + backoff stay under API Gateway's 29 s limit
DEFAULT_MAX_RETRIES = 3
# Judgement calls, not measurements: a throttled or restarting node usually answers again within a few
# hundred ms, so 3 retries wait at most 0.1 + 0.2 + 0.4 s; the cap keeps more retries inside a Lambda.
BACKOFF_BASE = 0.1  # seconds before the first retry
BACKOFF_CAP = 2.0  # seconds: the longest single wait


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How many times to retry and how long to wait: min(cap, base · 2^attempt), equal jitter."""

    max_retries: int = DEFAULT_MAX_RETRIES
    base: float = BACKOFF_BASE
    cap: float = BACKOFF_CAP

    def delay(self, attempt: int, unit: float) -> float:
        """Seconds to wait before retry `attempt` (0-based); `unit` is a uniform draw from [0, 1)."""
        ceiling = min(self.cap, self.base * (2**attempt))
        return ceiling / 2 + unit * ceiling / 2


def is_retryable(exc: Exception) -> bool:
    """Connection errors, timeouts and throttling/gateway statuses are worth another attempt."""
    from opensearchpy.exceptions import ConnectionError as OSConnectionError
    from opensearchpy.exceptions import TransportError

    if isinstance(exc, OSConnectionError):
        return True
    return isinstance(exc, TransportError) and exc.status_code in RETRYABLE_STATUSES


@cache
def backoff_transport_class() -> type:
    """BackoffTransport, defined on first use so importing this module never imports opensearch-py."""
    from opensearchpy import Transport
    from opensearchpy.exceptions import TransportError

    class BackoffTransport(Transport):  # type: ignore[misc]
        """opensearch-py's Transport with bounded, exponentially backed-off retries per request."""

        def __init__(
            self,
            hosts: Any,
            *,
            max_retries: int = DEFAULT_MAX_RETRIES,
            retry_policy: RetryPolicy | None = None,
            retry_sleep: Callable[[float], None] = time.sleep,
            retry_random: Callable[[], float] = random.random,
            **kwargs: Any,
        ) -> None:
            # The base class would retry immediately on its own; all retrying happens here instead.
            super().__init__(hosts, max_retries=0, retry_on_timeout=False, **kwargs)
            self.retry_policy = retry_policy or RetryPolicy(max_retries=max_retries)
            self._sleep = retry_sleep
            self._random = retry_random

        def perform_request(
            self,
            method: str,
            url: str,
            params: Mapping[str, Any] | None = None,
            body: Any = None,
            timeout: float | None = None,
            ignore: Collection[int] = (),
            headers: Mapping[str, str] | None = None,
        ) -> Any:
            attempt = 0
            while True:
                try:
                    return super().perform_request(
                        method, url, params=params, body=body, timeout=timeout, ignore=ignore, headers=headers
                    )
                except TransportError as exc:
                    if attempt >= self.retry_policy.max_retries or not is_retryable(exc):
                        raise
                    self._sleep(self.retry_policy.delay(attempt, self._random()))
                    attempt += 1

    return BackoffTransport


def _split_credentials(url: str) -> tuple[str, tuple[str, str] | None]:
    """The URL without user:password, and those credentials for basic auth (if any)."""
    parts = urlsplit(url)
    if parts.username is None:
        return url, None
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    clean = urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    return clean, (unquote(parts.username), unquote(parts.password or ""))


def _sigv4(region: str, service: str) -> Any:
    """SigV4 request signing with the default AWS credential chain (the Lambda role in AWS)."""
    import boto3
    from opensearchpy import AWSV4SignerAuth

    if service not in SERVICES:
        raise ValueError(f"OpenSearch service must be one of {SERVICES}, not {service!r}")
    credentials = boto3.Session().get_credentials()
    if credentials is None:
        raise ValueError("no AWS credentials found for signing OpenSearch requests")
    return AWSV4SignerAuth(credentials, region, service)


def build_client(
    url: str,
    region: str | None = None,
    service: str = "es",
    timeout: float = DEFAULT_TIMEOUT,
    max_retries: int = DEFAULT_MAX_RETRIES,
    **extra: Any,
) -> Any:
    """An OpenSearch client for `url`: SigV4-signed when `region` is given, else basic auth from the URL."""
    from opensearchpy import OpenSearch, RequestsHttpConnection

    clean, basic = _split_credentials(url)
    auth = _sigv4(region, service) if region else basic
    use_ssl = urlsplit(clean).scheme == "https"
    return OpenSearch(
        hosts=[clean],
        http_auth=auth,
        use_ssl=use_ssl,
        verify_certs=use_ssl,
        connection_class=RequestsHttpConnection,
        transport_class=backoff_transport_class(),
        timeout=timeout,
        max_retries=max_retries,
        **extra,
    )
