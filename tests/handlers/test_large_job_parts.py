"""On AWS, every item the API accepts is indexed as on the local server, whatever its encoding: a part too
big for one SQS message (262,144 bytes) travels as an S3 object the message points to, the consumer reads it
and deletes it once the part is done. Sizes are the UTF-8 bytes of the compact JSON really sent (`é` is 2
bytes, never a 6-byte `\\u00e9`). A send that fails leaves no job row; a limit nothing can meet is a 413
before anything is stored. SQS, S3 and DynamoDB run on moto in-process; the index is the local one."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from infra.jobs.sqs_queue import SqsJobQueue
from infra.wiring import root as wiring
from tests.conftest import FakeEmbedder, api_event, invoke, make_container
from tests.handlers.test_write_jobs import drain_through_consumer

REGION = "us-east-1"
SQS_MAX_MESSAGE_BYTES = 262_144  # the write-jobs queue's MaximumMessageSize (template.yaml)
BUCKET = "quarry-job-payloads"
NDJSON = {"content-type": "application/x-ndjson"}
ACCENTS = 480_000  # `é` × 480,000: 960,000 bytes of UTF-8, 2,880,000 of ASCII-escaped JSON


def _aws(
    tmp_path: Path, fake_embedder: FakeEmbedder, monkeypatch: pytest.MonkeyPatch, bucket: str | None
) -> Any:
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_S3", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                        "AWS_DEFAULT_REGION": REGION}.items():  # fmt: skip
        monkeypatch.setenv(name, value)
    sqs = boto3.client("sqs", region_name=REGION)
    url = sqs.create_queue(
        QueueName="quarry-jobs", Attributes={"MaximumMessageSize": str(SQS_MAX_MESSAGE_BYTES)}
    )["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    s3 = boto3.client("s3", region_name=REGION)
    s3.create_bucket(Bucket=BUCKET)
    extra = {"jobs_payload_bucket": bucket} if bucket else {}
    container = make_container(
        tmp_path / "data", fake_embedder, state="dynamodb", dynamodb_create_tables=True,
        jobs_queue_url=url, jobs_queue_arn=arn, **extra,
    )  # fmt: skip
    wiring.set_container(container)
    return container, sqs, url, arn, s3


@pytest.fixture
def aws_s3(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_embedder: FakeEmbedder) -> Iterator[Any]:
    with mock_aws():
        yield _aws(tmp_path, fake_embedder, monkeypatch, BUCKET)
        wiring.set_container(None)


@pytest.fixture
def aws_no_bucket(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_embedder: FakeEmbedder
) -> Iterator[Any]:
    with mock_aws():
        yield _aws(tmp_path, fake_embedder, monkeypatch, None)
        wiring.set_container(None)


def _accented(entity_id: str) -> dict[str, Any]:
    return {"title": f"accented {entity_id} zebraquill", "text": "é" * ACCENTS}


def _utf8_event(name: str, raw: bytes, **kwargs: Any) -> dict[str, Any]:
    """An API event whose body is these bytes (as API Gateway hands over a UTF-8 body: base64)."""
    event = api_event(name, **kwargs)
    event["body"], event["isBase64Encoded"] = base64.b64encode(raw).decode(), True
    return event


def _job_rows(container: Any) -> list[dict[str, Any]]:
    client = boto3.client("dynamodb", region_name=REGION)
    items = client.scan(TableName=container.settings.state_table)["Items"]
    return [i for i in items if "#J#" in i["pk"]["S"] or i["sk"]["S"].startswith("J#")]


def _queued(sqs: Any, url: str) -> int:
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])
    return int(attributes["Attributes"]["ApproximateNumberOfMessages"])


def _done(job_id: str, indexed: int) -> None:
    status, job = invoke(api_event("get_job", path=f"/jobs/{job_id}"))
    assert status == 200, job
    assert (job["status"], job["indexed"], job["errors"]) == ("done", indexed, []), job


def _stored_text(entity_id: str) -> str:
    status, entity = invoke(api_event("get_entity", path=f"/entities/document/{entity_id}", method="GET"))
    assert status == 200, entity
    return str(entity["fields"]["text"] if "fields" in entity else entity["text"])


def _sent_sizes(sqs: Any, url: str) -> list[int]:
    got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=0).get("Messages", [])
    return [len(m["Body"].encode()) for m in got]


def test_a_980045_byte_put_of_accented_text_is_a_job_through_s3_and_is_indexed(aws_s3: Any) -> None:
    container, sqs, url, arn, s3 = aws_s3
    body = _accented("big")
    body["title"] += "x" * (980_045 - len(json.dumps(body, ensure_ascii=False).encode()))
    raw = json.dumps(body, ensure_ascii=False).encode()
    assert len(raw) == 980_045 < container.settings.max_body_bytes
    status, job = invoke(_utf8_event("put_entity", raw, path="/entities/document/big", method="PUT"))

    assert status == 202, job
    assert all(size <= SQS_MAX_MESSAGE_BYTES for size in _sent_sizes(sqs, url))
    assert s3.list_objects_v2(Bucket=BUCKET).get("KeyCount") == 1  # the part's body, out of the message
    assert drain_through_consumer(sqs, url, arn) == job["parts"]
    _done(job["job_id"], 1)
    assert _stored_text("big") == "é" * ACCENTS
    assert s3.list_objects_v2(Bucket=BUCKET).get("KeyCount") == 0  # deleted once the part was done


def test_a_bulk_of_one_accented_item_too_big_for_a_message_is_indexed(aws_s3: Any) -> None:
    _, sqs, url, arn, s3 = aws_s3
    items = [{"type": "document", "id": "bulk-big", **_accented("bulk-big")}]
    raw = json.dumps({"items": items}, ensure_ascii=False).encode()
    status, job = invoke(_utf8_event("bulk_entities", raw))
    assert status == 202, job
    assert drain_through_consumer(sqs, url, arn) == job["parts"]
    _done(job["job_id"], 1)
    assert _stored_text("bulk-big") == "é" * ACCENTS
    assert s3.list_objects_v2(Bucket=BUCKET).get("KeyCount") == 0


def test_a_2_mb_ndjson_line_is_indexed(aws_s3: Any) -> None:
    _, sqs, url, arn, s3 = aws_s3
    big = {"type": "document", "id": "line-big", "title": "a long line", "text": "é" * 1_000_000}
    small = {"type": "task", "id": "line-small", "title": "a short line"}
    raw = b"\n".join(json.dumps(x, ensure_ascii=False).encode() for x in (small, big)) + b"\n"
    assert len(raw) > 2_000_000
    status, job = invoke(_utf8_event("bulk_entities", raw, path="/entities/ndjson", headers=NDJSON))
    assert status == 202, job
    assert drain_through_consumer(sqs, url, arn) == job["parts"]
    _done(job["job_id"], 2)
    assert _stored_text("line-big") == "é" * 1_000_000
    assert s3.list_objects_v2(Bucket=BUCKET).get("KeyCount") == 0


def test_without_a_payload_bucket_an_item_too_big_for_a_message_is_a_413_and_nothing_is_stored(
    aws_no_bucket: Any,
) -> None:
    container, sqs, url, _, _ = aws_no_bucket
    items = [{"type": "document", "id": "too-big", **_accented("too-big")}]
    raw = json.dumps({"items": items}, ensure_ascii=False).encode()
    status, body = invoke(_utf8_event("bulk_entities", raw))
    assert status == 413, body
    assert str(SQS_MAX_MESSAGE_BYTES) in json.dumps(body)
    assert _job_rows(container) == [] and _queued(sqs, url) == 0


class _FailingSecondSend:
    """An SQS client whose second send_message fails, as a throttled or unreachable queue does."""

    def __init__(self, client: Any) -> None:
        self._client, self.sends = client, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def send_message(self, **kwargs: Any) -> Any:
        from botocore.exceptions import ClientError

        self.sends += 1
        if self.sends == 2:
            raise ClientError({"Error": {"Code": "ServiceUnavailable", "Message": "x"}}, "SendMessage")
        return self._client.send_message(**kwargs)


@pytest.mark.parametrize("upload", [False, True], ids=["bulk", "ndjson"])
def test_a_failed_send_leaves_no_job_row(aws_s3: Any, upload: bool) -> None:
    container, sqs, url, arn, _ = aws_s3
    container.override(job_queue=SqsJobQueue(url, client=_FailingSecondSend(sqs)))
    items = [{"type": "task", "id": f"f-{i}", "title": f"item {i}"} for i in range(450)]  # 3 parts
    if upload:
        raw = b"\n".join(json.dumps(i).encode() for i in items)
        event = api_event("bulk_entities", path="/entities/ndjson", raw_body=raw.decode(),
                          headers={"content-type": "application/x-ndjson"})  # fmt: skip
    else:
        event = api_event("bulk_entities", body={"items": items})
    status, body = invoke(event)
    assert status == 503, body
    assert _job_rows(container) == []
    drain_through_consumer(sqs, url, arn)  # a part sent before the failure is discarded, not an error
    assert _job_rows(container) == []


def test_an_ndjson_upload_with_many_long_refused_ids_keeps_its_report_within_the_item(aws_s3: Any) -> None:
    """Refused lines whose ids are far beyond the id rule: the report cuts each id and lists a bounded number
    of errors with the count of all, so the job's DynamoDB item stays under 400 KB."""
    _, sqs, url, arn, _ = aws_s3
    lines = [json.dumps({"type": "task", "id": f"{i}-" + "L" * 60_000, "title": "t"}) for i in range(60)]
    lines += [json.dumps({"type": "task", "id": f"ok-{i}", "title": f"fine {i}"}) for i in range(3)]
    raw = "\n".join(lines).encode()
    assert len(raw) > 3_000_000
    status, job = invoke(_utf8_event("bulk_entities", raw, path="/entities/ndjson", headers=NDJSON))
    assert status == 202, job
    drain_through_consumer(sqs, url, arn)
    status, done = invoke(api_event("get_job", path=f"/jobs/{job['job_id']}"))
    assert status == 200, done
    assert done["status"] == "done" and done["indexed"] == 3 and done["errors_total"] == 60
    assert 0 < len(done["errors"]) < 60
    ids = [e["entity_id"] for e in done["errors"]]
    assert all(len(i) <= 65 and i.endswith("…") for i in ids), ids
    assert len(json.dumps(done).encode()) < 100_000


