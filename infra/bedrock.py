"""`Embedder` over Amazon Bedrock: Titan Text Embeddings v2 through `bedrock-runtime` InvokeModel.

Titan v2 embeds one text per call, so a list is embedded with bounded concurrency (a thread pool; boto3
low-level clients are thread-safe) and returned in input order. Throttling and transient outages are
retried here with capped exponential backoff and full jitter; the default client disables botocore's own
retries so the two never multiply. Every botocore error leaves this module as a core error, converted in
`_translate`.

Time budget: one `embed` call, retries and backoff included, ends within `budget_seconds` (default
DEFAULT_BUDGET_SECONDS, QUARRY_BEDROCK_BUDGET_SECONDS), well below the API function's 29 s timeout. An
attempt starts only when a whole attempt (connect + read timeout) still fits before the deadline, and a
backoff never sleeps past it; a hanging Bedrock therefore costs at most the budget, after which the
call is UnavailableError and search degrades to keyword in time.
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

from core.errors import InvalidInputError, QuarryError, UnavailableError
from core.models import Vector

log = logging.getLogger(__name__)

BACKEND = "bedrock"
TITAN_V2_MODEL_ID = "amazon.titan-embed-text-v2:0"
# Titan v2 accepts exactly these output sizes, 1024 by default (Bedrock user guide, "Amazon Titan
# Embeddings G1 - Text", V2 request: `dimensions`).
TITAN_V2_DIMENSIONS = (256, 512, 1024)
DEFAULT_DIMENSIONS = 1024
# Titan v2 takes at most 8,192 tokens or 50,000 characters per input (Bedrock user guide, "Amazon Titan
# Text Embeddings models"); longer texts are cut here rather than rejected by the service.
MAX_INPUT_CHARS = 50_000
# Concurrent InvokeModel calls per `embed` list: the pool bounds the burst against the account's
# requests-per-minute quota (embedding models are throttled by RPM, same page) while keeping a batch of
# ~10 chunks close to one round trip. A judgement call, not a measurement.
DEFAULT_MAX_WORKERS = 8
# Attempts per text and the backoff between them: 4 attempts with delays capped at 0.2, 0.4, 0.8 s
# (full jitter, "Exponential Backoff And Jitter", AWS Architecture Blog 2015) keep the worst case under
# ~1.5 s of sleeping, well inside an API Lambda's timeout.
DEFAULT_MAX_ATTEMPTS = 4
BACKOFF_BASE_SECONDS = 0.2
BACKOFF_CAP_SECONDS = 2.0
# Socket timeouts of the default client: a Titan v2 call answers in tens of milliseconds; seconds mean
# the service is in trouble and the caller should degrade (search falls back to keyword).
CONNECT_TIMEOUT_SECONDS = 1.0
READ_TIMEOUT_SECONDS = 3.0
# The whole `embed` call, retries included: room for two hanging attempts (2 × (1 + 3) s) and still
# 21 s of the API function's 29 s timeout (template.yaml) for the keyword search it degrades to.
DEFAULT_BUDGET_SECONDS = 8.0
# Seconds a caller should wait once the retries are spent (the API's Retry-After): a few backoff windows,
# matching core.errors.UnavailableError's default.
RETRY_AFTER_SECONDS = 5

# Bedrock error codes worth another attempt: capacity and cold-model conditions that pass on their own.
RETRYABLE_CODES = frozenset(
    {
        "ThrottlingException",
        "ServiceUnavailableException",
        "ModelNotReadyException",
        "ModelTimeoutException",
        "InternalServerException",
    }
)
INVALID_INPUT_CODES = frozenset({"ValidationException"})


def _retryable(exc: Exception) -> bool:
    """True for a Bedrock capacity error or a network failure (a new attempt may well succeed)."""
    from botocore.exceptions import ClientError, ConnectionError, HTTPClientError

    if isinstance(exc, ClientError):
        return exc.response.get("Error", {}).get("Code") in RETRYABLE_CODES
    return isinstance(exc, (ConnectionError, HTTPClientError))


def _translate(exc: Exception, index: int) -> QuarryError:
    """The core error for a botocore failure on the text at `index` (the one conversion point)."""
    from botocore.exceptions import ClientError

    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        code, message = error.get("Code", "Unknown"), error.get("Message", str(exc))
        if code in INVALID_INPUT_CODES:
            path = f"texts[{index}]"
            return InvalidInputError(f"bedrock rejected {path}: {message}", {path: message})
        return UnavailableError(BACKEND, f"{code}: {message}", retry_after=RETRY_AFTER_SECONDS)
    return UnavailableError(BACKEND, f"{type(exc).__name__}: {exc}", retry_after=RETRY_AFTER_SECONDS)


def _unit(values: Any, dimension: int) -> Vector:
    """The response's `embedding` as a float32 unit vector of the configured dimension."""
    if not isinstance(values, list) or len(values) != dimension:
        size = len(values) if isinstance(values, list) else type(values).__name__
        raise UnavailableError(BACKEND, f"embedding has {size} values, expected {dimension}")
    vector = np.asarray(values, dtype=np.float32)
    norm = float(np.linalg.norm(vector))
    if not np.isfinite(norm) or norm == 0.0:
        raise UnavailableError(BACKEND, "embedding is zero or not finite")
    # Titan normalises already (normalize: true); dividing again only removes float32 rounding.
    return vector / np.float32(norm)


