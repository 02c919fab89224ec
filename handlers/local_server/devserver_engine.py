"""The local server's engine (docs/architecture.md, Entry points): the one thread of a worker process that
runs the Lambda handler, one request at a time, over a bounded queue (Powertools keeps the current event on
the resolver class, so two requests resolved at once in one process could swap tenants; handlers/local_server/devserver.py).
With a `Batcher`, the request about to run and those waiting behind it are first prepared together: their
searches' query embeddings made in one model call (docs/architecture.md#query-batching)."""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Protocol

DEFAULT_QUEUE = 32  # requests waiting per worker: ~32 × a few ms of work, so a queued request waits < 1 s

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]


@dataclass
class FakeLambdaContext:
    """Enough of a Lambda context for Powertools."""

    function_name: str = "quarry-local"
    memory_limit_in_mb: int = 1024
    invoked_function_arn: str = "arn:aws:lambda:local:000000000000:function:quarry-local"
    aws_request_id: str = ""

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


class Batcher(Protocol):
    """What the engine asks before running a request while others wait (handlers/local_server/query_batching.py): work
    the waiting requests share, done once for all of them (their query embeddings), and how to run a
    request with its share."""

    max_batch: int  # requests prepared together, the one about to run included

    def prepare(self, events: Sequence[dict[str, Any]]) -> list[Any]:
        """One share per event (None: nothing prepared for it)."""
        ...

    def run(self, handler: Handler, event: dict[str, Any], context: Any, share: Any) -> dict[str, Any]:
        """The handler's answer to `event`, given what was prepared for it."""
        ...


@dataclass(slots=True)
class _Job:
    """A request admitted to the engine: its event, its answer to come, what was prepared for it."""

    event: dict[str, Any]
    done: Future[dict[str, Any]] = field(default_factory=Future)
    share: Any = None
    prepared: bool = False


class Engine:
    """Runs the handler on one thread, one request at a time, admitting at most 1 + `queue` requests; with
    a `batcher`, the request about to run and those waiting are first prepared together
    (docs/architecture.md#query-batching)."""

    def __init__(self, handler: Handler, queue: int = DEFAULT_QUEUE, batcher: Batcher | None = None) -> None:
        self._handler = handler
        self._batcher = batcher
        self._slots = threading.BoundedSemaphore(1 + queue)
        self._jobs: deque[_Job] = deque()
        self._ready = threading.Condition()
        self._closed = False
        self._thread = threading.Thread(target=self._loop, name="quarry-engine", daemon=True)
        self._thread.start()

    def run(self, event: dict[str, Any]) -> dict[str, Any] | None:
        """The handler's result, or None at once when the engine is full (the caller answers 503)."""
        if not self._slots.acquire(blocking=False):
            return None
        try:
            job = _Job(event)
            with self._ready:
                if self._closed:
                    raise RuntimeError("the engine is closed")
                self._jobs.append(job)
                self._ready.notify()
            return job.done.result()
        finally:
            self._slots.release()

    def waiting(self) -> int:
        """Requests admitted and not yet taken by the engine thread."""
        with self._ready:
            return len(self._jobs)

    def _loop(self) -> None:
        """The engine thread: take the next request, prepare it with those waiting, run it; until closed
        and drained."""
        while True:
            with self._ready:
                while not self._jobs and not self._closed:
                    self._ready.wait()
                if not self._jobs:
                    return
                job = self._jobs.popleft()
                waiting = [j for j in self._jobs if not j.prepared]
            self._prepare(job, waiting)
            context = FakeLambdaContext(aws_request_id=job.event["requestContext"]["requestId"])
            try:
                if self._batcher is None:
                    result = self._handler(job.event, context)
                else:
                    result = self._batcher.run(self._handler, job.event, context, job.share)
            except BaseException as exc:  # noqa: BLE001 - handed to the connection thread, which answers 500
                job.done.set_exception(exc)
            else:
                job.done.set_result(result)

    def _prepare(self, job: _Job, waiting: list[_Job]) -> None:
        """Prepare `job`, unless it was while it waited, with the waiting requests not yet prepared, when
        there are two or more; a failure prepares nothing, and each request runs as it would alone. Only
        when the request about to run needs it: preparing whatever arrived since the last batch at every
        turn would leave the arrivals one or two a batch (measured: batches of 2 with 8 clients)."""
        if self._batcher is None or job.prepared:
            return
        group = [job, *waiting][: self._batcher.max_batch]
        if len(group) < 2:
            return
        try:
            shares = self._batcher.prepare([j.event for j in group])
        except Exception:
            logging.getLogger(__name__).exception("local server: preparing waiting requests failed")
            shares = [None] * len(group)
        for j, share in zip(group, shares, strict=True):
            j.share, j.prepared = share, True

    def close(self) -> None:
        """Run what was admitted, then stop the engine thread."""
        with self._ready:
            self._closed = True
            self._ready.notify_all()
        self._thread.join()
