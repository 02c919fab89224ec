"""`AsyncQuarry`: the asynchronous client (httpx.AsyncClient), method for method `Quarry` (_sync.py)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Sequence
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


class AsyncWrite(WriteState):
    """A bulk or corpus write: `done` at once, or a job; `wait()` follows the job until it is done."""

    def __init__(self, client: AsyncQuarry, answer: Any) -> None:
        super().__init__(answer)
        self._client = client

    async def wait(self, timeout: float = JOB_WAIT_SECONDS, interval: float = JOB_POLL_SECONDS) -> AsyncWrite:
        """Poll GET /jobs/{id} until the job is done (WaitTimeoutError after `timeout` seconds)."""
        deadline = time.monotonic() + timeout
        while self.job is not None and self.job.status != "done":
            if time.monotonic() >= deadline:
                raise WaitTimeoutError(
                    f"job {self.job.job_id} still {self.job.status} after {timeout} s", self.job
                )
            await asyncio.sleep(interval)
            self.job = await self._client.get_job(self.job.job_id)
        return self


class AsyncQuarry:
    """Quarry's HTTP API. `base_url` and `api_key` default to QUARRY_URL and QUARRY_API_KEY; 429 and 503
    are retried within `retry.total_seconds`, honouring Retry-After; errors raise typed APIError subclasses."""

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        retry: RetryPolicy | None = None,
        timeout: httpx.Timeout | float = DEFAULT_TIMEOUT,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        self._settings = settings(base_url, api_key, retry)
        self._http = http_client or httpx.AsyncClient(timeout=timeout)
        self._http.base_url = httpx.URL(self._settings.base_url)
        self._http.headers.update(self._settings.headers)

    async def close(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncQuarry:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    async def _send(self, call: ops.Call[T]) -> T:
        policy = self._settings.retry
        deadline = time.monotonic() + policy.total_seconds
        attempt = 0
        while True:
            attempt += 1
            try:
                response = await self._http.request(**request_of(call))
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:  # never reached the server
                pause = policy.wait(attempt, None, deadline - time.monotonic())
                if pause is None:
                    raise APIConnectionError(f"{call.method} {call.path}: {exc}") from exc
                await asyncio.sleep(pause)
                continue
            except httpx.HTTPError as exc:  # it may have run: not repeated blindly
                raise APIConnectionError(f"{call.method} {call.path}: {exc}") from exc
            if response.status_code in RETRIED_STATUSES:
                pause = policy.wait(attempt, retry_after(response), deadline - time.monotonic())
                if pause is not None:
                    await asyncio.sleep(pause)
                    continue
            return answer(call, response)  # type: ignore[no-any-return]

    # -- search ---------------------------------------------------------------------------------------

    async def embed(
        self, texts: Sequence[str], kind: Literal["query", "passage"] = "query"
    ) -> m.EmbedResponse:
        """The deployment's vectors for `texts` (POST /embed): `query` to send as a search's `query_vector`,
        `passage` to send as a write's `embedding`."""
        return await self._send(ops.embed(texts, kind))

    async def search(self, query: str, **options: Unpack[ops.SearchOptions]) -> m.SearchResponse:
        """One page of hybrid search (POST /search)."""
        return await self._send(ops.search(query, options))

    async def search_pages(
        self, query: str, **options: Unpack[ops.SearchOptions]
    ) -> AsyncIterator[m.SearchResponse]:
        """Every page of a search, following `next_cursor`, over a snapshot taken by the first page
        (`keep_alive`, default PAGING_KEEP_ALIVE_SECONDS): writes to the tenant meanwhile change nothing,
        each entity of the first page's ranking comes once. A page read after the snapshot lapsed raises
        ConflictError `cursor_expired`."""
        options.setdefault("keep_alive", ops.PAGING_KEEP_ALIVE_SECONDS)
        while True:
            page = await self.search(query, **options)
            yield page
            if not page.next_cursor:
                return
            options["cursor"] = page.next_cursor

    async def iter_search(
        self, query: str, **options: Unpack[ops.SearchOptions]
    ) -> AsyncIterator[m.SearchResult]:
        """Every hit of a search, page after page: each entity present when it started, once, even while
        the tenant is written (see `search_pages`)."""
        async for page in self.search_pages(query, **options):
            for result in page.results:
                yield result

    # -- entities -------------------------------------------------------------------------------------

    async def get_entity(self, entity_type: str, entity_id: str) -> m.EntityOut:
        return await self._send(ops.get_entity(entity_type, entity_id))

    async def list_entities(
        self, entity_type: str | None = None, *, limit: int | None = None, cursor: str | None = None
    ) -> m.EntityPage:
        return await self._send(ops.list_entities(entity_type, limit, cursor))

    async def iter_entities(
        self, entity_type: str | None = None, *, page_size: int | None = None
    ) -> AsyncIterator[m.EntityOut]:
        """Every stored entity (of a type), newest first, across pages."""
        cursor = None
        while True:
            page = await self.list_entities(entity_type, limit=page_size, cursor=cursor)
            for row in page.data:
                yield row
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    async def put_entity(self, entity_type: str, entity_id: str, fields: ops.Body) -> m.WriteResponse:
        return await self._send(ops.put_entity(entity_type, entity_id, fields))

    async def patch_entity(self, entity_type: str, entity_id: str, fields: ops.Body) -> m.WriteResponse:
        return await self._send(ops.patch_entity(entity_type, entity_id, fields))

    async def delete_entity(
        self, entity_type: str, entity_id: str, *, version: int | None = None
    ) -> m.WriteResponse:
        return await self._send(ops.delete_entity(entity_type, entity_id, version))

    async def bulk_write(self, items: Sequence[ops.Body]) -> AsyncWrite:
        """POST /entities: typed items (`TaskItem(...)`, ...) or dicts; `.wait()` when it became a job."""
        return AsyncWrite(self, await self._send(ops.bulk_write(items)))

    async def load_corpus(self, documents: Sequence[ops.Body]) -> AsyncWrite:
        """POST /corpus; `.wait()` when it became a job."""
        return AsyncWrite(self, await self._send(ops.load_corpus(documents)))

    async def batch_get_entities(self, refs: Sequence[tuple[str, str] | ops.Body]) -> m.BatchGetResponse:
        """Up to 100 entities in one call (POST /entities/batch-get): `(type, id)` pairs or `EntityRef`s;
        `found` in the order asked, `missing` the rest."""
        return await self._send(ops.batch_get_entities(refs))

    async def upload_entities(
        self,
        lines: Sequence[ops.Body],
        *,
        entity_type: str | None = None,
        id_field: str | None = None,
        field_map: str | None = None,
    ) -> AsyncWrite:
        """POST /entities/ndjson: one entity a line, always one job (`.wait()`); `entity_type` for every
        line without its own `type`, `id_field` the line field holding the id, `field_map` e.g.
        `title=title,text=abstract`."""
        call = ops.upload_entities(lines, entity_type, id_field, field_map)
        return AsyncWrite(self, await self._send(call))

    async def get_job(self, job_id: str) -> m.Job:
        return await self._send(ops.get_job(job_id))

    # -- context --------------------------------------------------------------------------------------

    async def assemble_context(
        self, query: str, caller: str, **options: Unpack[ops.AssembleOptions]
    ) -> m.AssembleResponse:
        """A token-budgeted context block with its sources (POST /context/assemble)."""
        return await self._send(ops.assemble_context(query, caller, options))

    async def send_feedback(
        self, assembly_id: str, used_source_ids: Sequence[str], *, tokens_used: int | None = None
    ) -> m.FeedbackResponse:
        return await self._send(ops.send_feedback(assembly_id, used_source_ids, tokens_used))

    async def list_weights(self, *, limit: int | None = None, cursor: str | None = None) -> m.WeightsResponse:
        return await self._send(ops.list_weights(limit, cursor))

    async def iter_weights(self, *, page_size: int | None = None) -> AsyncIterator[m.WeightOut]:
        cursor = None
        while True:
            page = await self.list_weights(limit=page_size, cursor=cursor)
            for row in page.weights:
                yield row
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    async def get_budgets(self) -> m.BudgetsResponse:
        return await self._send(ops.get_budgets())

    async def set_budget(
        self,
        caller: str,
        *,
        budget: int | None = None,
        min_budget: int | None = None,
        max_budget: int | None = None,
    ) -> m.BudgetOut:
        """A caller's token budget and the bounds learning keeps it within (`*`: every caller)."""
        return await self._send(ops.set_budget(caller, budget, min_budget, max_budget))

    async def get_log(
        self,
        caller: str | None = None,
        *,
        namespace: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> m.LogResponse:
        return await self._send(ops.get_log(caller, namespace, limit, cursor))

    async def iter_log(
        self, caller: str | None = None, *, namespace: str | None = None, page_size: int | None = None
    ) -> AsyncIterator[m.LogEntryOut]:
        cursor = None
        while True:
            page = await self.get_log(caller, namespace=namespace, limit=page_size, cursor=cursor)
            for row in page.data:
                yield row
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    async def list_callers(self) -> m.CallersResponse:
        return await self._send(ops.list_callers())

    async def set_weight(
        self,
        caller: str,
        source: str,
        *,
        weight: float | None = None,
        token_share: float | None = None,
        manual: bool = True,
    ) -> m.WeightOut:
        return await self._send(ops.set_weight(caller, source, weight, token_share, manual))

    async def run_learning(self) -> m.EvalResponse:
        return await self._send(ops.run_learning())

    async def get_weight_history(
        self, caller: str | None = None, *, limit: int | None = None
    ) -> m.WeightHistoryResponse:
        return await self._send(ops.get_weight_history(caller, limit))

    # -- governed retrieval ---------------------------------------------------------------------------

    async def retrieve(
        self, role_id: str, task_text: str, **options: Unpack[ops.RetrieveOptions]
    ) -> m.RetrievalBundle:
        return await self._send(ops.retrieve(role_id, task_text, options))

    async def put_overlay(self, role_id: str, overlay: ops.Body) -> m.RoleOverlay:
        return await self._send(ops.put_overlay(role_id, overlay))

    async def get_overlay(self, role_id: str) -> m.RoleOverlay:
        return await self._send(ops.get_overlay(role_id))

    async def delete_overlay(self, role_id: str) -> m.OverlayDeleted:
        return await self._send(ops.delete_overlay(role_id))

    async def eval_overlay(self, role_id: str) -> m.OverlayEvaluation:
        return await self._send(ops.eval_overlay(role_id))

    async def tune_overlay(self, role_id: str) -> m.OverlayTuning:
        return await self._send(ops.tune_overlay(role_id))

    async def list_overlay_evals(self, role_id: str, *, limit: int | None = None) -> m.EvalsResponse:
        return await self._send(ops.list_overlay_evals(role_id, limit))

    async def list_evals(self, name: str | None = None, *, limit: int | None = None) -> m.EvalsResponse:
        return await self._send(ops.list_evals(name, limit))

    async def get_schema(self, name: str) -> dict[str, Any]:
        return await self._send(ops.get_schema(name))

    # -- tenant ---------------------------------------------------------------------------------------

    async def export(self, *, max_bytes: int | None = None) -> AsyncIterator[dict[str, Any]]:
        """Every record the tenant stored (`{kind, data}`), following the NDJSON pages of GET /tenant/export."""
        cursor = None
        while True:
            records, cursor = export_records(await self._send(ops.export_page(cursor, max_bytes)))
            for record in records:
                yield record
            if cursor is None:
                return

    async def erase_tenant(self, confirm: str) -> m.EraseReport:
        return await self._send(ops.erase_tenant(confirm))

    async def reopen_tenant(self, confirm: str) -> m.ReopenReport:
        """Serve an erased tenant again, empty (410 until the server's reopen delay has passed)."""
        return await self._send(ops.reopen_tenant(confirm))

    async def health(self) -> dict[str, Any]:
        return await self._send(ops.health())

    async def whoami(self) -> dict[str, Any]:
        return await self._send(ops.whoami())

    async def openapi(self) -> dict[str, Any]:
        return await self._send(ops.openapi())
