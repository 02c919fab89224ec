"""What every route needs: the caller's principal, the container, and the request id."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from aws_lambda_powertools.event_handler import Response, content_types

from core.errors import InvalidInputError
from handlers.auth import JwtPolicy, Principal, principal_from_event
from infra.wiring import container

if TYPE_CHECKING:
    from aws_lambda_powertools.event_handler.api_gateway import Router

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


def caller(router: Router, scope: str) -> Principal:
    """The authenticated caller of the current request, holding `scope` (401/403 otherwise)."""
    return principal_from_event(router.current_event.raw_event, jwt_policy()).require(scope)


def services() -> Container:
    """The cached composition root."""
    return container()


def request_id(router: Router) -> str | None:
    """API Gateway's request id, logged with what the request did."""
    return router.current_event.request_context.request_id


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


def answer(model: type[Any], description: str = "Successful Response") -> dict[int, Any]:
    """The documented 200 of a route that builds its JSON itself (handlers/openapi.py)."""
    return {200: {"description": description, "content": {"application/json": {"model": model}}}}


def written_or_queued(model: type[Any]) -> dict[int, Any]:
    """A write answered at once (200 with `model`) or accepted as a job (202 with Location)."""
    from handlers.openapi_models import Job

    return {
        **answer(model, "Done within the request"),
        202: {
            "description": "Too large for one request: accepted as a job; follow it at `Location`",
            "headers": {"Location": {"description": "/jobs/{job_id}", "schema": {"type": "string"}}},
            "content": {"application/json": {"model": Job}},
        },
    }
