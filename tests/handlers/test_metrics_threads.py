"""Metrics flushed by handlers that run at once in one process (the API and the indexing consumer side by
side, as the local server's job thread and the cluster tests run them) never fail a request: Powertools keeps
one metric set per process, and a flush that found it non-empty must not find it emptied by another's."""

from __future__ import annotations

import contextlib
import io
import threading
import time

import pytest

from handlers.observability.powertools import metrics

ROUNDS_SECONDS = 2.0  # each thread adds and flushes for this long (a bound, not a timing assertion)


def test_two_threads_adding_and_flushing_metrics_at_once_never_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    from aws_lambda_powertools.metrics import MetricUnit

    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    failures: list[BaseException] = []
    flushes = [0, 0]

    def work(n: int) -> None:
        deadline = time.monotonic() + ROUNDS_SECONDS
        while time.monotonic() < deadline and not failures:
            try:
                metrics.add_metric(name=f"Thread{n}", unit=MetricUnit.Count, value=1)
                metrics.flush_metrics()
                flushes[n] += 1
            except BaseException as exc:  # noqa: BLE001 - any failure of a flush is the finding
                failures.append(exc)

    with contextlib.redirect_stdout(io.StringIO()):
        threads = [threading.Thread(target=work, args=(n,)) for n in (0, 1)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(ROUNDS_SECONDS + 10)
    assert not failures, failures[0]
    assert min(flushes) > 0
