"""`Quarry`: the synchronous client (httpx.Client). `AsyncQuarry` (quarry_client._async) mirrors it."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import Any, Literal, TypeVar, Unpack

import httpx

from quarry_client import _operations as ops
from quarry_client import models as m
from quarry_client._base import (
    DEFAULT_TIMEOUT,
    JOB_POLL_SECONDS,
    JOB_WAIT_SECONDS,
    WriteState,
    answer,
    export_records,
    request_of,
    settings,
)
from quarry_client._errors import APIConnectionError, WaitTimeoutError, retry_after
from quarry_client._retry import RETRIED_STATUSES, RetryPolicy

T = TypeVar("T")


class Write(WriteState):
    """A bulk or corpus write: `done` at once, or a job; `wait()` follows the job until it is done."""

    def __init__(self, client: Quarry, answer: Any) -> None:
        super().__init__(answer)
        self._client = client

    def wait(self, timeout: float = JOB_WAIT_SECONDS, interval: float = JOB_POLL_SECONDS) -> Write:
        """Poll GET /jobs/{id} until the job is done (WaitTimeoutError after `timeout` seconds)."""
        deadline = time.monotonic() + timeout
        while self.job is not None and self.job.status != "done":
            if time.monotonic() >= deadline:
                raise WaitTimeoutError(
                    f"job {self.job.job_id} still {self.job.status} after {timeout} s", self.job
                )
            time.sleep(interval)
            self.job = self._client.get_job(self.job.job_id)
        return self


class Quarry:
    """Quarry's HTTP API. `base_url` and `api_key` default to QUARRY_URL and QUARRY_API_KEY; 429 and 503
    are retried within `retry.total_seconds`, honouring Retry-After; errors raise typed APIError subclasses."""

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        retry: RetryPolicy | None = None,
        timeout: httpx.Timeout | float = DEFAULT_TIMEOUT,
        http_client: httpx.Client | None = None,
    ) -> None:
        self._settings = settings(base_url, api_key, retry)
        self._http = http_client or httpx.Client(timeout=timeout)
        self._http.base_url = httpx.URL(self._settings.base_url)
        self._http.headers.update(self._settings.headers)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Quarry:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _send(self, call: ops.Call[T]) -> T:
        policy = self._settings.retry
        deadline = time.monotonic() + policy.total_seconds
        attempt = 0
        while True:
            attempt += 1
            try:
                response = self._http.request(**request_of(call))
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:  # never reached the server
                pause = policy.wait(attempt, None, deadline - time.monotonic())
                if pause is None:
                    raise APIConnectionError(f"{call.method} {call.path}: {exc}") from exc
                time.sleep(pause)
                continue
            except httpx.HTTPError as exc:  # it may have run: not repeated blindly
                raise APIConnectionError(f"{call.method} {call.path}: {exc}") from exc
            if response.status_code in RETRIED_STATUSES:
                pause = policy.wait(attempt, retry_after(response), deadline - time.monotonic())
                if pause is not None:
                    time.sleep(pause)
                    continue
            return answer(call, response)  # type: ignore[no-any-return]

    # -- search ---------------------------------------------------------------------------------------

    def embed(self, texts: Sequence[str], kind: Literal["query", "passage"] = "query") -> m.EmbedResponse:
        """The deployment's vectors for `texts` (POST /embed): `query` to send as a search's `query_vector`,
        `passage` to send as a write's `embedding`."""
        return self._send(ops.embed(texts, kind))

    def search(self, query: str, **options: Unpack[ops.SearchOptions]) -> m.SearchResponse:
        """One page of hybrid search (POST /search)."""
        return self._send(ops.search(query, options))

    def search_pages(self, query: str, **options: Unpack[ops.SearchOptions]) -> Iterator[m.SearchResponse]:
        """Every page of a search, following `next_cursor`, over a snapshot taken by the first page
        (`keep_alive`, default PAGING_KEEP_ALIVE_SECONDS): writes to the tenant meanwhile change nothing,
        each entity of the first page's ranking comes once. A page read after the snapshot lapsed raises
        ConflictError `cursor_expired`."""
        options.setdefault("keep_alive", ops.PAGING_KEEP_ALIVE_SECONDS)
        while True:
            page = self.search(query, **options)
            yield page
            if not page.next_cursor:
                return
            options["cursor"] = page.next_cursor

    def iter_search(self, query: str, **options: Unpack[ops.SearchOptions]) -> Iterator[m.SearchResult]:
        """Every hit of a search, page after page: each entity present when it started, once, even while
        the tenant is written (see `search_pages`)."""
        for page in self.search_pages(query, **options):
            yield from page.results

    # -- entities -------------------------------------------------------------------------------------

    def get_entity(self, entity_type: str, entity_id: str) -> m.EntityOut:
        return self._send(ops.get_entity(entity_type, entity_id))

    def list_entities(
        self, entity_type: str | None = None, *, limit: int | None = None, cursor: str | None = None
    ) -> m.EntityPage:
        return self._send(ops.list_entities(entity_type, limit, cursor))

    def iter_entities(
        self, entity_type: str | None = None, *, page_size: int | None = None
    ) -> Iterator[m.EntityOut]:
        """Every stored entity (of a type), newest first, across pages."""
        cursor = None
        while True:
            page = self.list_entities(entity_type, limit=page_size, cursor=cursor)
            yield from page.data
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    def put_entity(self, entity_type: str, entity_id: str, fields: ops.Body) -> m.WriteResponse:
        return self._send(ops.put_entity(entity_type, entity_id, fields))

    def patch_entity(self, entity_type: str, entity_id: str, fields: ops.Body) -> m.WriteResponse:
        return self._send(ops.patch_entity(entity_type, entity_id, fields))

    def delete_entity(
        self, entity_type: str, entity_id: str, *, version: int | None = None
    ) -> m.WriteResponse:
        return self._send(ops.delete_entity(entity_type, entity_id, version))

    def bulk_write(self, items: Sequence[ops.Body]) -> Write:
        """POST /entities: typed items (`TaskItem(...)`, ...) or dicts; `.wait()` when it became a job."""
        return Write(self, self._send(ops.bulk_write(items)))

    def load_corpus(self, documents: Sequence[ops.Body]) -> Write:
        """POST /corpus; `.wait()` when it became a job."""
        return Write(self, self._send(ops.load_corpus(documents)))

    def batch_get_entities(self, refs: Sequence[tuple[str, str] | ops.Body]) -> m.BatchGetResponse:
        """Up to 100 entities in one call (POST /entities/batch-get): `(type, id)` pairs or `EntityRef`s;
        `found` in the order asked, `missing` the rest."""
        return self._send(ops.batch_get_entities(refs))

    def upload_entities(
        self,
        lines: Sequence[ops.Body],
        *,
        entity_type: str | None = None,
        id_field: str | None = None,
        field_map: str | None = None,
    ) -> Write:
        """POST /entities/ndjson: one entity a line, always one job (`.wait()`); `entity_type` for every
        line without its own `type`, `id_field` the line field holding the id, `field_map` e.g.
        `title=title,text=abstract`."""
        return Write(self, self._send(ops.upload_entities(lines, entity_type, id_field, field_map)))

    def get_job(self, job_id: str) -> m.Job:
        return self._send(ops.get_job(job_id))

    # -- context --------------------------------------------------------------------------------------

    def assemble_context(
        self, query: str, caller: str, **options: Unpack[ops.AssembleOptions]
    ) -> m.AssembleResponse:
        """A token-budgeted context block with its sources (POST /context/assemble)."""
        return self._send(ops.assemble_context(query, caller, options))

    def send_feedback(
        self, assembly_id: str, used_source_ids: Sequence[str], *, tokens_used: int | None = None
    ) -> m.FeedbackResponse:
        return self._send(ops.send_feedback(assembly_id, used_source_ids, tokens_used))

    def list_weights(self, *, limit: int | None = None, cursor: str | None = None) -> m.WeightsResponse:
        return self._send(ops.list_weights(limit, cursor))

    def iter_weights(self, *, page_size: int | None = None) -> Iterator[m.WeightOut]:
        cursor = None
        while True:
            page = self.list_weights(limit=page_size, cursor=cursor)
            yield from page.weights
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    def get_budgets(self) -> m.BudgetsResponse:
        return self._send(ops.get_budgets())

    def set_budget(
        self,
        caller: str,
        *,
        budget: int | None = None,
        min_budget: int | None = None,
        max_budget: int | None = None,
    ) -> m.BudgetOut:
        """A caller's token budget and the bounds learning keeps it within (`*`: every caller)."""
        return self._send(ops.set_budget(caller, budget, min_budget, max_budget))

    def get_log(
        self,
        caller: str | None = None,
        *,
        namespace: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> m.LogResponse:
        return self._send(ops.get_log(caller, namespace, limit, cursor))

    def iter_log(
        self, caller: str | None = None, *, namespace: str | None = None, page_size: int | None = None
    ) -> Iterator[m.LogEntryOut]:
        cursor = None
        while True:
            page = self.get_log(caller, namespace=namespace, limit=page_size, cursor=cursor)
            yield from page.data
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    def list_callers(self) -> m.CallersResponse:
        return self._send(ops.list_callers())

    def set_weight(
        self,
        caller: str,
        source: str,
        *,
        weight: float | None = None,
        token_share: float | None = None,
        manual: bool = True,
    ) -> m.WeightOut:
        return self._send(ops.set_weight(caller, source, weight, token_share, manual))

    def run_learning(self) -> m.EvalResponse:
        return self._send(ops.run_learning())

    def get_weight_history(
        self, caller: str | None = None, *, limit: int | None = None
    ) -> m.WeightHistoryResponse:
        return self._send(ops.get_weight_history(caller, limit))

    # -- governed retrieval ---------------------------------------------------------------------------

    def retrieve(
        self, role_id: str, task_text: str, **options: Unpack[ops.RetrieveOptions]
    ) -> m.RetrievalBundle:
        return self._send(ops.retrieve(role_id, task_text, options))

    def put_overlay(self, role_id: str, overlay: ops.Body) -> m.RoleOverlay:
        return self._send(ops.put_overlay(role_id, overlay))

    def get_overlay(self, role_id: str) -> m.RoleOverlay:
        return self._send(ops.get_overlay(role_id))

    def delete_overlay(self, role_id: str) -> m.OverlayDeleted:
        return self._send(ops.delete_overlay(role_id))

    def eval_overlay(self, role_id: str) -> m.OverlayEvaluation:
        return self._send(ops.eval_overlay(role_id))

    def tune_overlay(self, role_id: str) -> m.OverlayTuning:
        return self._send(ops.tune_overlay(role_id))

    def list_overlay_evals(self, role_id: str, *, limit: int | None = None) -> m.EvalsResponse:
        return self._send(ops.list_overlay_evals(role_id, limit))

    def list_evals(self, name: str | None = None, *, limit: int | None = None) -> m.EvalsResponse:
        return self._send(ops.list_evals(name, limit))

    def get_schema(self, name: str) -> dict[str, Any]:
        return self._send(ops.get_schema(name))

    # -- tenant ---------------------------------------------------------------------------------------

    def export(self, *, max_bytes: int | None = None) -> Iterator[dict[str, Any]]:
        """Every record the tenant stored (`{kind, data}`), following the NDJSON pages of GET /tenant/export."""
        cursor = None
        while True:
            records, cursor = export_records(self._send(ops.export_page(cursor, max_bytes)))
            yield from records
            if cursor is None:
                return

    def erase_tenant(self, confirm: str) -> m.EraseReport:
        return self._send(ops.erase_tenant(confirm))

    def reopen_tenant(self, confirm: str) -> m.ReopenReport:
        """Serve an erased tenant again, empty (410 until the server's reopen delay has passed)."""
        return self._send(ops.reopen_tenant(confirm))

    def health(self) -> dict[str, Any]:
        return self._send(ops.health())

    def whoami(self) -> dict[str, Any]:
        return self._send(ops.whoami())

    def openapi(self) -> dict[str, Any]:
        return self._send(ops.openapi())
