"""The one place errors become HTTP: the core error tree and request-validation errors → status + JSON body
`{error: {code, message, fields}}`. Never a stack trace; unexpected errors are logged and answered 500."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from aws_lambda_powertools.event_handler.exceptions import NotFoundError as RouteNotFound
from aws_lambda_powertools.event_handler.openapi.exceptions import (
    RequestUnsupportedContentType,
    RequestValidationError,
)

from core.conformance import field_hint, unprefixed
from core.errors import (
    ConfigurationError,
    ConflictError,
    ForbiddenError,
    InvalidInputError,
    NotFoundError,
    PayloadTooLargeError,
    QuarryError,
    StaleVersionError,
    TenantErasedError,
    UnauthorizedError,
    UnavailableError,
)
from handlers.http_api import json_answers
from handlers.observability.powertools import logger

STATUS: tuple[tuple[type[QuarryError], int], ...] = (
    (PayloadTooLargeError, 413),
    (InvalidInputError, 400),
    (UnauthorizedError, 401),
    (ForbiddenError, 403),
    (NotFoundError, 404),
    (TenantErasedError, 410),
    (ConflictError, 409),
    (UnavailableError, 503),
    (ConfigurationError, 500),
)
INTERNAL_MESSAGE = "internal error; it has been logged"
CONFIGURATION_MESSAGE = "the server is misconfigured; the operator will find the setting named in its log"
_MESSAGES = {
    "missing": "is required",
    "extra_forbidden": "is not a known field",
    "json_invalid": "is not valid JSON",
    "int_parsing": "must be an integer",
    "int_type": "must be an integer",
    "bool_parsing": "must be true or false",
}


def error_response(
    status: int,
    code: str,
    message: str,
    fields: Mapping[str, str] | None = None,
    headers: Mapping[str, str] | None = None,
) -> Response:
    """The JSON error body every failure uses."""
    body = {"error": {"code": code, "message": message, "fields": dict(fields or {})}}
    return Response(
        status_code=status,
        content_type=content_types.APPLICATION_JSON,
        body=body,
        headers=dict(headers or {}),
    )


def _field_path(loc: tuple[Any, ...]) -> str:
    parts = [str(p) for p in (loc[1:] if loc and loc[0] in ("body", "query", "path") else loc)]
    return ".".join(parts) or "body"


def validation_fields(errors: list[dict[str, Any]]) -> dict[str, str]:
    """Pydantic error list → {field.path: readable message} (docs/conformance.md#validation-messages)."""
    fields: dict[str, str] = {}
    for err in errors:
        loc = tuple(err.get("loc", ()))
        if err.get("type") == "json_invalid":
            fields["body"] = "is not valid JSON"
            continue
        message = _MESSAGES.get(err.get("type", ""), str(err.get("msg", "is invalid")))
        message = message.removeprefix("Value error, ")
        hint = field_hint(str(loc[-1])) if err.get("type") == "extra_forbidden" and loc else None
        if hint:  # another spelling of the field (docs/conformance.md#spellings): say Quarry's name
            message = f"{message}; {hint}"
        fields.setdefault(_field_path(loc), message[:1].lower() + message[1:])
    return fields


def register(app: APIGatewayHttpResolver) -> None:
    """Install the exception handlers on a resolver."""

    @app.exception_handler(RequestValidationError)
    def _invalid(exc: RequestValidationError) -> Response:
        fields = validation_fields(list(exc.errors()))
        return error_response(
            400, "invalid_input", "request is invalid: " + ", ".join(sorted(fields)), fields
        )

    @app.exception_handler(RequestUnsupportedContentType)
    def _media_type(exc: RequestUnsupportedContentType) -> Response:
        ctype = app.current_event.headers.get("content-type", "")
        return error_response(
            415,
            "unsupported_media_type",
            f"content type '{ctype}' is not supported",
            {"content-type": "must be application/json"},
        )

    @app.exception_handler(QuarryError)
    def _quarry(exc: QuarryError) -> Response:
        status, body = error_body(exc)
        headers = {"Retry-After": str(exc.retry_after)} if isinstance(exc, UnavailableError) else {}
        return error_response(status, **body["error"], headers=headers)

    @app.not_found
    def _not_found(exc: RouteNotFound) -> Response:
        event = app.current_event
        allowed = allowed_methods(app, event.path)
        if allowed:
            return error_response(
                405,
                "method_not_allowed",
                f"{event.http_method} is not allowed here",
                {"method": "must be one of " + ", ".join(allowed)},
                {"Allow": ", ".join(allowed)},
            )
        return error_response(404, "not_found", no_route_message(app, event.http_method, event.path))

    @app.exception_handler(Exception)
    def _unexpected(exc: Exception) -> Response:
        logger.exception("unhandled error")
        return error_response(500, "internal", INTERNAL_MESSAGE)


def error_body(exc: QuarryError) -> tuple[int, dict[str, Any]]:
    """The status and JSON error body of a core error, the same at every boundary (HTTP routes, MCP tools).
    A 5xx body says what the caller can act on; the backend's own text (hosts, ARNs, account ids, SDK
    exception names) goes to the log only, and a wrong setting is the deployment's fault (500, never 400)."""
    status = next((s for cls, s in STATUS if isinstance(exc, cls)), 500)
    fields = dict(getattr(exc, "fields", None) or {})
    code, message = exc.code, exc.message
    if isinstance(exc, ConfigurationError):
        logger.error("configuration error", extra={"detail": exc.message, "variables": exc.variables})
        message, fields = CONFIGURATION_MESSAGE, {}
    elif isinstance(exc, UnavailableError):
        logger.warning("backend unavailable", extra={"code": exc.code, "detail": exc.message})
        message, fields = exc.public_message, {}
    elif status >= 500:
        logger.error("backend refused a request", extra={"code": exc.code, "detail": exc.message})
        code, message, fields = "internal", INTERNAL_MESSAGE, {}
    elif isinstance(exc, StaleVersionError):
        fields = {"version": f"stored version is {exc.stored_version}"}
    return status, {"error": {"code": code, "message": message, "fields": fields}}


def configuration_failure(exc: ConfigurationError) -> dict[str, Any]:
    """A configuration error's `error_body` as a raw Lambda proxy result (for failures before the resolver runs)."""
    status, body = error_body(exc)
    return {
        "statusCode": status,
        "headers": {"Content-Type": "application/json"},
        "body": json_answers.dumps(body),
        "isBase64Encoded": False,
    }


def no_route_message(app: APIGatewayHttpResolver, method: str, path: str) -> str:
    """The 404's message; a path under the specifications' `/api` prefix is told Quarry's route
    (docs/conformance.md#api-prefix)."""
    message = f"no route for {method} {path}"
    bare = unprefixed(path)
    if bare is not None and allowed_methods(app, bare):
        message += f"; Quarry's routes have no /api prefix: use {method} {bare}"
    return message


def allowed_methods(app: APIGatewayHttpResolver, path: str) -> list[str]:
    """Methods registered for a path (to tell 405 from 404)."""
    routes = app._static_routes + app._dynamic_routes  # noqa: SLF001 - Powertools keeps no public list
    return sorted({r.method for r in routes if r.rule.match(path)})
