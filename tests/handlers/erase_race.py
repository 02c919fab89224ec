"""A race between DELETE /tenant and the tenant's own traffic, in several processes at once (as `quarry
serve` workers, or Lambda instances, share the stores): writers, searchers and job submitters keep at it
while another process erases the tenant, then everything stored is scanned for a byte of it.

Each process runs the handlers in-process on its own container (one request at a time: Powertools keeps
the current event on the resolver class) over the same stores; every request's start time and status
come back to the test, which checks that nothing the tenant sent after the erase answered was accepted.
"""

from __future__ import annotations

import multiprocessing
import queue
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

DOOMED, KEPT = "tenant-doomed-r8", "tenant-kept-r8"
SECRET, VISIBLE = "zebraquokkasecret", "lighthousekeeper"
ROLES = ("writes", "reads", "jobs")
WARMUP_SUCCESSES = 3  # accepted requests per role before the erase, so it really races them
AFTER_ERASE = 4  # requests per role started after the erase answered, all of which must be refused
DEADLINE_SECONDS = 240.0  # the whole race, on a busy shared machine

Result = tuple[str, str, float, int]  # (role, request, start time, status)


def _requests(role: str, n: int) -> list[tuple[str, dict[str, Any]]]:
    """What a process of `role` sends in its n-th round (every text carries SECRET)."""
    text = f"{SECRET} round {n} of the {role} harbor notes"
    if role == "writes":
        return [
            ("put_entity", {"path": f"/entities/memory/w-{n}", "body": {"content": text, "version": 1}}),
            (
                "bulk_entities",
                {
                    "body": {
                        "items": [
                            {"type": "task", "id": f"b-{n}-{i}", "title": text, "version": 1}
                            for i in range(3)
                        ]
                    }
                },
            ),  # fmt: skip
            ("put_overlay", {"path": f"/overlays/role-{n}", "body": {"mission": text, "version": "1.0"}}),
        ]
    if role == "reads":
        return [
            ("search", {"body": {"query": f"{SECRET} harbor {n}"}}),
            ("context_assemble", {"body": {"query": f"{SECRET} notes {n}", "caller": "agent"}}),
        ]
    items = [
        {"type": "memory", "id": f"j-{n}-{i}", "content": f"{text} item {i}", "version": 1} for i in range(8)
    ]
    return [("bulk_entities", {"body": {"items": items}})]  # above QUARRY_ASYNC_MIN_CHUNKS: a job (202)


def traffic(role: str, settings: dict[str, Any], stop: Any, out: Any) -> None:
    """A process sending the doomed tenant's `role` traffic until `stop` is set."""
    from infra.wiring.root import set_container
    from tests.conftest import FakeEmbedder, api_event, invoke, make_container

    options = dict(settings)
    container = make_container(Path(options.pop("data_dir")), FakeEmbedder(), **options)
    set_container(container)
    n = 0
    while not stop.is_set():
        n += 1
        for name, kwargs in _requests(role, n):
            started = time.time()
            status, _ = invoke(api_event(name, tenant=DOOMED, **kwargs))
            out.put((role, name, started, status))


def die_mid_part(settings: dict[str, Any], admitted: str, release: str) -> None:
    """A process whose job thread takes a queued part of the doomed tenant, says so by creating `admitted`
    once the part is admitted, waits until `release` exists (the erase has purged), writes the part's
    items and dies before its end-of-unit check: a crash, a kill -9, or a daemon thread cut off when its
    process exits."""
    import os

    from core.indexing.indexing_service import IndexingService
    from core.tenancy.fencing import TenantGate
    from infra.wiring.root import set_container
    from tests.conftest import FakeEmbedder, make_container

    bulk = IndexingService.bulk

    def after_the_erase(self: IndexingService, *args: Any, **kwargs: Any) -> Any:
        Path(admitted).touch()
        deadline = time.monotonic() + DEADLINE_SECONDS
        while not Path(release).exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        return bulk(self, *args, **kwargs)

    IndexingService.bulk = after_the_erase  # type: ignore[method-assign]
    TenantGate.settle = lambda self, tenant_id: os._exit(0)  # type: ignore[method-assign,assignment]
    options = dict(settings)
    container = make_container(Path(options.pop("data_dir")), FakeEmbedder(), **options)
    set_container(container)
    container.job_queue.start()
    time.sleep(DEADLINE_SECONDS)  # the job thread ends this process


