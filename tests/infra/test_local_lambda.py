"""The pieces of the local Lambda runner that need no emulator: template.yaml resolved into each function's
configuration, the SQS event source mapping's reading of a partial batch response (as AWS documents it),
and the claims a JWT authorizer hands the API function. The emulated runs: tests/lambda_runtime."""

from __future__ import annotations

import json
from functools import cache

import pytest

from deploy.event_sources import jwt_authorizer_context, reported_failures
from deploy.lambda_emulator import Invocation
from deploy.lambda_local import access_token_claims
from deploy.lambda_template import Stack, parameter_overrides

IDS = ("m-1", "m-2", "m-3")


@cache
def stack() -> Stack:
    bound = Stack("quarry-unit", parameter_overrides("local_invoke"))
    for logical in ("StateTable", "CacheTable"):
        bound.bind(logical, f"quarry-unit-{logical}", Arn=f"arn:aws:dynamodb:::table/{logical}")
    for logical in ("WriteJobsQueue", "EvalTasksQueue"):
        bound.bind(
            logical, f"http://sqs.local/{logical}", Arn=f"arn:aws:sqs:us-east-1:123456789012:{logical}"
        )
    bound.bind("JobPayloadsBucket", "quarry-unit-payloads", Arn="arn:aws:s3:::quarry-unit-payloads")
    bound.bind("SearchDomain", "local", DomainEndpoint="127.0.0.1:9200")
    return bound


def answer(body: object, status: int = 200) -> Invocation:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return Invocation(status, raw, None, 1.0)


def test_every_function_of_the_template_gets_its_handler_limits_environment_and_layer() -> None:
    api = stack().function("ApiFunction")
    assert (api.handler, api.runtime, api.timeout, api.memory) == (
        "handlers.lambda_functions.api.lambda_handler",
        "python3.12",
        29,
        1024,
    )
    assert api.layers == ("LocalEmbedderLayer",)  # Embedder=local in samconfig.toml's local parameters
    env = api.environment
    assert env["QUARRY_EMBEDDER"] == "local" and env["QUARRY_STATE_TABLE"] == "quarry-unit-StateTable"
    assert env["QUARRY_JOBS_QUEUE_URL"] == "http://sqs.local/WriteJobsQueue"
    assert (
        env["QUARRY_JOBS_QUEUE_ARN"].endswith(":WriteJobsQueue") and env["QUARRY_ASYNC_MIN_CHUNKS"] == "200"
    )
    assert env["QUARRY_JOBS_PAYLOAD_BUCKET"] == "quarry-unit-payloads"
    assert env["QUARRY_OPENSEARCH_URL"] == "https://127.0.0.1:9200"  # the local runner then swaps in http
    assert stack().function("IndexingConsumerFunction").timeout == 60
    assert stack().function("NightlyEvalFunction").timeout == 900
    pretoken = stack().function("PreTokenGenerationFunction")
    assert pretoken.handler == "handlers.lambda_functions.pretoken.lambda_handler" and pretoken.layers == ()
    with pytest.raises(KeyError, match="ApiFunction"):
        stack().function("NoSuchFunction")


def test_parameters_are_checked_before_anything_runs() -> None:
    with pytest.raises(ValueError, match="unknown template parameters: Nope"):
        Stack("quarry-unit", {**parameter_overrides("local_invoke"), "Nope": "1"})
    with pytest.raises(ValueError, match="JwtIssuer"):
        Stack("quarry-unit", {})


@pytest.mark.parametrize(
    ("body", "kept"),
    [
        ({"batchItemFailures": [{"itemIdentifier": "m-2"}]}, {"m-2"}),
        ({"batchItemFailures": []}, set()),  # an empty list: complete success
        ({"batchItemFailures": None}, set()),  # a null list
        ({}, set()),  # an empty response
        (None, set()),  # a null response
        ({"batchItemFailures": [{"itemIdentifier": ""}]}, set(IDS)),  # empty identifier: all fail
        ({"batchItemFailures": [{"itemIdentifier": None}]}, set(IDS)),  # null identifier
        ({"batchItemFailures": [{"id": "m-2"}]}, set(IDS)),  # a bad key name
        ({"batchItemFailures": [{"itemIdentifier": "m-9"}]}, set(IDS)),  # an unknown message id
        (b"not json", set(IDS)),  # an invalid JSON response
        ({"errorType": "ValueError", "errorMessage": "boom", "stackTrace": []}, set(IDS)),  # a function error
        (b"Task timed out after 3.00 seconds", set(IDS)),  # stopped at its timeout
    ],
)
def test_the_mapping_reads_a_partial_batch_response_as_aws_documents(body: object, kept: set[str]) -> None:
    assert reported_failures(answer(body), IDS, partial=True) == kept


def test_without_report_batch_item_failures_a_returned_list_means_nothing() -> None:
    assert (
        reported_failures(answer({"batchItemFailures": [{"itemIdentifier": "m-2"}]}), IDS, partial=False)
        == set()
    )


def test_an_init_error_fails_the_whole_batch() -> None:
    init_error = answer({"errorType": "ConfigurationError", "errorMessage": "QUARRY_X"}, status=502)
    assert init_error.init_failed and reported_failures(init_error, IDS, partial=True) == set(IDS)


def test_the_jwt_authorizer_passes_every_claim_as_a_string_and_the_scopes_as_a_list() -> None:
    context = jwt_authorizer_context(
        {
            "sub": "u-1",
            "cognito:groups": ["tenant:acme", "staff"],
            "exp": 1795003600,
            "scope": "quarry/read quarry/write",
        }
    )
    assert context == {
        "jwt": {
            "claims": {
                "sub": "u-1",
                "cognito:groups": "[tenant:acme staff]",
                "exp": "1795003600",
                "scope": "quarry/read quarry/write",
            },
            "scopes": ["quarry/read", "quarry/write"],
        }
    }


def test_a_local_identity_becomes_an_access_token_of_the_templates_resource_server_and_tenant_claim() -> None:
    claims = access_token_claims(
        {"tenant": "acme", "scopes": ["read", "admin"], "caller": "agent-1"}, stack()
    )
    assert claims["token_use"] == "access" and claims["tenant"] == "acme" and claims["sub"] == "agent-1"
    assert claims["scope"] == "quarry/read quarry/admin" and claims["client_id"] == "quarry-local"
