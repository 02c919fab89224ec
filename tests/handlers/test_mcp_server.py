"""The MCP server through the SDK's own client: in-process (tools, resources, errors, scopes, tenancy)
and over stdio (a `quarry mcp` subprocess), on the local backend."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from handlers.http_api.auth import Principal
from tests.conftest import ROOT, api_event, invoke

pytest.importorskip("mcp")

from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402

from handlers.mcp.server import Gate, build_server  # noqa: E402
from tests.handlers.serving import free_port

EXPECTED_TOOLS = {
    "search",
    "assemble_context",
    "context_feedback",
    "retrieve",
    "get_entity",
    "list_entities",
    "upsert_entity",
    "delete_entity",
    "list_overlays",
}
NOTES = [
    {"type": "memory", "id": f"n-{i}", "content": text, "version": 1}
    for i, text in enumerate(
        [
            "the deploy pipeline fails when the cache volume is full",
            "rotate the signing keys every ninety days",
            "the cache volume lives on the build host",
        ]
    )
]


def run(server: Any, work: Callable[[Client], Awaitable[None]]) -> None:
    async def main() -> None:
        async with Client(server, raise_exceptions=False) as client:
            await work(client)

    anyio.run(main)


def server_for(container: Any, scopes: set[str], tenant: str = "acme") -> Any:
    return build_server(lambda: container, Gate({}, Principal(tenant, frozenset(scopes))))


def error_of(result: Any) -> dict[str, Any]:
    assert result.is_error, result
    text = result.content[0].text  # the HTTP API's error body
    return json.loads(text[text.index("{") :])["error"]


def test_tools_are_listed_with_input_and_output_schemas(local: Any) -> None:
    async def work(client: Client) -> None:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == EXPECTED_TOOLS
        search = tools["search"]
        assert search.input_schema["required"] == ["query"]
        assert "results" in search.output_schema["properties"]
        assert "assembly_id" in tools["assemble_context"].output_schema["properties"]

    run(server_for(local, {"read", "write"}), work)


def test_write_search_assemble_feedback_read_and_delete(local: Any) -> None:
    async def work(client: Client) -> None:
        for note in NOTES:
            fields = {k: v for k, v in note.items() if k not in ("type", "id")}
            result = await client.call_tool(
                "upsert_entity", {"entity_type": "memory", "entity_id": note["id"], "fields": fields}
            )
            assert not result.is_error and result.structured_content["outcome"] == "applied"
        found = await client.call_tool("search", {"query": "cache volume", "strategy": "keyword"})
        ids = [r["entity_id"] for r in found.structured_content["results"]]
        assert set(ids) == {"n-0", "n-2"}
        assembled = await client.call_tool(
            "assemble_context", {"query": "cache volume full", "caller": "agent"}
        )
        body = assembled.structured_content
        assert body["assembly_id"] and "cache volume" in body["context_block"]
        used = [body["sources"][0]["id"]]
        feedback = await client.call_tool(
            "context_feedback", {"assembly_id": body["assembly_id"], "used_source_ids": used}
        )
        assert feedback.structured_content["recorded_ids"] == used
        got = await client.call_tool("get_entity", {"entity_type": "memory", "entity_id": "n-1"})
        assert (
            got.structured_content["fields"]["content"].startswith("rotate")
            and got.structured_content["embedded"]
        )
        gone = await client.call_tool("delete_entity", {"entity_type": "memory", "entity_id": "n-1"})
        assert gone.structured_content["outcome"] == "applied"
        missing = await client.call_tool("get_entity", {"entity_type": "memory", "entity_id": "n-1"})
        assert error_of(missing)["code"] == "not_found"

    run(server_for(local, {"read", "write"}), work)


def test_search_takes_a_score_floor_facets_and_the_stored_fields_as_post_search_does(local: Any) -> None:
    for task_id, status in (("t-1", "open"), ("t-2", "open"), ("t-3", "done")):
        body = {"title": f"renew the harbor certificate {task_id}", "status": status}
        assert invoke(api_event("put_entity", path=f"/entities/task/{task_id}", body=body))[0] == 200

    async def work(client: Client) -> None:
        args = {"query": "harbor certificate", "strategy": "keyword", "facets": ["status"]}
        found = (await client.call_tool("search", args | {"return_fields": ["status"]})).structured_content
        assert found["facets"] == {"status": {"open": 2, "done": 1}}
        assert {r["entity_id"]: r["fields"] for r in found["results"]} == {
            "t-1": {"status": "open"}, "t-2": {"status": "open"}, "t-3": {"status": "done"}
        }  # fmt: skip
        floor = (
            await client.call_tool("search", {"query": "zzqxv harbor", "min_score": 0.99})
        ).structured_content
        assert all(r["score"] >= 0.99 for r in floor["results"])
        bare = (await client.call_tool("search", args | {"return_fields": "none"})).structured_content
        assert bare["results"] and all("fields" not in r or r["fields"] is None for r in bare["results"])
        refused = error_of(await client.call_tool("search", {"query": "x", "facets": ["content"]}))
        assert refused["code"] == "invalid_input" and "facets" in json.dumps(refused["fields"])

    run(server_for(local, {"read"}), work)


def test_bad_input_is_a_tool_error_with_the_http_apis_fields(local: Any) -> None:
    async def work(client: Client) -> None:
        result = await client.call_tool("search", {"query": "x", "limit": 1000})
        error = error_of(result)
        assert error["code"] == "invalid_input" and "limit" in error["fields"]
        blank = error_of(await client.call_tool("assemble_context", {"query": "   ", "caller": "bot"}))
        assert blank["fields"] == {"query": "must not be empty or whitespace"}
        wrong_type = await client.call_tool("search", {"query": "x", "limit": "many"})
        assert wrong_type.is_error  # refused by the tool's input schema, not a crash
        unknown = error_of(
            await client.call_tool("get_entity", {"entity_type": "spaceship", "entity_id": "x"})
        )
        assert unknown["code"] == "invalid_input"

    run(server_for(local, {"read", "write"}), work)


def test_a_missing_scope_is_a_tool_error_naming_it(local: Any) -> None:
    async def work(client: Client) -> None:
        result = await client.call_tool(
            "upsert_entity", {"entity_type": "memory", "entity_id": "x", "fields": {"content": "hi"}}
        )
        error = error_of(result)
        assert error["code"] == "forbidden" and "write" in error["message"]
        feedback = error_of(
            await client.call_tool("context_feedback", {"assembly_id": "a", "used_source_ids": []})
        )
        assert feedback["code"] == "forbidden"

    run(server_for(local, {"read"}), work)


def test_tools_see_only_the_keys_tenant(local: Any) -> None:
    local.indexing.bulk("other", [{"type": "memory", "id": "secret", "content": "cache volume secret"}], 0.0)

    async def work(client: Client) -> None:
        found = await client.call_tool("search", {"query": "cache volume secret", "strategy": "keyword"})
        assert found.structured_content["results"] == []
        got = await client.call_tool("get_entity", {"entity_type": "memory", "entity_id": "secret"})
        assert error_of(got)["code"] == "not_found"

    run(server_for(local, {"read"}), work)


def test_resources_publish_schemas_and_overlays(local: Any) -> None:
    async def work(client: Client) -> None:
        templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
        assert templates == {"quarry://overlays/{role_id}", "quarry://schemas/{name}"}
        schema = await client.read_resource("quarry://schemas/role_overlay")
        assert "properties" in json.loads(schema.contents[0].text)

    run(server_for(local, {"read"}), work)


@pytest.mark.slow
def test_a_stdio_session_lists_searches_assembles_sends_feedback_and_gets_errors(tmp_path: Path) -> None:
    keys = {
        "k-read": {"tenant": "acme", "scopes": ["read"]},
        "k-rw": {"tenant": "acme", "scopes": ["read", "write"]},
    }

    def params(key: str) -> StdioServerParameters:
        env = {
            "PYTHONPATH": str(ROOT),
            "QUARRY_API_KEYS": json.dumps(keys),
            "QUARRY_MCP_KEY": key,
            "QUARRY_DATA_DIR": str(tmp_path / "data"),
            "HOME": os.environ.get("HOME", str(tmp_path)),
        }
        return StdioServerParameters(
            command=sys.executable, args=["-m", "handlers.cli.main", "mcp"], env=env, cwd=str(ROOT)
        )

    async def writer(client: Client) -> None:
        names = {t.name for t in (await client.list_tools()).tools}
        assert names == EXPECTED_TOOLS
        for note in NOTES:
            fields = {"content": note["content"]}
            result = await client.call_tool(
                "upsert_entity", {"entity_type": "memory", "entity_id": note["id"], "fields": fields}
            )
            assert not result.is_error, result
        found = await client.call_tool("search", {"query": "signing keys"})
        assert found.structured_content["results"][0]["entity_id"] == "n-1"
        assembled = (
            await client.call_tool("assemble_context", {"query": "signing keys", "caller": "agent"})
        ).structured_content
        feedback = await client.call_tool(
            "context_feedback",
            {"assembly_id": assembled["assembly_id"], "used_source_ids": [assembled["sources"][0]["id"]]},
        )
        assert feedback.structured_content["success"] is True
        bad = await client.call_tool("assemble_context", {"query": "x", "caller": "a", "token_budget": 0})
        assert error_of(bad)["fields"] == {"token_budget": "input should be greater than or equal to 1"}

    async def reader(client: Client) -> None:
        listed = {t.name for t in (await client.list_tools()).tools}  # QUARRY_MCP_KEY's scopes decide
        assert listed == EXPECTED_TOOLS - {"upsert_entity", "delete_entity", "context_feedback"}
        error = error_of(
            await client.call_tool("context_feedback", {"assembly_id": "a", "used_source_ids": []})
        )
        assert error["code"] == "forbidden"

    async def main() -> None:
        async with Client(params("k-rw")) as client:
            await writer(client)
        async with Client(params("k-read")) as client:
            await reader(client)

    anyio.run(main)


@pytest.mark.slow
def test_streamable_http_needs_a_bearer_key_and_acts_for_its_tenant(tmp_path: Path) -> None:
    import subprocess
    import time

    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    keys = {
        "k-acme": {"tenant": "acme", "scopes": ["read"]},
        "k-other": {"tenant": "other", "scopes": ["read"]},
    }
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "QUARRY_API_KEYS": json.dumps(keys)}
    env["QUARRY_DATA_DIR"] = str(tmp_path / "data")
    args = [sys.executable, "-m", "handlers.cli.main", "mcp", "--transport", "http", "--port", str(port)]
    seed = [
        sys.executable,
        "-m",
        "handlers.cli.main",
        "ingest",
        "-",
        "--type",
        "memory",
        "--tenant",
        "acme",
        "--quiet",
    ]
    notes = tmp_path / "notes.jsonl"
    notes.write_text("\n".join(json.dumps({"id": n["id"], "content": n["content"]}) for n in NOTES))
    seed[4] = str(notes)
    subprocess.run(seed, env=env, cwd=ROOT, check=True, capture_output=True, timeout=120)
    server = subprocess.Popen(args, env=env, cwd=ROOT, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                answer = httpx2.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
                break
            except httpx2.TransportError:
                assert time.monotonic() < deadline, "server did not start"
                time.sleep(0.2)
        assert answer.status_code == 401 and answer.json()["error"]["code"] == "unauthorized"

        async def session(key: str) -> list[str]:
            headers = {"Authorization": f"Bearer {key}"}
            async with (
                httpx2.AsyncClient(headers=headers, timeout=30) as http,
                Client(streamable_http_client(url, http_client=http)) as client,
            ):
                listed = {t.name for t in (await client.list_tools()).tools}  # the bearer key's scopes
                assert "search" in listed and "delete_entity" not in listed
                found = await client.call_tool("search", {"query": "signing keys", "strategy": "keyword"})
                denied = await client.call_tool(
                    "delete_entity", {"entity_type": "memory", "entity_id": "n-1"}
                )
                assert error_of(denied)["code"] == "forbidden"
                return [r["entity_id"] for r in found.structured_content["results"]]

        async def main() -> None:
            assert await session("k-acme") == ["n-1"]
            assert await session("k-other") == []

        anyio.run(main)
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_a_key_bound_to_a_caller_speaks_only_for_it(local: Any) -> None:
    bound = Principal("acme", frozenset({"read", "write"}), None, "agent-a")
    server = build_server(lambda: local, Gate({}, bound))

    async def work(client: Client) -> None:
        other = await client.call_tool("assemble_context", {"query": "cache", "caller": "agent-b"})
        assert error_of(other)["code"] == "forbidden"
        own = await client.call_tool("assemble_context", {"query": "cache", "caller": "agent-a"})
        assert not own.is_error, own

    run(server, work)


def test_a_401_points_to_the_protected_resource_metadata_it_serves(local: Any) -> None:
    import httpx2

    from handlers.mcp.http import http_app

    gate = Gate({"k-acme": {"tenant": "acme", "scopes": ["read"]}}, None)
    app = http_app(build_server(lambda: local, gate), gate)

    async def main() -> None:
        transport = httpx2.ASGITransport(app=app)
        async with httpx2.AsyncClient(transport=transport, base_url="http://quarry.test") as http:
            refused = await http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
            assert refused.status_code == 401 and refused.json()["error"]["code"] == "unauthorized"
            challenge = refused.headers["www-authenticate"]
            metadata_url = "http://quarry.test/.well-known/oauth-protected-resource/mcp"
            assert challenge.startswith("Bearer ") and f'resource_metadata="{metadata_url}"' in challenge
            for path in (
                "/.well-known/oauth-protected-resource/mcp",
                "/.well-known/oauth-protected-resource",
            ):
                metadata = await http.get(path)  # no key needed: it says how to get one
                assert metadata.status_code == 200, path
                document = metadata.json()
                assert document["resource"] == "http://quarry.test/mcp"
                assert document["bearer_methods_supported"] == ["header"]
                assert "authorization_servers" not in document  # static API keys: no server issues them
            wrong = await http.post("/mcp", headers={"Authorization": "Bearer nope"}, json={})
            assert wrong.status_code == 401 and 'error="invalid_token"' in wrong.headers["www-authenticate"]

    anyio.run(main)
