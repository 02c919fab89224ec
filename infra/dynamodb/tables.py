"""Table definitions of the DynamoDB adapters and `ensure_table`, which creates a missing table.

In AWS the SAM stack creates these tables (template.yaml must match the definitions here); against an
empty local endpoint (moto_server, DynamoDB Local) the adapters create them on `ensure_tables()`.
"""

from __future__ import annotations

from typing import Any

from infra.dynamodb.errors import dynamodb_errors, translate

TTL_ATTRIBUTE = "expires_at"
# Polling of the table-exists waiter: a new on-demand table turns ACTIVE within seconds in AWS and at once
# on local endpoints; 1 s × 60 bounds the wait at a minute (AWS DynamoDB developer guide, CreateTable).
WAIT_DELAY_SECONDS = 1
WAIT_MAX_ATTEMPTS = 60

# Client timeouts and attempts: DynamoDB answers in single-digit milliseconds, so seconds mean trouble;
# standard-mode retries back off with jitter on throttling (botocore "Retries" guide). Three attempts keep
# a request inside an API Lambda's timeout.
CONNECT_TIMEOUT_SECONDS = 2.0
READ_TIMEOUT_SECONDS = 5.0
MAX_ATTEMPTS = 3

LOG_INDEX = "log"
LOG_BY_CALLER_INDEX = "log_by_caller"
PENDING_INDEX = "pending"


def _string_keys(*names: str) -> list[dict[str, str]]:
    return [{"AttributeName": n, "AttributeType": "S"} for n in names]


def _index(name: str, hash_key: str, range_key: str) -> dict[str, Any]:
    return {
        "IndexName": name,
        "KeySchema": [
            {"AttributeName": hash_key, "KeyType": "HASH"},
            {"AttributeName": range_key, "KeyType": "RANGE"},
        ],
        "Projection": {"ProjectionType": "ALL"},
    }


def state_table_spec(name: str) -> dict[str, Any]:
    """CreateTable arguments of the state table (single-table design, three sparse GSIs)."""
    return {
        "TableName": name,
        "BillingMode": "PAY_PER_REQUEST",
        "AttributeDefinitions": _string_keys(
            "pk", "sk", "log_pk", "log_sk", "caller_pk", "pending_pk", "pending_sk"
        ),
        "KeySchema": [
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"},
        ],
        "GlobalSecondaryIndexes": [
            _index(LOG_INDEX, "log_pk", "log_sk"),
            _index(LOG_BY_CALLER_INDEX, "caller_pk", "log_sk"),
            _index(PENDING_INDEX, "pending_pk", "pending_sk"),
        ],
    }


def cache_table_spec(name: str) -> dict[str, Any]:
    """CreateTable arguments of the cache table (string partition and sort keys: a tenant's cached
    searches share a partition, infra/dynamodb/cache.py)."""
    return {
        "TableName": name,
        "BillingMode": "PAY_PER_REQUEST",
        "AttributeDefinitions": _string_keys("pk", "sk"),
        "KeySchema": [
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"},
        ],
    }


def ensure_table(client: Any, spec: dict[str, Any]) -> bool:
    """Create the table (with TTL on `expires_at`) unless it exists; True when it was created here."""
    name = spec["TableName"]
    with dynamodb_errors("ResourceNotFoundException") as missing:
        client.describe_table(TableName=name)
    if not missing:
        return False
    with dynamodb_errors("ResourceInUseException"):  # (another process created it meanwhile)
        client.create_table(**spec)
    with dynamodb_errors():
        client.get_waiter("table_exists").wait(
            TableName=name, WaiterConfig={"Delay": WAIT_DELAY_SECONDS, "MaxAttempts": WAIT_MAX_ATTEMPTS}
        )
    _enable_ttl(client, name)
    return True


def _enable_ttl(client: Any, name: str) -> None:
    """Turn on TTL expiry; a concurrent creator may have done it already."""
    with dynamodb_errors("ValidationException") as refused:
        client.update_time_to_live(
            TableName=name, TimeToLiveSpecification={"Enabled": True, "AttributeName": TTL_ATTRIBUTE}
        )
    if refused and "already" not in refused.message.lower() and refused.error is not None:
        raise translate(refused.error) from refused.error


def default_client() -> Any:
    """A DynamoDB client with short timeouts and botocore's standard retries (endpoint from
    `AWS_ENDPOINT_URL_DYNAMODB` when set, which boto3 honours by itself)."""
    import boto3
    from botocore.config import Config

    config = Config(
        connect_timeout=CONNECT_TIMEOUT_SECONDS,
        read_timeout=READ_TIMEOUT_SECONDS,
        retries={"mode": "standard", "total_max_attempts": MAX_ATTEMPTS},
    )
    return boto3.client("dynamodb", config=config)
