"""A bounded schemathesis run against the published /openapi.json, through the local server: for every
operation, generated requests (deterministic: derandomized Hypothesis) never get a 5xx, and every
response has a documented status, content type, headers and body schema."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.conftest import FakeEmbedder, make_container
from tests.handlers.serving import serving

KEY = "fuzz-key"
KEYS = {KEY: {"tenant": "fuzz", "scopes": ["read", "write", "admin"]}}
EXAMPLES_PER_OPERATION = 25  # 23 operations × 25 ≈ 575 requests: ~20 s on a busy 2-core machine
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from infra.wiring import set_container

    set_container(make_container(Path(tmp_path_factory.mktemp("fuzz")) / "data", FakeEmbedder()))
    with serving(KEYS, 1 << 20) as url:
        yield url
        set_container(None)


def published(url: str) -> dict[str, Any]:
    request = urllib.request.Request(f"{url}/openapi.json", headers={"authorization": f"Bearer {KEY}"})
    with urllib.request.urlopen(request, timeout=30) as response:
        document: dict[str, Any] = json.loads(response.read())
    return document


def test_generated_requests_never_get_a_5xx_and_every_answer_is_documented(live: str) -> None:
    schema = schemathesis.openapi.from_dict(published(live))
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 20
    headers = {"authorization": f"Bearer {KEY}"}

    failures: list[str] = []
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=EXAMPLES_PER_OPERATION,
            derandomize=True,
            deadline=None,
            database=None,
            phases=[Phase.explicit, Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        def run(case: Any) -> None:
            case.call_and_validate(base_url=live, headers=headers, checks=CHECKS)

        try:
            run()
        except Exception as exc:  # noqa: BLE001 - gather every operation's failure, then report them all
            failures.append(f"{operation.label}: {exc}")
    assert failures == [], "\n\n".join(failures)
