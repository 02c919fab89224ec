"""Building the opensearch-py client: SigV4 (managed OpenSearch `es`, Serverless `aoss`) or basic/no auth,
a timeout per attempt, and opensearch-py's own retries: up to `max_retries` more attempts on connection
errors, timeouts and 429/502/503/504 (`retry_on_status`, `retry_on_timeout`); anything else fails at once.

Total time budget: a request takes at most timeout × (max_retries + 1) seconds; the settings refuse a
combination above OPENSEARCH_TIME_BUDGET (infra/config/settings.py), which stays under the API function's 29 s.
Inside an invocation with a deadline (infra/timing/deadline.py) each attempt also ends by the deadline, and none
starts after it, so a hung node leaves the function time to answer 503 before its own timeout.
`RetryPolicy` paces what the transport cannot see, the throttled items inside a 200 `_bulk`/`_msearch`
answer, through libraries too: opensearch-py's `helpers.streaming_bulk` and tenacity (infra/opensearch/index.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from infra.opensearch.errors import RETRYABLE_STATUSES
from infra.timing import deadline

SERVICES = ("es", "aoss")  # SigV4 service names: managed domains, Serverless collections
DEFAULT_TIMEOUT = 5.0  # seconds per attempt: 4 attempts (20 s) stay under API Gateway's 29 s limit
OPENSEARCH_TIME_BUDGET = 24.0  # seconds: timeout x attempts, below the API's 29 s with room to answer 503
DEFAULT_MAX_RETRIES = 3
# Keep-alive connections per node: the context fan-out's threads (QUARRY_CONTEXT_WORKERS, default 8) and a
# few more, so no request waits for or reopens a connection.
POOL_CONNECTIONS = 10
# Judgement calls, not measurements: a throttled or restarting node usually answers again within a few
# hundred ms, so 3 retries wait at most 0.1 + 0.2 + 0.4 s; the cap keeps more retries inside a Lambda.
BACKOFF_BASE = 0.1  # seconds before the first retry
BACKOFF_CAP = 2.0  # seconds: the longest single wait


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How many times the throttled items of a 200 answer are resent, and the backoff: base · 2^attempt
    seconds, at most `cap` (streaming_bulk waits exactly that; tenacity a uniform draw below it)."""

    max_retries: int = DEFAULT_MAX_RETRIES
    base: float = BACKOFF_BASE
    cap: float = BACKOFF_CAP


NODE_SHARE = 0.8  # of the client's per-attempt timeout, the longest a write waits on the node (below)


def node_timeout(client_timeout: float) -> str:
    """How long a `_bulk` may wait on the node for an unavailable primary: less than the client waits for
    the answer, so the node answers (a per-item 503) before the client gives up and resends a request the
    node may still apply."""
    return f"{max(1, int(client_timeout * NODE_SHARE * 1000))}ms"


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
    from opensearchpy import Urllib3AWSV4SignerAuth

    if service not in SERVICES:
        raise ValueError(f"OpenSearch service must be one of {SERVICES}, not {service!r}")
    credentials = boto3.Session().get_credentials()
    if credentials is None:
        raise ValueError("no AWS credentials found for signing OpenSearch requests")
    return Urllib3AWSV4SignerAuth(credentials, region, service)


@cache
def _serializer() -> Any:
    """opensearch-py's JSON serializer, its answers parsed by orjson: a hybrid search's answer (the
    candidates' compact vectors, ~340 KB) parses in 2.2 ms instead of 3.5 (docs/benchmarks.md#opensearch-own-cpu).
    What orjson refuses (a number beyond a double's range) is parsed by the standard library, as before; an
    integer beyond 64 bits would read as a float, and Quarry stores none (core/payload.py `out_of_range`)."""
    import json

    import orjson
    from opensearchpy.exceptions import SerializationError
    from opensearchpy.serializer import JSONSerializer

    class OrjsonSerializer(JSONSerializer):  # type: ignore[misc]
        def loads(self, s: str) -> Any:
            try:
                return orjson.loads(s)
            except orjson.JSONDecodeError:
                try:
                    return json.loads(s)
                except (ValueError, TypeError) as exc:
                    raise SerializationError(s, exc) from exc

    return OrjsonSerializer()


@cache
def _deadline_connection() -> Any:
    """opensearch-py's urllib3 connection, each attempt bounded by the invocation's deadline."""
    from opensearchpy import Urllib3HttpConnection
    from opensearchpy.exceptions import ConnectionTimeout

    class DeadlineConnection(Urllib3HttpConnection):  # type: ignore[misc]
        def perform_request(self, method: str, url: str, params: Any = None, body: Any = None,
                            timeout: float | None = None, *args: Any, **kwargs: Any) -> Any:  # fmt: skip
            left = deadline.remaining()
            if left is not None:
                # past the deadline: a timed-out attempt at once, so the transport's retries end at once too
                if left <= 0:
                    raise ConnectionTimeout("TIMEOUT", "no time left before the invocation's deadline", None)
                timeout = min(timeout or self.timeout, left)
            return super().perform_request(method, url, params, body, timeout, *args, **kwargs)

    return DeadlineConnection


def build_client(
    url: str,
    region: str | None = None,
    service: str = "es",
    timeout: float = DEFAULT_TIMEOUT,
    max_retries: int = DEFAULT_MAX_RETRIES,
    **extra: Any,
) -> Any:
    """An OpenSearch client for `url` (several nodes: comma-separated, tried in turn, one that fails is
    left out for a while and the request retried on the next): SigV4-signed when `region` is given, else
    basic auth from the URL.

    urllib3 keeps one pool of keep-alive connections per node and, unlike requests, asks for no gzip: a
    node compresses its answer when asked, which on a search's answer cost more than the answer's transfer
    (bench/opensearch_profile.py)."""
    from opensearchpy import OpenSearch

    hosts, auths = zip(*(_split_credentials(u.strip()) for u in url.split(",") if u.strip()), strict=True)
    auth = _sigv4(region, service) if region else auths[0]
    use_ssl = urlsplit(hosts[0]).scheme == "https"
    return OpenSearch(
        hosts=list(hosts),
        http_auth=auth,
        use_ssl=use_ssl,
        verify_certs=use_ssl,
        connection_class=_deadline_connection(),
        serializer=_serializer(),
        http_compress=False,
        pool_maxsize=POOL_CONNECTIONS,
        timeout=timeout,
        max_retries=max_retries,
        retry_on_status=tuple(sorted(RETRYABLE_STATUSES)),
        retry_on_timeout=True,
        **extra,
    )