def fill(tenant: str, word: str) -> None:
    """A tenant's data in every store: entities, a search cached, an assembly with feedback, an overlay."""
    from tests.conftest import api_event, invoke

    items = [
        {"type": "memory", "id": f"{word}-{i}", "content": f"{word} note {i} harbor", "version": 1}
        for i in range(3)  # within QUARRY_ASYNC_MIN_CHUNKS: written at once
    ]
    assert invoke(api_event("bulk_entities", tenant=tenant, body={"items": items}))[0] == 200
    deadline = time.monotonic() + 30  # an index refreshed every second shows the writes within it
    while not invoke(api_event("search", tenant=tenant, body={"query": f"{word} harbor"}))[1]["results"]:
        assert time.monotonic() < deadline, "the writes never became searchable"
    assembled = invoke(api_event("context_assemble", tenant=tenant, body={"query": word, "caller": "agent"}))[
        1
    ]
    used = {"assembly_id": assembled["assembly_id"], "used_source_ids": [assembled["sources"][0]["id"]]}
    assert invoke(api_event("context_feedback", tenant=tenant, body=used))[0] == 200
    overlay = {"mission": f"{word} mission", "version": "1.0"}
    assert (
        invoke(api_event("put_overlay", tenant=tenant, path=f"/overlays/{word}-role", body=overlay))[0] == 200
    )


def erase(tenant: str) -> dict[str, Any]:
    """DELETE /tenant as a client would send it: a 503 (a lock held by a racing writer) is retried."""
    from tests.conftest import api_event, invoke

    for _ in range(20):
        status, body = invoke(api_event("delete_tenant", tenant=tenant, body={"confirm": tenant}))
        if status != 503:
            assert status == 200, body
            return dict(body)
    raise AssertionError("the erase kept answering 503")


class Race:
    """One process per role sending the doomed tenant's traffic, and the results they report."""

    def __init__(self, settings: dict[str, Any]) -> None:
        ctx = multiprocessing.get_context("spawn")
        self._stop, self._out = ctx.Event(), ctx.Queue()
        self._procs = [
            ctx.Process(target=traffic, args=(r, settings, self._stop, self._out), daemon=True) for r in ROLES
        ]
        self.results: list[Result] = []
        self._deadline = time.monotonic() + DEADLINE_SECONDS

    def _count(self, role: str, keep: Callable[[Result], bool]) -> int:
        return sum(1 for r in self.results if r[0] == role and keep(r))

    def collect(self, keep: Callable[[Result], bool], wanted: int) -> None:
        """Read results until every role has `wanted` of them that `keep` accepts."""
        while any(self._count(role, keep) < wanted for role in ROLES):
            assert time.monotonic() < self._deadline, Counter((r[0], r[3]) for r in self.results)
            try:
                self.results.append(self._out.get(timeout=1.0))
            except queue.Empty:
                assert all(p.is_alive() for p in self._procs), "a traffic process died"

    def finish(self, erased_at: float) -> list[Result]:
        """Let each role send AFTER_ERASE requests after the erase answered, stop, return every result."""
        self.collect(lambda r: r[2] > erased_at, AFTER_ERASE)
        self.stop()
        return self.results

    def stop(self) -> None:
        """Stop the processes, reading what they still report: a process whose queue is not read cannot
        exit (its feeder thread waits to flush; Python's multiprocessing guidelines, "Joining processes
        that use queues")."""
        self._stop.set()
        while any(p.is_alive() for p in self._procs) and time.monotonic() < self._deadline:
            with suppress(queue.Empty):
                self.results.append(self._out.get(timeout=0.2))
        for proc in self._procs:
            proc.join(timeout=10)
            if proc.is_alive():
                proc.kill()
        while True:
            try:
                self.results.append(self._out.get_nowait())
            except queue.Empty:
                return


@contextmanager
def racing(settings: dict[str, Any]) -> Iterator[Race]:
    """The race, started and warmed up (every role had requests accepted); stopped on the way out."""
    race = Race(settings)
    for proc in race._procs:  # noqa: SLF001 - started here, where they are stopped
        proc.start()
    try:
        race.collect(lambda r: r[3] < 300, WARMUP_SUCCESSES)
        yield race
    finally:
        race.stop()


def check_race(results: list[Result], erased_at: float) -> None:
    """Accepted before the erase, refused (410) after it answered: nothing sent later got through."""
    late = [r for r in results if r[2] > erased_at]
    assert late and all(r[3] == 410 for r in late), Counter((r[1], r[3]) for r in late)
    assert any(r[3] in (200, 202) for r in results if r[2] < erased_at)


def data_bytes(data_dir: Path) -> bytes:
    """Every byte of every file under the data directory (SQLite file, WAL, vectors, keyword index)."""
    return b"".join(p.read_bytes() for p in sorted(data_dir.rglob("*")) if p.is_file())


def files_holding(data_dir: Path, *needles: str) -> list[str]:
    """The files under the data directory holding any of `needles`, relative to it (what a failed
    erase left behind, by name)."""
    found = []
    for path in sorted(data_dir.rglob("*")):
        if path.is_file():
            raw = path.read_bytes()
            found += [f"{path.relative_to(data_dir)}: {n}" for n in needles if n.encode() in raw]
    return found
