"""Who is calling: tenant, scopes and caller, read ONLY from the API Gateway authorizer context (never the body).

HTTP API v2 puts a Lambda authorizer's context under `requestContext.authorizer.lambda` and a JWT
authorizer's claims under `requestContext.authorizer.jwt.claims` (scopes under `.jwt.scopes`).

- Lambda authorizer context (the local dev server's API keys, or an authorizer you run): it is written
  server-side, so `tenant`, `scopes` (plain read/write/admin) and an optional `caller` are taken as given.
  Without `caller` the principal may act as any caller of its tenant (local keys, as before).
- JWT (Cognito or another OIDC provider): only access tokens (`token_use: access`; an ID token, or a token
  without `token_use` while `require_token_use` is on, is 401); only scopes of Quarry's own resource
  server (`<identifier>/read|write|admin`) count — another API's `admin` or Cognito's
  `aws.cognito.signin.user.admin` grant nothing; the tenant comes from a claim added server-side (the
  pre-token-generation trigger, `handlers/lambda_functions/pretoken.py`) or from the app client id (machine clients), never
  from a user-writable `custom:` attribute; the caller is bound to the token's `sub`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from core.errors import ForbiddenError, UnauthorizedError

SCOPES = frozenset({"read", "write", "admin"})
PUBLIC_PATHS = frozenset({"/health", "/openapi.json"})  # no token needed: neither holds tenant data
ACT_AS_SCOPE = "admin"  # acting for another caller (its memory, its learning) needs admin


@dataclass(frozen=True, slots=True)
class JwtPolicy:
    """How JWT claims map to a Principal (settings QUARRY_JWT_*)."""

    resource_server: str = "quarry"
    tenant_claim: str = "tenant"
    client_tenants: Mapping[str, str] = field(default_factory=dict)
    require_token_use: bool = True


@dataclass(frozen=True, slots=True)
class Principal:
    """The authenticated caller: its tenant, scopes and (when bound) the only caller it may speak for."""

    tenant_id: str
    scopes: frozenset[str]
    subject: str | None = None
    caller: str | None = None

    def require(self, scope: str) -> Principal:
        """Self when the scope was granted, else ForbiddenError naming it."""
        if scope not in self.scopes:
            raise ForbiddenError(f"this operation needs the '{scope}' scope", scope)
        return self

    @property
    def acts_for_anyone(self) -> bool:
        """True when not bound to one caller (a local key without `caller`), or holding admin."""
        return self.caller is None or ACT_AS_SCOPE in self.scopes

    @property
    def bound_caller(self) -> str | None:
        """The one caller this principal speaks for; None when it may act for any caller."""
        return None if self.acts_for_anyone else self.caller

    def may_act_as(self, caller: str) -> bool:
        """True when this principal may read or steer `caller`'s assemblies, memory and learning."""
        return self.acts_for_anyone or caller == self.caller

    def act_as(self, caller: str) -> str:
        """`caller` when this principal may speak for it, else ForbiddenError."""
        if not self.may_act_as(caller):
            raise ForbiddenError(
                f"this token speaks for caller '{self.caller}' only; acting for another needs '{ACT_AS_SCOPE}'",
                ACT_AS_SCOPE,
            )
        return caller


def _items(raw: Any) -> list[str]:
    # HTTP API hands array claims to the function as a string like "[read write]".
    if isinstance(raw, str):
        return raw.strip("[]").replace(",", " ").split()
    return [str(s) for s in raw or []]


def _plain_scopes(raw: Any) -> frozenset[str]:
    return frozenset(_items(raw)) & SCOPES


def _jwt_scopes(raw: Any, resource_server: str) -> frozenset[str]:
    """Only `<resource_server>/<scope>` counts: other resource servers' scopes grant nothing."""
    prefix = resource_server + "/"
    return frozenset(s.removeprefix(prefix) for s in _items(raw) if s.startswith(prefix)) & SCOPES


def _from_lambda(context: Mapping[str, Any]) -> Principal:
    caller = context.get("caller")
    return Principal(
        str(context["tenant"]),
        _plain_scopes(context.get("scopes")),
        context.get("sub"),
        str(caller) if caller else None,
    )


def _jwt_tenant(claims: Mapping[str, Any], policy: JwtPolicy) -> str:
    from_claim = claims.get(policy.tenant_claim)
    from_client = policy.client_tenants.get(str(claims.get("client_id") or ""))
    if from_claim and from_client and str(from_claim) != from_client:
        raise ForbiddenError("the token's tenant and its app client's tenant disagree", "tenant")
    tenant = from_claim or from_client
    if not tenant:
        raise ForbiddenError("the token carries no tenant Quarry trusts", "tenant")
    return str(tenant)


def _from_jwt(jwt: Mapping[str, Any], policy: JwtPolicy) -> Principal:
    claims = jwt.get("claims") or {}
    token_use = claims.get("token_use")
    if token_use != "access" and (token_use is not None or policy.require_token_use):
        raise UnauthorizedError("only access tokens are accepted (not ID tokens)")
    raw = jwt.get("scopes") or claims.get("scope") or claims.get("scp")
    subject = claims.get("sub") or claims.get("client_id")
    return Principal(
        _jwt_tenant(claims, policy),
        _jwt_scopes(raw, policy.resource_server),
        str(subject) if subject else None,
        str(subject) if subject else "",
    )


def principal_from_event(event: Mapping[str, Any], policy: JwtPolicy | None = None) -> Principal:
    """The Principal of an API Gateway v2 event, or UnauthorizedError/ForbiddenError."""
    authorizer = (event.get("requestContext") or {}).get("authorizer") or {}
    context = authorizer.get("lambda")
    if isinstance(context, Mapping) and context.get("tenant"):
        return _from_lambda(context)
    jwt = authorizer.get("jwt")
    if isinstance(jwt, Mapping) and jwt.get("claims"):
        return _from_jwt(jwt, policy or JwtPolicy())
    raise UnauthorizedError("missing or invalid bearer token")
