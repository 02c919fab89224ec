"""The Cognito pre-token-generation trigger (V2 event): the access token's tenant comes from admin-set
groups, never from a user-writable attribute."""

from __future__ import annotations

from typing import Any

import pytest

from handlers.lambda_functions.pretoken import lambda_handler
from handlers.local_server.devserver import FakeLambdaContext


def trigger(groups: list[str], **attributes: str) -> dict[str, Any]:
    event = {
        "version": "2",
        "triggerSource": "TokenGeneration_Authentication",
        "region": "eu-west-1",
        "userPoolId": "eu-west-1_Example",
        "userName": "alice",
        "callerContext": {"awsSdkVersion": "aws-sdk-unknown", "clientId": "3n4b5userappclient"},
        "request": {
            "userAttributes": {"sub": "7c1f", "email": "alice@example.com", **attributes},
            "groupConfiguration": {
                "groupsToOverride": groups,
                "iamRolesToOverride": [],
                "preferredRole": None,
            },
            "scopes": ["quarry/read"],
        },
        "response": {"claimsAndScopeOverrideDetails": None},
    }
    return lambda_handler(event, FakeLambdaContext(aws_request_id="t"))["response"][
        "claimsAndScopeOverrideDetails"
    ]


def test_one_tenant_group_becomes_the_access_token_tenant() -> None:
    details = trigger(["tenant:acme", "readers"], **{"custom:tenant": "globex"})
    assert details == {"accessTokenGeneration": {"claimsToAddOrOverride": {"tenant": "acme"}}}


@pytest.mark.parametrize("groups", [[], ["readers"], ["tenant:acme", "tenant:globex"], ["tenant:"]])
def test_no_single_tenant_group_means_no_tenant_claim(groups: list[str]) -> None:
    details = trigger(groups, **{"custom:tenant": "acme"})
    assert details == {"accessTokenGeneration": {"claimsToSuppress": ["tenant"]}}
