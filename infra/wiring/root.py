"""The one composition root: settings → adapters → services (docs/architecture.md, The composition root).

`Container` below reads top to bottom as the list of parts, each with the function that builds it
(infra/wiring/adapters.py, infra/wiring/services.py) and the parts it is built from. A part is built on
first use and kept, so a warm Lambda container reuses its clients and a handler's cold start pays only for
the parts its first request uses. Any part can be given instead of built — `Container(settings,
embedder=fake)` or `container.override(index=failing)` — and the parts built from it are dropped, found
from the declared inputs. The process's handlers share one container: `container()`, installed by a test
or the dev server with `set_container`.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast, overload

from infra.wiring import adapters, services

if TYPE_CHECKING:
    from infra.config.settings import Settings

T = TypeVar("T")


class Part(Generic[T]):
    """One part of the container: the function that builds it and the parts it is built from."""

    def __init__(self, build: Callable[[Container], T], *inputs: str) -> None:
        self.build = build
        self.inputs = frozenset(inputs)
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, container: None, owner: type) -> Part[T]: ...
    @overload
    def __get__(self, container: Container, owner: type) -> T: ...
    def __get__(self, container: Container | None, owner: type) -> Part[T] | T:
        return self if container is None else container.part(self.name)


class _Inputs:
    """What a builder is given: the container's settings and the parts its declaration names, nothing
    else (reading another part fails, so the declarations cannot drift from the builders)."""

    def __init__(self, container: Container, part: str) -> None:
        self._container = container
        self._part = part

    def later(self) -> Container:
        """The whole container, for a part read when the built part runs rather than while it is built
        (`Container.later`)."""
        return self._container

    def __getattr__(self, name: str) -> Any:
        if name in PARTS and name not in PARTS[self._part].inputs:
            raise TypeError(f"the part {self._part} reads {name}, which its declaration does not name")
        return getattr(self._container, name)


class Container:
    """Adapters and services for one set of settings; every part is built once, on first use.

    A part given at construction or by `override` is used instead of building it; an override drops every
    part already built from the old one (transitively, by the inputs declared below), so services rebuild
    around the new part on next use; an overridden part stays until overridden again. A builder that reads
    a part it does not declare fails, so the declarations cannot drift from the builders."""

    clock = Part(adapters.clock)
    registry = Part(adapters.registry)
    configured_embedder = Part(adapters.configured_embedder)
    opensearch = Part(adapters.opensearch, "configured_embedder")
    index = Part(adapters.index, "opensearch")
    load_embedder = Part(adapters.load_embedder)
    embedder = Part(adapters.embedder, "configured_embedder", "opensearch", "load_embedder")
    vectors = Part(adapters.vectors, "embedder")
    cache = Part(adapters.cache)
    state = Part(adapters.state)
    snapshots = Part(adapters.snapshots, "state")
    fences = Part(adapters.fences, "state")
    triples = Part(adapters.triples)
    token_counters = Part(adapters.token_counters)
    fanout_executor = Part(adapters.fanout_executor)
    new_id = Part(adapters.new_id)
    job_payloads = Part(adapters.job_payloads)
    job_queue = Part(adapters.job_queue, "job_payloads")
    job_store = Part(adapters.job_store, "state")
    eval_queue = Part(adapters.eval_queue)

    search_settings = Part(services.search_settings)
    context_settings = Part(services.context_settings, "search_settings")
    reinforcement = Part(services.reinforcement, "index")
    integrity = Part(services.integrity)
    search = Part(
        services.search,
        *(
            "index",
            "vectors",
            "cache",
            "registry",
            "clock",
            "search_settings",
            "snapshots",
            "new_id",
            "integrity",
        ),
    )
    query_batch = Part(services.query_batch, "search", "vectors")
    embedding = Part(services.embedding, "vectors")
    fusion_tuning = Part(services.fusion_tuning, "index", "embedder", "registry", "search_settings")
    indexing = Part(services.indexing, "index", "vectors", "registry", "cache", "clock")
    catalog = Part(services.catalog, "index", "state", "registry")
    lifecycle = Part(
        services.lifecycle,
        *("index", "state", "cache", "job_store", "job_queue", "fences", "clock", "snapshots"),
    )
    gate = Part(services.gate, "fences", "clock")
    governed_retrieval = Part(services.governed_retrieval, "index", "state", "clock", "vectors")
    overlay_evaluation = Part(services.overlay_evaluation, "governed_retrieval", "state", "clock")
    context = Part(
        services.context,
        *("index", "vectors", "state", "registry", "clock", "new_id", "context_settings", "fanout_executor"),
        *("triples", "reinforcement", "integrity", "token_counters"),
    )
    jobs = Part(services.jobs, "job_store", "job_queue", "indexing", "registry", "clock", "gate")
    writes = Part(services.writes, "indexing", "jobs", "registry", "clock")
    learning = Part(services.learning, "state", "clock", "context_settings")

    def __init__(self, settings: Settings, **parts: Any) -> None:
        self.settings = settings
        self._built: dict[str, Any] = {}
        self._overridden: set[str] = set()
        self._lock = threading.RLock()  # one build at a time, as functools.cached_property did
        self.override(**parts)

    def part(self, name: str) -> Any:
        """The part `name`, built on first use (what `container.<name>` reads the first time: the part is
        then kept in the instance, where later reads find it without calling anything)."""
        with self._lock:
            if name not in self._built:
                self._built[name] = PARTS[name].build(cast("Container", _Inputs(self, name)))
            found = self._built[name]
            self.__dict__[name] = found
            return found

    def __setattr__(self, name: str, value: Any) -> None:
        if name in PARTS:  # it would keep the parts built from the old one
            raise TypeError(f"use Container.override({name}=...) to replace the part {name}")
        super().__setattr__(name, value)

    def later(self) -> Container:
        """The container itself. A builder calls it for a part it reads only when the built part runs — a
        cycle: the job queue's callbacks reach `jobs`, built on the queue — and declares nothing for it."""
        return self

    def override(self, **parts: Any) -> Container:
        """Use these parts instead of building them; drop the cached parts that were built from the old
        ones (their dependents, transitively). Returns the container, for chaining."""
        unknown = sorted(parts.keys() - PARTS.keys())
        if unknown:
            raise TypeError(
                f"Container has no part named {', '.join(unknown)} (parts: {', '.join(sorted(PARTS))})"
            )
        with self._lock:
            self._overridden |= parts.keys()
            for name in built_from(parts) - self._overridden:
                self._built.pop(name, None)
                self.__dict__.pop(name, None)
            self._built.update(parts)
            self.__dict__.update(parts)
        return self

    def close(self) -> None:
        """Stop the background work of the parts built so far and close what they hold open: a tool that
        ingests in-process and then removes the data directory (a benchmark, the evaluation harness) calls
        it first. Parts given as overrides belong to the caller and are left alone."""
        for name in ("index", "state", "cache", "snapshots"):
            part = None if name in self._overridden else self._built.get(name)
            close = getattr(part, "close", None)
            if callable(close):
                close()

    def check(self) -> None:
        """Build what configuration alone decides (no network): a wrong setting fails here, at start."""
        from infra.config.settings import configuration_error, missing_settings

        missing = missing_settings(self.settings) | self._data_dir_problems()
        if missing:
            raise configuration_error(missing)
        assert self.registry is not None and self.context_settings is not None

    def _data_dir_problems(self) -> dict[str, str]:
        """{"QUARRY_DATA_DIR": why} when a local adapter or the local key needs the directory and it cannot
        be made or written."""
        s = self.settings
        local = "sqlite" in (s.index_kind, s.state_kind, s.cache_kind) or not s.api_keys
        if not local:
            return {}
        try:
            s.data_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            return {"QUARRY_DATA_DIR": f"cannot be made: {exc.strerror} ({s.data_dir})"}
        if not os.access(s.data_dir, os.W_OK | os.X_OK):
            return {"QUARRY_DATA_DIR": f"is not writable ({s.data_dir})"}
        return {}

    def resume_jobs(self) -> None:
        """Locally (no queue configured), run the job thread now, so parts a stopped server left resume."""
        if self.settings.jobs_queue_url:
            return
        from infra.jobs.sqlite_queue import SqliteJobQueue

        queue = self.job_queue
        assert isinstance(queue, SqliteJobQueue)
        queue.start()


