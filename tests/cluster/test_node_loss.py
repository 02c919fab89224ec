"""A node of the three-node cluster killed with SIGKILL in the middle of the work, through the real handlers,
services and adapter (only the embedder is a fake). One outage serves three scenarios, each on its own
index, running at once (a node restart and recovery is most of the time these tests take):

- mid-bulk, writes arriving through the API handler and the queue consumer at once (3 shards, 1 replica):
  every write Quarry acknowledged is present afterwards at its newest acknowledged version (or at a newer
  one it was sent and not acknowledged for), deletes stay deleted, and during the outage every answer is a
  200 or a 503 with Retry-After; a consumer record that failed is redelivered, as SQS does;
- mid-search, on an index without replicas (the lost node takes its shards with it): every answer is the
  whole answer, the same as before the loss, or an UnavailableError (the API's 503 + Retry-After:
  tests/handlers/test_opensearch_partial.py), never a shorter list;
- mid-reindex (the copy held until the node is gone): the alias ends on one complete index, the old
  generation or the new one, never between.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from core.models import EntityKey
from handlers.lambda_functions import indexing_consumer
from handlers.local_server.devserver import FakeLambdaContext
from infra.opensearch import build_opensearch_index, mapping
from infra.opensearch.layout import Layout
from infra.opensearch.reindex import OpenSearchReindexer
from infra.text_models.model_switch import reindex_opensearch
from infra.wiring import root as wiring
from tests.cluster.conftest import Cluster, container_on
from tests.conftest import FakeEmbedder, api_event

pytestmark = [pytest.mark.live, pytest.mark.slow]
TENANT = "acme"
PRODUCER = "AIDAIENQZJOLO23YVJ4VO"  # the SenderId of events/sqs_entity_changes.json
IDS_PER_WRITER = 12
DELETE_EVERY = 4  # every 4th entity is deleted at the writer's DELETE_ROUND
DELETE_ROUND = 3
ROUNDS_BEFORE, ROUNDS_DURING, ROUNDS_AFTER = 2, 3, 2
OUTAGE_SECONDS = 40.0  # the most a writer is given to make its rounds while the node is down
REDELIVERIES = 10
PACE = 0.1  # seconds between a writer's or the searcher's rounds: load beside a node restarting on 2 cores


def call_api(event: dict[str, Any]) -> tuple[int, dict[str, str], Any]:
    from handlers.lambda_functions.api import lambda_handler

    result = lambda_handler(event, FakeLambdaContext(aws_request_id="test"))
    return int(result["statusCode"]), result.get("headers") or {}, json.loads(result.get("body") or "null")


@dataclass
class Ledger:
    """What one writer sent and what was acknowledged: per entity id, (version, deleted, acknowledged)."""

    sent: dict[str, list[tuple[int, bool, bool]]] = field(default_factory=dict)
    statuses: list[tuple[int, bool]] = field(default_factory=list)  # (status, had Retry-After)
    rounds: int = 0

    def note(self, entity_id: str, version: int, deleted: bool, acked: bool) -> None:
        self.sent.setdefault(entity_id, []).append((version, deleted, acked))


class Writer(threading.Thread):
    """Writes its entities round after round (version = round), deleting some at DELETE_ROUND."""

    def __init__(self, name: str, write: Callable[[Ledger, int, list[str], list[str]], None]) -> None:
        super().__init__(name=name, daemon=True)
        self.ids = [f"{name}-{i}" for i in range(IDS_PER_WRITER)]
        self.ledger = Ledger()
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self._write = write

    def run(self) -> None:
        try:
            version = 0
            while not self.stop.is_set():
                version += 1
                doomed = [i for n, i in enumerate(self.ids) if n % DELETE_EVERY == 0]
                deletes = doomed if version == DELETE_ROUND else []
                live = [i for i in self.ids if i not in doomed or version < DELETE_ROUND]
                self._write(self.ledger, version, live, deletes)
                self.ledger.rounds += 1
                self.stop.wait(PACE)
        except BaseException as exc:  # reported by the test
            self.error = exc

    def wait_rounds(self, rounds: int, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while self.ledger.rounds < rounds and self.error is None and time.monotonic() < deadline:
            self.stop.wait(0.05)
        assert self.error is None, self.error


def api_writes(ledger: Ledger, version: int, upserts: list[str], deletes: list[str]) -> None:
    """One POST /entities of every upsert, then one DELETE per deleted id."""
    items = [
        {"type": "memory", "id": i, "content": f"tide log {i} v{version}", "version": version}
        for i in upserts
    ]
    status, headers, body = call_api(api_event("bulk_entities", tenant=TENANT, body={"items": items}))
    ledger.statuses.append((status, "Retry-After" in headers))
    acked = status == 200 and not body["errors"]
    for i in upserts:
        ledger.note(i, version, False, acked)
    for i in deletes:
        path = f"/entities/memory/{i}"
        event = api_event("delete_entity", tenant=TENANT, path=path, query={"version": str(version)})
        status, headers, _ = call_api(event)
        ledger.statuses.append((status, "Retry-After" in headers))
        ledger.note(i, version, True, status == 200)


def change(entity_id: str, version: int, delete: bool) -> dict[str, Any]:
    if delete:
        return {"op": "delete", "type": "memory", "id": entity_id, "tenant_id": TENANT, "version": version}
    entity = {"content": f"tide log {entity_id} v{version}"}
    return {"op": "upsert", "type": "memory", "id": entity_id, "tenant_id": TENANT, "version": version,
            "entity": entity}  # fmt: skip


def sqs_batch(changes: list[dict[str, Any]]) -> dict[str, Any]:
    template = json.loads((Path(__file__).parents[2] / "events" / "sqs_entity_changes.json").read_text())
    record = template["Records"][0]
    return {
        "Records": [{**record, "messageId": f"m{n}", "body": json.dumps(c)} for n, c in enumerate(changes)]
    }


def consume(changes: list[dict[str, Any]]) -> set[int]:
    """One SQS batch through the indexing consumer; the positions it reported failed — every position when
    the function itself fails, as the SQS event source mapping then returns the whole batch to the queue."""
    try:
        answer = indexing_consumer.lambda_handler(
            sqs_batch(changes), FakeLambdaContext(aws_request_id="test")
        )  # type: ignore[arg-type]
    except Exception:  # noqa: BLE001 - a function error: SQS redelivers the whole batch
        return set(range(len(changes)))
    return {int(f["itemIdentifier"][1:]) for f in answer["batchItemFailures"]}


class Consumer:
    """The queue side: what failed is kept, as SQS keeps it, and delivered again later."""

    def __init__(self) -> None:
        self.unacked: list[dict[str, Any]] = []

    def writes(self, ledger: Ledger, version: int, upserts: list[str], deletes: list[str]) -> None:
        changes = [change(i, version, False) for i in upserts] + [change(i, version, True) for i in deletes]
        failed = consume(changes)
        for n, c in enumerate(changes):
            ledger.note(c["id"], version, c["op"] == "delete", n not in failed)
        self.unacked += [c for n, c in enumerate(changes) if n in failed]

    def redeliver(self, ledger: Ledger) -> None:
        for _ in range(REDELIVERIES):
            if not self.unacked:
                return
            batch, self.unacked = self.unacked, []
            failed = consume(batch)
            for n, c in enumerate(batch):
                ledger.note(c["id"], c["version"], c["op"] == "delete", n not in failed)
            self.unacked = [c for n, c in enumerate(batch) if n in failed]
        assert not self.unacked, f"{len(self.unacked)} records still fail after {REDELIVERIES} redeliveries"


SEARCH_DOCS = 60
QUERIES = ("tide log", "harbor crane", "cargo berth pier", "ship tide")
SEARCHES_DURING = 8  # searches the searcher makes while the node is down
REINDEX_DOCS = 40
REINDEX_BATCH = 8  # five copy pages: the second waits until the node is killed


class Searcher(threading.Thread):
    """Searches every strategy in turn; each answer is recorded as its result ids, or the error."""

    def __init__(self, container: Any) -> None:
        super().__init__(name="searcher", daemon=True)
        self.container = container
        self.answers: list[tuple[str, str, tuple[str, ...] | Exception]] = []
        self.stop = threading.Event()

    def ask(self, query: str, strategy: str) -> tuple[str, ...] | Exception:
        from core.errors import UnavailableError
        from core.search.search_api import SearchRequest

        request = SearchRequest(query=query, strategy=strategy, limit=SEARCH_DOCS)
        try:
            found = self.container.search.search(TENANT, request)
        except UnavailableError as exc:
            return exc
        return tuple(r.entity_id for r in found.results)

    def run(self) -> None:
        while not self.stop.is_set():
            for query in QUERIES:
                for strategy in ("keyword", "semantic", "hybrid"):
                    self.answers.append((query, strategy, self.ask(query, strategy)))
            self.stop.wait(PACE)

    def wait_answers(self, count: int, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while len(self.answers) < count and time.monotonic() < deadline:
            self.stop.wait(0.05)


class HeldModel(FakeEmbedder):
    """The reindex's new model: its second call (the copy's second page) waits until `release` is set."""

    def __init__(self, dimension: int) -> None:
        super().__init__(dimension)
        self.reached, self.release = threading.Event(), threading.Event()

    def embed(self, texts: Any) -> Any:
        if self.calls == 1:
            self.reached.set()
            self.release.wait(OUTAGE_SECONDS)
        return super().embed(texts)


@dataclass
class Outage:
    """What the three scenarios recorded around one node loss."""

    writers: list[Writer]
    consumer: Consumer
    write_stack: Any
    search_stack: Any
    baseline: dict[tuple[str, str], tuple[str, ...]]
    answers_before_kill: int
    searcher: Searcher
    reindex_prefix: str
    reindex_result: list[Any]
    reindex_stack: Any


def ingest(container: Any, count: int) -> None:
    """Entities through the indexing service, then a refresh (searchable at once)."""
    items = [
        {"type": "memory", "id": f"doc-{i}", "content": f"tide log harbor crane {i} cargo berth pier{i % 5}",
         "version": 1}
        for i in range(count)
    ]  # fmt: skip
    report = container.indexing.bulk(TENANT, items, time.time())
    assert report.indexed == count, report
    container.index.client.indices.refresh(index=container.index.alias)


def run_reindex(stack: Any, prefix: str, model: HeldModel, out: list[Any], folder: Path) -> None:
    reindexer = OpenSearchReindexer(
        stack.index.client, prefix, stack.registry, model, str(folder), batch=REINDEX_BATCH,
        layout=Layout(shards=3, replicas="1"),
    )  # fmt: skip
    try:
        out.append(reindex_opensearch(reindexer, settle_seconds=0, sleep=lambda _: None))
    except Exception as exc:  # the run may stop on the outage: the alias must still be whole
        out.append(exc)


@pytest.fixture(scope="module")
def outage(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Outage]:
    root = tmp_path_factory.mktemp("outage")
    prefixes = {name: f"quarry-cluster-{name}-{uuid.uuid4().hex[:8]}" for name in ("w", "s", "r")}
    cluster.wait_green()
    write_stack = container_on(
        cluster, root / "w", prefixes["w"], opensearch_shards=3, opensearch_replicas="1",
        producer_tenants={PRODUCER: [TENANT]},
    )  # fmt: skip
    search_stack = container_on(
        cluster,
        root / "s",
        prefixes["s"],
        opensearch_shards=3,
        opensearch_replicas="0",
        opensearch_routing="none",
    )
    reindex_stack = container_on(
        cluster, root / "r", prefixes["r"], opensearch_shards=3, opensearch_replicas="1"
    )
    try:
        write_stack.index.ensure_index()
        ingest(search_stack, SEARCH_DOCS)
        ingest(reindex_stack, REINDEX_DOCS)
        searcher = Searcher(search_stack)
        baseline = {(q, st): searcher.ask(q, st) for q in QUERIES for st in ("keyword", "semantic", "hybrid")}
        assert all(isinstance(v, tuple) and v for v in baseline.values()), baseline
        wiring.set_container(write_stack)
        consumer = Consumer()
        writers = [Writer("api", api_writes), Writer("queue", consumer.writes)]
        model = HeldModel(32)
        reindexed: list[Any] = []
        (root / "model").mkdir()
        reindex = threading.Thread(
            target=run_reindex,
            args=(reindex_stack, prefixes["r"], model, reindexed, root / "model"),
            daemon=True,
        )
        for thread in (*writers, searcher, reindex):
            thread.start()
        for w in writers:
            w.wait_rounds(ROUNDS_BEFORE, 60.0)
        assert model.reached.wait(60.0), "the reindex never reached its second copy page"
        answered = len(searcher.answers)
        # a node holding a primary of the index without replicas: its shards go with it
        victim = min(cluster.primary_nodes(mapping.index_name(prefixes["s"])))
        cluster.kill(victim)
        model.release.set()
        for w in writers:
            w.wait_rounds(w.ledger.rounds + ROUNDS_DURING, OUTAGE_SECONDS)
        searcher.wait_answers(answered + SEARCHES_DURING, OUTAGE_SECONDS)
        reindex.join(OUTAGE_SECONDS)
        cluster.start(victim)
        # its shards of the index without replicas come back from its own disk; the replicas of the
        # others recover meanwhile (the cluster is green again before the module ends)
        cluster.wait_green(mapping.index_name(prefixes["s"]))
        for w in writers:
            w.wait_rounds(w.ledger.rounds + ROUNDS_AFTER, 60.0)
        searcher.wait_answers(len(searcher.answers) + len(baseline), 60.0)
    finally:
        for thread in (*writers, searcher):
            thread.stop.set()
        for thread in (*writers, searcher, reindex):
            thread.join(60.0)
        wiring.set_container(None)
    consumer.redeliver(writers[1].ledger)
    yield Outage(
        writers, consumer, write_stack, search_stack, baseline, answered, searcher, prefixes["r"], reindexed,
        reindex_stack,
    )  # fmt: skip
    cluster.wait_green()
    for name in prefixes.values():
        for generation in (1, 2):
            cluster.client.indices.delete(index=mapping.index_name(name, generation), ignore=404)
        cluster.client.indices.delete_index_template(name=mapping.template_name(name), ignore=404)


def check_ledger(container: Any, ledger: Ledger) -> None:
    """Each entity is stored as one of its writes, at or above the newest acknowledged one."""
    keys = [EntityKey("memory", i) for i in ledger.sent]
    stored = container.index.get(TENANT, keys)
    for entity_id, sent in ledger.sent.items():
        acked = [(v, d) for v, d, ok in sent if ok]
        if not acked:
            continue
        newest = max(acked)
        got = stored.get(EntityKey("memory", entity_id))
        assert got is not None, f"{entity_id}: acknowledged at {newest} but absent"
        assert (got.version, got.deleted) in {(v, d) for v, d, _ in sent}, f"{entity_id}: {got} never sent"
        assert (got.version, got.deleted) >= newest, (
            f"{entity_id}: stored {got.version}, acknowledged {newest}"
        )


def test_a_node_killed_mid_bulk_loses_no_acknowledged_write(outage: Outage) -> None:
    api = outage.writers[0].ledger
    assert {s for s, _ in api.statuses} <= {200, 503}, api.statuses
    assert all(retry for s, retry in api.statuses if s == 503)
    for w in outage.writers:
        assert w.error is None, w.error
        assert w.ledger.rounds >= ROUNDS_BEFORE + ROUNDS_DURING + ROUNDS_AFTER, (w.name, w.ledger.rounds)
        check_ledger(outage.write_stack, w.ledger)
    stack = outage.write_stack
    stack.index.client.indices.refresh(index=stack.index.alias)
    wiring.set_container(stack)
    try:
        found = call_api(api_event("search", tenant=TENANT, body={"query": "tide log", "limit": 100}))[2]
    finally:
        wiring.set_container(None)
    deleted = {i for w in outage.writers for i in w.ids[::DELETE_EVERY]}
    shown = {r["entity_id"] for r in found["results"]}
    assert len(shown) == 2 * IDS_PER_WRITER - len(deleted) and not shown & deleted  # deletes stay deleted


def test_a_node_killed_mid_search_never_answers_with_part_of_the_results(outage: Outage) -> None:
    from core.errors import UnavailableError

    answers = outage.searcher.answers
    during = answers[outage.answers_before_kill :]
    for query, strategy, got in answers:
        if not isinstance(got, UnavailableError):
            expected = outage.baseline[(query, strategy)]
            assert got == expected, (
                f"{strategy} '{query}': {len(got)} results where the index holds {len(expected)}"
            )
    assert any(isinstance(got, UnavailableError) for _, _, got in during), "the outage was never seen"
    # once the node is back, every search answers whole again
    assert all(not isinstance(got, Exception) for _, _, got in answers[-len(outage.baseline) :])


def test_a_reindex_interrupted_by_a_node_loss_leaves_the_alias_on_a_complete_index(outage: Outage) -> None:
    (result,) = outage.reindex_result
    client = outage.reindex_stack.index.client
    (live,) = client.indices.get_alias(name=outage.reindex_prefix)  # one index behind the alias
    old = mapping.index_name(outage.reindex_prefix, 1)
    assert live == (old if isinstance(result, Exception) else mapping.index_name(outage.reindex_prefix, 2))
    client.indices.refresh(index=live)
    assert client.count(index=live)["count"] == REINDEX_DOCS
    keys = [EntityKey("memory", f"doc-{i}") for i in range(REINDEX_DOCS)]
    reader = build_opensearch_index(client, dimension=32 if live != old else 64, prefix=outage.reindex_prefix)
    stored = reader.get(TENANT, keys)
    assert sorted(stored) == sorted(keys) and {e.version for e in stored.values()} == {1}
