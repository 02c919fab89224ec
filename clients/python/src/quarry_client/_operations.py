"""Every route of the API as a request description (`Call`), written once for both clients: method, path
(segments percent-encoded), query, body, and the generated model of the answer."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypedDict, TypeVar
from urllib.parse import quote

from pydantic import BaseModel

from quarry_client import models as m

T = TypeVar("T")
Body = Mapping[str, Any] | BaseModel
Strategy = Literal["auto", "keyword", "semantic", "hybrid"]
Trust = Literal["external", "agent", "user"]  # least trusted first: `min_trust` keeps memories at or above
TokenEncoding = Literal["estimate", "cl100k_base", "o200k_base"]


@dataclass(frozen=True, slots=True)
class Call(Generic[T]):
    """One request and how to read its answer (`model` None: the JSON as it is; `text`: the body as text)."""

    method: str
    path: str
    model: type[T] | None = None
    params: dict[str, Any] = field(default_factory=dict)
    json: Any = None
    accepted: type[BaseModel] | None = None  # the model of a 202 answer (a write job)
    text: bool = False
    content: bytes | None = None  # a body that is not JSON (NDJSON uploads), sent as `content_type`
    content_type: str | None = None


# The snapshot lifetime `search_pages` asks for between two page reads: the server's default (5 minutes,
# SearchRequest.keep_alive in the OpenAPI document), sent so the first page already pins the ranking.
PAGING_KEEP_ALIVE_SECONDS = 300


class SearchOptions(TypedDict, total=False):
    """POST /search fields besides `query` (SearchRequest in the OpenAPI document; a test checks that every
    property of it is here)."""

    entities: Sequence[str]
    filters: Mapping[str, Any]
    limit: int
    strategy: Strategy
    explain: bool
    cursor: str
    facets: Sequence[str]
    min_score: float
    return_fields: Literal["all", "none"] | Sequence[str]
    query_vector: Sequence[float]
    keep_alive: int
    min_relevance: float
    min_trust: Trust
    include_superseded: bool


class AssembleOptions(TypedDict, total=False):
    """POST /context/assemble fields besides `query` and `caller`."""

    namespace: str
    token_budget: int
    explicit_links: Sequence[str]
    sources: Sequence[str]
    log: bool
    expand_namespaces: bool
    min_relevance: float
    min_trust: Trust
    include_superseded: bool
    token_encoding: TokenEncoding


class RetrieveOptions(TypedDict, total=False):
    """POST /retrieve fields besides `role_id` and `task_text`."""

    overlay: Body
    context_summary: str
    lexical_only: bool


def segment(value: str) -> str:
    """A path segment, percent-encoded (`/`, `%`, spaces and all)."""
    return quote(value, safe="")


def dump(value: Any) -> Any:
    """JSON of a request value: models by their field names as the API spells them, unset fields left out
    (a field set to None stays: in a PATCH it removes the field)."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_unset=True)
    if isinstance(value, Mapping):
        return {k: dump(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [dump(v) for v in value]
    return value


def given(**values: Any) -> dict[str, Any]:
    """The values that were given (None means: not sent)."""
    return {k: dump(v) for k, v in values.items() if v is not None}


def entity(entity_type: str, entity_id: str) -> str:
    return f"/entities/{segment(entity_type)}/{segment(entity_id)}"


def search(query: str, options: SearchOptions) -> Call[m.SearchResponse]:
    return Call("POST", "/search", m.SearchResponse, json=given(query=query, **options))


def embed(texts: Sequence[str], kind: Literal["query", "passage"]) -> Call[m.EmbedResponse]:
    return Call("POST", "/embed", m.EmbedResponse, json={"texts": list(texts), "kind": kind})


def get_entity(entity_type: str, entity_id: str) -> Call[m.EntityOut]:
    return Call("GET", entity(entity_type, entity_id), m.EntityOut)


def list_entities(entity_type: str | None, limit: int | None, cursor: str | None) -> Call[m.EntityPage]:
    return Call("GET", "/entities", m.EntityPage, params=given(type=entity_type, limit=limit, cursor=cursor))


def put_entity(entity_type: str, entity_id: str, fields: Body) -> Call[m.WriteResponse]:
    return Call("PUT", entity(entity_type, entity_id), m.WriteResponse, json=dump(fields))


def patch_entity(entity_type: str, entity_id: str, fields: Body) -> Call[m.WriteResponse]:
    return Call("PATCH", entity(entity_type, entity_id), m.WriteResponse, json=dump(fields))


def delete_entity(entity_type: str, entity_id: str, version: int | None) -> Call[m.WriteResponse]:
    return Call("DELETE", entity(entity_type, entity_id), m.WriteResponse, params=given(version=version))


def bulk_write(items: Sequence[Body]) -> Call[m.BulkResponse]:
    return Call("POST", "/entities", m.BulkResponse, json={"items": dump(list(items))}, accepted=m.Job)


def batch_get_entities(refs: Sequence[tuple[str, str] | Body]) -> Call[m.BatchGetResponse]:
    items = [{"type": r[0], "id": r[1]} if isinstance(r, tuple) else dump(r) for r in refs]
    return Call("POST", "/entities/batch-get", m.BatchGetResponse, json={"items": items})


def upload_entities(
    lines: Sequence[Body], entity_type: str | None, id_field: str | None, field_map: str | None
) -> Call[m.Job]:
    body = "".join(json.dumps(dump(line), ensure_ascii=False) + "\n" for line in lines).encode()
    params = given(type=entity_type, id_field=id_field, map=field_map)
    return Call("POST", "/entities/ndjson", m.Job, params=params, accepted=m.Job, content=body,
                content_type="application/x-ndjson")  # fmt: skip


def get_job(job_id: str) -> Call[m.Job]:
    return Call("GET", f"/jobs/{segment(job_id)}", m.Job)


def load_corpus(documents: Sequence[Body]) -> Call[m.CorpusReport]:
    return Call("POST", "/corpus", m.CorpusReport, json={"documents": dump(list(documents))}, accepted=m.Job)


def assemble_context(query: str, caller: str, options: AssembleOptions) -> Call[m.AssembleResponse]:
    return Call(
        "POST", "/context/assemble", m.AssembleResponse, json=given(query=query, caller=caller, **options)
    )


def send_feedback(
    assembly_id: str, used_source_ids: Sequence[str], tokens_used: int | None
) -> Call[m.FeedbackResponse]:
    body = given(assembly_id=assembly_id, used_source_ids=list(used_source_ids), tokens_used=tokens_used)
    return Call("POST", "/context/feedback", m.FeedbackResponse, json=body)


def list_weights(limit: int | None, cursor: str | None) -> Call[m.WeightsResponse]:
    return Call("GET", "/context/weights", m.WeightsResponse, params=given(limit=limit, cursor=cursor))


def get_budgets() -> Call[m.BudgetsResponse]:
    return Call("GET", "/context/budgets", m.BudgetsResponse)


def set_budget(
    caller: str, budget: int | None, min_budget: int | None, max_budget: int | None
) -> Call[m.BudgetOut]:
    body = given(budget=budget, min_budget=min_budget, max_budget=max_budget)
    return Call("PUT", f"/context/budgets/{segment(caller)}", m.BudgetOut, json=body)


def get_log(
    caller: str | None, namespace: str | None, limit: int | None, cursor: str | None
) -> Call[m.LogResponse]:
    params = given(caller=caller, namespace=namespace, limit=limit, cursor=cursor)
    return Call("GET", "/context/log", m.LogResponse, params=params)


def list_callers() -> Call[m.CallersResponse]:
    return Call("GET", "/context/log/callers", m.CallersResponse)


def set_weight(
    caller: str, source: str, weight: float | None, token_share: float | None, manual: bool
) -> Call[m.WeightOut]:
    body = given(weight=weight, token_share=token_share, manual=manual)
    return Call("PUT", f"/context/weights/{segment(caller)}/{segment(source)}", m.WeightOut, json=body)


def run_learning() -> Call[m.EvalResponse]:
    return Call("POST", "/context/eval", m.EvalResponse)


def get_weight_history(caller: str | None, limit: int | None) -> Call[m.WeightHistoryResponse]:
    params = given(caller=caller, limit=limit)
    return Call("GET", "/context/weights/history", m.WeightHistoryResponse, params=params)


def retrieve(role_id: str, task_text: str, options: RetrieveOptions) -> Call[m.RetrievalBundle]:
    return Call(
        "POST", "/retrieve", m.RetrievalBundle, json=given(role_id=role_id, task_text=task_text, **options)
    )


def overlay(role_id: str, suffix: str = "") -> str:
    return f"/overlays/{segment(role_id)}{suffix}"


def put_overlay(role_id: str, body: Body) -> Call[m.RoleOverlay]:
    return Call("PUT", overlay(role_id), m.RoleOverlay, json=dump(body))


def get_overlay(role_id: str) -> Call[m.RoleOverlay]:
    return Call("GET", overlay(role_id), m.RoleOverlay)


def delete_overlay(role_id: str) -> Call[m.OverlayDeleted]:
    return Call("DELETE", overlay(role_id), m.OverlayDeleted)


def eval_overlay(role_id: str) -> Call[m.OverlayEvaluation]:
    return Call("POST", overlay(role_id, "/eval"), m.OverlayEvaluation)


def tune_overlay(role_id: str) -> Call[m.OverlayTuning]:
    return Call("POST", overlay(role_id, "/tune"), m.OverlayTuning)


def list_overlay_evals(role_id: str, limit: int | None) -> Call[m.EvalsResponse]:
    return Call("GET", overlay(role_id, "/evals"), m.EvalsResponse, params=given(limit=limit))


def list_evals(name: str | None, limit: int | None) -> Call[m.EvalsResponse]:
    return Call("GET", "/evals", m.EvalsResponse, params=given(name=name, limit=limit))


def get_schema(name: str) -> Call[dict[str, Any]]:
    return Call("GET", f"/schemas/{segment(name)}")


def export_page(cursor: str | None, max_bytes: int | None) -> Call[str]:
    return Call("GET", "/tenant/export", params=given(cursor=cursor, max_bytes=max_bytes), text=True)


def erase_tenant(confirm: str) -> Call[m.EraseReport]:
    return Call("DELETE", "/tenant", m.EraseReport, json={"confirm": confirm})


def reopen_tenant(confirm: str) -> Call[m.ReopenReport]:
    return Call("POST", "/tenant/reopen", m.ReopenReport, json={"confirm": confirm})


def health() -> Call[dict[str, Any]]:
    return Call("GET", "/health")


def whoami() -> Call[dict[str, Any]]:
    return Call("GET", "/whoami")


def openapi() -> Call[dict[str, Any]]:
    return Call("GET", "/openapi.json")


# Each operationId of the OpenAPI document and the method of `Quarry` and `AsyncQuarry` that calls it
# (tests/test_operations.py fails when the document names an operation missing here).
OPERATIONS: dict[str, str] = {
    "embed": "embed",
    "assembleContext": "assemble_context",
    "getBudgets": "get_budgets",
    "setBudget": "set_budget",
    "runLearning": "run_learning",
    "sendFeedback": "send_feedback",
    "getLog": "get_log",
    "listCallers": "list_callers",
    "listWeights": "list_weights",
    "getWeightHistory": "get_weight_history",
    "setWeight": "set_weight",
    "loadCorpus": "load_corpus",
    "listEntities": "list_entities",
    "bulkWrite": "bulk_write",
    "batchGetEntities": "batch_get_entities",
    "uploadEntities": "upload_entities",
    "deleteEntity": "delete_entity",
    "getEntity": "get_entity",
    "patchEntity": "patch_entity",
    "putEntity": "put_entity",
    "listEvals": "list_evals",
    "health": "health",
    "getJob": "get_job",
    "getOpenApi": "openapi",
    "deleteOverlay": "delete_overlay",
    "getOverlay": "get_overlay",
    "putOverlay": "put_overlay",
    "evalOverlay": "eval_overlay",
    "listOverlayEvals": "list_overlay_evals",
    "tuneOverlay": "tune_overlay",
    "retrieve": "retrieve",
    "getSchema": "get_schema",
    "search": "search",
    "eraseTenant": "erase_tenant",
    "exportTenant": "export",
    "reopenTenant": "reopen_tenant",
    "whoami": "whoami",
}
