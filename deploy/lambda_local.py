"""The Lambda functions run locally as Lambda runs them, without a container engine.

    python -m deploy.lambda_local invoke ApiFunction events/search.json   (`make invoke`)
    python -m deploy.lambda_local serve --port 3000                       (`make lambda-serve`)

`invoke` is what `sam local invoke` does: the function's artifact in the Lambda Runtime Interface
Emulator (deploy/lambda_emulator.py), its environment from template.yaml with the parameters of
samconfig.toml's `local_invoke` table, DynamoDB, SQS and EventBridge on a fresh moto_server with the
stack's tables and queues, the OpenSearch domain replaced by the local node (QUARRY_OPENSEARCH_URL, set by
scripts/with-opensearch.sh); it prints the function's response, then the emulator's REPORT line.

`serve` is what `sam local start-api` does: the dev server's HTTP front (handlers/local_server/devserver.py: body
limits, bearer keys, HTTP API payload 2.0 events) in front of the API function in the emulator; the key's
identity reaches the function as the JWT authorizer's claims (deploy/event_sources.py), with the
resource server's scopes and the tenant claim the template configures.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from deploy.event_sources import Schedule, SqsEventSource, jwt_authorizer_context
from deploy.lambda_backends import local_environment, moto_server, provision
from deploy.lambda_builds import build_artifact, build_layer
from deploy.lambda_emulator import EmulatedFunction
from deploy.lambda_template import Stack, parameter_overrides

TOKEN_SECONDS = 3600
GATEWAY_ERROR = {  # what an HTTP API answers when its Lambda integration fails (error or timeout)
    "statusCode": 500,
    "headers": {"Content-Type": "application/json"},
    "body": json.dumps({"message": "Internal Server Error"}),
}


class Deployment:
    """The stack on local servers: its resources provisioned, its functions ready to start."""

    def __init__(self, stack: Stack, moto_url: str, opensearch_url: str, environment: Mapping[str, str]):
        self.stack = stack
        self.moto_url = moto_url
        self.opensearch_url = opensearch_url
        self.environment = {**local_environment(moto_url, opensearch_url), **environment}
        self._stop = ExitStack()

    def function(
        self, logical_id: str, timeout: int | None = None, layers: bool = True, **environment: str
    ) -> EmulatedFunction:
        """The function in a new emulator (started on its first invocation, stopped with the deployment);
        `environment` overrides variables, `timeout` the template's Timeout, `layers=False` leaves /opt empty."""
        spec = self.stack.function(logical_id)
        if len(spec.layers) > 1:
            raise NotImplementedError("one layer per function (template.yaml has one)")
        layer = build_layer(self.stack, spec.layers[0]) if spec.layers and layers else None
        emulated = EmulatedFunction(
            spec, build_artifact(logical_id), layer, {**self.environment, **environment}, timeout
        )
        self._stop.callback(emulated.stop)
        return emulated

    def event_source(
        self, mapping_id: str, function: EmulatedFunction, batching_window: float | None = None
    ) -> SqsEventSource:
        """The SQS event source mapping `mapping_id` (SAM names it <Function><Event>) driving `function`."""
        return SqsEventSource(self.stack, mapping_id, function, self.moto_url, batching_window)

    def schedule(self, rule_id: str, function: EmulatedFunction) -> Schedule:
        """The schedule rule `rule_id` (SAM names it <Function><Event>) targeting `function`."""
        return Schedule(self.stack, rule_id, function)

    def close(self) -> None:
        self._stop.close()


@contextmanager
def deployment(
    command: str,
    opensearch_url: str,
    overrides: Mapping[str, str] | None = None,
    stack_name: str = "quarry-local",
    visibility_timeout: int | None = None,
    environment: Mapping[str, str] | None = None,
) -> Iterator[Deployment]:
    """A fresh moto_server with the stack's resources, for the block; `overrides` win over samconfig's
    parameters for `command` (local_invoke, local_start_api)."""
    stack = Stack(stack_name, {**parameter_overrides(command), **(overrides or {})})
    with moto_server() as moto_url:
        provision(stack, moto_url, opensearch_url, visibility_timeout)
        local = Deployment(stack, moto_url, opensearch_url, environment or {})
        try:
            yield local
        finally:
            local.close()


