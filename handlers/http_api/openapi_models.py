"""Response bodies that routes build as plain JSON (from core's reports), typed here for the OpenAPI
document only (handlers/http_api/openapi.py), so generated clients get a model for every answer."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from core.indexing.write_jobs import MAX_REPORTED_ERRORS, JobKind, JobStatus


class JobFailure(BaseModel):
    """A part of a write job that could not be processed at all: its items were not indexed."""

    part: int = Field(description="The part's number (0-based) among the job's parts")
    reason: str = Field(description="Why, in words a caller may read (the last attempt's error)")


class Job(BaseModel):
    """A write job (GET /jobs/{job_id}; the 202 answer of POST /entities and POST /corpus)."""

    job_id: str
    kind: JobKind
    status: JobStatus = Field(
        description="queued → running → done, or failed once every part is processed and one could not be"
    )
    items: int = Field(description="Items (or corpus documents) in the request")
    chunks: int = Field(description="Chunks to embed, estimated from the request")
    parts: int
    parts_done: int
    indexed: int | None = Field(default=None, description="Bulk jobs: items indexed so far")
    documents_ingested: int | None = Field(default=None, description="Corpus jobs: documents ingested so far")
    skipped_stale: int
    errors: list[dict[str, Any]] = Field(
        description=f"The first {MAX_REPORTED_ERRORS} item errors, by position in the request "
        "(`index`, the id, `error`, `fields`)"
    )
    errors_total: int
    failures: list[JobFailure] = Field(
        default_factory=list, description="Parts that failed on every attempt; their items can be sent again"
    )
    unindexed_fields: list[str] = Field(
        default_factory=list,
        description="Fields of the written items their types neither search nor filter on: stored, never found",
    )
    created_at: str
    updated_at: str


class OverlayDeleted(BaseModel):
    """DELETE /overlays/{role_id}."""

    role_id: str
    deleted: bool


class OverlayEvaluation(BaseModel):
    """POST /overlays/{role_id}/eval: the golden set's figures per strategy (stored, see GET /evals)."""

    role_id: str
    queries: int
    strategies: dict[str, dict[str, float]] = Field(
        description="strategy → {ndcg_at_10, recall_at_100, mrr_at_10}"
    )
    default: str | None = Field(default=None, description="The strategy the overlay uses")
    skipped: dict[str, str] | None = Field(default=None, description="Strategies that could not run, and why")
    min_ndcg_at_10: float | None = None
    passed: bool | None = Field(default=None, description="The default strategy reached min_ndcg_at_10")
    message: str | None = Field(default=None, description="Set when the overlay has no golden set")


class OverlayTuning(BaseModel):
    """POST /overlays/{role_id}/tune: the fusion setting before and after, adopted only if strictly better."""

    role_id: str
    current: dict[str, Any]
    current_ndcg_at_10: float
    best: dict[str, Any]
    best_ndcg_at_10: float
    adopted: dict[str, Any]
    changed: bool
