"""Cold start: importing a Lambda handler with the AWS backend settings loads only what its first request
cannot do without — no numpy, no OpenSearch client, no AWS SDK, no X-Ray SDK while tracing is off, no
model runtime, no evaluation harness. Each import runs in a fresh interpreter, as Lambda's init does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
AWS_SETTINGS = {
    "QUARRY_BACKEND": "aws",
    "QUARRY_INDEX": "opensearch",
    "QUARRY_STATE": "dynamodb",
    "QUARRY_CACHE": "dynamodb",
    "QUARRY_EMBEDDER": "bedrock",
    "QUARRY_OPENSEARCH_URL": "http://127.0.0.1:9",
    "QUARRY_STATE_TABLE": "quarry-state",
    "QUARRY_CACHE_TABLE": "quarry-cache",
    "QUARRY_DYNAMODB_CREATE_TABLES": "false",
    "AWS_DEFAULT_REGION": "us-east-1",
    "POWERTOOLS_SERVICE_NAME": "quarry",
    "POWERTOOLS_METRICS_NAMESPACE": "Quarry",
}
# Loaded on first use by the adapter or code path that needs it, never by importing a handler.
NEVER_AT_IMPORT = (
    "numpy",  # vectors: the embedder and the index adapters load it
    "opensearchpy",
    "boto3",
    "botocore.client",  # Powertools' user-agent hook imports botocore's package (8 ms), never a client
    "botocore.session",
    "aws_xray_sdk",  # only when tracing is on (in Lambda, with Tracing: Active)
    "tokenizers",
    "safetensors",
    "sqlite3",
    "tqdm",
    "jsonschema",
    "infra.local.onnx.embedder",
    "infra.text_models.bedrock",
    "infra.beir.evaluation",
    "infra.beir.report",
    "infra.beir.datasets",
    "infra.beir.embedding_cache",
    "handlers.cli.main",
    "handlers.local_server.devserver",
)
# What the API function's import leaves to the routes that need it: the published OpenAPI document
# (GET /openapi.json) and the golden-set evaluation (GET /evals).
NOT_AT_API_IMPORT = (
    "handlers.http_api.openapi",
    "handlers.http_api.openapi_examples",
    "core.governance.golden_sets",
)
HANDLERS = (
    "handlers.lambda_functions.api",
    "handlers.lambda_functions.indexing_consumer",
    "handlers.lambda_functions.nightly",
    "handlers.lambda_functions.pretoken",
)
HEALTH = """
import json, sys
from handlers.lambda_functions.api import lambda_handler
from handlers.local_server.devserver import FakeLambdaContext
from tests.conftest import api_event
answer = lambda_handler(api_event("health"), FakeLambdaContext())
print(json.dumps([answer["statusCode"], sorted(sys.modules)]))
"""
PROBE = """
import json, sys
import {module}
print(json.dumps(sorted(sys.modules)))
"""


def fresh_interpreter(code: str, **env: str) -> Any:
    """What `code` prints last as JSON, run in a fresh interpreter with the AWS backend settings."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("QUARRY_", "POWERTOOLS_", "AWS_"))}
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**clean, **AWS_SETTINGS, **env, "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.splitlines()[-1])


def imported_by(module: str, **env: str) -> set[str]:
    return set(fresh_interpreter(PROBE.format(module=module), **env))


def loaded(modules: set[str], name: str) -> bool:
    return name in modules or any(m.startswith(name + ".") for m in modules)


@pytest.mark.parametrize("module", HANDLERS)
def test_importing_a_handler_loads_nothing_its_first_request_can_load_later(module: str) -> None:
    modules = imported_by(module)
    assert [name for name in NEVER_AT_IMPORT if loaded(modules, name)] == []


def test_with_tracing_on_the_xray_sdk_is_loaded_at_import() -> None:
    """In Lambda (LAMBDA_TASK_ROOT set, tracing not disabled) the tracer patches botocore at init."""
    modules = imported_by(
        "handlers.lambda_functions.api", LAMBDA_TASK_ROOT=str(ROOT), AWS_LAMBDA_FUNCTION_NAME="quarry-api"
    )
    assert loaded(modules, "aws_xray_sdk")


def test_the_api_function_imports_no_openapi_document_and_no_evaluation() -> None:
    modules = imported_by("handlers.lambda_functions.api")
    assert [name for name in NOT_AT_API_IMPORT if loaded(modules, name)] == []


def test_a_cold_health_check_answers_without_the_aws_sdk_even_with_a_token() -> None:
    """/health is public and holds no tenant data: its first answer reads no tenant fence, so a cold
    function answers it without loading the AWS SDK or building a client (a caller's token included)."""
    status, modules = fresh_interpreter(HEALTH)
    assert status == 200
    assert [
        name for name in ("boto3", "botocore.session", "opensearchpy") if loaded(set(modules), name)
    ] == []


def test_the_api_module_reads_no_setting_at_import_outside_lambda() -> None:
    """Imported by the dev server, the CLI or a test, a broken setting does not fail the API module's import:
    its first invocation reads the settings (a logged 500 naming the variable,
    tests/handlers/test_configuration_errors.py). In Lambda the init reads them and fails, naming it
    (tests/lambda_runtime/test_runtime_failures.py)."""
    modules = imported_by("handlers.lambda_functions.api", QUARRY_MAX_LIMIT="lots", QUARRY_OPENSEARCH_URL="")
    assert "handlers.lambda_functions.api" in modules
