"""Every body the OpenSearch adapter can send validates against the official API specification
(`../shared/opensearch-api-spec`), in strict mode (unknown keys rejected); the validator is shown to be
real (malformed bodies fail) and sound (the specification's own recorded requests pass)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from core.models import EntityKey, Filters, LexicalQuery, MatchMode
from core.search.filters import COMMON_FILTERS, parse_filters
from infra.opensearch import bodies, documents, mapping, query_bodies
from infra.opensearch.layout import Layout
from tests.adapters import opensearch_spec as spec
from tests.adapters.opensearch_fakes import (
    FakeOpenSearch,
    conflict_item,
    error_item,
    search_response,
    throttled_item,
)
from tests.adapters.search_index_contract import record, unit

pytestmark = pytest.mark.skipif(not spec.spec_available(), reason=spec.SPEC_MISSING_REASON)

ALL_FILTERS = Filters(
    entity_types=("task", "memory"),
    metadata={"status": ("open", "blocked"), "pinned": (True,), "priority": (2, 2.5)},
    sources=("memory", "vault"),
    owner="agent-1",
    exclude_owner="agent-2",
    namespaces=("ns-a", "ns-b"),
)
ONE_FILTER_EACH = {
    "none": Filters(),
    "entity_types": Filters(entity_types=("task",)),
    "metadata": Filters(metadata={"status": ("open",)}),
    "sources": Filters(sources=("memory",)),
    "owner": Filters(owner="agent-1"),
    "exclude_owner": Filters(exclude_owner="agent-1"),
    "namespaces": Filters(namespaces=("ns",)),
    "conditions": parse_filters(
        {
            "priority": {"gt": 1, "lte": 9.5},
            "due_date": {"gte": "2026-01-01", "lte": "2026-01-31"},
            "created_at": {"lt": "2026-02-01T00:00:00Z"},
            "status": {"not": ["done"], "exists": True},
            "owner": {"not": "agent-3", "exists": True},
        },
        ("task",),
        {"priority", "due_date", "status", *COMMON_FILTERS},
    ),
    "all": ALL_FILTERS,
}
QUERIES = {
    "terms": LexicalQuery(("rate", "limiter", "東")),
    "phrases": LexicalQuery((), ("rate limit",)),
    "both": LexicalQuery(("fix",), ("rate limit", "login page")),
}


def body_schema() -> str:
    return spec.schema_uri("_core.msearch", "MultisearchBody")


def assert_valid(uri: str, instance: Any) -> None:
    problems = spec.errors(uri, instance)
    assert problems == [], "\n".join(problems)


def knn_of(body: dict[str, Any]) -> dict[str, Any]:
    return body["query"]["nested"]["query"]["knn"][mapping.EMBEDDING]


# -- index definition ------------------------------------------------------------------------------------


@pytest.mark.parametrize("dimension", [8, 384, 1024])
def test_template_and_index_creation_validate(dimension: int) -> None:
    assert_valid(
        spec.request_body_uri("indices", "indices.put_index_template"),
        mapping.template_body("quarry", dimension),
    )
    create = mapping.create_index_body("quarry", dimension)
    assert_valid(spec.request_body_uri("indices", "indices.create"), create)
    vector = create["mappings"]["properties"]["chunks"]["properties"]["embedding"]
    assert_valid(spec.schema_uri("_common.mapping", "KnnVectorProperty"), vector)
    assert vector["dimension"] == dimension and vector["method"]["space_type"] == "cosinesimil"
    assert create["aliases"] == {"quarry": {"is_write_index": True}}


@pytest.mark.parametrize(
    "layout",
    [
        Layout(),
        Layout(shards=6, replicas="2", partition_size=3),
        Layout(shards=1, replicas="0-all", routed=False),
    ],
)
def test_every_layout_makes_a_valid_index(layout: Layout) -> None:
    create = mapping.create_index_body("quarry", 8, layout=layout)
    assert_valid(spec.request_body_uri("indices", "indices.create"), create)
    assert create["settings"]["index"]["number_of_shards"] == layout.shards
    assert create["mappings"].get("_routing", {}).get("required", False) is layout.routed


# -- writes ------------------------------------------------------------------------------------------------


def write_lines() -> list[dict[str, Any]]:
    """Every kind of write the adapter makes: an upsert, a metadata rewrite and a tombstone."""
    rec = record("t", "memory", "a/b c", "text", version=7, owner="o", metadata={"tags": ["x", 2]})
    source = documents.entity_source(rec)
    doc_id = documents.doc_id("t", rec.key)
    rewrite = documents.with_metadata(source, 8, {"content": "text"}, {"status": "done"}, "2026-11-02")
    tomb = documents.tombstone(source, 9)
    return bodies.bulk_lines(
        "quarry", [(doc_id, None, source), (doc_id, (0, 1), rewrite), (doc_id, (1, 1), tomb)]
    )


def test_bulk_writes_validate_and_are_all_conditional() -> None:
    lines = write_lines()
    assert_valid(spec.request_body_uri("_core", "bulk", "application/x-ndjson"), lines)
    actions = lines[0::2]
    for action in actions:
        assert_valid(spec.schema_uri("_core.bulk", "OperationContainer"), action)
        (meta,) = action.values()
        assert meta["require_alias"] is True and "version" not in meta
    # A new document only if none exists; a rewrite only if the document is unchanged since it was read.
    assert list(actions[0]) == ["create"]
    assert [(a["index"]["if_seq_no"], a["index"]["if_primary_term"]) for a in actions[1:]] == [(0, 1), (1, 1)]


def test_a_metadata_touch_is_a_conditional_partial_update_of_metadata_alone() -> None:
    doc_id = documents.doc_id("t", EntityKey("memory", "m"))
    fields = {"metadata_raw": {"access_count": 2}, "metadata_terms": ["access_count=2"]}
    lines = list(bodies.touch_pair("quarry-v2", doc_id, (4, 1), fields, "t"))
    assert_valid(spec.request_body_uri("_core", "bulk", "application/x-ndjson"), lines)
    assert_valid(spec.schema_uri("_core.bulk", "OperationContainer"), lines[0])
    meta = lines[0]["update"]
    # the generation it was read from, only if unchanged since: `_seq_no`s are per index
    assert (meta["_index"], meta["if_seq_no"], meta["if_primary_term"]) == ("quarry-v2", 4, 1)
    assert lines[1] == {"doc": fields}  # no text, no vectors
    read = bodies.touch_read_body([doc_id], "t")
    assert_valid(spec.request_body_uri("_core", "mget"), read)
    assert "chunks.embedding" not in json.dumps(read) and "chunks" + '"' not in json.dumps(read)


def test_mget_body_validates() -> None:
    ids = [documents.doc_id("t", EntityKey("task", str(i))) for i in range(3)]
    for with_chunks, version_only, vectors_only in (
        (False, False, False),
        (True, False, False),
        (False, True, False),
        (False, False, True),
    ):
        body = bodies.mget_body(ids, with_chunks, version_only, vectors_only=vectors_only)
        assert_valid(spec.request_body_uri("_core", "mget"), body)


# -- searches ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", list(MatchMode))
@pytest.mark.parametrize("shape", sorted(QUERIES))
def test_lexical_bodies_validate_for_every_mode_and_shape(mode: MatchMode, shape: str) -> None:
    query = LexicalQuery(QUERIES[shape].terms, QUERIES[shape].phrases, mode)
    body = query_bodies.lexical_body("tenant-1", query, ALL_FILTERS, 20)
    assert_valid(body_schema(), body)
    assert_valid(spec.request_body_uri("_core", "search"), body)


@pytest.mark.parametrize("name", sorted(ONE_FILTER_EACH))
def test_every_filter_validates_in_both_queries_and_sits_inside_them(name: str) -> None:
    filters = ONE_FILTER_EACH[name]
    lexical = query_bodies.lexical_body("tenant-1", LexicalQuery(("word",)), filters, 10)
    vector = query_bodies.vector_body("tenant-1", unit(1, 2), filters, 10)
    ranking = query_bodies.vector_ranking_body("tenant-1", unit(1, 2), filters, 10)
    for body in (lexical, vector, ranking):
        assert_valid(body_schema(), body)
        assert "post_filter" not in body  # never filtered after retrieval
    assert_valid(spec.schema_uri("_common.query_dsl", "KnnQuery"), knn_of(vector))
    assert knn_of(ranking) == knn_of(vector)  # the same k-NN search, without the inner hit
    assert "inner_hits" not in ranking["query"]["nested"]
    tenant = {"term": {"tenant_id": "tenant-1"}}
    assert tenant in lexical["query"]["bool"]["filter"]
    assert tenant in knn_of(vector)["filter"]["bool"]["filter"]  # k-NN efficient filtering


def test_msearch_pairs_validate_as_one_round_trip() -> None:
    lexical = query_bodies.lexical_body("t", LexicalQuery(("a",), ("b c",), MatchMode.FUZZY), ALL_FILTERS, 5)
    vector = query_bodies.vector_body("t", np.linspace(-1, 1, 384).astype(np.float32), ALL_FILTERS, 5)
    lines = query_bodies.msearch_lines("quarry", [lexical, vector])
    assert_valid(spec.request_body_uri("_core", "msearch", "application/x-ndjson"), lines)
    for header, body in zip(lines[0::2], lines[1::2], strict=True):
        assert_valid(spec.schema_uri("_core.msearch", "MultisearchHeader"), header)
        assert_valid(body_schema(), body)


# -- the validator is real ---------------------------------------------------------------------------------


def _mutate(body: dict[str, Any], change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    copied = copy.deepcopy(body)
    change(copied)
    return copied


VECTOR = query_bodies.vector_body("t", unit(1, 0), ALL_FILTERS, 10)
LEXICAL = query_bodies.lexical_body("t", LexicalQuery(("a",)), ALL_FILTERS, 10)
TEMPLATE = mapping.template_body("quarry", 8)
ACTION = bodies.write_action("quarry", "id", (3, 1))
MALFORMED = {
    "knn vector as a string": (body_schema(), lambda b: knn_of(b).update(vector="0.1,0.2")),
    "knn k as a string": (body_schema(), lambda b: knn_of(b).update(k="ten")),
    "misspelt knn filter": (body_schema(), lambda b: knn_of(b).update(filtr=knn_of(b).pop("filter"))),
    "unknown query type": (body_schema(), lambda b: b["query"].update(termz={"x": 1})),
    "nested score_mode": (body_schema(), lambda b: b["query"]["nested"].update(score_mode="maximum")),
}
MALFORMED_LEXICAL = {
    "multi_match type": lambda b: b["query"]["bool"]["must"][0]["nested"]["query"]["bool"]["should"][0][
        "multi_match"
    ].update(type="most_field"),
    "term with a bad key": lambda b: b["query"]["bool"]["filter"].__setitem__(
        0, {"term": {"t": {"valu": 1}}}
    ),
    "size as text": lambda b: b.update(size="ten"),
}
MALFORMED_TEMPLATE = {
    "vector without dimension": lambda b: b["template"]["mappings"]["properties"]["chunks"]["properties"][
        "embedding"
    ].pop("dimension"),
    "unknown field type": lambda b: b["template"]["mappings"]["properties"].update(
        tenant_id={"type": "keywrd"}
    ),
}
MALFORMED_ACTION = {
    "if_seq_no as text": lambda b: b["index"].update(if_seq_no="three"),
    "two operations in one line": lambda b: b.update(delete={"_id": "x"}),
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_knn_bodies_fail(name: str) -> None:
    uri, change = MALFORMED[name]
    assert spec.errors(uri, _mutate(VECTOR, change)), f"{name} passed validation"


@pytest.mark.parametrize(
    ("name", "uri", "base", "change"),
    [(n, body_schema(), LEXICAL, c) for n, c in MALFORMED_LEXICAL.items()]
    + [
        (n, spec.request_body_uri("indices", "indices.put_index_template"), TEMPLATE, c)
        for n, c in MALFORMED_TEMPLATE.items()
    ]
    + [
        (n, spec.schema_uri("_core.bulk", "OperationContainer"), ACTION, c)
        for n, c in MALFORMED_ACTION.items()
    ],
)
def test_other_malformed_bodies_fail(name: str, uri: str, base: dict[str, Any], change: Any) -> None:
    assert spec.errors(uri, _mutate(base, change)), f"{name} passed validation"


def test_strict_mode_is_what_catches_a_misspelt_key() -> None:
    misspelt = _mutate(VECTOR, MALFORMED["misspelt knn filter"][1])
    assert spec.errors(body_schema(), misspelt, strict=True)
    assert not spec.errors(body_schema(), misspelt, strict=False)  # the published schemas are open


# -- the validator is sound: the specification's own recorded requests pass ---------------------------------

_OPERATIONS = {
    "/_bulk": ("_core", "bulk", "application/x-ndjson"),
    "/{index}/_bulk": ("_core", "bulk", "application/x-ndjson"),
    "/{index}/_search": ("_core", "search", "application/json"),
    "/{index}": ("indices", "indices.create", "application/json"),
    "/_index_template/{name}": ("indices", "indices.put_index_template", "application/json"),
    "/_mget": ("_core", "mget", "application/json"),
}
_STORIES = ("_core", "indices", "search")  # every story folder that calls these APIs


def _recorded_requests() -> list[tuple[str, str, Any]]:
    found = []
    for path, story in spec.stories(*_STORIES):
        for step in (story.get("prologues") or []) + (story.get("chapters") or []):
            payload = (step.get("request") or {}).get("payload")
            methods = step.get("method")
            method = methods if isinstance(methods, str) else methods[0]
            route = step.get("path")
            if payload is None or (route == "/{index}" and method != "PUT"):
                continue
            if isinstance(payload, dict) and {"aggs", "aggregations"} & set(payload):
                continue  # Quarry never aggregates; these take seconds each to validate
            if route in _OPERATIONS or route.endswith("_msearch"):
                found.append((path.name, route, payload))
    return found


def test_strict_validator_accepts_every_recorded_request_of_the_apis_we_use() -> None:
    recorded = _recorded_requests()
    assert len(recorded) >= 110  # 119 at the specification's pinned commit
    header, body = spec.schema_uri("_core.msearch", "MultisearchHeader"), body_schema()
    for name, route, payload in recorded:
        if route.endswith("_msearch"):
            problems = [
                p for i, line in enumerate(payload) for p in spec.errors(body if i % 2 else header, line)
            ]
        else:
            problems = spec.errors(spec.request_body_uri(*_OPERATIONS[route]), payload)
        assert problems == [], f"{name} {route}: {problems[:3]}"


# -- the fake server answers in the specification's shapes ---------------------------------------------------


def test_fake_server_responses_validate_against_the_response_schemas() -> None:
    server = FakeOpenSearch()
    server.aliases["quarry"] = "quarry-v1"
    lines = write_lines()
    bulk = server.bulk(body=lines)
    assert bulk["errors"] is False
    assert_valid(spec.response_uri("_core", "bulk@200"), bulk)
    extra = {
        "took": 1,
        "errors": True,
        "items": [conflict_item("quarry-v1", "x", "[x]: version conflict"), throttled_item("quarry-v1", "y")],
    }
    assert_valid(spec.response_uri("_core", "bulk@200"), extra)
    mget = server.mget(body=bodies.mget_body([lines[0]["create"]["_id"], "missing"]), index="quarry")
    assert_valid(spec.response_uri("_core", "mget@200"), mget)
    hit = {"_index": "quarry-v1", "_id": "x", "_score": 1.5, "_source": {"entity_type": "task"}}
    msearch = {
        "took": 4,
        "responses": [search_response([hit]), error_item(429, "rejected_execution_exception", "busy")],
    }
    assert_valid(spec.response_uri("_core", "msearch@200"), msearch)
