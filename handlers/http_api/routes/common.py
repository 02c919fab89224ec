"""What every route needs: the caller's principal, the container, and the request id."""

from __future__ import annotations

import re
from collections.abc import Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import unquote

from aws_lambda_powertools.event_handler import Response, content_types

from core.conformance import unknown_parameters
from core.errors import InvalidInputError, QuarryError
from handlers.http_api.auth import PUBLIC_PATHS, JwtPolicy, Principal, principal_from_event
from infra.wiring.root import container

if TYPE_CHECKING:
    from aws_lambda_powertools.event_handler.api_gateway import BaseRouter
    from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEventV2

    from core.indexing.write_jobs import Job
    from infra.config.settings import Settings
    from infra.wiring.root import Container

_PATH_PARAMETER = re.compile(r"<(\w+)>")  # Powertools' dynamic route syntax
PRINCIPAL = "principal"  # where `caller` records the request's principal in the router's context
# The container the API handler resolved for the request it is answering (handlers/lambda_functions/api.py
# sets it around `app.resolve`): the routes, the fence, the caller's policy and the report read it there
# instead of asking the composition root again.
REQUEST_SERVICES: ContextVar[Container | None] = ContextVar("request_services", default=None)


def _policy(settings: Settings) -> JwtPolicy:
    return JwtPolicy(
        resource_server=settings.jwt_resource_server,
        tenant_claim=settings.jwt_tenant_claim,
        client_tenants=dict(settings.jwt_client_tenants),
        require_token_use=settings.jwt_require_token_use,
    )


def jwt_policy() -> JwtPolicy:
    """How this deployment maps JWT claims to a principal (QUARRY_JWT_*)."""
    return _policy(services().settings)


def caller(router: BaseRouter, scope: str) -> Principal:
    """The authenticated caller of the current request, holding `scope` (401/403 otherwise); recorded for
    the request's report (handlers/observability/observations.py)."""
    found = principal_from_event(router.current_event.raw_event, jwt_policy()).require(scope)
    router.append_context(**{PRINCIPAL: found})
    return found


def services() -> Container:
    """The container of the request being answered (REQUEST_SERVICES), else the cached composition root."""
    return REQUEST_SERVICES.get() or container()


TRACE_HEADERS = ("x-amzn-trace-id", "traceparent", "x-request-id")


def request_id(router: BaseRouter | type[BaseRouter]) -> str | None:
    """API Gateway's request id, else a trace id the client sent (logged with what the request did)."""
    event = cast("APIGatewayProxyEventV2", router.current_event)  # an HTTP API resolver's event
    found = event.request_context.request_id
    if found:
        return found
    headers = event.headers or {}
    return next((headers[h] for h in TRACE_HEADERS if headers.get(h)), None)


def accepted(job: Job) -> Response[dict[str, Any]]:
    """202 Accepted for a write job, pointing at its status route (logged by the route's report)."""
    return Response(
        status_code=202,
        content_type=content_types.APPLICATION_JSON,
        body=job.to_json(),
        headers={"Location": f"/jobs/{job.job_id}"},
    )


def decode_path_parameters(app: Any, next_middleware: Callable[[Any], Response]) -> Response:
    """Every path parameter percent-decoded exactly once, here, for every method and route (a route never
    decodes its own: `GET` and `DELETE` of one URL name one entity). Powertools hands the matched
    arguments (path parameters, query parameters, body) to the route from `app.context["_route_args"]`,
    after its request validation; the route's rule names the path parameters (`<entity_id>`)."""
    args = dict(app.context.get("_route_args") or {})
    for name in _PATH_PARAMETER.findall(app.context["_route"].path):
        if isinstance(args.get(name), str):
            args[name] = path_value(args[name], name)
    app.append_context(_route_args=args)
    return next_middleware(app)


# Routes that act on the fence themselves: erasing (again, after a failure) and reopening.
FENCE_ROUTES = frozenset({("DELETE", "/tenant"), ("POST", "/tenant/reopen")})


def fence_tenant(app: Any, next_middleware: Callable[[Any], Response]) -> Response:
    """Every request of a tenant is a unit of work behind its fence (core/tenancy/fencing.py): refused
    (410) while the tenant is erased; a request that may write (any method but GET) checks the fence again
    when it ends, and undoes itself when an erase raced it. The public routes hold no tenant data and are
    not fenced: /health answers without reading a fence, with or without a token."""
    event = app.current_event
    method = event.http_method.upper()
    if app.context["_route"].path in PUBLIC_PATHS:
        return next_middleware(app)
    try:
        tenant = principal_from_event(event.raw_event, jwt_policy()).tenant_id
    except QuarryError:  # no principal: the route answers 401/403 itself (or is public)
        return next_middleware(app)
    if (method, app.context["_route"].path) in FENCE_ROUTES:
        return next_middleware(app)
    gate = services().gate
    if method == "GET":
        gate.admit(tenant)
        return next_middleware(app)
    with gate.unit(tenant):
        return next_middleware(app)


def path_value(raw: str, name: str) -> str:
    """A path parameter percent-decoded (`caf%C3%A9` → `café`); 400 naming it when not valid UTF-8."""
    try:
        return unquote(raw, errors="strict")
    except UnicodeDecodeError as exc:
        raise InvalidInputError(
            f"path parameter {name} is not valid percent-encoded UTF-8", {name: "is not valid UTF-8"}
        ) from exc


def answer(model: type[Any], description: str = "Successful Response") -> dict[int, Any]:
    """The documented 200 of a route that builds its JSON itself (handlers/http_api/openapi.py)."""
    return {200: {"description": description, "content": {"application/json": {"model": model}}}}


def written_or_queued(model: type[Any]) -> dict[int, Any]:
    """A write answered at once (200 with `model`) or accepted as a job (202 with Location)."""
    from handlers.http_api.openapi_models import Job

    return {
        **answer(model, "Done within the request"),
        202: {
            "description": "Too large for one request: accepted as a job; follow it at `Location`",
            "headers": {"Location": {"description": "/jobs/{job_id}", "schema": {"type": "string"}}},
            "content": {"application/json": {"model": Job}},
        },
    }


def only_parameters(router: BaseRouter, *allowed: str) -> None:
    """400 naming each query parameter the route does not take (a specification's spelling is told Quarry's
    form)."""
    problems = unknown_parameters(router.current_event.query_string_parameters or {}, allowed)
    if problems:
        raise InvalidInputError("unknown query parameter: " + ", ".join(sorted(problems)), problems)
