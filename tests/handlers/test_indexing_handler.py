"""The indexing consumer, driven by the sample events in events/, end to end through the local backend."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from core.errors import ForbiddenError, InvalidInputError, UnavailableError
from core.models import EntityKey, Filters, LexicalQuery
from handlers.lambda_functions import indexing_consumer
from handlers.local_server.devserver import FakeLambdaContext
from infra.wiring import root as wiring
from tests.conftest import FakeEmbedder, make_container

EVENTS = Path(__file__).resolve().parents[2] / "events"
TENANT = "acme"
SAMPLE_SENDER = "AIDAIENQZJOLO23YVJ4VO"  # the SenderId of the SQS samples sent straight to the queue
EVENTBRIDGE_SENDER = "AIDAJXNJGGKNS7OSV23OI"  # the SenderId of what EventBridge delivers to a queue
# which tenants each producer may write: the EventBridge source of the sample, the SQS sender of the others
PRODUCERS = {"com.example.tasks": [TENANT], "com.example.notes": [TENANT], SAMPLE_SENDER: [TENANT, "globex"]}


@pytest.fixture
def local(tmp_path: Path, fake_embedder: FakeEmbedder) -> Iterator[wiring.Container]:
    """A local container whose producers may write the sample tenants."""
    container = make_container(tmp_path / "data", fake_embedder, producer_tenants=PRODUCERS)
    wiring.set_container(container)
    yield container
    wiring.set_container(None)


class OutageEmbedder(FakeEmbedder):
    """The shared fake, but Bedrock-style throttling for any text containing `word`."""

    def __init__(self, word: str) -> None:
        super().__init__()
        self.word = word

    def embed(self, texts: Sequence[str]) -> list[np.ndarray]:
        if any(self.word in text.lower() for text in texts):
            raise UnavailableError("bedrock", "ThrottlingException: rate exceeded")
        return super().embed(texts)


def load_event(name: str) -> dict[str, Any]:
    return json.loads((EVENTS / name).read_text())


def sqs_event(*bodies: Any) -> dict[str, Any]:
    """An SQS batch built from the first sample record, one record per body."""
    template = load_event("sqs_entity_changes.json")["Records"][0]
    records = []
    for i, body in enumerate(bodies):
        record = copy.deepcopy(template)
        record["messageId"] = f"msg-{i}"
        record["body"] = body if isinstance(body, str) else json.dumps(body)
        if isinstance(body, dict) and "detail-type" in body:  # EventBridge delivered it
            record["attributes"]["SenderId"] = EVENTBRIDGE_SENDER
        records.append(record)
    return {"Records": records}


@pytest.fixture
def outage(tmp_path: Path) -> Iterator[wiring.Container]:
    """A local container whose embedder is throttled on texts mentioning "outage"."""
    container = make_container(tmp_path / "data", OutageEmbedder("outage"), producer_tenants=PRODUCERS)
    wiring.set_container(container)
    yield container
    wiring.set_container(None)


def invoke(event: dict[str, Any]) -> dict[str, Any]:
    return indexing_consumer.lambda_handler(event, FakeLambdaContext(aws_request_id="test"))  # type: ignore[arg-type]


def stored(container: wiring.Container, entity_type: str, entity_id: str) -> Any:
    key = EntityKey(entity_type, entity_id)
    return container.index.get(TENANT, [key]).get(key)


def failed_ids(response: dict[str, Any]) -> list[str]:
    return [item["itemIdentifier"] for item in response["batchItemFailures"]]


def test_sample_batch_reports_only_the_bad_records(local: wiring.Container) -> None:
    # Given the sample batch: good upserts, a patch, a delete, a stale write, a duplicate, and three
    # malformed records (broken JSON, unknown type, no tenant)
    event = load_event("sqs_entity_changes.json")
    ids = [r["messageId"] for r in event["Records"]]
    # When the consumer processes it
    response = invoke(event)
    # Then exactly the malformed records are reported, so SQS redelivers only those
    assert failed_ids(response) == [ids[2], ids[3], ids[4]]
    # and the good records reached the index, in order: upsert v3 then patch v4 (metadata only)
    task = stored(local, "task", "t-1")
    assert (task.version, task.deleted, task.title) == (4, False, "Fix the login rate limiter")
    assert task.metadata["status"] == "done"
    # the stale v2 ("An older title that must lose") did not overwrite it
    assert task.body["title"] == "Fix the login rate limiter"
    # the EventBridge-wrapped memory took the envelope's time as its version
    memory = stored(local, "memory", "m-1")
    assert memory.version == int(datetime.fromisoformat("2026-01-01T00:00:07Z").timestamp() * 1000)
    # the idea was indexed and then deleted; the malformed records wrote nothing
    assert stored(local, "idea", "i-9").deleted
    assert stored(local, "task", "t-2") is None
    assert stored(local, "task", "t-3") is None


def test_deleted_and_stale_content_is_not_searchable(local: wiring.Container) -> None:
    invoke(load_event("sqs_entity_changes.json"))

    def hits(*terms: str) -> list[str]:
        found = local.index.lexical(TENANT, LexicalQuery(terms=terms), Filters(), 10)
        return [str(c.key) for c in found]

    assert hits("limiter") == ["task:t-1"]
    assert hits("digest") == []  # the deleted idea
    assert hits("older") == []  # the stale title
    assert hits("staging") == ["memory:m-1"]


def test_redelivering_the_whole_batch_changes_nothing(
    local: wiring.Container, fake_embedder: FakeEmbedder
) -> None:
    event = load_event("sqs_entity_changes.json")
    first = invoke(event)
    before = {k: stored(local, *k) for k in [("task", "t-1"), ("memory", "m-1"), ("idea", "i-9")]}
    calls = fake_embedder.calls
    second = invoke(event)
    assert failed_ids(second) == failed_ids(first)
    assert {k: stored(local, *k) for k in before} == before
    # versions are checked before embedding: a re-delivery costs no embedding call
    assert fake_embedder.calls == calls


def test_an_unavailable_backend_fails_only_its_record(outage: wiring.Container) -> None:
    good = {
        "op": "upsert",
        "type": "task",
        "id": "t-5",
        "tenant_id": TENANT,
        "version": 1,
        "entity": {"title": "Write the runbook"},
    }
    throttled = {
        "op": "upsert",
        "type": "task",
        "id": "t-6",
        "tenant_id": TENANT,
        "version": 1,
        "entity": {"title": "Embedding outage ahead"},
    }
    response = invoke(sqs_event(good, throttled))
    assert failed_ids(response) == ["msg-1"]
    assert stored(outage, "task", "t-5").version == 1
    assert stored(outage, "task", "t-6") is None


def test_patch_before_create_is_retried_and_delete_of_absent_succeeds(local: wiring.Container) -> None:
    patch = {
        "op": "patch",
        "type": "task",
        "id": "t-8",
        "tenant_id": TENANT,
        "version": 2,
        "entity": {"status": "done"},
    }
    delete = {"op": "delete", "type": "task", "id": "t-9", "tenant_id": TENANT, "version": 2}
    response = invoke(sqs_event(patch, delete))
    # the patch's create may still be in flight: SQS delivers it again later
    assert failed_ids(response) == ["msg-0"]


def test_an_all_bad_batch_is_reported_not_raised(local: wiring.Container) -> None:
    response = invoke(sqs_event("not json", {"op": "upsert"}))
    assert failed_ids(response) == ["msg-0", "msg-1"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"op": "merge", "type": "task", "id": "t", "tenant_id": TENANT, "entity": {}}, "op"),
        ({"op": "upsert", "type": "task", "id": "t", "tenant_id": TENANT}, "event"),
        ({"op": "upsert", "type": "task", "id": "t", "tenant_id": "", "entity": {}}, "tenant_id"),
        ({"op": "delete", "type": "task", "id": "t", "tenant_id": TENANT, "version": -1}, "version"),
    ],
)
def test_malformed_changes_name_the_bad_field(body: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        indexing_consumer.parse_change(body)
    assert field in caught.value.fields


def test_direct_eventbridge_invocation_applies_once(local: wiring.Container) -> None:
    event = load_event("eventbridge_entity_change.json")
    assert invoke(event) == {"outcome": "applied"}
    assert invoke(event) == {"outcome": "duplicate"}
    project = stored(local, "project", "p-7")
    assert (project.version, project.title) == (12, "Auth hardening")


def test_direct_eventbridge_invocation_with_a_bad_detail_raises(local: wiring.Container) -> None:
    event = load_event("eventbridge_entity_change.json")
    event["detail"]["type"] = "spaceship"
    with pytest.raises(InvalidInputError):
        invoke(event)
    assert stored(local, "project", "p-7") is None


# ---------------------------------------------------------------- producers and their tenants


def envelope(detail: dict[str, Any], source: str) -> dict[str, Any]:
    event = load_event("eventbridge_entity_change.json")
    event["source"], event["detail"] = source, detail
    return event


FORGED = {
    "op": "upsert",
    "type": "task",
    "id": "t-evil",
    "tenant_id": "globex",
    "version": 1,
    "entity": {"title": "click here to reset your password"},
}


def test_a_forged_tenant_event_is_refused_and_reported(local: wiring.Container) -> None:
    """The rule's source may write acme only: globex through it fails (→ DLQ) and is never indexed."""
    honest = dict(FORGED, tenant_id=TENANT, id="t-ok")
    response = invoke(sqs_event(envelope(FORGED, "com.example.tasks"), envelope(honest, "com.example.tasks")))
    assert failed_ids(response) == ["msg-0"]
    assert local.index.get("globex", [EntityKey("task", "t-evil")]) == {}
    assert stored(local, "task", "t-ok") is not None


