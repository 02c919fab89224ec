"""schemathesis with every check (`--checks all`: no 5xx, documented statuses, headers and bodies, schema-valid
requests accepted, schema-violating ones refused, stateful links, auth) against the local server, as a user
runs it: the CLI, reading the published /openapi.json and the repository's schemathesis.toml. Bounded
(EXAMPLES per operation, derandomized); the full-size run is in docs/clients.md."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from jsonschema import Draft202012Validator
from referencing import Registry
from referencing.jsonschema import DRAFT202012

from tests.conftest import ROOT, FakeEmbedder, api_event, invoke, make_container, require_tokens_extra
from tests.handlers.schemathesis_hooks import bulk_lines
from tests.handlers.serving import serving

KEY = "fuzz-key"
KEYS = {KEY: {"tenant": "fuzz", "scopes": ["read", "write", "admin"]}}
EXAMPLES = (
    5  # per operation in the generating phases (the coverage phase sets its own count): ~4,500 requests
)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from infra.wiring.root import set_container

    # /openapi.json offers every token encoding, and the server counts the BPE ones with the tokens extra
    # (without it they are a 400 naming `token_encoding`: tests/adapters/test_token_counters.py)
    require_tokens_extra()
    set_container(make_container(Path(tmp_path_factory.mktemp("fuzz")) / "data", FakeEmbedder()))
    with serving(KEYS, 1 << 20) as url:
        yield url
        set_container(None)


@pytest.mark.slow
def test_schemathesis_with_every_check_finds_nothing(live: str) -> None:
    cli = Path(sys.executable).parent / "schemathesis"
    run = subprocess.run(
        [str(cli), "run", f"{live}/openapi.json", "-H", f"Authorization: Bearer {KEY}", "--checks", "all",
         "-n", str(EXAMPLES), "--generation-deterministic", "--no-color",
         "--workers", "1", "--request-timeout", "60", "--max-response-time", "60"],
        cwd=ROOT, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    summary = run.stdout[-3000:]
    assert run.returncode == 0, run.stdout[-20000:] + run.stderr[-2000:]
    assert "Tested: " in summary and " passed" in summary, summary
    assert "filter_too_much" not in run.stdout and "Failed Health Check" not in run.stdout, run.stdout[
        -20000:
    ]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=bulk_lines())
def test_the_fuzz_runs_ndjson_uploads_fit_the_document_and_the_server_takes_them(
    local: Any, lines: list[dict[str, Any]]
) -> None:
    status, doc = invoke(api_event("openapi", tenant=None))
    registry: Registry[Any] = Registry().with_resource("urn:doc", DRAFT202012.create_resource(doc))
    item = Draft202012Validator({"$ref": "urn:doc#/components/schemas/BulkItem"}, registry=registry)
    assert status == 200 and all(item.is_valid(line) for line in lines), lines
    body = "".join(json.dumps(line) + "\n" for line in lines)  # as the hooks' serializer writes them
    event = api_event("bulk_entities", path="/entities/ndjson", raw_body=body)
    event["headers"] = {**event.get("headers", {}), "content-type": "application/x-ndjson"}
    status, job = invoke(event)
    assert status == 202 and job["errors"] == [], job
