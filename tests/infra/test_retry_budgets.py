"""One retry policy per client, from the libraries, each within a total time budget below the API
function's 29 s: botocore's standard retry mode for DynamoDB and SQS (opensearch-py's own
retries are covered in tests/adapters/test_opensearch_errors.py; Bedrock in test_bedrock_embedder.py)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.infra.test_template import sam_template

# botocore's standard mode waits rand(0,1) x min(2^attempt, 20) s before retry `attempt` (its documented
# exponential backoff, base 1 s, cap 20 s): at most 1 + 2 s for 3 attempts.
STANDARD_MAX_WAIT = (1, 2, 4, 8, 16, 20, 20, 20, 20, 20)


def worst_case_seconds(client: Any) -> float:
    config = client.meta.config
    attempts = config.retries["total_max_attempts"]
    return attempts * (config.connect_timeout + config.read_timeout) + sum(STANDARD_MAX_WAIT[: attempts - 1])


@pytest.mark.parametrize("build", ["dynamodb", "sqs"])
def test_aws_clients_use_standard_retries_within_the_api_timeout(
    build: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from infra.dynamodb.tables import default_client
    from infra.jobs.sqs_queue import default_sqs_client

    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    client = default_client() if build == "dynamodb" else default_sqs_client()
    assert client.meta.config.retries["mode"] == "standard"
    api_timeout = sam_template()["Globals"]["Function"]["Timeout"]
    assert worst_case_seconds(client) < api_timeout
