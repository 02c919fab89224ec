"""/openapi.json as a client generator reads it: short stable operation ids, one schema per entity type
(a union on `type`), every real answer documented (202 job, 413, 503 with Retry-After), examples that
the server accepts, served without a key; and the patterns it publishes mean what the server enforces."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from referencing import Registry
from referencing.jsonschema import DRAFT202012

from core.indexing.entity_validation import (
    ID_JSON_PATTERN,
    NONBLANK_PATTERN,
    caller_json_pattern,
    is_caller,
    is_valid_id,
)
from core.timestamps import DATE_PATTERN, is_date_bound
from tests.adapters.opensearch_spec import close_schemas
from tests.conftest import api_event, invoke

OPERATIONS = {
    "search", "getEntity", "listEntities", "putEntity", "patchEntity", "deleteEntity", "bulkWrite", "uploadEntities", "getJob",
    "assembleContext", "sendFeedback", "listWeights", "getBudgets", "getLog", "listCallers", "setWeight",
    "runLearning", "retrieve", "putOverlay", "getOverlay", "deleteOverlay", "evalOverlay", "tuneOverlay",
    "getSchema", "loadCorpus", "getWeightHistory", "listEvals", "listOverlayEvals", "exportTenant",
    "eraseTenant", "reopenTenant", "setBudget", "health", "whoami", "getOpenApi", "batchGetEntities", "embed",
}  # fmt: skip


@pytest.fixture
def doc(local: Any) -> dict[str, Any]:
    status, body = invoke(api_event("openapi", tenant=None))  # no token: the document holds no data
    assert status == 200
    return dict(body)


def operations(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {op["operationId"]: op for ops in doc["paths"].values() for op in ops.values()}


def body_validator(doc: dict[str, Any], schema: dict[str, Any]) -> Draft202012Validator:
    registry: Registry[Any] = Registry().with_resource("urn:doc", DRAFT202012.create_resource(doc))
    rebased = {"$ref": "urn:doc" + schema["$ref"]} if "$ref" in schema else schema
    return Draft202012Validator(rebased, registry=registry)


def test_operation_ids_are_short_stable_and_unique(doc: dict[str, Any]) -> None:
    ids = [op["operationId"] for ops in doc["paths"].values() for op in ops.values()]
    assert len(ids) == len(set(ids)) and set(ids) == OPERATIONS
    assert all(re.fullmatch(r"[a-z][A-Za-z]{2,20}", i) for i in ids)


def test_bulk_items_are_a_union_of_one_schema_per_entity_type(doc: dict[str, Any], local: Any) -> None:
    schemas = doc["components"]["schemas"]
    union = schemas["BulkItem"]
    mapping = union["discriminator"]["mapping"]
    assert union["discriminator"]["propertyName"] == "type" and set(mapping) == set(local.registry.names())
    task = schemas["TaskItem"]
    assert task["properties"]["type"]["const"] == "task" and set(task["required"]) >= {"type", "id", "title"}
    assert task["properties"]["status"]["anyOf"][0] == {"type": "string"}  # filterable: typed, not `any`
    assert "title" not in schemas["DocumentItem"].get("required", [])  # untitled documents need text instead


def test_every_real_answer_is_documented(doc: dict[str, Any]) -> None:
    ops = operations(doc)
    for name in ("bulkWrite", "loadCorpus", "uploadEntities"):
        accepted = ops[name]["responses"]["202"]
        assert accepted["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Job"}
        assert "Location" in accepted["headers"] and accepted["links"]["GetJob"]["operationId"] == "getJob"
        assert "413" in ops[name]["responses"]
    unavailable = doc["components"]["responses"]["Unavailable"]
    assert "Retry-After" in unavailable["headers"]
    assert all("503" in op["responses"] for op in ops.values())
    assert ops["getOpenApi"]["security"] == [] and ops["health"]["security"] == []
    retrieve = ops["retrieve"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert retrieve == {"$ref": "#/components/schemas/RetrievalBundle"}


def test_configured_limits_are_stated(doc: dict[str, Any], local: Any) -> None:
    search = doc["components"]["schemas"]["SearchRequest"]["properties"]
    assert search["query"]["maxLength"] == local.settings.max_query_chars
    entities = next(s for s in search["entities"]["anyOf"] if s.get("type") == "array")
    assert entities["items"]["enum"] == list(local.registry.spellings())  # names and plurals
    source = next(
        p for p in operations(doc)["setWeight"]["parameters"] if p["name"] == "source"
    )  # the configured sources
    assert source["schema"]["enum"] == [s.name for s in local.context_settings.sources]


def test_every_request_example_is_valid_and_the_server_takes_it(doc: dict[str, Any]) -> None:
    examples = 0
    for op in operations(doc).values():
        body = op.get("requestBody", {}).get("content", {}).get("application/json", {})
        for example in body.get("examples", {}).values():
            body_validator(doc, body["schema"]).validate(example["value"])
            examples += 1
    assert examples >= 8
    search = operations(doc)["search"]["requestBody"]["content"]["application/json"]["examples"]
    status, _ = invoke(api_event("search", body=search["filtered"]["value"]))
    assert status == 200


def test_the_ndjson_upload_has_an_example_the_server_takes_in_each_media_type(doc: dict[str, Any]) -> None:
    import json

    content = operations(doc)["uploadEntities"]["requestBody"]["content"]
    assert content and all(body.get("examples") for body in content.values())
    for media_type, body in content.items():
        for example in body["examples"].values():
            line = body_validator(doc, body["schema"]["items"])  # each line, an item
            assert all(line.is_valid(item) for item in example["value"]) and example["value"]
            lines = "".join(json.dumps(item) + "\n" for item in example["value"])
            event = api_event("bulk_entities", path="/entities/ndjson", raw_body=lines)
            event["headers"] = {**event.get("headers", {}), "content-type": media_type}
            status, job = invoke(event)
            assert status == 202 and job["errors"] == [], (media_type, job)


@settings(max_examples=300, deadline=None)
@given(
    st.text(max_size=8) | st.sampled_from([".", "..", "a..", "x" * 256, "x" * 257, "a b", "a/b", "\u3000"])
)
def test_the_published_id_pattern_is_the_servers_id_rule(candidate: str) -> None:
    if any(0xD800 <= ord(ch) <= 0xDFFF for ch in candidate):
        return  # lone surrogates never reach an id: the input gate refuses them first (core/payload.py)
    assert (re.search(ID_JSON_PATTERN, candidate) is not None) == is_valid_id(candidate)


@settings(max_examples=300, deadline=None)
@given(
    st.text(max_size=6)
    | st.sampled_from(
        ["*", ".", "..", "a.", "x" * 128, "x" * 129, "a b", "a/b", "a\n", "a\u200bb", "auth0|5f"]
    )
)
def test_the_published_caller_patterns_are_the_servers_caller_rule(candidate: str) -> None:
    if any(0xD800 <= ord(ch) <= 0xDFFF for ch in candidate):
        return  # lone surrogates never reach a caller: the input gate refuses them first
    assert (re.search(caller_json_pattern(), candidate) is not None) == is_caller(candidate)
    wildcard = re.search(caller_json_pattern(wildcard=True), candidate) is not None
    assert wildcard == (is_caller(candidate) or candidate == "*")


CALLERS_REFUSED = ["team/bot", "..", ".", "*", "a\u200bb", "a b", " bot", "bot ", "x" * 129]


def test_every_published_caller_is_the_one_caller_schema(doc: dict[str, Any]) -> None:
    assemble = doc["components"]["schemas"]["AssembleRequest"]["properties"]["caller"]
    query = operations(doc)["getLog"]["parameters"]
    in_query = next(p["schema"] for p in query if p["name"] == "caller")
    assert assemble["pattern"] == in_query["pattern"] == caller_json_pattern()
    assert (assemble["minLength"], assemble["maxLength"]) == (in_query["minLength"], in_query["maxLength"])
    body = body_validator(doc, {"$ref": "#/components/schemas/AssembleRequest"})
    published = [c for c in CALLERS_REFUSED if body.is_valid({"query": "q", "caller": c})]
    assert published == []


@pytest.mark.parametrize("caller", CALLERS_REFUSED)
def test_a_caller_the_schema_refuses_the_server_refuses(local: Any, caller: str) -> None:
    body = {"query": "q", "caller": caller}
    status, answer = invoke(api_event("context_assemble", body=body))
    assert status == 400 and "caller" in answer["error"]["fields"], answer


@settings(max_examples=300, deadline=None)
@given(
    st.from_regex(DATE_PATTERN)
    | st.text(alphabet="0123456789-T:Z+.\n ", max_size=20)
    | st.sampled_from(["2026-01-01\n", "2026-01-01T25:99", "2026-02-30", "2024-02-29T23:59:59.5+05:30"])
)
def test_the_published_date_pattern_admits_every_date_bound_the_server_takes(candidate: str) -> None:
    """The server's rule is the published pattern, matched whole (ECMA-262's `$`), plus a real moment."""
    if is_date_bound(candidate):
        assert re.fullmatch(DATE_PATTERN, candidate) is not None
        assert not candidate.endswith("\n")  # ECMA-262's `$` is the end: no newline after it


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=4))
def test_nonblank_means_what_strip_means(candidate: str) -> None:
    assert (re.search(NONBLANK_PATTERN, candidate) is not None) == bool(candidate.strip())


def test_a_jobs_answer_is_its_documented_schema_key_for_key(
    doc: dict[str, Any], local: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A generated client keeps only what the schema names: a key the answer carries and the schema lacks
    (why a part failed: `failures`) would be dropped on the way to the caller."""
    from core.errors import UnavailableError
    from infra.jobs import sqlite_queue

    def down(message: Any, retried: bool) -> None:
        raise UnavailableError("bedrock", "ThrottlingException")

    monkeypatch.setattr(sqlite_queue, "RETRY_SECONDS", 0.0)
    monkeypatch.setattr(local.job_queue, "_process", down)  # every attempt of every part fails
    items = [{"type": "memory", "id": f"m-{i}", "content": f"note {i}"} for i in range(600)]
    status, job = invoke(api_event("bulk_entities", body={"items": items}))
    assert status == 202, job
    local.job_queue.drain()
    answer = invoke(api_event("get_job", path=f"/jobs/{job['job_id']}"))[1]
    assert answer["status"] == "failed" and answer["failures"], answer
    schema = doc["components"]["schemas"]["Job"]
    assert set(answer) <= set(schema["properties"]), set(answer) - set(schema["properties"])
    body_validator(doc, {"$ref": "#/components/schemas/Job"}).validate(answer)


