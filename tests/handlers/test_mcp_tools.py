"""MCP tools an agent can use without guessing: `tools/list` (in process and over stdio) describes every
argument with its limits, enums and defaults and carries behaviour hints; a call built from nothing but that
list is accepted; unknown or bad arguments are refused naming them, in the API's error body; the server says
its version; an unknown resource is not found; snippets are plain text."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from jsonschema import Draft202012Validator

from handlers.http_api.auth import Principal
from tests.conftest import ROOT

pytest.importorskip("mcp")

from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402

from handlers.mcp.server import Gate, build_server, server_version  # noqa: E402

HINTS = ("read_only_hint", "destructive_hint", "idempotent_hint")


def run(server: Any, work: Callable[[Client], Awaitable[None]]) -> None:
    async def main() -> None:
        async with Client(server, raise_exceptions=False) as client:
            await work(client)

    anyio.run(main)


def server_for(container: Any, scopes: tuple[str, ...] = ("read", "write", "admin")) -> Any:
    return build_server(lambda: container, Gate({}, Principal("acme", frozenset(scopes))))


def error_of(result: Any) -> dict[str, Any]:
    assert result.is_error, result
    text = result.content[0].text
    return dict(json.loads(text[text.index("{") :])["error"])


def branches(schema: dict[str, Any]) -> list[dict[str, Any]]:
    return [b for b in schema.get("anyOf", [schema]) if b.get("type") != "null"]


def example(schema: dict[str, Any], everything: bool) -> Any:
    """A value for `schema` built from the schema alone: its examples, default, enum, or its bounds."""
    for key in ("examples", "enum"):
        if schema.get(key):
            return schema[key][0]
    if "anyOf" in schema:
        return example(branches(schema)[0], everything)
    kind = schema.get("type")
    if kind == "object":
        props, required = schema.get("properties", {}), set(schema.get("required", []))
        return {n: example(s, everything) for n, s in props.items() if everything or n in required}
    if kind == "array":
        return [example(schema["items"], everything)] if everything and "items" in schema else []
    if kind == "integer":
        return schema.get("maximum", schema.get("minimum", 1)) if everything else schema.get("minimum", 1)
    if kind == "boolean":
        return everything
    if kind == "number":
        return schema.get("minimum", 0.5)
    return "x" * max(1, schema.get("minLength", 1))


def describe(tool: Any) -> list[str]:
    """What an agent would miss in one tool's listing."""
    gaps = [] if tool.description else ["description"]
    gaps += [h for h in HINTS if tool.annotations is None or getattr(tool.annotations, h) is None]
    schema = tool.input_schema
    if schema.get("additionalProperties") is not False:
        gaps.append("closed arguments")
    gaps += [f"{n}: description" for n, s in schema.get("properties", {}).items() if not s.get("description")]
    return gaps


def test_every_tool_is_described_with_limits_enums_defaults_and_hints(local: Any) -> None:
    async def work(client: Client) -> None:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert {name: describe(t) for name, t in tools.items()} == {name: [] for name in tools}
        search = tools["search"].input_schema["properties"]
        assert (search["limit"]["minimum"], search["limit"]["maximum"], search["limit"]["default"]) == (
            1,
            100,
            20,
        )
        assert search["query"]["maxLength"] == local.settings.max_query_chars
        assert set(search["strategy"]["enum"]) == {"auto", "keyword", "semantic", "hybrid"}
        entities = next(b for b in search["entities"]["anyOf"] if b.get("type") == "array")
        assert entities["items"]["enum"] == list(local.registry.names())
        assert tools["get_entity"].input_schema["properties"]["entity_type"]["enum"] == list(
            local.registry.names()
        )
        assert tools["search"].annotations.read_only_hint is True
        delete = tools["delete_entity"].annotations
        assert (delete.read_only_hint, delete.destructive_hint, delete.idempotent_hint) == (False, True, True)

    run(server_for(local), work)


