"""The shared Logger, Tracer and Metrics of every Quarry Lambda (Powertools).

The tracer is Powertools' own when tracing is on (in Lambda, unless POWERTOOLS_TRACE_DISABLED): it loads
the X-Ray SDK and patches botocore at init. Off — locally, in tests, under `sam local`, or disabled — its
decorators pass calls straight through and the X-Ray SDK (~150–350 ms of imports) is never loaded.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.tracing.tracer import Tracer

SERVICE = "quarry"
NAMESPACE = "Quarry"

F = TypeVar("F", bound=Callable[..., Any])


class UntracedTracer:
    """The part of Powertools' Tracer the handlers use, passing calls through (tracing is off). A provider
    set on it (another tracing backend, or a test's recorder) turns Powertools' tracing on over it."""

    disabled = True
    provider: Any = None

    def capture_lambda_handler(self, lambda_handler: F | None = None, **options: Any) -> Any:
        if lambda_handler is None:
            return lambda handler: self.capture_lambda_handler(handler, **options)
        handler = lambda_handler

        @functools.wraps(handler)
        def run(event: Any, context: Any) -> Any:
            if self.provider is None:
                return handler(event, context)
            traced = Tracer(service=SERVICE, disabled=False, auto_patch=False, provider=self.provider)
            return traced.capture_lambda_handler(handler, **options)(event, context)

        return run

    def capture_method(self, method: F | None = None, **_: Any) -> Any:
        return method if method is not None else (lambda function: function)

    def put_annotation(self, key: str, value: Any) -> None:
        return None

    def put_metadata(self, key: str, value: Any, namespace: str | None = None) -> None:
        return None


def build_tracer() -> Tracer | UntracedTracer:
    """Powertools' Tracer where it would trace, else the pass-through one (same rules as Powertools)."""
    if Tracer._is_tracer_disabled():  # env: POWERTOOLS_TRACE_DISABLED, LAMBDA_TASK_ROOT, sam local
        return UntracedTracer()
    return Tracer(service=SERVICE)


logger = Logger(service=SERVICE)
tracer = build_tracer()
metrics = Metrics(namespace=NAMESPACE, service=SERVICE)
