"""The HTTP API Lambda (API Gateway HTTP API, payload v2): one resolver, routes split by Router."""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from core.errors import ConfigurationError, InvalidInputError
from handlers.http_api import body_checks, errors, gate, json_answers
from handlers.http_api.routes import catalog, context, entities, governance, jobs, lifecycle, search
from handlers.http_api.routes.common import (
    REQUEST_SERVICES,
    caller,
    decode_path_parameters,
    fence_tenant,
    services,
)
from handlers.observability.powertools import logger, metrics, tracer
from infra.timing import deadline
from infra.wiring import root as wiring
from infra.wiring.root import Container

VERSION = "0.1.0"
# Kept from the context's remaining time to build and send the answer once a backend call has used the
# rest: a hung backend becomes a 503 with Retry-After before Lambda stops the function at its timeout.
ANSWER_MARGIN_SECONDS = 1.0
MS_PER_SECOND = 1000.0

app = APIGatewayHttpResolver(enable_validation=True, serializer=json_answers.dumps)
body_checks.install(app)  # a body of the wrong top-level type: a 400, before validation takes a list's head
errors.register(app)
app.use(middlewares=[decode_path_parameters, fence_tenant])  # one percent-decoding; erased tenants fenced


app.include_router(search.router)
app.include_router(entities.router)
app.include_router(context.router)
app.include_router(governance.router)
app.include_router(jobs.router)
app.include_router(catalog.router)
app.include_router(lifecycle.router)


@app.get("/health", summary="Liveness (no token needed)", tags=["meta"], operation_id="health")
def health() -> dict[str, Any]:
    return {"status": "ok", "version": VERSION}


@app.get(
    "/whoami",
    summary="The caller's tenant, scopes and bound caller (what a console may offer)",
    tags=["meta"],
    operation_id="whoami",
)
def whoami() -> dict[str, Any]:
    who = caller(app, "read")
    return {"tenant": who.tenant_id, "scopes": sorted(who.scopes), "caller": who.caller}


@app.get(
    "/openapi.json",
    summary="This API's OpenAPI document (no token needed: it holds no data)",
    tags=["meta"],
    operation_id="getOpenApi",
)
def openapi() -> dict[str, Any]:
    return published_openapi(services())


def published_openapi(c: Container) -> dict[str, Any]:
    """The OpenAPI document of the deployment `c` (also `quarry openapi`); its corrections load here, on
    this route only, not at the function's init."""
    from handlers.http_api.openapi import document as openapi_document

    generated = json.loads(app.get_openapi_json_schema(title="Quarry", version=VERSION))
    return openapi_document(generated, c)


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
@tracer.capture_lambda_handler(capture_response=False, capture_error=False)  # tenant data never in X-Ray
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    try:  # the settings, read at the first invocation where the init did not read them (below)
        resolved = wiring.container()
        settings = resolved.settings
    except ConfigurationError as exc:  # a wrong setting: a logged 500 on every request, never a 400
        return errors.configuration_failure(exc)
    refused = gate.screen(event, settings.max_body_bytes, settings.ndjson_limit)
    if refused is not None:
        return refused
    left = context.get_remaining_time_in_millis() / MS_PER_SECOND - ANSWER_MARGIN_SECONDS
    request = REQUEST_SERVICES.set(resolved)  # the container resolved once for the whole request
    try:
        with deadline.answer_within(left):
            return app.resolve(event, context)
    finally:
        REQUEST_SERVICES.reset(request)


# In Lambda the init is the cold start: a wrong or missing setting fails it, naming the variable, as it does
# for the other functions (docs/deployment.md). Imported anywhere else (the dev server, the CLI, tests), this
# module reads nothing: the first invocation reads the settings.
wiring.check_settings_in_lambda()

__all__ = ["app", "lambda_handler", "InvalidInputError"]
