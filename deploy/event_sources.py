"""The event sources of template.yaml, driving the emulated functions as AWS drives them.

- `SqsEventSource`: an SQS event source mapping (AWS Lambda Developer Guide, "Using Lambda with Amazon
  SQS", https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html, and "Handling errors for an SQS event
  source in Lambda", https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-errorhandling.html): it
  receives up to BatchSize messages, waiting up to MaximumBatchingWindowInSeconds to fill a batch;
  invokes the function synchronously with the documented event; on success deletes the batch — with
  ReportBatchItemFailures, all but the messages `batchItemFailures` names (an empty or null list, or an
  empty or null response, is complete success; an invalid response, an empty or null `itemIdentifier`,
  a bad key name or an unknown message id fail the whole batch); on a function error or timeout it
  deletes nothing. What is not deleted becomes visible again after the queue's VisibilityTimeout, and
  SQS moves a message received more than maxReceiveCount times to the dead-letter queue (moto does this
  as SQS does, at the next receive). One batch at a time: MaximumConcurrency is not played.
- `Schedule`: an EventBridge schedule rule targeting a function ("Creating an Amazon EventBridge rule
  that runs on a schedule"; event shape: "Amazon EventBridge events", detail-type "Scheduled Event").
  EventBridge invokes the function asynchronously, and Lambda retries a failed asynchronous invocation
  twice by default ("Asynchronous invocation"; the delays between tries, about 1 and 2 minutes in AWS, are
  not waited here). The entity-change rule needs no driver: moto's EventBridge matches the rule's pattern
  and delivers to its queue target as EventBridge does.
- `pre_token_generation`: Cognito's pre-token-generation trigger, event version 2 (Amazon Cognito
  Developer Guide, "Pre token generation Lambda trigger",
  https://docs.aws.amazon.com/cognito/latest/developerguide/user-pool-lambda-pre-token-generation.html):
  Cognito invokes the trigger with the user's attributes, groups and scopes, then applies the answer's
  `claimsAndScopeOverrideDetails.accessTokenGeneration` (claims to add or override, claims to suppress,
  scopes to add or suppress) to the access token; a claim Cognito protects cannot be changed.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from deploy.lambda_backends import client
from deploy.lambda_emulator import EmulatedFunction, Invocation
from deploy.lambda_template import ACCOUNT_ID, REGION, Stack

MAX_RECEIVE = 10  # ReceiveMessage returns at most 10 messages per call (SQS API reference)
POLL_SECONDS = 0.2


@dataclass(frozen=True, slots=True)
class Batch:
    """One invocation of the mapping: the messages it carried, those it reported failed, those deleted."""

    message_ids: tuple[str, ...]
    bodies: tuple[str, ...]
    receive_counts: tuple[int, ...]
    failed: tuple[str, ...]
    deleted: tuple[str, ...]
    invocation: Invocation


def _record(message: Mapping[str, Any], queue_arn: str) -> dict[str, Any]:
    """An SQS message as Lambda passes it in `Records` (the documented event shape)."""
    attributes = {
        name: {
            "stringValue": value.get("StringValue"),
            "binaryValue": value.get("BinaryValue"),
            "stringListValues": [],
            "binaryListValues": [],
            "dataType": value["DataType"],
        }
        for name, value in (message.get("MessageAttributes") or {}).items()
    }
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": dict(message.get("Attributes") or {}),
        "messageAttributes": attributes,
        "md5OfBody": message.get("MD5OfBody") or hashlib.md5(message["Body"].encode()).hexdigest(),
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": REGION,
    }


def reported_failures(invocation: Invocation, message_ids: Sequence[str], partial: bool) -> set[str]:
    """The messages the event source mapping must keep (not delete) after this invocation."""
    every = set(message_ids)
    if invocation.function_error:
        return every
    if not partial:
        return set()
    try:
        response = invocation.payload
    except ValueError:
        return every  # an invalid JSON response fails the whole batch
    if not response:
        return set()
    if not isinstance(response, dict):
        return every
    items = response.get("batchItemFailures")
    if not items:
        return set()
    failed = set()
    for item in items:
        identifier = item.get("itemIdentifier") if isinstance(item, dict) else None
        if not identifier or identifier not in every:
            return every  # null, empty, badly named or unknown identifiers fail the whole batch
        failed.add(identifier)
    return failed


class SqsEventSource:
    """One AWS::Lambda::EventSourceMapping of the translated template, polled on demand.

    `batching_window` (seconds) replaces MaximumBatchingWindowInSeconds when given: tests compress
    time as they compress the queue's visibility timeout (deploy/lambda_backends.py)."""

    def __init__(
        self,
        stack: Stack,
        mapping_id: str,
        function: EmulatedFunction,
        endpoint: str,
        batching_window: float | None = None,
    ) -> None:
        props = stack.properties(mapping_id)
        self.function = function
        self.batch_size = int(props.get("BatchSize", 10))
        self.window = float(
            props.get("MaximumBatchingWindowInSeconds", 0) if batching_window is None else batching_window
        )
        self.partial = "ReportBatchItemFailures" in (props.get("FunctionResponseTypes") or [])
        self.queue_arn = str(props["EventSourceArn"])
        queue = next(k for (k, a), v in stack.attributes.items() if a == "Arn" and v == self.queue_arn)
        self.queue_url = str(stack.refs[queue])
        self.sqs = client("sqs", endpoint)
        self.batches: list[Batch] = []

    def _receive(self) -> list[dict[str, Any]]:
        """Up to BatchSize messages, receiving until the batch is full or the batching window ends."""
        messages: list[dict[str, Any]] = []
        deadline = time.monotonic() + self.window
        while True:
            messages += self.sqs.receive_message(
                QueueUrl=self.queue_url,
                MaxNumberOfMessages=min(MAX_RECEIVE, self.batch_size - len(messages)),
                AttributeNames=["All"],
                MessageAttributeNames=["All"],
            ).get("Messages", [])
            if len(messages) >= self.batch_size or time.monotonic() >= deadline:
                return messages
            time.sleep(POLL_SECONDS)

    def poll(self) -> Batch | None:
        """Receive one batch and invoke the function with it; None when no message is visible."""
        messages = self._receive()
        if not messages:
            return None
        event = {"Records": [_record(m, self.queue_arn) for m in messages]}
        invocation = self.function.invoke(event)
        ids = [m["MessageId"] for m in messages]
        failed = reported_failures(invocation, ids, self.partial)
        done = [m for m in messages if m["MessageId"] not in failed]
        for start in range(0, len(done), MAX_RECEIVE):
            chunk = done[start : start + MAX_RECEIVE]
            entries = [{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(chunk)]
            self.sqs.delete_message_batch(QueueUrl=self.queue_url, Entries=entries)
        counts = tuple(int(m["Attributes"].get("ApproximateReceiveCount", "0")) for m in messages)
        bodies = tuple(m["Body"] for m in messages)
        deleted = tuple(m["MessageId"] for m in done)
        batch = Batch(tuple(ids), bodies, counts, tuple(sorted(failed)), deleted, invocation)
        self.batches.append(batch)
        return batch

    def run(self, done: Callable[[], bool], timeout: float) -> list[Batch]:
        """Poll until `done()` holds (checked after every batch and idle poll), within `timeout` seconds;
        the batches invoked meanwhile. TimeoutError when `done()` never held."""
        deadline = time.monotonic() + timeout
        batches: list[Batch] = []
        while not done():
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.queue_arn}: not done after {timeout:g} s ({len(batches)} batches)")
            batch = self.poll()
            if batch is None:
                time.sleep(POLL_SECONDS)
            else:
                batches.append(batch)
        return batches

    def waiting(self) -> int:
        """Messages visible or in flight on the queue (what remains to be processed)."""
        attributes = self.sqs.get_queue_attributes(
            QueueUrl=self.queue_url,
            AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
        )["Attributes"]
        return int(attributes["ApproximateNumberOfMessages"]) + int(
            attributes["ApproximateNumberOfMessagesNotVisible"]
        )