PARTS: dict[str, Part[Any]] = {name: part for name, part in vars(Container).items() if isinstance(part, Part)}


def built_from(replaced: Iterable[str]) -> set[str]:
    """Every part built, directly or transitively, from one of `replaced` (by the declared inputs)."""
    stale: set[str] = set()
    pending = list(replaced)
    while pending:
        used = pending.pop()
        for name, part in PARTS.items():
            if used in part.inputs and name not in stale:
                stale.add(name)
                pending.append(name)
    return stale


_lock = threading.Lock()
_container: Container | None = None


def container() -> Container:
    """The process's container, the one its handlers share: the installed one, else one built from the
    environment on first call (a Lambda function's cold start)."""
    from infra.config.settings import load_settings

    global _container
    with _lock:
        if _container is None:
            _container = Container(load_settings())
        return _container


def set_container(value: Container | None) -> None:
    """Install the container the process's handlers share (tests, the dev server's workers, a CLI command
    given --data-dir), or clear it so the next `container()` reads the environment again."""
    global _container
    with _lock:
        _container = value


def check_settings_in_lambda() -> None:
    """`check_settings` when running as a Lambda function, whose init is its cold start; elsewhere (the dev
    server, the CLI, a test importing a handler) nothing: the first invocation reads the settings."""
    from infra.config.runtime_environment import in_lambda

    if in_lambda():
        check_settings()


def check_settings() -> None:
    """Read and validate the settings now, building nothing: the indexing and nightly functions call it at
    their init, so a wrong or missing setting is the runtime's init error naming the variable."""
    from infra.config.settings import load_settings

    load_settings()
