"""`SqsJobQueue` (AWS: the indexing consumer reads the parts); the local job store is
infra/jobs/sqlite_store.py, the local queue infra/jobs/sqlite_queue.py."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import suppress
from typing import Any

from core.errors import UnavailableError
from core.indexing.write_jobs import SQS_MAX_MESSAGE_BYTES
from infra.jobs.s3_payloads import S3JobPayloads, outgoing

# SQS: short timeouts and botocore's standard retry mode, 3 attempts: a send stays within a few seconds,
# far under the API function's 29 s (the caller gets 503 and retries the whole request).
SQS_CONNECT_TIMEOUT_SECONDS = 2
SQS_READ_TIMEOUT_SECONDS = 5
SQS_MAX_ATTEMPTS = 3


def default_sqs_client() -> Any:
    import boto3
    from botocore.config import Config

    config = Config(
        connect_timeout=SQS_CONNECT_TIMEOUT_SECONDS,
        read_timeout=SQS_READ_TIMEOUT_SECONDS,
        retries={"mode": "standard", "total_max_attempts": SQS_MAX_ATTEMPTS},
    )
    return boto3.client("sqs", config=config)


class SqsJobQueue:
    """JobQueue on an SQS queue: one message per part, its body the part's encoded JSON
    (core/indexing/write_jobs.py encode_message); a part above SQS's 262,144 bytes goes to the payload
    bucket and its message points to it (infra/jobs/s3_payloads.py). Without a bucket such a part is refused
    before anything is stored (JobSettings.max_message_bytes)."""

    def __init__(
        self, queue_url: str, client: Any | None = None, payloads: S3JobPayloads | None = None
    ) -> None:
        self._url, self._client = queue_url, client or default_sqs_client()
        self._payloads = payloads

    def discard_tenant(self, tenant_id: str) -> int:
        """SQS cannot drop chosen messages: the tenant's parts are discarded when processed (their job is
        gone and the tenant fenced, core/indexing/write_job_service.py)."""
        return 0

    def send(self, messages: Sequence[dict[str, Any]]) -> None:
        from botocore.exceptions import BotoCoreError, ClientError

        for message in messages:
            body, pointer = outgoing(message, SQS_MAX_MESSAGE_BYTES, self._payloads)
            try:
                self._client.send_message(QueueUrl=self._url, MessageBody=body)
            except (BotoCoreError, ClientError) as exc:
                self._withdraw(pointer)
                raise UnavailableError("sqs", f"the job queue refused the job: {type(exc).__name__}") from exc

    def _withdraw(self, pointer: dict[str, Any] | None) -> None:
        """Delete the object of a part whose message could not be sent (else the lifecycle rule would)."""
        if pointer is not None and self._payloads is not None:
            with suppress(UnavailableError):
                self._payloads.release(pointer)