def test_calls_built_from_the_tool_list_alone_are_accepted(local: Any) -> None:
    async def work(client: Client) -> None:
        refused = {}
        for tool in (await client.list_tools()).tools:
            for everything in (False, True):
                arguments = example(tool.input_schema, everything)
                Draft202012Validator(tool.input_schema).validate(arguments)  # schema-valid by construction
                result = await client.call_tool(tool.name, arguments)
                if result.is_error and error_of(result)["code"] == "invalid_input":
                    refused[(tool.name, everything)] = error_of(result)
        assert refused == {}

    run(server_for(local), work)


def test_unknown_and_bad_arguments_are_refused_naming_them(local: Any) -> None:
    async def work(client: Client) -> None:
        unknown = error_of(await client.call_tool("list_entities", {"type": "document"}))
        assert unknown["code"] == "invalid_input" and "type" in unknown["fields"]
        assert "entity_type" in unknown["fields"]["type"]  # the known arguments are named
        bad = error_of(await client.call_tool("get_entity", {"entity_type": "spaceship", "entity_id": "a/b"}))
        assert set(bad["fields"]) == {"entity_type", "entity_id"}
        assert error_of(await client.call_tool("search", {}))["fields"] == {"query": "is required"}

    run(server_for(local), work)


def test_version_plain_snippets_and_unknown_resources(local: Any) -> None:
    local.indexing.bulk("acme", [{"type": "memory", "id": "m1", "content": "rotate the signing keys"}], 0.0)

    async def work(client: Client) -> None:
        assert client.server_info is not None and client.server_info.version == server_version() != "0.0.0"
        found = await client.call_tool("search", {"query": "signing keys", "strategy": "keyword"})
        snippet = found.structured_content["results"][0]["snippet"]
        assert "signing keys" in snippet and "<mark>" not in snippet
        with pytest.raises(MCPError) as missing:
            await client.read_resource("quarry://overlays/nobody")
        assert missing.value.error.code == -32602 and "not_found" in missing.value.error.message

    run(server_for(local), work)


@pytest.mark.slow
def test_tools_list_over_stdio_shows_descriptions_limits_and_hints(tmp_path: Path) -> None:
    env = {
        "PYTHONPATH": str(ROOT),
        "QUARRY_DATA_DIR": str(tmp_path / "data"),
        "HOME": os.environ.get("HOME", ""),
    }
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "handlers.cli.main", "mcp"], env=env, cwd=str(ROOT)
    )

    async def main() -> None:
        async with Client(params) as client:
            tools = (await client.list_tools()).tools
            assert tools and all(describe(t) == [] for t in tools), [(t.name, describe(t)) for t in tools]
            limit = next(t for t in tools if t.name == "list_entities").input_schema["properties"]["limit"]
            assert (limit["minimum"], limit["maximum"]) == (1, 500)

    anyio.run(main)


WRITE_TOOLS = {"upsert_entity", "delete_entity", "context_feedback"}


def test_a_read_only_key_is_shown_only_the_tools_it_may_call(local: Any) -> None:
    async def work(client: Client) -> None:
        names = {t.name for t in (await client.list_tools()).tools}
        assert names and not names & WRITE_TOOLS
        for tool in (await client.list_tools()).tools:  # every tool shown is one the key may call
            result = await client.call_tool(tool.name, example(tool.input_schema, False))
            assert not result.is_error or error_of(result)["code"] != "forbidden", tool.name

    run(server_for(local, ("read",)), work)

    async def writer(client: Client) -> None:
        assert {t.name for t in (await client.list_tools()).tools} >= WRITE_TOOLS

    run(server_for(local, ("read", "write")), writer)


def body_of(result: Any) -> dict[str, Any]:
    """A refused call's whole text: the HTTP API's error body, nothing before or after it."""
    assert result.is_error, result
    body = json.loads(result.content[0].text)
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "fields"}, body
    return dict(body["error"])


