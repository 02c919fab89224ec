"""`S3JobPayloads`: a write-job part too big for one SQS message (262,144 bytes) travels as an S3 object in
the payload bucket (QUARRY_JOBS_PAYLOAD_BUCKET), and the message carries the part's header and the object's
key instead of its items — the SQS extended-client pattern (docs/architecture.md, Write jobs).

The API function puts the object before it sends the message; the indexing consumer reads it, and deletes
it once the part is done (indexed, or discarded because its job or tenant is gone). A part that keeps
failing keeps its object for a redrive from the dead-letter queue; the bucket's lifecycle rule expires
what is left (template.yaml).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from core.errors import UnavailableError
from core.indexing.write_jobs import encode_message

# S3: short timeouts and botocore's standard retry mode, as for SQS (infra/jobs/sqs_queue.py): a put of a part
# (at most the API's 4 MiB upload) stays within a few seconds of the API function's 29 s.
S3_CONNECT_TIMEOUT_SECONDS = 2
S3_READ_TIMEOUT_SECONDS = 10
S3_MAX_ATTEMPTS = 3
PAYLOAD_PREFIX = "job-parts/"  # the lifecycle rule in template.yaml expires objects under it
POINTER = "payload"  # the key of a message whose items are in S3: {"key": <object key>}


def default_s3_client() -> Any:
    import boto3
    from botocore.config import Config

    config = Config(
        connect_timeout=S3_CONNECT_TIMEOUT_SECONDS,
        read_timeout=S3_READ_TIMEOUT_SECONDS,
        retries={"mode": "standard", "total_max_attempts": S3_MAX_ATTEMPTS},
    )
    return boto3.client("s3", config=config)


@contextmanager
def s3_errors(action: str) -> Iterator[None]:
    """The one place S3's exceptions become UnavailableError (SDK text never reaches a caller)."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        yield
    except (BotoCoreError, ClientError) as exc:
        raise UnavailableError(
            "s3", f"the job payload bucket refused to {action}: {type(exc).__name__}"
        ) from exc


def is_pointer(message: Mapping[str, Any]) -> bool:
    """Whether a part's message carries an S3 key instead of its items."""
    return POINTER in message


class S3JobPayloads:
    """Part bodies in an S3 bucket, each under `job-parts/<job>/<part>.json`."""

    def __init__(self, bucket: str, client: Any | None = None) -> None:
        self._bucket, self._client = bucket, client or default_s3_client()

    def put(self, message: Mapping[str, Any], text: str) -> dict[str, Any]:
        """Store the part's encoded message (`text`); the small message that points to it."""
        job = message["job"]
        key = f"{PAYLOAD_PREFIX}{job['id']}/{int(job['part'])}.json"
        with s3_errors("store a part"):
            self._client.put_object(
                Bucket=self._bucket, Key=key, Body=text.encode(), ContentType="application/json"
            )
        return {"job": job, "offset": message["offset"], POINTER: {"key": key}}

    def read(self, pointer: Mapping[str, Any]) -> dict[str, Any] | None:
        """The whole part a pointer message names; None when its object is gone (the part was done and
        its message delivered again, or the lifecycle rule expired it)."""
        from botocore.exceptions import ClientError

        key = str(pointer[POINTER]["key"])
        with s3_errors("read a part"):
            try:
                body = self._client.get_object(Bucket=self._bucket, Key=key)["Body"].read()
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                    return None
                raise
        message: dict[str, Any] = json.loads(body)
        return message

    def release(self, pointer: Mapping[str, Any]) -> None:
        """Delete the object of a part that is done."""
        with s3_errors("delete a part"):
            self._client.delete_object(Bucket=self._bucket, Key=str(pointer[POINTER]["key"]))


def outgoing(
    message: Mapping[str, Any], limit: int, payloads: S3JobPayloads | None
) -> tuple[str, dict[str, Any] | None]:
    """(the body to send for a part, the pointer it is when the part went to S3): its encoded message, or,
    above `limit` bytes, a pointer to it in S3."""
    text = encode_message(message)
    if payloads is None or len(text.encode()) <= limit:
        return text, None
    pointer = payloads.put(message, text)
    return encode_message(pointer), pointer