def attempt_timeouts(budget_seconds: float) -> tuple[float, float]:
    """(connect, read) socket timeouts for a budget: the defaults, shrunk so one attempt fits in half of it."""
    connect = min(CONNECT_TIMEOUT_SECONDS, budget_seconds / 4)
    return connect, min(READ_TIMEOUT_SECONDS, budget_seconds / 2 - connect)


def default_client(
    region: str | None = None, budget_seconds: float = DEFAULT_BUDGET_SECONDS, **client_args: Any
) -> Any:
    """A `bedrock-runtime` client with short timeouts and botocore retries off (retries happen here)."""
    import boto3
    from botocore.config import Config

    connect, read = attempt_timeouts(budget_seconds)
    config = Config(
        connect_timeout=connect,
        read_timeout=read,
        retries={"total_max_attempts": 1, "mode": "standard"},
    )
    return boto3.client("bedrock-runtime", region_name=region, config=config, **client_args)


class BedrockEmbedder:
    """Titan Text Embeddings v2 on Bedrock: unit float32 vectors in input order, transient errors retried."""

    def __init__(
        self,
        client: Any | None = None,
        *,
        model_id: str = TITAN_V2_MODEL_ID,
        dimensions: int = DEFAULT_DIMENSIONS,
        region: str | None = None,
        max_workers: int = DEFAULT_MAX_WORKERS,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        sleep: Callable[[float], None] = time.sleep,
        budget_seconds: float = DEFAULT_BUDGET_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if dimensions not in TITAN_V2_DIMENSIONS:
            raise ValueError(f"Titan v2 dimensions must be one of {TITAN_V2_DIMENSIONS}, got {dimensions}")
        if max_workers < 1 or max_attempts < 1 or budget_seconds <= 0:
            raise ValueError("max_workers and max_attempts must be at least 1, budget_seconds positive")
        self._client = client if client is not None else default_client(region, budget_seconds)
        self._budget = budget_seconds
        self._attempt_seconds = sum(attempt_timeouts(budget_seconds))
        self._clock = clock
        self._model_id = model_id
        self._dimensions = dimensions
        self._max_workers = max_workers
        self._max_attempts = max_attempts
        self._sleep = sleep

    @property
    def dimension(self) -> int:
        """Length of every vector this embedder returns."""
        return self._dimensions

    @property
    def model_id(self) -> str:
        """The Bedrock model id."""
        return self._model_id

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        """One unit vector per text, in order; InvalidInputError on blank text, UnavailableError on outage."""
        for index, text in enumerate(texts):
            if not text.strip():
                raise InvalidInputError("cannot embed blank text", {f"texts[{index}]": "must not be blank"})
        workers = min(self._max_workers, len(texts))
        deadline = self._clock() + self._budget
        if workers <= 1:
            return [self._embed_one(index, text, deadline) for index, text in enumerate(texts)]
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="bedrock-embed") as pool:
            futures = [pool.submit(self._embed_one, i, text, deadline) for i, text in enumerate(texts)]
            return _gather(futures)

    def _out_of_time(self, deadline: float) -> UnavailableError | None:
        """An UnavailableError when another whole attempt would not end before the deadline."""
        if self._clock() + self._attempt_seconds <= deadline:
            return None
        return UnavailableError(
            BACKEND, f"no answer within the {self._budget:g} s budget", retry_after=RETRY_AFTER_SECONDS
        )

    def embed_query(self, texts: Sequence[str]) -> list[Vector]:
        """Titan embeds queries and passages alike."""
        return self.embed(texts)

    def _embed_one(self, index: int, text: str, deadline: float) -> Vector:
        """Embed one text, retrying transient failures with capped, jittered backoff, within the deadline."""
        body = json.dumps(
            {"inputText": text[:MAX_INPUT_CHARS], "dimensions": self._dimensions, "normalize": True}
        )
        attempt = 1
        while True:
            try:
                return self._invoke(body)
            except Exception as exc:
                if not _is_botocore_error(exc):
                    raise
                if attempt >= self._max_attempts or not _retryable(exc):
                    raise _translate(exc, index) from exc
                delay = min(_backoff(attempt), max(0.0, deadline - self._clock()))
                log.warning("bedrock attempt %d failed (%s); retrying in %.2fs", attempt, exc, delay)
                self._sleep(delay)
                attempt += 1
                late = self._out_of_time(deadline)
                if late is not None:
                    raise late from exc

    def _invoke(self, body: str) -> Vector:
        """One InvokeModel call and its parsed, checked embedding."""
        response = self._client.invoke_model(
            modelId=self._model_id, body=body, contentType="application/json", accept="application/json"
        )
        try:
            payload = json.loads(response["body"].read())
        except ValueError as exc:
            raise UnavailableError(BACKEND, "response body is not JSON") from exc
        embedding = payload.get("embedding") if isinstance(payload, dict) else None
        return _unit(embedding, self._dimensions)


def _backoff(attempt: int) -> float:
    """Full-jitter delay before attempt `attempt + 1`: uniform in [0, min(cap, base·2^(attempt-1))]."""
    return random.uniform(0.0, min(BACKOFF_CAP_SECONDS, BACKOFF_BASE_SECONDS * 2 ** (attempt - 1)))


def _is_botocore_error(exc: Exception) -> bool:
    """True for exceptions raised by botocore (client errors, connection and parsing failures)."""
    from botocore.exceptions import BotoCoreError, ClientError

    return isinstance(exc, (BotoCoreError, ClientError))


def _gather(futures: list[Future[Vector]]) -> list[Vector]:
    """Results in submission order; on the first failure cancel what has not started and re-raise."""
    try:
        return [future.result() for future in futures]
    except BaseException:
        for future in futures:
            future.cancel()
        raise