def test_a_direct_sender_cannot_claim_an_eventbridge_source(local: wiring.Container) -> None:
    """SAMPLE_SENDER may write acme and globex straight to the queue; wrapped as an EventBridge event
    naming com.example.tasks, it is refused whatever tenant it names (the envelope is EventBridge's alone)."""
    for tenant in ("acme", "globex"):
        record = sqs_event(envelope(dict(FORGED, tenant_id=tenant), "com.example.tasks"))
        record["Records"][0]["attributes"]["SenderId"] = SAMPLE_SENDER
        assert failed_ids(invoke(record)) == ["msg-0"]
        assert local.index.get(tenant, [EntityKey("task", "t-evil")]) == {}
    assert failed_ids(invoke(sqs_event(dict(FORGED, tenant_id="globex")))) == []  # its own change is fine
    assert local.index.get("globex", [EntityKey("task", "t-evil")]) != {}


def test_an_unknown_producer_is_refused(local: wiring.Container) -> None:
    response = invoke(sqs_event(envelope(dict(FORGED, tenant_id=TENANT), "com.acme.anything")))
    assert failed_ids(response) == ["msg-0"]
    record = sqs_event(FORGED)
    record["Records"][0]["attributes"]["SenderId"] = "AROAUNKNOWN:someone"
    assert failed_ids(invoke(record)) == ["msg-0"]
    with pytest.raises(ForbiddenError):
        invoke(envelope(FORGED, "com.acme.anything"))
    assert local.index.get("globex", [EntityKey("task", "t-evil")]) == {}


def test_delete_before_create_on_the_consumer_stays_deleted(local: wiring.Container) -> None:
    delete = {"op": "delete", "type": "task", "id": "t-late", "tenant_id": TENANT, "version": 5}
    create = {
        "op": "upsert",
        "type": "task",
        "id": "t-late",
        "tenant_id": TENANT,
        "version": 3,
        "entity": {"title": "resurrected"},
    }
    assert failed_ids(invoke(sqs_event(delete))) == []
    assert failed_ids(invoke(sqs_event(create))) == []
    entity = stored(local, "task", "t-late")
    assert entity is None or entity.deleted
    assert local.index.lexical(TENANT, LexicalQuery(terms=("resurrected",)), Filters(), 10) == []
