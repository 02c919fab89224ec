"""The shared Logger, Tracer and Metrics of every Quarry Lambda (Powertools).

The tracer is Powertools' own when tracing is on (in Lambda, unless POWERTOOLS_TRACE_DISABLED): it loads
the X-Ray SDK and patches botocore at init. Off — locally, in tests, under `sam local`, or disabled — its
decorators pass calls straight through and the X-Ray SDK (~150–350 ms of imports) is never loaded.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics.functions import is_metrics_disabled
from aws_lambda_powertools.metrics.provider.cloudwatch_emf.cloudwatch import AmazonCloudWatchEMFProvider
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


class QuietEMFProvider(AmazonCloudWatchEMFProvider):
    """Powertools' EMF provider that keeps nothing while metrics are off (POWERTOOLS_METRICS_DISABLED, as
    `quarry serve` sets). Powertools 3 only skips the print at flush: it keeps every value and prints them
    anyway at each 100th, so the local server wrote a growing JSON line to stdout every 100 searches.

    Powertools keeps one metric set per process, shared by every handler: where two run at once (the local
    server's engine and its job thread, a test driving the API and the consumer side by side) one's flush
    could empty the set while another serialised it. One lock per process orders them (in Lambda, one
    invocation at a time: never contended)."""

    _lock = threading.RLock()

    def add_metric(self, name: str, unit: Any, value: float, resolution: Any = 60) -> None:
        if not is_metrics_disabled():
            with self._lock:
                super().add_metric(name=name, unit=unit, value=value, resolution=resolution)

    def add_dimension(self, name: str, value: str) -> None:
        with self._lock:
            super().add_dimension(name=name, value=value)

    def add_metadata(self, key: str, value: Any) -> None:
        with self._lock:
            super().add_metadata(key=key, value=value)

    def clear_metrics(self) -> None:
        with self._lock:
            super().clear_metrics()

    def flush_metrics(self, raise_on_empty_metrics: bool = False) -> None:
        if not is_metrics_disabled():
            with self._lock:
                super().flush_metrics(raise_on_empty_metrics=raise_on_empty_metrics)


def build_metrics() -> Metrics:
    """The function-wide Metrics (Powertools' shared sets) over the quiet provider."""
    return Metrics(
        namespace=NAMESPACE,
        service=SERVICE,
        provider=QuietEMFProvider(
            namespace=NAMESPACE,
            service=SERVICE,
            metric_set=Metrics._metrics,
            dimension_set=Metrics._dimensions,
            metadata_set=Metrics._metadata,
            default_dimensions=Metrics._default_dimensions,
        ),
    )


logger = Logger(service=SERVICE)
tracer = build_tracer()
metrics = build_metrics()