def scheduled_event(rule_arn: str, at: datetime | None = None) -> dict[str, Any]:
    """The event an EventBridge schedule sends its target (detail-type "Scheduled Event")."""
    when = (at or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": ACCOUNT_ID,
        "time": when,
        "region": REGION,
        "resources": [rule_arn],
        "detail": {},
    }


@dataclass
class Schedule:
    """A schedule rule (AWS::Events::Rule with a ScheduleExpression) and the function it targets."""

    stack: Stack
    rule_id: str
    function: EmulatedFunction
    tries: list[Invocation] = field(default_factory=list)

    @property
    def expression(self) -> str:
        return str(self.stack.properties(self.rule_id)["ScheduleExpression"])

    def fire(self, retries: int = 2) -> Invocation:
        """One scheduled run: the event, invoked as an asynchronous invocation with Lambda's retries."""
        arn = f"arn:aws:events:{REGION}:{ACCOUNT_ID}:rule/{self.stack.name}-{self.rule_id}"
        event = scheduled_event(arn)
        for _ in range(retries + 1):
            invocation = self.function.invoke(event)
            self.tries.append(invocation)
            if not invocation.function_error:
                break
        return invocation


# Claims of an access token Cognito sets itself: a trigger cannot add, override or suppress them.
PROTECTED_CLAIMS = frozenset(
    {"acr", "amr", "aud", "auth_time", "azp", "exp", "iat", "identities", "iss", "jti", "nbf", "nonce",
     "origin_jti", "sub", "token_use", "client_id", "cognito:username", "username", "event_id"}
)  # fmt: skip
TOKEN_SECONDS = 3600  # Cognito's default access-token lifetime


