"""JWT claim shapes a Cognito user pool really issues, through `handlers.lambda_functions.api.lambda_handler` with the HTTP API
v2 JWT-authorizer event (requestContext.authorizer.jwt.claims / scopes): what each becomes, or 401/403.

Access token (Cognito): sub, client_id, token_use=access, scope "quarry/read …", username, no custom
claims unless the pre-token-generation trigger adds them (here: `tenant`). ID token: aud, token_use=id,
custom:* attributes (user-writable unless the app client forbids it), no scope.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from handlers.http_api.auth import Principal, principal_from_event
from handlers.http_api.routes.common import jwt_policy
from infra.wiring.root import set_container
from tests.conftest import FakeEmbedder, api_event, invoke, make_container

ISS = "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_Example"
USER_SUB = "7c1f5a2e-0b1d-4e61-9a55-3c3b2f7a9d10"
MACHINE_CLIENT = "4k2j9exampleclient"
ALL = "quarry/read quarry/write quarry/admin"


@pytest.fixture
def jwt_local(tmp_path: Path) -> Iterator[Any]:
    c = make_container(tmp_path / "data", FakeEmbedder(), jwt_client_tenants={MACHINE_CLIENT: "globex"})
    set_container(c)
    yield c
    set_container(None)


def access(scope: str | None = ALL, **extra: Any) -> dict[str, Any]:
    claims = {
        "sub": USER_SUB,
        "iss": ISS,
        "client_id": "3n4b5userappclient",
        "origin_jti": "0f0e",
        "event_id": "e1",
        "token_use": "access",
        "auth_time": "1795000000",
        "exp": "1795003600",
        "iat": "1795000000",
        "jti": "a1b2",
        "username": "alice",
        "tenant": "acme",
    }
    if scope is not None:
        claims["scope"] = scope
    claims.update(extra)
    return {k: v for k, v in claims.items() if v is not None}


def machine(scope: str = "quarry/read", **extra: Any) -> dict[str, Any]:
    claims = access(scope, sub=MACHINE_CLIENT, client_id=MACHINE_CLIENT, username=None, tenant=None)
    claims.update(extra)
    return {k: v for k, v in claims.items() if v is not None}


def id_token(**extra: Any) -> dict[str, Any]:
    claims = {
        "sub": USER_SUB,
        "aud": "3n4b5userappclient",
        "email_verified": "true",
        "token_use": "id",
        "auth_time": "1795000000",
        "iss": ISS,
        "cognito:username": "alice",
        "exp": "1795003600",
        "iat": "1795000000",
        "email": "alice@example.com",
        "custom:tenant": "acme",
    }
    claims.update(extra)
    return claims


def jwt_event(name: str, claims: dict[str, Any], *, api_scopes: bool = True) -> dict[str, Any]:
    """The sample with a JWT authorizer context as API Gateway builds it (scopes parsed from `scope`)."""
    event = api_event(name)
    jwt: dict[str, Any] = {"claims": copy.deepcopy(claims), "scopes": None}
    if api_scopes and "scope" in claims:
        jwt["scopes"] = str(claims["scope"]).split()
    event["requestContext"]["authorizer"] = {"jwt": jwt}
    return event


READ_WRITE_ADMIN = frozenset({"read", "write", "admin"})
CASES = [
    # (id, claims, expected principal (tenant, scopes, caller) or status, /search status, /context/eval status)
    ("quarry-all-scopes", access(), ("acme", READ_WRITE_ADMIN, USER_SUB), 200, 200),
    ("quarry-read-only", access("quarry/read"), ("acme", frozenset({"read"}), USER_SUB), 200, 403),
    ("foreign-resource-server-slash", access("billing/admin"), ("acme", frozenset(), USER_SUB), 403, 403),
    ("foreign-dotted", access("billing.admin"), ("acme", frozenset(), USER_SUB), 403, 403),
    ("foreign-url", access("https://other.example/admin"), ("acme", frozenset(), USER_SUB), 403, 403),
    ("quarry-dotted-spelling", access("quarry.admin quarry.read"), ("acme", frozenset(), USER_SUB), 403, 403),
    (
        "lookalike-prefix",
        access("xquarry/admin quarry/read/admin"),
        ("acme", frozenset(), USER_SUB),
        403,
        403,
    ),
    (
        "cognito-signin-scope",
        access("aws.cognito.signin.user.admin openid"),
        ("acme", frozenset(), USER_SUB),
        403,
        403,
    ),
    ("no-scope", access(None), ("acme", frozenset(), USER_SUB), 403, 403),
    ("machine-client-mapped", machine(), ("globex", frozenset({"read"}), MACHINE_CLIENT), 200, 403),
    ("id-token-custom-tenant", id_token(), 401, 401, 401),
    ("id-token-with-everything", id_token(scope=ALL, tenant="acme"), 401, 401, 401),
    ("token-use-missing", access(token_use=None), 401, 401, 401),
    ("token-use-unknown", access(token_use="refresh"), 401, 401, 401),
    ("tenant-claim-missing", access(tenant=None), 403, 403, 403),
    ("tenant-user-set-custom", access(tenant=None, **{"custom:tenant": "acme"}), 403, 403, 403),
    ("tenant-user-set-tenant-id", access(tenant=None, tenant_id="acme"), 403, 403, 403),
    ("client-and-claim-disagree", machine(tenant="acme"), 403, 403, 403),
]


@pytest.mark.parametrize(
    ("claims", "expected", "search", "admin"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_jwt_claims_map_to_principal_or_refusal(
    jwt_local: Any, claims: dict[str, Any], expected: Any, search: int, admin: int
) -> None:
    event = jwt_event("search", claims)
    if isinstance(expected, tuple):
        tenant, scopes, caller = expected
        assert principal_from_event(event, jwt_policy()) == Principal(tenant, scopes, caller, caller)
    assert invoke(event)[0] == search
    assert invoke(jwt_event("context_eval", claims))[0] == admin


def test_scopes_from_claims_alone_follow_the_same_rule(jwt_local: Any) -> None:
    """Some stages hand only `claims.scope` (jwt.scopes null): the same resource-server rule applies."""
    assert invoke(jwt_event("context_eval", access("billing/admin"), api_scopes=False))[0] == 403
    assert invoke(jwt_event("context_eval", access("quarry/admin"), api_scopes=False))[0] == 200


def test_a_jwt_tenant_sees_only_its_own_entities(jwt_local: Any) -> None:
    put = api_event("put_entity", tenant="acme", body={"content": "acme secret plan"})
    assert invoke(put)[0] in (200, 201)
    mine = jwt_event("search", access())
    mine["body"] = '{"query": "secret plan"}'
    theirs = jwt_event("search", machine())
    theirs["body"] = '{"query": "secret plan"}'
    assert [r["entity_id"] for r in invoke(mine)[1]["results"]] == ["mem-rate-limit"]
    assert invoke(theirs)[1]["results"] == []


# ---------------------------------------------------------------- caller bound to the token


def assemble(claims_or_key: dict[str, Any], caller: str, *, jwt: bool = True) -> int:
    if jwt:
        event = jwt_event("context_assemble", claims_or_key)
    else:
        event = api_event("context_assemble")
        event["requestContext"]["authorizer"] = {"lambda": claims_or_key}
    event["body"] = f'{{"query": "limiter", "caller": "{caller}"}}'
    return invoke(event)[0]


def test_a_token_speaks_only_for_its_own_caller(jwt_local: Any) -> None:
    assert assemble(access("quarry/read"), USER_SUB) == 200
    assert assemble(access("quarry/read"), "agent-other") == 403
    assert assemble(access("quarry/read quarry/admin"), "agent-other") == 200  # admin may act for others


def test_local_keys_keep_working_and_may_carry_a_caller(jwt_local: Any) -> None:
    assert assemble({"tenant": "acme", "scopes": ["read"]}, "anyone", jwt=False) == 200
    bound = {"tenant": "acme", "scopes": ["read"], "caller": "agent-a"}
    assert assemble(bound, "agent-a", jwt=False) == 200
    assert assemble(bound, "agent-b", jwt=False) == 403


def test_feedback_and_log_of_another_caller_are_refused(jwt_local: Any) -> None:
    event = jwt_event("context_assemble", access("quarry/read quarry/admin"))
    event["body"] = '{"query": "limiter", "caller": "agent-other"}'
    status, body = invoke(event)
    assert status == 200
    feedback = jwt_event("context_feedback", access("quarry/write"))
    feedback["body"] = f'{{"assembly_id": "{body["assembly_id"]}", "used_source_ids": []}}'
    assert invoke(feedback)[0] == 404  # another caller's assembly is not this token's to steer
    log = jwt_event("context_log", access("quarry/read"))
    log["queryStringParameters"] = {"caller": "agent-other"}
    log["rawQueryString"] = "caller=agent-other"
    assert invoke(log)[0] == 403
    own = jwt_event("context_log", access("quarry/read"))
    own["queryStringParameters"] = None
    own["rawQueryString"] = ""
    status, body = invoke(own)
    assert status == 200 and body["data"] == []


def test_the_jwt_sample_event_searches_as_its_tenant(jwt_local: Any) -> None:
    """events/search_jwt.json: a Cognito access token as API Gateway's JWT authorizer passes it."""
    from tests.conftest import load_event

    event = load_event("search_jwt")
    assert principal_from_event(event, jwt_policy()).tenant_id == "acme"
    assert invoke(event)[0] == 200