def test_every_tool_failure_is_the_http_apis_error_body_alone(local: Any) -> None:
    async def work(client: Client) -> None:
        missing = body_of(
            await client.call_tool("get_entity", {"entity_type": "memory", "entity_id": "nope"})
        )
        assert missing["code"] == "not_found"
        forbidden = body_of(
            await client.call_tool("delete_entity", {"entity_type": "memory", "entity_id": "x"})
        )
        assert forbidden["code"] == "forbidden"
        assert body_of(await client.call_tool("search", {}))["fields"] == {"query": "is required"}
        assert body_of(await client.call_tool("no_such_tool", {}))["code"] == "not_found"
        blank = body_of(await client.call_tool("assemble_context", {"query": "x", "caller": "a b"}))
        assert blank["code"] == "invalid_input" and "caller" in blank["fields"]

    run(server_for(local, ("read",)), work)


def test_a_tool_without_arguments_says_it_takes_none(local: Any) -> None:
    async def work(client: Client) -> None:
        refused = error_of(await client.call_tool("list_overlays", {"role": "x"}))
        assert refused["fields"] == {"role": "is not a known argument; list_overlays takes no arguments"}

    run(server_for(local), work)


def test_the_caller_argument_is_published_with_the_apis_one_caller_schema(local: Any) -> None:
    from core.indexing.entity_validation import CALLER_RULE, caller_schema

    async def work(client: Client) -> None:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        caller = tools["assemble_context"].input_schema["properties"]["caller"]
        assert {k: caller[k] for k in caller_schema()} == caller_schema()
        refused = error_of(await client.call_tool("assemble_context", {"query": "q", "caller": "team/bot"}))
        assert refused["fields"] == {"caller": CALLER_RULE}

    run(server_for(local), work)


def test_upsert_entity_publishes_each_types_required_and_searchable_fields(local: Any) -> None:
    async def work(client: Client) -> None:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        schema = tools["upsert_entity"].input_schema
        said = schema["properties"]["fields"]["description"]
        for name in local.registry.names():
            etype = local.registry.get(name)
            assert f"{name}:" in said and etype.title_field in said, name
            assert all(f.name in said for f in etype.fields), name
        checker = Draft202012Validator(schema)
        untitled = {"entity_type": "task", "entity_id": "t-1", "fields": {"status": "open"}}
        assert not checker.is_valid(untitled)  # a task needs its title, and the schema says so
        assert checker.is_valid({**untitled, "partial": True})  # a patch changes only what it names
        assert checker.is_valid({**untitled, "fields": {"title": "renew the certificate"}})
        assert checker.is_valid({"entity_type": "document", "entity_id": "d", "fields": {"text": "body"}})
        refused = error_of(await client.call_tool("upsert_entity", untitled))
        assert refused["code"] == "invalid_input" and refused["fields"] == {"fields.title": "is required"}
        document = {"entity_type": "document", "entity_id": "d", "fields": {"topic": "x"}}
        assert error_of(await client.call_tool("upsert_entity", document))["fields"] == {
            "fields": "needs one of title, text, chunks"
        }

    run(server_for(local), work)


def test_an_upsert_as_large_as_a_bulk_job_is_a_job_as_over_http(tmp_path: Path) -> None:
    """MCP writes through the same use case as PUT: a large entity is checked at once, embedded by a job."""
    from tests.conftest import FakeEmbedder, make_container

    container = make_container(tmp_path / "data", FakeEmbedder(), async_min_chunks=4)
    text = " ".join(f"lighthouse{i}" for i in range(3000))
    big = {"entity_type": "document", "entity_id": "big", "fields": {"title": "Harbour manual", "text": text}}

    async def work(client: Client) -> None:
        queued = await client.call_tool("upsert_entity", {**big, "fields": {**big["fields"], "version": 1}})
        job = queued.structured_content
        assert not queued.is_error and job is not None, queued
        assert job["outcome"] == "queued" and job["version"] == 1, job
        assert job["job"]["kind"] == "bulk" and job["job"]["items"] == 1 and job["job"]["chunks"] > 4, job
        assert container.job_queue.pending() > 0  # nothing embedded yet
        container.job_queue.drain()
        stored = await client.call_tool("get_entity", {"entity_type": "document", "entity_id": "big"})
        assert stored.structured_content is not None and stored.structured_content["embedded"], stored
        stale = await client.call_tool("upsert_entity", {**big, "fields": {**big["fields"], "version": 0}})
        assert error_of(stale)["code"] == "stale_version"  # refused at once, never queued

    run(server_for(container), work)