# Every sample request of events/, in an order where each finds what it needs (the entity it reads, the
# overlay it evaluates, an assembly to give feedback on); erasing the tenant comes last.
REPLAYED = [
    "put_entity", "bulk_entities", "load_corpus", "get_entity", "patch_entity", "list_entities",
    "batch_get_entities", "search", "context_assemble", "context_weights", "context_budgets",
    "context_put_weight", "context_put_budget", "weight_history", "context_log", "context_log_callers",
    "context_eval", "put_overlay", "get_overlay", "retrieve", "eval_overlay", "tune_overlay", "list_evals",
    "get_schema", "health", "delete_overlay", "delete_entity",
]  # fmt: skip


# answers documented as free-form objects: a JSON Schema document, and /health's {status, version}
FREE_FORM = {"get_schema", "health"}


def closed(doc: dict[str, Any]) -> dict[str, Any]:
    """`doc` with every object schema closed to the keys it names (as the OpenSearch specification is
    checked, tests/adapters/opensearch_spec.py): an answer carrying another key no longer validates."""
    documents = {"urn:doc": copy.deepcopy(doc)}
    close_schemas(documents)
    return documents["urn:doc"]


def documented_answer(doc: dict[str, Any], event: dict[str, Any], status: int) -> dict[str, Any]:
    """The schema `doc` gives the answer `status` of the route `event` asks for."""
    http = event["requestContext"]["http"]
    for template, ops in doc["paths"].items():
        if re.fullmatch(re.sub(r"\{[^}]+\}", "[^/]+", template), event["rawPath"]):
            answer = ops[http["method"].lower()]["responses"][str(status)]
            return dict(answer["content"]["application/json"]["schema"])
    raise AssertionError(f"{http['method']} {event['rawPath']} is not documented")


