"""The HTTP API end to end on the production stack: QUARRY_INDEX=opensearch on the live node, state and
cache in DynamoDB on a moto server (loopback), a deterministic fake embedder.

The handler suites written for the local backend run here unchanged: their container fixtures (`local`,
`app`, `ctx`) are redefined below to build this stack, and their tests are imported into this module —
write, search, update, delete, stale versions, tenancy, fallback, explain, paging over snapshots while
the tenant is written, context assembly and /retrieve. Each test gets its own index (alias
`quarry-api-<random>`) and its own DynamoDB tables.
"""

from __future__ import annotations

import socket
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from moto.server import ThreadedMotoServer

from infra.opensearch import build_client, mapping
from infra.wiring.root import Container, set_container
from tests.conftest import FakeEmbedder, api_event, invoke, make_container
from tests.fakes import FakeClock
from tests.handlers import test_context_api as context_api
from tests.handlers import test_governance_api as governance_api
from tests.handlers.test_catch_all import (  # noqa: F401 (collected by pytest)
    test_a_catch_all_type_finds_a_word_written_only_in_an_undeclared_field,
    test_changing_only_a_caught_field_makes_the_new_word_findable,
)
from tests.handlers.test_context_api import (  # noqa: F401 (collected by pytest)
    links_root,
    test_feedback_is_recorded_and_foreign_or_unknown_assemblies_are_404,
    test_other_namespaces_count_half_and_can_be_left_out,
    test_own_and_peer_memory_follow_the_caller,
    test_sample_event_assembles_a_labelled_block_within_budget,
)
from tests.handlers.test_governance_api import (  # noqa: F401
    test_corpus_load_reports_documents_chunks_and_errors,
    test_lexical_only_never_calls_the_embedder,
    test_retrieve_with_the_stored_overlay_returns_a_valid_governed_bundle,
)
from tests.handlers.test_search_api import (  # noqa: F401
    TASKS,
    bulk,
    ids,
    search,
    test_a_deleted_task_is_never_returned_again_even_from_cache,
    test_a_stale_version_never_overwrites_a_newer_one,
    test_a_status_only_update_does_not_re_embed,
    test_bulk_reports_bad_items_by_position_and_indexes_the_rest,
    test_bulk_then_search_finds_the_task_with_a_highlighted_snippet,
    test_cache_hits_until_a_write_changes_the_tenant,
    test_entity_prefix_and_mention_narrow_the_types,
    test_explain_reports_each_retrievers_rank_and_score,
    test_filters_apply_inside_retrieval,
    test_misspelt_keyword_query_falls_back_to_fuzzy_matching,
    test_redelivering_the_same_version_is_harmless,
    test_tenants_never_see_each_other_including_cached_results,
)
from tests.handlers.test_search_paging_api import (  # noqa: F401
    test_a_lapsed_snapshot_is_409_saying_to_start_again,
    test_another_tenants_cursor_is_refused,
    test_erasing_the_tenant_removes_its_snapshots,
    test_writes_between_pages_change_nothing_the_iteration_returns,
)
from tests.unit.governance_fakes import FAKE_DIMENSION

pytestmark = [pytest.mark.live]
_MOTO_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}


@pytest.fixture(scope="module")
def moto_endpoint() -> Iterator[str]:
    """One moto server for the module (each test has its own tables)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


@pytest.fixture
def stack(
    opensearch_url: str, moto_endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[dict[str, Any]]:
    """Settings for the production stack on loopback; the index and template are deleted afterwards."""
    for name, value in {**_MOTO_ENV, "AWS_ENDPOINT_URL_DYNAMODB": moto_endpoint}.items():
        monkeypatch.setenv(name, value)
    run = uuid.uuid4().hex[:10]
    prefix = f"quarry-api-{run}"
    yield {
        "index": "opensearch",
        "state": "dynamodb",
        "cache": "dynamodb",
        "opensearch_url": opensearch_url,
        "opensearch_index_prefix": prefix,
        "opensearch_refresh": "true",
        "state_table": f"state-{run}",
        "cache_table": f"cache-{run}",
    }
    client = build_client(opensearch_url)
    client.indices.delete(index=mapping.index_name(prefix), ignore=404)
    client.indices.delete_index_template(name=mapping.template_name(prefix), ignore=404)


@pytest.fixture
def local(tmp_path: Path, fake_embedder: FakeEmbedder, stack: dict[str, Any]) -> Iterator[Container]:
    """test_search_api's container, on OpenSearch + DynamoDB."""
    c = make_container(tmp_path / "data", fake_embedder, **stack)
    set_container(c)
    yield c
    set_container(None)


@pytest.fixture
def app(tmp_path: Path, stack: dict[str, Any]) -> Iterator[Container]:
    """test_governance_api's container (fixture corpus loaded through POST /corpus), on the same stack."""
    c = make_container(tmp_path / "data", FakeEmbedder(dimension=FAKE_DIMENSION), **stack)
    c.override(clock=FakeClock())
    set_container(c)
    status, body = invoke(api_event("load_corpus"))
    assert status == 200, body
    yield c
    set_container(None)


@pytest.fixture
def ctx(tmp_path: Path, links_root: Path, stack: dict[str, Any]) -> Iterator[Any]:  # noqa: F811
    """test_context_api's container (its items indexed), on the same stack."""
    yield context_api.install(tmp_path, links_root=links_root, **stack)
    set_container(None)


def test_the_stack_really_is_opensearch_and_dynamodb(local: Container) -> None:
    from infra.opensearch import OpenSearchIndex

    assert isinstance(local.index, OpenSearchIndex)
    assert type(local.state).__module__.startswith("infra.dynamodb")
    assert type(local.cache).__module__.startswith("infra.dynamodb")
    assert governance_api.overlay_body()  # the imported suites are the local ones, unchanged


def test_a_retried_write_whose_first_attempt_was_applied_still_invalidates_the_cache(
    local: Container,
) -> None:
    """The first `_bulk` is applied but its answer is lost (a timeout): the transport retries, OpenSearch
    answers 409 for the same version, and the search cache must still forget the old text."""
    from opensearchpy.exceptions import ConnectionTimeout

    bulk(TASKS)
    assert ids(search("groceries", strategy="keyword")) == ["t-groceries"]
    assert search("groceries", strategy="keyword")["query_info"]["cache"] == "hit"
    connection = local.index._client.transport.get_connection()  # type: ignore[attr-defined]
    original = connection.perform_request
    lost: list[str] = []

    def applied_then_timed_out(method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        answer = original(method, url, *args, **kwargs)
        if url.startswith("/_bulk") and not lost:
            lost.append(url)
            raise ConnectionTimeout("TIMEOUT", "answer lost after the write was applied", None)
        return answer

    connection.perform_request = applied_then_timed_out
    status, body = invoke(
        api_event(
            "put_entity",
            path="/entities/task/t-groceries",
            body={"title": "Buy vegetables", "description": "carrots leeks", "version": 2},
        )
    )
    connection.perform_request = original
    assert lost and status == 200, body
    assert ids(search("groceries", strategy="keyword")) == []
    assert ids(search("vegetables", strategy="keyword")) == ["t-groceries"]
