"""A whole corpus in one request, as one job: POST /entities/ndjson takes one bulk item a line
(`application/x-ndjson`), answers 202 with `Location: /jobs/{id}`, and GET /jobs/{id} follows it. A line that
breaks the rules (not UTF-8, not JSON, a repeated key, not Unicode, the item schema, an entity named twice)
is reported with its line number and the others are indexed; the `quarry ingest` field mapping works as
query parameters. Through the local SQLite queue, SQS + DynamoDB on moto, and the local server over HTTP
(the body streamed, beyond QUARRY_MAX_BODY_BYTES)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from core.indexing.write_jobs import MAX_JOB_ITEMS
from infra.wiring import root as wiring
from tests.conftest import FakeEmbedder, api_event, invoke, make_container
from tests.handlers.serving import serving
from tests.handlers.test_write_jobs import aws_jobs, drain_through_consumer  # noqa: F401 (a fixture)

NDJSON = {"content-type": "application/x-ndjson"}
GOOD = 1200


def _line(i: int, **extra: Any) -> bytes:
    return json.dumps(
        {"type": "task", "id": f"t-{i}", "title": f"quarterly ledger zebra{i}", **extra}
    ).encode()


def corpus() -> tuple[bytes, dict[int, str]]:
    """GOOD good lines with bad ones among them; (body, {line number: the field its error names})."""
    lines = [_line(i) for i in range(GOOD)]
    bad = {
        3: b'{"type": "task", "id": "x", "title": "caf\xe9"}',  # Latin-1, not UTF-8
        10: b'{"type": "task", "id": "y", "title": ',  # cut short
        20: b'{"type": "task", "id": "z", "id": "w", "title": "twice"}',  # a repeated key (I-JSON)
        30: b'{"type": "task", "id": "s", "title": "\\ud800"}',  # a lone surrogate
        40: b'{"type": "task", "id": "no-title", "status": "open"}',  # the item schema: no title
        50: b'["an", "array"]',
        60: _line(5),  # t-5 again: an entity appears once per request
    }
    names = {3: "line.4", 10: "line.11", 20: "line.21", 30: "line.31.title", 40: "line.41.title",
             50: "line.51", 60: "line.61.id"}  # fmt: skip
    for at in sorted(bad):  # each lands on line at + 1
        lines.insert(at, bad[at])
    lines.insert(100, b"   ")  # a blank line: skipped, but counted as an editor counts
    return b"\n".join(lines) + b"\n", {int(k.split(".")[1]): k for k in names.values()}


def _upload(body: bytes, query: dict[str, str] | None = None, headers: dict[str, str] | None = None) -> Any:
    event = api_event("bulk_entities", path="/entities/ndjson", raw_body=body.decode("latin-1"),
                      headers=headers or NDJSON, query=query)  # fmt: skip
    import base64

    event["body"], event["isBase64Encoded"] = base64.b64encode(body).decode(), True  # as API Gateway may
    return event


def _found(word: str) -> list[str]:
    _, answer = invoke(api_event("search", body={"query": word, "strategy": "keyword"}))
    return [r["entity_id"] for r in answer["results"]]


def _check_job(job: dict[str, Any], expected: dict[int, str]) -> None:
    assert job["status"] == "done" and job["indexed"] == GOOD, job  # every good line, t-5 once
    assert job["items"] == GOOD + len(expected)
    assert {e["line"]: next(iter(e["fields"])) for e in job["errors"]} == expected
    assert all(e["index"] == e["line"] - 1 for e in job["errors"])


def test_a_corpus_upload_is_one_job_on_sqs_and_bad_lines_are_reported_by_number(aws_jobs: Any) -> None:  # noqa: F811
    _, sqs, url, arn = aws_jobs
    body, expected = corpus()
    status, job = invoke(_upload(body))
    assert status == 202 and job["kind"] == "bulk" and job["parts"] > 2, job
    sizes = [len(m["Body"]) for m in sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10,
                                                         VisibilityTimeout=0)["Messages"]]  # fmt: skip
    assert sizes and max(sizes) < 256 * 1024  # SQS's message limit: parts are cut as a bulk job's are
    assert drain_through_consumer(sqs, url, arn) == job["parts"] - 1  # one part: the lines refused at once
    _, done = invoke(api_event("get_job", path=f"/jobs/{job['job_id']}"))
    _check_job(done, expected)
    assert _found("zebra1199") == ["t-1199"] and _found("zebra0") == ["t-0"]


def test_a_corpus_upload_runs_on_the_local_queue(local: Any) -> None:
    body, expected = corpus()
    result = __import__("handlers.lambda_functions.api", fromlist=["lambda_handler"]).lambda_handler(
        _upload(body),
        __import__("handlers.local_server.devserver", fromlist=["x"]).FakeLambdaContext(aws_request_id="t"),
    )
    assert result["statusCode"] == 202 and result["headers"]["Location"].startswith("/jobs/"), result
    local.job_queue.drain()
    status, done = invoke(api_event("get_job", path=result["headers"]["Location"]))
    assert status == 200
    _check_job(done, expected)


def test_the_ingest_mapping_applies_as_query_parameters(local: Any) -> None:
    beir = [{"_id": "4983", "title": "Microstructural development", "text": "diffusion tensor imaging",
             "metadata": {}} for _ in range(1)]  # fmt: skip
    beir.append({"_id": "5836", "title": "", "text": "Induction of myelodysplasia", "metadata": {}})
    body = b"\n".join(json.dumps(r).encode() for r in beir)
    query = {"type": "document", "id_field": "_id", "map": "title=title,text=text"}
    status, job = invoke(_upload(body, query))
    assert status == 202, job
    local.job_queue.drain()
    _, done = invoke(api_event("get_job", path=f"/jobs/{job['job_id']}"))
    assert (done["indexed"], done["errors"], done["unindexed_fields"]) == (2, [], []), done
    assert _found("myelodysplasia") == ["5836"]


def test_an_upload_names_its_unindexed_fields(local: Any) -> None:
    status, job = invoke(_upload(_line(1, estimate=3) + b"\n" + _line(2)))
    assert status == 202
    local.job_queue.drain()
    _, done = invoke(api_event("get_job", path=f"/jobs/{job['job_id']}"))
    assert done["unindexed_fields"] == ["estimate"]


@pytest.mark.parametrize(
    ("body", "query", "headers", "status", "field"),
    [
        (_line(1), {"type": "nope"}, NDJSON, 400, "type"),
        (_line(1), {"map": "title"}, NDJSON, 400, "map"),
        (_line(1), {"id_feild": "_id"}, NDJSON, 400, "id_feild"),
        (_line(1), None, {"content-type": "application/json"}, 415, "content-type"),
        (b"\n \n", None, NDJSON, 400, "body"),
        (b"{}\n[]", None, NDJSON, 400, "line.1.type"),  # no line accepted: nothing to do, so a 400
        (b"\n".join([b"{}"] * (MAX_JOB_ITEMS + 1)), None, NDJSON, 413, "body"),
    ],
)
def test_an_upload_that_can_do_nothing_is_refused_at_once(
    local: Any, body: bytes, query: Any, headers: Any, status: int, field: str
) -> None:
    got, answer = invoke(_upload(body, query, headers))
    assert got == status and field in answer["error"]["fields"], answer


def test_an_upload_beyond_its_own_limit_is_a_413(tmp_path: Path, fake_embedder: FakeEmbedder) -> None:
    wiring.set_container(make_container(tmp_path / "data", fake_embedder, max_ndjson_bytes=2048))
    try:
        status, answer = invoke(_upload(b"\n".join(_line(i) for i in range(40))))
        assert status == 413 and answer["error"]["fields"] == {"body": "must be at most 2048 bytes"}
    finally:
        wiring.set_container(None)


@pytest.fixture
def server(tmp_path: Path, fake_embedder: FakeEmbedder) -> Iterator[tuple[str, Any]]:
    container = make_container(tmp_path / "data", fake_embedder)
    wiring.set_container(container)
    try:
        with serving(
            {"k": {"tenant": "acme", "scopes": ["read", "write"]}}, 4096, ndjson_limit=1 << 20
        ) as url:
            yield url, container
    finally:
        wiring.set_container(None)


def _post(url: str, body: bytes, chunked: bool = False, key: str = "k") -> tuple[int, Any]:
    def pieces() -> Iterator[bytes]:
        for start in range(0, len(body), 5000):
            yield body[start : start + 5000]

    request = urllib.request.Request(  # noqa: S310 - loopback
        f"{url}/entities/ndjson", data=pieces() if chunked else body, method="POST",
        headers={"Authorization": f"Bearer {key}", **NDJSON},
    )  # fmt: skip
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:  # noqa: S310
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


@pytest.mark.parametrize("chunked", [False, True])
def test_quarry_serve_streams_an_upload_far_beyond_the_body_limit(server: Any, chunked: bool) -> None:
    url, container = server
    body = b"\n".join(_line(i) for i in range(300))  # ~20 KB against a 4 KB QUARRY_MAX_BODY_BYTES
    status, job = _post(url, body, chunked)
    assert status == 202, job
    container.job_queue.drain()
    _, done = invoke(api_event("get_job", path=f"/jobs/{job['job_id']}"))
    assert (done["status"], done["indexed"]) == ("done", 300)
    assert _post(url, body, chunked, key="wrong")[0] == 401
