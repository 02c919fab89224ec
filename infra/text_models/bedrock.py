"""`Embedder` over Amazon Bedrock: Titan Text Embeddings v2 through `bedrock-runtime` InvokeModel.

Titan v2 embeds one text per call, so a list is embedded with bounded concurrency (a thread pool; boto3
low-level clients are thread-safe) and returned in input order. Throttling and transient outages are
retried by botocore's standard retry mode (exponential backoff with full jitter; ThrottlingException,
ModelNotReadyException, 500/502/503/504 and connection errors), never by a loop of ours. Every botocore
error leaves this module as a core error, converted in `_translate`.

Time budget: one `embed` call ends within `budget_seconds` (default DEFAULT_BUDGET_SECONDS,
QUARRY_BEDROCK_BUDGET_SECONDS), well below the API function's 29 s timeout. The default client is sized
for it: as many attempts (at most DEFAULT_MAX_ATTEMPTS) as fit with botocore's worst-case backoff, and
socket timeouts that make the whole retry chain fit the budget (`retry_plan`). The call also waits for its
texts no longer than the budget, so a hanging Bedrock costs at most the budget, after which the call is
UnavailableError and search degrades to keyword in time.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

import numpy as np

from core.errors import InvalidInputError, QuarryError, UnavailableError
from core.models import Vector
from core.ports import Embedder

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
# Attempts per text (botocore's `total_max_attempts`): standard mode waits rand(0, 1) · 2^i s after a
# throttled attempt i (botocore.retries.standard.ExponentialBackoff, 1 s base for throttling, 50 ms for
# other transient errors), so 3 attempts sleep at most 1 + 2 = 3 s.
DEFAULT_MAX_ATTEMPTS = 3
BOTOCORE_THROTTLING_BASE_SECONDS = 1.0
BOTOCORE_MAX_BACKOFF_SECONDS = 20.0
MIN_ATTEMPT_SECONDS = 1.0  # an attempt shorter than this is not worth making: fewer attempts instead
# Socket timeouts of the default client: a Titan v2 call answers in tens of milliseconds; seconds mean
# the service is in trouble and the caller should degrade (search falls back to keyword).
CONNECT_TIMEOUT_SECONDS = 1.0
READ_TIMEOUT_SECONDS = 3.0
# The whole `embed` call, retries included: three attempts of 2.3 s and 3 s of backoff, and still 19 s of
# the API function's 29 s timeout (template.yaml) for the keyword search it degrades to.
DEFAULT_BUDGET_SECONDS = 10.0
# Seconds a caller should wait once the retries are spent (the API's Retry-After): a few backoff windows,
# matching core.errors.UnavailableError's default.
RETRY_AFTER_SECONDS = 5

INVALID_INPUT_CODES = frozenset({"ValidationException"})


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


def worst_backoff(attempts: int) -> float:
    """The longest botocore's standard mode can sleep between `attempts` throttled attempts."""
    return sum(
        min(BOTOCORE_THROTTLING_BASE_SECONDS * 2**i, BOTOCORE_MAX_BACKOFF_SECONDS)
        for i in range(attempts - 1)
    )


def retry_plan(budget_seconds: float, max_attempts: int = DEFAULT_MAX_ATTEMPTS) -> tuple[int, float, float]:
    """(attempts, connect, read) so that every attempt timing out plus the worst backoff fits the budget:
    the most attempts (up to `max_attempts`) that leave each at least MIN_ATTEMPT_SECONDS, and socket
    timeouts no longer than the defaults."""
    attempts = max(1, max_attempts)
    while attempts > 1 and (budget_seconds - worst_backoff(attempts)) / attempts < MIN_ATTEMPT_SECONDS:
        attempts -= 1
    per_attempt = (budget_seconds - worst_backoff(attempts)) / attempts
    connect = min(CONNECT_TIMEOUT_SECONDS, per_attempt / 4)
    return attempts, connect, min(READ_TIMEOUT_SECONDS, per_attempt - connect)


def default_client(
    region: str | None = None,
    budget_seconds: float = DEFAULT_BUDGET_SECONDS,
    max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    **client_args: Any,
) -> Any:
    """A `bedrock-runtime` client whose retries (botocore's standard mode) and timeouts fit the budget."""
    import boto3
    from botocore.config import Config

    attempts, connect, read = retry_plan(budget_seconds, max_attempts)
    config = Config(
        connect_timeout=connect,
        read_timeout=read,
        retries={"mode": "standard", "total_max_attempts": attempts},
    )
    return boto3.client("bedrock-runtime", region_name=region, config=config, **client_args)


class BedrockEmbedder(Embedder):
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
        budget_seconds: float = DEFAULT_BUDGET_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if dimensions not in TITAN_V2_DIMENSIONS:
            raise ValueError(f"Titan v2 dimensions must be one of {TITAN_V2_DIMENSIONS}, got {dimensions}")
        if max_workers < 1 or max_attempts < 1 or budget_seconds <= 0:
            raise ValueError("max_workers and max_attempts must be at least 1, budget_seconds positive")
        if client is None:
            client = default_client(region, budget_seconds, max_attempts)
        self._client = client
        self._budget = budget_seconds
        self._attempt_seconds = sum(retry_plan(budget_seconds, max_attempts)[1:])
        self._clock = clock
        self._model_id = model_id
        self._dimensions = dimensions
        self._max_workers = max_workers

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
        if not texts:
            return []
        deadline = self._clock() + self._budget
        pool = ThreadPoolExecutor(
            max_workers=min(self._max_workers, len(texts)), thread_name_prefix="bedrock-embed"
        )
        try:
            futures = [pool.submit(self._embed_one, i, text, deadline) for i, text in enumerate(texts)]
            try:
                return [f.result(timeout=max(0.0, deadline - self._clock())) for f in futures]
            except FutureTimeout:
                raise self._late() from None
        finally:
            # texts not started are dropped; one still in botocore's hands ends within its own retry plan
            pool.shutdown(wait=False, cancel_futures=True)

    def _late(self) -> UnavailableError:
        return UnavailableError(
            BACKEND, f"no answer within the {self._budget:g} s budget", retry_after=RETRY_AFTER_SECONDS
        )

    def embed_query(self, texts: Sequence[str]) -> list[Vector]:
        """Titan embeds queries and passages alike."""
        return self.embed(texts)

    def _embed_one(self, index: int, text: str, deadline: float) -> Vector:
        """Embed one text (botocore retries what is transient), unless less than half an attempt's time is
        left before the deadline (a text queued behind slow ones would only time out)."""
        if self._clock() + self._attempt_seconds / 2 > deadline:
            raise self._late()
        body = json.dumps(
            {"inputText": text[:MAX_INPUT_CHARS], "dimensions": self._dimensions, "normalize": True}
        )
        try:
            return self._invoke(body)
        except Exception as exc:
            if not _is_botocore_error(exc):
                raise
            raise _translate(exc, index) from exc

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


def _is_botocore_error(exc: Exception) -> bool:
    """True for exceptions raised by botocore (client errors, connection and parsing failures)."""
    from botocore.exceptions import BotoCoreError, ClientError

    return isinstance(exc, (BotoCoreError, ClientError))
