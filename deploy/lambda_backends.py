"""The stack's AWS resources on local servers: DynamoDB tables, SQS queues with their dead-letter queues,
the job payload bucket, and the entity event bus with its rule, created on `moto_server` from their template.yaml properties, as
CloudFormation would create them; the OpenSearch domain is the local node (scripts/opensearch.sh).

One deliberate difference, for tests only: `visibility_timeout` shortens the queues' VisibilityTimeout
(360 s in the template) so a redelivery or a redrive to the dead-letter queue happens in seconds; every
other attribute, maxReceiveCount included, is the template's.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

from deploy.lambda_template import ACCOUNT_ID, REGION, Stack

START_SECONDS = 30.0  # moto_server imports its services lazily; it listens within a few seconds
POLL_SECONDS = 0.1
# Credentials the functions and the driver sign with: moto accepts any (no IAM here).
CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def moto_server() -> Iterator[str]:
    """`moto_server` on a free loopback port for the block; yields its URL and stops it afterwards."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_SECONDS
        while True:
            try:
                urllib.request.urlopen(f"{url}/moto-api/data.json", timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"moto_server did not start on port {port}") from None
                time.sleep(POLL_SECONDS)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def client(service: str, endpoint: str) -> Any:
    """A boto3 client of `service` on the local endpoint."""
    import boto3

    keys = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}
    return boto3.client(service, endpoint_url=endpoint, region_name=REGION, **keys)


def _tables(stack: Stack, endpoint: str) -> None:
    dynamodb = client("dynamodb", endpoint)
    for logical in stack.resources("AWS::DynamoDB::Table"):
        props = stack.properties(logical)
        name = props.get("TableName") or f"{stack.name}-{logical}"
        create: dict[str, Any] = {
            k: props[k] for k in ("AttributeDefinitions", "KeySchema", "BillingMode") if k in props
        }
        if props.get("GlobalSecondaryIndexes"):
            create["GlobalSecondaryIndexes"] = props["GlobalSecondaryIndexes"]
        arn = dynamodb.create_table(TableName=name, **create)["TableDescription"]["TableArn"]
        if props.get("TimeToLiveSpecification"):
            dynamodb.update_time_to_live(
                TableName=name, TimeToLiveSpecification=props["TimeToLiveSpecification"]
            )
        stack.bind(logical, name, Arn=arn)


def _queues(stack: Stack, endpoint: str, visibility_timeout: int | None) -> None:
    sqs = client("sqs", endpoint)
    queues = stack.resources("AWS::SQS::Queue")
    # Dead-letter queues first: a queue's RedrivePolicy names its DLQ's ARN.
    for logical in sorted(queues, key=lambda q: "RedrivePolicy" in queues[q].get("Properties", {})):
        props = stack.properties(logical)
        attributes: dict[str, str] = {
            k: str(props[k]).lower() if isinstance(props[k], bool) else str(props[k])
            for k in (
                "VisibilityTimeout",
                "MessageRetentionPeriod",
                "DelaySeconds",
                "SqsManagedSseEnabled",
                "MaximumMessageSize",
            )
            if k in props
        }
        if visibility_timeout is not None:
            attributes["VisibilityTimeout"] = str(visibility_timeout)
        if "RedrivePolicy" in props:
            attributes["RedrivePolicy"] = json.dumps(props["RedrivePolicy"])
        name = props.get("QueueName") or f"{stack.name}-{logical}"
        url = sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        stack.bind(logical, url, Arn=arn, QueueName=name)


def _buckets(stack: Stack, endpoint: str) -> None:
    """The S3 buckets (the job payload bucket), named after the stack; encryption, public access and
    lifecycle are CloudFormation's business, not what the functions call."""
    s3 = client("s3", endpoint)
    for logical in stack.resources("AWS::S3::Bucket"):
        name = f"{stack.name}-{logical}".lower()
        s3.create_bucket(Bucket=name)
        stack.bind(logical, name, Arn=f"arn:aws:s3:::{name}")


def _buses(stack: Stack, endpoint: str) -> None:
    events = client("events", endpoint)
    for logical in stack.resources("AWS::Events::EventBus"):
        name = stack.properties(logical)["Name"]
        arn = events.create_event_bus(Name=name)["EventBusArn"]
        stack.bind(logical, name, Arn=arn, Name=name)
    # Rules with a pattern route events to their targets on moto itself; a schedule is fired by the
    # driver (deploy/event_sources.py), which plays EventBridge Scheduler's part.
    for logical, resource in stack.resources("AWS::Events::Rule").items():
        if "EventPattern" not in resource.get("Properties", {}):
            continue
        props = stack.properties(logical)
        name = f"{stack.name}-{logical}"
        bus = props.get("EventBusName", "default")
        arn = events.put_rule(Name=name, EventBusName=bus, EventPattern=json.dumps(props["EventPattern"]))[
            "RuleArn"
        ]
        targets = [{"Id": t["Id"], "Arn": t["Arn"]} for t in props["Targets"]]
        events.put_targets(Rule=name, EventBusName=bus, Targets=targets)
        stack.bind(logical, name, Arn=arn)


def provision(
    stack: Stack, endpoint: str, opensearch_url: str, visibility_timeout: int | None = None
) -> None:
    """Create the stack's tables, queues, bus and rule on `endpoint` (moto) and bind their ids; the
    OpenSearch domain's endpoint is the local node."""
    stack.bind("SearchDomain", "local", DomainEndpoint=urlsplit(opensearch_url).netloc)
    _tables(stack, endpoint)
    _queues(stack, endpoint, visibility_timeout)
    _buckets(stack, endpoint)
    _buses(stack, endpoint)


MOTO_SENDER_ID = "AIDAIT2UOQQY3AUEKVGXU"  # moto.sqs.models.DEFAULT_SENDER_ID
EVENTBRIDGE_SENDER_ID = (
    "AIDAJXNJGGKNS7OSV23OI"  # infra/config/settings.py: what EventBridge's deliveries carry in AWS
)


def local_environment(moto_url: str, opensearch_url: str) -> dict[str, str]:
    """What a function's environment gets on this machine beyond the template's: every AWS SDK call goes
    to moto (AWS_ENDPOINT_URL, honoured by boto3 ≥ 1.28 for every service), the domain's endpoint is the
    local node (plain HTTP: it has no TLS), and credentials moto accepts. moto stamps one SenderId on every
    SQS message, the rule's deliveries from the bus included, so the consumer takes it for EventBridge's
    (beside AWS's own, which the sample events carry)."""
    return {
        "AWS_ENDPOINT_URL": moto_url,
        "QUARRY_OPENSEARCH_URL": opensearch_url,
        "QUARRY_EVENTBRIDGE_SENDER_IDS": json.dumps([EVENTBRIDGE_SENDER_ID, MOTO_SENDER_ID]),
        **CREDENTIALS,
        "AWS_REGION": REGION,
        "AWS_DEFAULT_REGION": REGION,
    }


__all__ = ["ACCOUNT_ID", "REGION", "client", "local_environment", "moto_server", "provision"]
