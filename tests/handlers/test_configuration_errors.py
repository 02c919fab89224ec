"""Configuration errors: a wrong or missing setting fails at start naming the
variable, and a request that meets one is a logged 500 — never the caller's 400."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, api_event, invoke

START_TIMEOUT_SECONDS = 60  # generous on a busy machine; a server that starts never exits by itself


@pytest.fixture
def no_container() -> Iterator[None]:
    """No container yet, the handler imported (its init passed) before the test breaks a setting: the
    container built at the first request meets it (the init error itself: tests/lambda_runtime)."""
    import handlers.lambda_functions.api  # noqa: F401
    from infra.wiring.root import set_container

    set_container(None)
    yield
    set_container(None)


def _serve(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("QUARRY_")}
    environment.update(env, PYTHONPATH=str(ROOT), QUARRY_DATA_DIR=str(tmp_path / "data"))
    return subprocess.run(
        [sys.executable, "-m", "handlers.cli.main", "serve", "--port", "0"],
        env=environment,
        capture_output=True,
        text=True,
        timeout=START_TIMEOUT_SECONDS,
        cwd=ROOT,
    )


def test_serve_refuses_to_start_without_the_opensearch_url(tmp_path: Path) -> None:
    done = _serve(tmp_path, QUARRY_BACKEND="aws")
    assert done.returncode == 2, done.stdout
    assert "QUARRY_OPENSEARCH_URL" in done.stderr and "Traceback" not in done.stderr
    assert "Quarry API on" not in done.stdout


def test_serve_refuses_to_start_with_a_broken_entity_types_file(tmp_path: Path) -> None:
    broken = tmp_path / "types.json"
    broken.write_text("{not json")
    done = _serve(tmp_path, QUARRY_ENTITY_TYPES_FILE=str(broken))
    assert done.returncode == 2 and "QUARRY_ENTITY_TYPES_FILE" in done.stderr, done.stderr


@pytest.mark.parametrize("route", ["search", "put_entity", "context_assemble"])
def test_a_request_meeting_a_missing_setting_is_a_500_not_a_400(
    monkeypatch: pytest.MonkeyPatch, no_container: None, route: str, caplog: Any
) -> None:
    monkeypatch.setenv("QUARRY_BACKEND", "aws")
    monkeypatch.delenv("QUARRY_OPENSEARCH_URL", raising=False)
    status, body = invoke(api_event(route))
    assert status == 500, body
    assert body["error"]["code"] == "configuration_error" and body["error"]["fields"] == {}


def test_a_broken_entity_types_file_is_a_500_for_the_caller(
    monkeypatch: pytest.MonkeyPatch, no_container: None, tmp_path: Path
) -> None:
    broken = tmp_path / "types.json"
    broken.write_text('{"types": {"Bad Name": {"fields": {}}}}')
    monkeypatch.setenv("QUARRY_ENTITY_TYPES_FILE", str(broken))
    monkeypatch.setenv("QUARRY_DATA_DIR", str(tmp_path / "data"))
    status, body = invoke(api_event("search"))
    assert status == 500 and body["error"]["code"] == "configuration_error", body


def test_serve_refuses_to_start_with_a_bool_for_a_tenants_dimension(tmp_path: Path) -> None:
    done = _serve(tmp_path, QUARRY_BYO_VECTOR_TENANTS='{"gamma": true}')  # not a tenant of dimension 1
    assert done.returncode == 2, done.stdout
    assert "QUARRY_BYO_VECTOR_TENANTS" in done.stderr and "gamma" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and "Quarry API on" not in done.stdout


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("QUARRY_BYO_VECTOR_TENANTS", '{"gamma": true}'),
        ("QUARRY_BYO_VECTOR_TENANTS", '{"gamma": "384"}'),
        ("QUARRY_BYO_VECTOR_TENANTS", '{"gamma": 384.5}'),
        ("QUARRY_MAX_BODY_BYTES", "1048576.0"),
        ("QUARRY_ANN_PROBE", "1.5"),
        ("QUARRY_ANN_PROBE", "2_4"),
        ("QUARRY_BEDROCK_DIMENSIONS", "1e3"),
        ("QUARRY_CACHE_TTL_SECONDS", "inf"),
        ("QUARRY_LOG_RETENTION_DAYS", "infinity"),
        ("QUARRY_ALPHA", "nan"),
    ],
)
def test_a_setting_is_validated_before_any_coercion(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    from core.errors import ConfigurationError
    from infra.config.settings import load_settings

    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigurationError) as refused:
        load_settings()
    assert variable in refused.value.variables, refused.value.variables