def access_token_claims(grant: Mapping[str, Any], stack: Stack) -> dict[str, Any]:
    """The access-token claims a configured local identity (a QUARRY_API_KEYS entry: tenant, scopes,
    caller) stands for: the template's resource server's scopes and its tenant claim."""
    server, now = stack.parameters["JwtResourceServer"], int(time.time())
    subject = str(grant.get("caller") or f"local-{grant['tenant']}")
    return {
        "sub": subject,
        "iss": stack.parameters["JwtIssuer"],
        "client_id": stack.parameters["JwtAudience"][0],
        "token_use": "access",
        "scope": " ".join(f"{server}/{scope}" for scope in grant.get("scopes", [])),
        "auth_time": now,
        "iat": now,
        "exp": now + TOKEN_SECONDS,
        "jti": str(uuid.uuid4()),
        "username": subject,
        stack.parameters["JwtTenantClaim"]: grant["tenant"],
    }


def gateway(function: EmulatedFunction, stack: Stack) -> Any:
    """A dev-server handler that hands each event to the emulated API function, as API Gateway does: the
    key's grant becomes the JWT authorizer's claims; a failed invocation is API Gateway's 500."""

    def handle(event: dict[str, Any], _context: Any) -> dict[str, Any]:
        authorizer = event["requestContext"].get("authorizer") or {}
        if "lambda" in authorizer:
            claims = access_token_claims(authorizer["lambda"], stack)
            event["requestContext"]["authorizer"] = jwt_authorizer_context(claims)
        answer = function.invoke(event)
        if answer.function_error:
            print(answer.body.decode(errors="replace"), file=sys.stderr)
            return dict(GATEWAY_ERROR)
        return dict(answer.payload)

    return handle


def _opensearch_url() -> str:
    from infra.config.settings import load_settings

    url = load_settings().opensearch_url
    if not url:
        sys.exit(
            "no OpenSearch node: run through `make invoke` / `make lambda-serve`, or set QUARRY_OPENSEARCH_URL"
        )
    return url


def invoke(function_id: str, event_file: Path, overrides: Mapping[str, str]) -> int:
    event = json.loads(event_file.read_text())
    with deployment("local_invoke", _opensearch_url(), overrides) as local:
        function = local.function(function_id)
        answer = function.invoke(event)
        print(function.output(), file=sys.stderr)
    print(answer.body.decode(errors="replace"))
    print(answer.report.line if answer.report else f"(no REPORT line: the emulator answered {answer.status})")
    return 1 if answer.function_error else 0


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _stop_on_signals() -> None:
    """Ctrl-C and SIGTERM stop the server, the emulator and moto_server, whatever this process inherited:
    a background job of a non-interactive shell starts with SIGINT ignored, and Python then leaves it so."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _interrupt)


def serve(host: str, port: int, overrides: Mapping[str, str]) -> None:
    from handlers.local_server.devserver import make_server
    from handlers.local_server.local_key import local_keys
    from infra.config.settings import load_settings

    settings = load_settings()
    keys, fresh = local_keys(settings.api_keys, settings.data_dir)
    _stop_on_signals()
    with deployment("local_start_api", _opensearch_url(), overrides) as local:
        api = local.function("ApiFunction").start()
        server = make_server(host, port, keys, gateway(api, local.stack), settings.max_body_bytes, queue=8)
        print(f"Quarry API (ApiFunction in the Lambda emulator) on http://{host}:{server.server_address[1]}")
        if fresh:
            print(f"  bearer key (tenant 'dev', every scope): {fresh}")
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            server.server_close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deploy.lambda_local", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("invoke", help="invoke one function with one event (sam local invoke)")
    run.add_argument("function", help="the function's logical id in template.yaml")
    run.add_argument("event", type=Path, help="the event file (events/*.json)")
    api = sub.add_parser(
        "serve", help="the HTTP API in front of the emulated API function (sam local start-api)"
    )
    api.add_argument("--host", default="127.0.0.1")
    api.add_argument("--port", type=int, default=3000)
    for command in (run, api):
        command.add_argument(
            "--parameter-overrides", nargs="*", default=[], metavar="KEY=VALUE", help="template parameters"
        )
    args = parser.parse_args(argv)
    overrides = dict(pair.split("=", 1) for pair in args.parameter_overrides)
    if args.command == "invoke":
        return invoke(args.function, args.event, overrides)
    serve(args.host, args.port, overrides)
    return 0


if __name__ == "__main__":
    sys.exit(main())
