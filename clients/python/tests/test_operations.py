"""The client covers the API: every operationId of the OpenAPI document has a method on `Quarry` and on
`AsyncQuarry` (quarry_client._operations.OPERATIONS), `SearchOptions` names every SearchRequest field, the
package ships `py.typed`; and the operations added last (batch get, NDJSON upload, budgets) work."""

from __future__ import annotations

import inspect
import json
import typing
from pathlib import Path

import pytest
from quarry_client import AsyncQuarry, Quarry, models
from quarry_client._operations import OPERATIONS, AssembleOptions, SearchOptions

HERE = Path(__file__).resolve().parents[1]
DOCUMENT = json.loads((HERE / "openapi.json").read_text(encoding="utf-8"))


def operation_ids() -> set[str]:
    return {op["operationId"] for path in DOCUMENT["paths"].values() for op in path.values()}


def test_every_operation_of_the_document_has_a_method_sync_and_async() -> None:
    missing = operation_ids() - OPERATIONS.keys()
    assert not missing, f"operations without a client method (add them and to OPERATIONS): {sorted(missing)}"
    assert not OPERATIONS.keys() - operation_ids(), "OPERATIONS names operations the document does not have"
    for name in OPERATIONS.values():
        assert callable(getattr(Quarry, name, None)), f"Quarry.{name}"
        method = getattr(AsyncQuarry, name, None)
        assert inspect.iscoroutinefunction(method) or inspect.isasyncgenfunction(method), (
            f"AsyncQuarry.{name}"
        )


def test_search_options_name_every_field_of_the_search_request() -> None:
    schema = DOCUMENT["components"]["schemas"]["SearchRequest"]
    assert set(typing.get_type_hints(SearchOptions)) == set(schema["properties"]) - {"query"}
    strategies = typing.get_args(typing.get_type_hints(SearchOptions)["strategy"])
    assert set(strategies) == set(schema["properties"]["strategy"]["enum"])
    trust = typing.get_args(typing.get_type_hints(SearchOptions)["min_trust"])
    assert set(trust) == set(schema["properties"]["min_trust"]["anyOf"][0]["enum"])


def test_assemble_options_name_every_field_of_the_assemble_request() -> None:
    schema = DOCUMENT["components"]["schemas"]["AssembleRequest"]
    assert set(typing.get_type_hints(AssembleOptions)) == set(schema["properties"]) - {"query", "caller"}
    encodings = typing.get_args(typing.get_type_hints(AssembleOptions)["token_encoding"])
    assert set(encodings) == set(schema["properties"]["token_encoding"]["anyOf"][0]["enum"])


def test_the_package_is_marked_typed() -> None:
    package = HERE / "src" / "quarry_client"
    assert (package / "py.typed").is_file()
    # hatchling ships every file under the package folder the wheel target names
    assert 'packages = ["src/quarry_client"]' in (HERE / "pyproject.toml").read_text(encoding="utf-8")


def test_batch_get_upload_and_budgets(client: Quarry) -> None:
    lines = [{"_id": f"nd-{n}", "headline": f"Uploaded line {n}"} for n in range(3)]
    job = client.upload_entities(lines, entity_type="idea", id_field="_id", field_map="title=headline").wait(
        60
    )
    assert job.done and job.indexed == 3 and not job.errors
    got = client.batch_get_entities(
        [("idea", "nd-2"), models.EntityRef(type="idea", id="nd-0"), ("idea", "no")]
    )
    assert [e.entity_id for e in got.found] == ["nd-2", "nd-0"] and got.found[0].title == "Uploaded line 2"
    assert [(r.type, r.id) for r in got.missing] == [("idea", "no")]
    budget = client.set_budget("budget-agent", budget=900, min_budget=300, max_budget=1200)
    assert (budget.caller, budget.budget, budget.min_budget, budget.max_budget) == (
        "budget-agent",
        900,
        300,
        1200,
    )


@pytest.mark.asyncio
async def test_the_async_client_batch_gets_and_sets_budgets(server: str) -> None:
    async with AsyncQuarry(server, "k-admin") as client:
        got = await client.batch_get_entities([("memory", "m-keys")])
        assert [e.entity_id for e in got.found] == ["m-keys"] and not got.missing
        assert (await client.set_budget("async-agent", budget=500)).budget == 500


def test_embed_gives_the_deployments_vectors_a_search_takes(client: Quarry) -> None:
    got = client.embed(["rate limiting"], kind="query")
    assert got.kind == "query" and got.dimension == len(got.vectors[0]) == 384
    again = client.search("", strategy="semantic", query_vector=got.vectors[0], limit=1)
    assert again.query_info.strategy == "semantic"