def pre_token_generation(
    function: EmulatedFunction,
    user: str,
    groups: Sequence[str],
    scopes: Sequence[str],
    client_id: str,
    pool_id: str = f"{REGION}_local",
) -> dict[str, Any]:
    """The access token's claims after Cognito ran the V2 trigger for `user` (RuntimeError when the
    trigger fails: Cognito then refuses the sign-in)."""
    sub = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{pool_id}/{user}"))
    invocation = function.invoke(_trigger_event(sub, user, groups, scopes, client_id, pool_id))
    if invocation.function_error:
        raise RuntimeError(
            f"the pre-token-generation trigger failed: {invocation.body.decode(errors='replace')}"
        )
    details = ((invocation.payload.get("response") or {}).get("claimsAndScopeOverrideDetails")) or {}
    claims = _issued_claims(sub, user, groups, client_id, pool_id)
    return _overridden(claims, scopes, details.get("accessTokenGeneration") or {})


def _trigger_event(
    sub: str, user: str, groups: Sequence[str], scopes: Sequence[str], client_id: str, pool_id: str
) -> dict[str, Any]:
    """The V2 trigger's event for `user` signing in."""
    return {
        "version": "2",
        "triggerSource": "TokenGeneration_Authentication",
        "region": REGION,
        "userPoolId": pool_id,
        "userName": user,
        "callerContext": {"awsSdkVersion": "aws-sdk-unknown-unknown", "clientId": client_id},
        "request": {
            "userAttributes": {"sub": sub, "cognito:user_status": "CONFIRMED"},
            "groupConfiguration": {
                "groupsToOverride": list(groups),
                "iamRolesToOverride": [],
                "preferredRole": None,
            },
            "scopes": list(scopes),
        },
        "response": {"claimsAndScopeOverrideDetails": None},
    }


def _issued_claims(
    sub: str, user: str, groups: Sequence[str], client_id: str, pool_id: str
) -> dict[str, Any]:
    """The access token's claims as Cognito issues them before the trigger's overrides."""
    now = int(time.time())
    return {
        "sub": sub, "cognito:groups": list(groups), "iss": f"https://cognito-idp.{REGION}.amazonaws.com/{pool_id}",
        "client_id": client_id, "origin_jti": str(uuid.uuid4()), "event_id": str(uuid.uuid4()),
        "token_use": "access", "auth_time": now, "exp": now + TOKEN_SECONDS, "iat": now,
        "jti": str(uuid.uuid4()), "username": user,
    }  # fmt: skip


def _overridden(claims: dict[str, Any], scopes: Sequence[str], access: Mapping[str, Any]) -> dict[str, Any]:
    """`claims` with the trigger's `accessTokenGeneration` applied (never to a protected claim) and the
    granted scopes."""
    for name in access.get("claimsToSuppress") or []:
        if name not in PROTECTED_CLAIMS:
            claims.pop(name, None)
    for name, value in (access.get("claimsToAddOrOverride") or {}).items():
        if name not in PROTECTED_CLAIMS:
            claims[name] = value
    granted = [s for s in scopes if s not in set(access.get("scopesToSuppress") or [])]
    granted += [s for s in access.get("scopesToAdd") or [] if s not in granted]
    claims["scope"] = " ".join(granted)
    return claims


def jwt_authorizer_context(claims: Mapping[str, Any]) -> dict[str, Any]:
    """`requestContext.authorizer` as an HTTP API JWT authorizer passes a valid token's claims (Amazon
    API Gateway Developer Guide, "Controlling access to HTTP APIs with JWT authorizers"): every claim as a
    string (an array as "[a b]"), the token's scopes as a list."""

    def text(value: Any) -> str:
        if isinstance(value, list):
            return "[" + " ".join(str(v) for v in value) + "]"
        return value if isinstance(value, str) else json.dumps(value)

    scopes = str(claims.get("scope") or "").split()
    return {"jwt": {"claims": {k: text(v) for k, v in claims.items()}, "scopes": scopes or None}}
