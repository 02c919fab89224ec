"""One rule for request bodies on every route: a JSON body whose top-level type is not the one its route's
request-body schema takes (an object, for every route today) is a 400 naming it (core/payload.py,
check_top_type), and nothing is applied from part of it.

It runs first, ahead of Powertools' request validation, which would otherwise take a JSON array for a
body that is not a list and hand the route its first element, dropping the rest. The type comes from the
same annotation Powertools publishes as the route's schema in /openapi.json, so the rule follows the
document rather than a list of routes. A route without a body (the NDJSON upload reads its own) is left
alone."""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.event_handler.middlewares.openapi_validation import (
    OpenAPIRequestValidationMiddleware,
)
from pydantic import TypeAdapter

from core.payload import check_top_type

if TYPE_CHECKING:
    from aws_lambda_powertools.event_handler import Response
    from aws_lambda_powertools.event_handler.api_gateway import Route
    from aws_lambda_powertools.event_handler.middlewares import NextMiddleware
    from aws_lambda_powertools.event_handler.types import EventHandlerInstance
    from aws_lambda_powertools.utilities.data_classes.common import BaseProxyEvent


@cache
def body_type(route: Route) -> str | None:
    """The JSON Schema type of `route`'s request body (None: no body, or a schema without one type)."""
    field = route.body_field
    if field is None:
        return None
    schema = TypeAdapter(field.field_info.annotation).json_schema()
    kind = schema.get("type")
    return kind if isinstance(kind, str) else None


def check_body(route: Route, event: BaseProxyEvent) -> None:
    """InvalidInputError when a JSON body's top-level type is not the one `route` takes; a missing body
    is left to the route's validation (which names the body as required)."""
    expected = body_type(route)
    if expected is None or not event.body:
        return
    try:
        value = event.json_body  # parsed once: Powertools' validation reads the same cached value
    except (
        ValueError
    ):  # handlers/http_api/gate.py parsed it already; an unparsable body is validation's to name
        return
    check_top_type(value, expected)


class BodyTypeFirst(OpenAPIRequestValidationMiddleware):
    """Powertools' request validation, preceded by the body's top-level type."""

    def handler(self, app: EventHandlerInstance, next_middleware: NextMiddleware) -> Response[Any]:
        check_body(app.context["_route"], app.current_event)
        return super().handler(app, next_middleware)


def install(app: Any) -> None:
    """Make `app`'s request validation check the body's top-level type first. Powertools builds each
    route's middleware stack with the resolver's request validation middleware first (before any
    `app.use` middleware), so that is the one place that runs before a list becomes its first element."""
    app._request_validation_middleware = BodyTypeFirst()  # noqa: SLF001 - no public hook runs earlier
