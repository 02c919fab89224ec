"""Who is calling: tenant and scopes, read ONLY from the API Gateway authorizer context (never the body).

HTTP API v2 puts a Lambda authorizer's context under `requestContext.authorizer.lambda` and a JWT
authorizer's claims under `requestContext.authorizer.jwt.claims` (scopes under `.jwt.scopes`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from core.errors import ForbiddenError, UnauthorizedError

TENANT_CLAIMS = ("tenant", "custom:tenant", "tenant_id")
SCOPES = frozenset({"read", "write", "admin"})


@dataclass(frozen=True, slots=True)
class Principal:
    """The authenticated caller."""

    tenant_id: str
    scopes: frozenset[str]
    subject: str | None = None

    def require(self, scope: str) -> Principal:
        """Self when the scope was granted, else ForbiddenError naming it."""
        if scope not in self.scopes:
            raise ForbiddenError(f"this operation needs the '{scope}' scope", scope)
        return self


def _scopes(raw: Any) -> frozenset[str]:
    # HTTP API hands array claims to the function as a string like "[read write]".
    items = raw.strip("[]").replace(",", " ").split() if isinstance(raw, str) else list(raw or [])
    # Accept resource-server prefixes such as "quarry/read" or "https://api/quarry.read".
    names = {str(s).rsplit("/", 1)[-1].rsplit(".", 1)[-1] for s in items}
    return frozenset(names & SCOPES)


def principal_from_event(event: Mapping[str, Any]) -> Principal:
    """The Principal of an API Gateway v2 event, or UnauthorizedError when there is none."""
    authorizer = (event.get("requestContext") or {}).get("authorizer") or {}
    context = authorizer.get("lambda")
    if isinstance(context, Mapping) and context.get("tenant"):
        return Principal(str(context["tenant"]), _scopes(context.get("scopes")), context.get("sub"))
    jwt = authorizer.get("jwt")
    if isinstance(jwt, Mapping):
        claims = jwt.get("claims") or {}
        tenant = next((claims[c] for c in TENANT_CLAIMS if claims.get(c)), None)
        if tenant:
            raw = jwt.get("scopes") or claims.get("scope") or claims.get("scp")
            return Principal(str(tenant), _scopes(raw), claims.get("sub"))
    raise UnauthorizedError("missing or invalid bearer token")
