"""Cognito pre-token-generation trigger (event version 2): puts the user's tenant into the ACCESS token.

Quarry takes the tenant only from a claim the caller cannot set (docs/architecture.md, Errors and
authentication). A user can rewrite their own `custom:*` attributes unless the app client forbids it, and ID
tokens are not API credentials, so the tenant comes from Cognito group membership, which only an administrator
changes: a user in exactly one group named `tenant:<id>` gets the claim `tenant: <id>` in their access token
(the claim name is QUARRY_JWT_TENANT_CLAIM, `tenant` by default). A user in no such group, or in several, gets
no tenant claim and Quarry answers 403. Machine clients (client credentials) have no user: map their app
client id to a tenant with QUARRY_JWT_CLIENT_TENANTS instead.

Access-token customisation needs the user pool's Essentials or Plus feature plan and the trigger
configured with LambdaVersion V2_0 (docs/api.md, Authentication and tenancy).
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from handlers.observability.powertools import logger

TENANT_GROUP_PREFIX = "tenant:"
TENANT_CLAIM = "tenant"


def tenant_of(groups: list[str]) -> str | None:
    """The one tenant named by `tenant:<id>` groups, or None (none, or ambiguous)."""
    tenants = {g.removeprefix(TENANT_GROUP_PREFIX) for g in groups if g.startswith(TENANT_GROUP_PREFIX)}
    tenants.discard("")
    return next(iter(tenants)) if len(tenants) == 1 else None


@logger.inject_lambda_context
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Add the tenant claim to the access token; never copy a user-writable attribute into it."""
    request = event.get("request") or {}
    groups = list((request.get("groupConfiguration") or {}).get("groupsToOverride") or [])
    tenant = tenant_of(groups)
    override: dict[str, Any] = {"claimsToSuppress": [TENANT_CLAIM]}
    if tenant is not None:
        override = {"claimsToAddOrOverride": {TENANT_CLAIM: tenant}}
    else:
        logger.warning("no single tenant group for this user: the token carries no tenant")
    response = event.setdefault("response", {})
    response["claimsAndScopeOverrideDetails"] = {"accessTokenGeneration": override}
    return event