def test_every_sample_requests_answer_names_only_documented_keys(doc: dict[str, Any], local: Any) -> None:
    """A generated client keeps only what a schema names: every key of every answer must be in its schema
    (recursively), or a client built from /openapi.json loses it silently."""
    for task_id in ("t-login", "task-1"):  # what the samples read, patch and delete
        body = {"title": f"Fix the login bug {task_id}", "status": "open", "version": 1}
        assert invoke(api_event("put_entity", path=f"/entities/task/{task_id}", body=body))[0] == 200
    strict = closed(doc)
    problems = {}
    for name in REPLAYED:
        event = api_event(name)
        status, body = invoke(event)
        assert 200 <= status < 300, (name, status, body)
        validator = body_validator(strict, documented_answer(doc, event, status))
        if found := [
            f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(body)
        ]:
            problems[name] = found
        if isinstance(body, dict) and name not in FREE_FORM:  # the check itself sees an unnamed key
            assert not validator.is_valid({**body, "unnamed_key": 1}), name
    assert problems == {}


def test_numbers_past_int64_in_open_fields_are_refused_as_the_server_does(doc: dict[str, Any]) -> None:
    fields = body_validator(doc, {"$ref": "#/components/schemas/TaskFields"})
    corpus = body_validator(doc, {"$ref": "#/components/schemas/CorpusDocument"})
    assert not fields.is_valid({"title": "x", "notes": {"n": [1.6e226]}})  # a 400 from the server too
    assert not corpus.is_valid({"id": "d", "title": "T", "text": "w", "extra": -1.6e226})
    assert fields.is_valid({"title": "x", "n": 9.2e18, "m": 0.5})
    # A write's own vector: finite numbers of any size, as the server takes them.
    assert fields.is_valid({"title": "x", "embedding": [1.0e308, -1.0e308, 5e-324]})
    status, answer = invoke(
        api_event("put_entity", path="/entities/task/v", body={"title": "x", "embedding": [1.0e308] * 8})
    )
    assert status == 400 and set(answer["error"]["fields"]) == {"embedding"}  # the dimension, not the size
