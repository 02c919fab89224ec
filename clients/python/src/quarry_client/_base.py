"""What the sync and async clients share: configuration, building a request from a `Call`, reading its
answer into the generated model, and the write-job handle's bookkeeping."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

import httpx
from pydantic import BaseModel

from quarry_client import models as m
from quarry_client._errors import ResponseError, error_for
from quarry_client._operations import Call
from quarry_client._retry import RetryPolicy

DEFAULT_URL = "http://127.0.0.1:3000"  # `make serve`
URL_VARIABLE, KEY_VARIABLE = "QUARRY_URL", "QUARRY_API_KEY"
DEFAULT_TIMEOUT = httpx.Timeout(60.0, connect=5.0)
JOB_POLL_SECONDS = 0.5
JOB_WAIT_SECONDS = 600.0


@dataclass(frozen=True, slots=True)
class Settings:
    """Where the API is, the key, and how requests are retried."""

    base_url: str
    headers: dict[str, str]
    retry: RetryPolicy


def settings(base_url: str | None, api_key: str | None, retry: RetryPolicy | None) -> Settings:
    """Explicit arguments first, then QUARRY_URL / QUARRY_API_KEY, then the local server."""
    url = (base_url or os.environ.get(URL_VARIABLE) or DEFAULT_URL).rstrip("/")
    key = api_key if api_key is not None else os.environ.get(KEY_VARIABLE)
    headers = {"accept": "application/json", "user-agent": "quarry-client/0.1.0"}
    if key:
        headers["authorization"] = f"Bearer {key}"
    return Settings(url, headers, retry or RetryPolicy())


def request_of(call: Call[Any]) -> dict[str, Any]:
    """httpx request arguments of a call."""
    out: dict[str, Any] = {"method": call.method, "url": call.path}
    if call.params:
        out["params"] = call.params
    if call.json is not None:
        out["json"] = call.json
    if call.content is not None:
        out["content"] = call.content
        out["headers"] = {"content-type": call.content_type or "application/octet-stream"}
    return out


def answer(call: Call[Any], response: httpx.Response) -> Any:
    """The model of a success answer; the typed APIError of any other."""
    if response.is_error:
        raise error_for(response)
    if call.text:
        return response.text
    model = call.accepted if response.status_code == 202 and call.accepted is not None else call.model
    try:
        data = response.json()
        if isinstance(model, type) and issubclass(model, BaseModel):
            return model.model_validate(data)
    except ValueError as exc:  # not JSON, or not the documented shape (pydantic's ValidationError too)
        raise ResponseError(f"{call.method} {call.path}: unreadable answer: {exc}", response) from exc
    return data


def export_records(page: str) -> tuple[list[dict[str, Any]], str | None]:
    """The records of one NDJSON export page, and the cursor of the next page (None after the last)."""
    records, following = [], None
    for line in page.splitlines():
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as exc:
            raise ResponseError(f"GET /tenant/export: a line is not JSON: {exc}", None) from exc
        if record.get("kind") == "next":
            following = str(record["cursor"])
        elif record.get("kind") != "end":
            records.append(record)
    return records, following


class WriteState:
    """The answer to a bulk or corpus write: done at once (`result`), or a job (`job`) to follow."""

    def __init__(self, answer: Any) -> None:
        self.job: m.Job | None = answer if isinstance(answer, m.Job) else None
        self.result: m.BulkResponse | m.CorpusReport | None = None if self.job else answer

    @property
    def done(self) -> bool:
        return self.job is None or self.job.status == "done"

    @property
    def indexed(self) -> int:
        """Items (or corpus documents) written so far."""
        if self.job is not None:
            return int(self.job.indexed or self.job.documents_ingested or 0)
        return int(getattr(self.result, "indexed", None) or getattr(self.result, "documents_ingested", 0))

    @property
    def errors(self) -> list[Any]:
        """Items refused one by one (position, id, reason): what no schema states (invalid text, stale)."""
        source = self.job if self.job is not None else self.result
        return list(getattr(source, "errors", []) or [])

    def __repr__(self) -> str:
        what = f"job {self.job.job_id} {self.job.status}" if self.job else "done"
        return f"<{type(self).__name__} {what}, indexed={self.indexed}, errors={len(self.errors)}>"
