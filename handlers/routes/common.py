"""What every route needs: the caller's principal, the container, and the request id."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast
from urllib.parse import unquote

from aws_lambda_powertools.event_handler import Response, content_types

from core.conformance import unknown_parameters
from core.errors import InvalidInputError
from handlers.auth import JwtPolicy, Principal, principal_from_event
from infra.wiring import container

if TYPE_CHECKING:
    from aws_lambda_powertools.event_handler.api_gateway import BaseRouter
    from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEventV2

    from core.jobs import Job
    from infra.settings import Settings
    from infra.wiring import Container


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
    """The authenticated caller of the current request, holding `scope` (401/403 otherwise)."""
    return principal_from_event(router.current_event.raw_event, jwt_policy()).require(scope)


def services() -> Container:
    """The cached composition root."""
    return container()


def request_id(router: BaseRouter) -> str | None:
    """API Gateway's request id, logged with what the request did."""
    event = cast("APIGatewayProxyEventV2", router.current_event)  # an HTTP API resolver's event
    return event.request_context.request_id


def accepted(job: Job) -> Response[dict[str, Any]]:
    """202 Accepted for a write job, pointing at its status route."""
    from handlers._observability import logger

    logger.info("job accepted", extra={"tenant": job.tenant_id, "job": job.job_id, "kind": job.kind,
                                       "items": job.items, "chunks": job.chunks, "parts": job.parts})  # fmt: skip
    return Response(
        status_code=202,
        content_type=content_types.APPLICATION_JSON,
        body=job.to_json(),
        headers={"Location": f"/jobs/{job.job_id}"},
    )


def path_value(raw: str, name: str) -> str:
    """A path parameter percent-decoded (`caf%C3%A9` → `café`); 400 naming it when not valid UTF-8."""
    try:
        return unquote(raw, errors="strict")
    except UnicodeDecodeError as exc:
        raise InvalidInputError(
            f"path parameter {name} is not valid percent-encoded UTF-8", {name: "is not valid UTF-8"}
        ) from exc


def only_parameters(router: BaseRouter, *allowed: str) -> None:
    """400 naming each query parameter the route does not take (a seed's spelling says Quarry's form)."""
    problems = unknown_parameters(router.current_event.query_string_parameters or {}, allowed)
    if problems:
        raise InvalidInputError("unknown query parameter: " + ", ".join(sorted(problems)), problems)
