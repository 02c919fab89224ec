"""The response parser reads real OpenSearch responses: the search, k-NN, msearch and bulk responses
recorded in the API specification's test stories (`../shared/opensearch-api-spec/tests/default`).

The recorded searches ran against the stories' own documents (movies, books), so each recorded hit keeps
its envelope as the cluster returned it (`_index`, `_score` or no `_score`, order, `hits.total`,
msearch nesting) while its `_source` is replaced by a Quarry entity and its nested best-chunk inner hit
is added in the shape OpenSearch documents for nested k-NN (`_nested.offset`, `fields`)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from core.models import EntityKey
from infra.opensearch import documents, mapping, responses
from infra.opensearch.query_bodies import INNER_HITS_NAME
from tests.adapters import opensearch_spec as spec
from tests.adapters.search_index_contract import record

pytestmark = pytest.mark.skipif(not spec.spec_available(), reason=spec.SPEC_MISSING_REASON)

TENANT = "tenant-1"
KNN_STORIES = ("_core/search/knn",)
LEXICAL_STORIES = ("_core/search/match.yaml", "_core/search/multi_match.yaml", "_core/search/_source.yaml")
MSEARCH_STORIES = ("_core/msearch.yaml",)
BULK_STORIES = ("_core/bulk.yaml", "indices/bulk.yaml")


def recorded(paths: tuple[str, ...], key: str) -> list[tuple[str, dict[str, Any]]]:
    """(story name, response payload) of every chapter whose recorded response has `key`."""
    found: list[tuple[str, dict[str, Any]]] = []
    if not spec.spec_available():  # collected without shared/: the module's skip mark says why
        return found
    for path, story in spec.stories(*paths):
        for chapter in story.get("chapters") or []:
            payload = ((chapter.get("response") or {}).get("payload")) or {}
            if key in payload:
                found.append((f"{path.name}: {chapter.get('synopsis')}", payload))
    return found


def quarry_source(entity_id: str, tenant: str = TENANT) -> dict[str, Any]:
    rec = record(tenant, "document", entity_id, f"text of {entity_id}", owner="o", metadata={"topic": "x"})
    source = documents.entity_source(rec)
    return {f: source[f] for f in mapping.CANDIDATE_FIELDS}


def graft(response: dict[str, Any], tenant: str = TENANT) -> dict[str, Any]:
    """The recorded response with Quarry documents in its hits (envelope untouched)."""
    grafted = copy.deepcopy(response)
    for position, hit in enumerate(grafted["hits"]["hits"]):
        entity_id = str(hit.get("_id") or f"{hit.get('_index')}-{position}")
        hit["_id"] = documents.doc_id(tenant, EntityKey("document", entity_id))
        hit["_source"] = quarry_source(entity_id, tenant)
        chunk = {
            "_index": hit.get("_index"),
            "_id": hit["_id"],
            "_nested": {"field": mapping.CHUNKS, "offset": position},
            "_score": hit.get("_score"),
            "fields": {
                mapping.CHUNK_NO: [position],
                mapping.CHUNK_TEXT: [f"chunk {position} of {entity_id}"],
            },
        }
        inner = {"total": {"value": 1, "relation": "eq"}, "max_score": hit.get("_score"), "hits": [chunk]}
        hit["inner_hits"] = {INNER_HITS_NAME: {"hits": inner}}
    return grafted


def knn_payload_with_hits() -> dict[str, Any]:
    return next(p for _, p in recorded(KNN_STORIES, "hits") if p["hits"]["hits"])


def test_the_stories_hold_responses_to_parse() -> None:
    assert len(recorded(KNN_STORIES, "hits")) >= 3
    assert len(recorded(LEXICAL_STORIES, "hits")) >= 2
    assert len(recorded(MSEARCH_STORIES, "responses")) >= 1


@pytest.mark.parametrize(("name", "payload"), recorded(KNN_STORIES, "hits"))
def test_recorded_knn_responses_parse_into_cosine_candidates(name: str, payload: dict[str, Any]) -> None:
    response = graft(payload)
    hits = response["hits"]["hits"]
    for hit in hits:
        problems = spec.errors(spec.schema_uri("_core.search", "Hit"), hit)
        assert problems == [], problems
    found = responses.candidates(response, 10, TENANT, responses.cosine)
    assert [c.key for c in found] == [EntityKey("document", h["_source"]["entity_id"]) for h in hits]
    for candidate, hit in zip(found, hits, strict=True):
        assert candidate.score == pytest.approx(2 * float(hit["_score"]) - 1)  # (1 + cos) / 2 → cos
        assert -1.0 <= candidate.score <= 1.0
        assert candidate.text.startswith("chunk ") and candidate.metadata == {"topic": "x"}


@pytest.mark.parametrize(("name", "payload"), recorded(LEXICAL_STORIES, "hits"))
def test_recorded_search_responses_parse_into_bm25_candidates(name: str, payload: dict[str, Any]) -> None:
    response = graft(payload)
    found = responses.candidates(response, 10, TENANT, responses.bm25)
    assert len(found) == len(response["hits"]["hits"]) >= 1
    for candidate, hit in zip(found, response["hits"]["hits"], strict=True):
        assert candidate.score == float(hit.get("_score") or 0.0)  # these stories recorded no _score
        assert candidate.owner == "o" and candidate.source == "memory"


@pytest.mark.parametrize(("name", "payload"), recorded(MSEARCH_STORIES, "responses"))
def test_recorded_msearch_responses_parse_per_search(name: str, payload: dict[str, Any]) -> None:
    response = copy.deepcopy(payload)
    response["responses"] = [graft(item) for item in response["responses"]]
    items = responses.msearch_items(response, len(payload["responses"]))
    lists = [responses.candidates(item, 10, TENANT, responses.bm25) for item in items]
    recorded_ids = [[h["_id"] for h in item["hits"]["hits"]] for item in payload["responses"]]
    assert [[c.key.entity_id for c in found] for found in lists] == recorded_ids


def test_candidates_collapse_duplicates_cap_at_k_and_drop_other_tenants() -> None:
    payload = knn_payload_with_hits()
    base = graft(payload)
    hit = base["hits"]["hits"][0]
    stranger = graft(payload, tenant="someone-else")["hits"]["hits"][0]
    base["hits"]["hits"] = [stranger, hit, copy.deepcopy(hit), *graft(payload)["hits"]["hits"]]
    found = responses.candidates(base, 10, TENANT, responses.cosine)
    assert len(found) == 1 and found[0].key.entity_id == hit["_source"]["entity_id"]
    assert responses.candidates(base, 0, TENANT, responses.cosine) == []


def lean(response: dict[str, Any]) -> dict[str, Any]:
    """The grafted response as a lean search answers it: doc values (`fields`) instead of `_source`."""
    leaned = copy.deepcopy(response)
    for hit in leaned["hits"]["hits"]:
        source = hit.pop("_source")
        values = {f: source[f] for f in mapping.CANDIDATE_FIELDS if source.get(f) is not None}
        values[mapping.TITLE_VALUE] = values.pop("title")
        values[mapping.METADATA_VALUE] = json.dumps(values.pop(mapping.METADATA_RAW), separators=(",", ":"))
        values[mapping.DISPLAY_CLIPPED] = False
        hit["fields"] = {name: [value] for name, value in values.items()}
    return leaned


def test_lean_hits_parse_into_the_candidates_their_sources_give() -> None:
    payload = knn_payload_with_hits()
    from_source = graft(payload)
    stranger = graft(payload, tenant="someone-else")["hits"]["hits"][0]
    from_source["hits"]["hits"].insert(0, stranger)
    gone = copy.deepcopy(from_source["hits"]["hits"][1])
    gone["_source"].update(deleted=True, entity_id="gone")
    from_source["hits"]["hits"].insert(1, gone)
    want = responses.candidates(from_source, 10, TENANT, responses.cosine)
    got = responses.candidates(lean(from_source), 10, TENANT, responses.cosine)
    assert got == want and want and {c.key.entity_id for c in got}.isdisjoint({"gone"})
    assert all(c.metadata == {"topic": "x"} for c in got)
    if len(got) > 1:  # the same metadata text, decoded once: still one dict per candidate
        assert got[0].metadata is not got[1].metadata


def test_a_best_chunk_without_fields_falls_back_to_its_nested_offset() -> None:
    response = graft(knn_payload_with_hits())
    inner = response["hits"]["hits"][0]["inner_hits"][INNER_HITS_NAME]["hits"]["hits"][0]
    del inner["fields"]
    inner["_nested"]["offset"] = 4
    (found,) = responses.candidates(response, 10, TENANT, responses.cosine)
    assert found.chunk_no == 4 and found.text == ""


@pytest.mark.parametrize(("name", "payload"), recorded(BULK_STORIES, "items"))
def test_recorded_bulk_responses_parse_into_item_results(name: str, payload: dict[str, Any]) -> None:
    items = responses.bulk_items(payload, len(payload["items"]))
    for item, raw in zip(items, payload["items"], strict=True):
        (body,) = raw.values()
        assert item.status == body["status"] and item.result == body.get("result")
    not_found = [i for i in items if i.result == "not_found"]
    assert not_found and all(not i.ok and not i.conflict for i in not_found)


def test_version_conflict_reasons_name_the_stored_version() -> None:
    reason = "[t:task:1]: version conflict, current version [12] is higher or equal to the one provided [10]"
    assert responses.stored_version(reason) == 12
    assert responses.stored_version("some other failure") is None