def test_a_part_delivered_again_after_its_payload_was_deleted_is_skipped_not_failed(aws_s3: Any) -> None:
    """SQS delivers at least once: a pointer to a part already done (its object deleted) succeeds as a
    no-op, so it never counts towards the DLQ nor records the done part as failed."""
    import copy

    from handlers.lambda_functions import indexing_consumer
    from handlers.local_server.devserver import FakeLambdaContext
    from tests.conftest import load_event

    _, sqs, url, arn, s3 = aws_s3
    items = [{"type": "document", "id": "twice", **_accented("twice")}]
    status, job = invoke(
        _utf8_event("bulk_entities", json.dumps({"items": items}, ensure_ascii=False).encode())
    )
    assert status == 202, job
    [message] = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    record = copy.deepcopy(load_event("sqs_entity_changes")["Records"][0])
    record.update(messageId=message["MessageId"], body=message["Body"], eventSourceARN=arn)
    for receives in ("1", "5"):  # the last delivery before the DLQ records failures: not this one
        record["attributes"]["ApproximateReceiveCount"] = receives
        result = indexing_consumer.lambda_handler(
            {"Records": [record]}, FakeLambdaContext(aws_request_id="t")
        )
        assert result == {"batchItemFailures": []}
    assert s3.list_objects_v2(Bucket=BUCKET).get("KeyCount") == 0
    _done(job["job_id"], 1)


def test_a_failed_send_of_parts_in_s3_leaves_no_object_behind(aws_s3: Any) -> None:
    """Two items each above one message (140,000 × `é`, 280,000 bytes): the second send fails, so its
    object is withdrawn at once; the first part's message was sent, so the consumer discards it (its job
    is gone) and deletes its object."""
    container, sqs, url, arn, s3 = aws_s3
    container.override(
        job_queue=SqsJobQueue(url, client=_FailingSecondSend(sqs), payloads=container.job_payloads)
    )
    items = [
        {"type": "document", "id": f"half-{i}", "title": "half", "text": "é" * 140_000} for i in range(2)
    ]
    status, body = invoke(
        _utf8_event("bulk_entities", json.dumps({"items": items}, ensure_ascii=False).encode())
    )
    assert status == 503, body
    assert _job_rows(container) == [] and s3.list_objects_v2(Bucket=BUCKET).get("KeyCount") == 1
    assert drain_through_consumer(sqs, url, arn) == 1
    assert s3.list_objects_v2(Bucket=BUCKET).get("KeyCount") == 0 and _job_rows(container) == []
