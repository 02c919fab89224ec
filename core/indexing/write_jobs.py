"""Write jobs: bulk and corpus requests too big for one API invocation, split into parts that the
indexing consumer processes from a queue. Pure values and functions; the service that submits
and processes them is core/indexing/write_job_service.py.

A request is sized in chunks, not items: what costs time is one embedding per chunk (Titan embeds one
text per call), and one corpus document can hold hundreds of chunks.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from core.errors import QuarryError, UnavailableError
from core.indexing.chunking import CHUNK_OVERLAP_TOKENS, CHUNK_TOKENS
from core.indexing.entity_types import EntityTypeRegistry
from core.tokens import CHARS_PER_TOKEN

JobKind = Literal["bulk", "corpus"]
JobStatus = Literal["queued", "running", "done", "failed"]
MAX_JOB_ITEMS = 10_000  # items (or corpus documents) per request: 20x the synchronous 500 (a judgement call)
MAX_REPORTED_ERRORS = 100  # a status answer lists the first errors and counts the rest
# Errors kept per part: 10,000 items make ~50 parts; 20 errors of ~200 bytes each keep a job's item far
# below DynamoDB's 400 KB.
MAX_ERRORS_PER_PART = 20
# A refused item's report names it by a cut id and cut texts, so that whatever a request held (a line of an
# NDJSON upload may carry a 100,000-character id) a part's 20 errors stay a few tens of KB of the job item.
REPORTED_ID_CHARS = 64  # as many as a log line shows of an id (a judgement call)
REPORTED_TEXT_CHARS = 300  # an error message or a field's rule: the longest the service writes is ~200
REPORTED_FIELDS = 10  # bad fields named per error; the message says how many there were
CUT_MARK = "…"
# The largest body SQS takes: 262,144 bytes (the write-jobs queue's MaximumMessageSize in template.yaml);
# a part's message above it travels as an S3 object the message points to (infra/jobs/sqs_queue.py).
SQS_MAX_MESSAGE_BYTES = 262_144
# Attempts at one part before it is recorded as failed: the write-jobs queue's maxReceiveCount in
# template.yaml (QUARRY_JOBS_MAX_RECEIVES follows it), and the local queue's bound (infra/jobs/sqlite_queue.py).
MAX_PART_ATTEMPTS = 5


def failure_reason(exc: BaseException, attempts: int) -> str:
    """Why a part ended failed, in words a caller may read (never a backend's own text)."""
    if isinstance(exc, UnavailableError):
        last = exc.public_message
    elif isinstance(exc, QuarryError):
        last = exc.message
    else:
        last = "an internal error (logged)"
    return f"failed on each of its {attempts} attempts; the last: {last}"


# Chunk text window (core/indexing/chunking.py) minus its overlap: how much new text each further chunk covers.
_CHUNK_STRIDE_CHARS = (CHUNK_TOKENS - CHUNK_OVERLAP_TOKENS) * CHARS_PER_TOKEN


@dataclass(frozen=True, slots=True)
class JobPart:
    """One queue message of a job: the items from `offset` on (positions in the request)."""

    job_id: str
    tenant_id: str
    kind: JobKind
    part: int
    offset: int
    items: tuple[Any, ...]
    # (position, earlier position) in the whole request of each item naming an entity an earlier item
    # names: refused, though the earlier one may travel in another part
    repeats: tuple[tuple[int, int], ...] = ()
    # The line of an NDJSON upload each item came from (core/indexing/ndjson.py): its errors name the line
    lines: tuple[int, ...] = ()
    # What an erase leaves of a part being processed when it came (infra/jobs/sqlite_queue.py): no items,
    # only the mark that a run cut off mid-way may have written, so whoever takes it over purges instead
    erased: bool = False

    def to_message(self) -> dict[str, Any]:
        message = {
            "job": {"id": self.job_id, "tenant_id": self.tenant_id, "kind": self.kind, "part": self.part},
            "offset": self.offset,
            "items": list(self.items),
        }
        message |= {"lines": list(self.lines)} if self.lines else {}
        message |= {"erased": True} if self.erased else {}
        return message | ({"repeats": [list(r) for r in self.repeats]} if self.repeats else {})

    @classmethod
    def from_message(cls, message: Mapping[str, Any]) -> JobPart:
        job = message["job"]
        repeats = tuple((int(p), int(f)) for p, f in message.get("repeats", ()))
        lines = tuple(int(n) for n in message.get("lines", ()))
        return cls(job["id"], job["tenant_id"], job["kind"], int(job["part"]), int(message["offset"]),
                   tuple(message["items"]), repeats, lines, bool(message.get("erased")))  # fmt: skip

    def erased_mark(self) -> JobPart:
        """The part as an erase leaves it while it is being processed: its job and tenant, no items."""
        return JobPart(self.job_id, self.tenant_id, self.kind, self.part, self.offset, (), erased=True)

    def local_repeats(self) -> dict[int, int]:
        """{position in this part: earlier position in the request} of the part's repeated items."""
        return {position - self.offset: first for position, first in self.repeats}


@dataclass(slots=True)
class PartReport:
    """What one part did: counts, and errors with their positions in the whole request."""

    indexed: int = 0
    skipped_stale: int = 0
    chunks: int = 0
    errors: list[dict[str, Any]] = field(default_factory=list)
    unindexed_fields: set[str] = field(default_factory=set)  # of the items written (EntityType.unindexed)
    failure: str | None = None  # why the part could not be processed at all (its items were not indexed)
    discarded: bool = False  # its job is gone or its tenant erased: nothing done, nothing recorded

    def to_json(self) -> dict[str, Any]:
        """What the job store keeps: the counts and the part's first errors (a DynamoDB item holds 400 KB
        for all parts together)."""
        errors = [bounded_error(e) for e in self.errors[:MAX_ERRORS_PER_PART]]
        kept = {"indexed": self.indexed, "skipped_stale": self.skipped_stale, "chunks": self.chunks,
                "errors": errors, "errors_total": len(self.errors)}  # fmt: skip
        unindexed = {"unindexed_fields": sorted(self.unindexed_fields)} if self.unindexed_fields else {}
        return kept | unindexed | ({"failure": self.failure} if self.failure else {})


@dataclass(slots=True)
class Job:
    """A submitted job and the reports of the parts processed so far (at most one per part)."""

    job_id: str
    tenant_id: str
    kind: JobKind
    items: int
    chunks: int
    parts: int
    created_at: str
    updated_at: str
    reports: dict[int, dict[str, Any]] = field(default_factory=dict)

    @property
    def status(self) -> JobStatus:
        """queued, running, then done — or failed when a part could not be processed at all."""
        if len(self.reports) >= self.parts:
            return "failed" if self.failures else "done"
        return "running" if self.reports else "queued"

    @property
    def failures(self) -> list[dict[str, Any]]:
        """The parts that could not be processed, with the reason."""
        return [
            {"part": p, "reason": r["failure"]} for p, r in sorted(self.reports.items()) if r.get("failure")
        ]

    def to_json(self) -> dict[str, Any]:
        """The GET /jobs/{id} answer."""
        reports = [self.reports[p] for p in sorted(self.reports)]
        errors = sorted((e for r in reports for e in r.get("errors", [])), key=lambda e: e.get("index", 0))
        indexed_key = "documents_ingested" if self.kind == "corpus" else "indexed"
        return {
            "job_id": self.job_id,
            "kind": self.kind,
            "status": self.status,
            "items": self.items,
            "chunks": self.chunks,
            "parts": self.parts,
            "parts_done": len(self.reports),
            indexed_key: sum(int(r.get("indexed", 0)) for r in reports),
            "skipped_stale": sum(int(r.get("skipped_stale", 0)) for r in reports),
            "errors": errors[:MAX_REPORTED_ERRORS],
            "errors_total": sum(int(r.get("errors_total", len(r.get("errors", [])))) for r in reports),
            "failures": self.failures,
            "unindexed_fields": sorted({f for r in reports for f in r.get("unindexed_fields", ())}),
            "created_at": self.created_at,
            "updated_at": self.updated_at,
        }


def estimate_chunks(registry: EntityTypeRegistry, kind: JobKind, item: Any) -> int:
    """How many chunks (embeddings) an item will cost: 1, or a chunked type's pre-made or split chunks."""
    if not isinstance(item, Mapping):
        return 1
    if kind == "bulk":
        try:
            chunked = registry.get(str(item.get("type"))).chunked
        except QuarryError:
            return 1  # an unknown type is reported as an error when processed
        if not chunked:
            return 1
    premade = item.get("chunks")
    if isinstance(premade, list) and premade:
        return len(premade)
    text = sum(len(v) for v in item.values() if isinstance(v, str))
    return max(1, math.ceil(text / _CHUNK_STRIDE_CHARS))


def cut(text: str, limit: int) -> str:
    """`text`, or its first `limit` characters and a mark saying it was cut."""
    return text if len(text) <= limit else text[:limit] + CUT_MARK


def bounded_error(error: dict[str, Any]) -> dict[str, Any]:
    """An item error as a job keeps it: the id cut to REPORTED_ID_CHARS, texts and field paths cut, at
    most REPORTED_FIELDS fields (a job item holds 400 KB whatever the request held)."""
    bounded = dict(error)
    if isinstance(bounded.get("entity_id"), str):
        bounded["entity_id"] = cut(bounded["entity_id"], REPORTED_ID_CHARS)
    if isinstance(bounded.get("error"), str):
        bounded["error"] = cut(bounded["error"], REPORTED_TEXT_CHARS)
    fields = bounded.get("fields")
    if isinstance(fields, Mapping):
        kept = sorted(fields.items(), key=lambda kv: str(kv[0]))[:REPORTED_FIELDS]
        bounded["fields"] = {
            cut(str(k), REPORTED_TEXT_CHARS): cut(str(v), REPORTED_TEXT_CHARS) for k, v in kept
        }
    return bounded


# What SQS refuses in a message body (XML 1.0's excluded characters): JSON escapes the C0 controls itself.
_NOT_IN_SQS = re.compile("[\ud800-\udfff\ufffe\uffff]")


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def encode_message(message: Any) -> str:
    """A part's message as sent: compact JSON, non-ASCII text as itself (`é` is 2 bytes of UTF-8, not a
    6-byte `\\u00e9`), escaped only where SQS refuses the character (a lone surrogate, U+FFFE, U+FFFF)."""
    text = json.dumps(message, ensure_ascii=False, separators=(",", ":"), default=str)
    return _NOT_IN_SQS.sub(_escape, text)


def encoded_bytes(message: Any) -> int:
    """The UTF-8 bytes of `encode_message(message)`: what the queue counts against its limit."""
    return len(encode_message(message).encode())


def message_bytes(item: Any) -> int:
    """What an item adds to a part's queue message: its encoded JSON (encode_message) and a separator."""
    return encoded_bytes(item) + 1


def part_bounds(
    costs: Sequence[int], sizes: Sequence[int], max_chunks: int, max_bytes: int
) -> Iterator[tuple[int, int]]:
    """[start, end) of each part, each within `max_chunks` chunks and `max_bytes` of message (an item above
    either bound travels alone)."""
    start, chunks, size = 0, 0, 0
    for i, (cost, item_bytes) in enumerate(zip(costs, sizes, strict=True)):
        if i > start and (chunks + cost > max_chunks or size + item_bytes > max_bytes):
            yield start, i
            start, chunks, size = i, 0, 0
        chunks, size = chunks + cost, size + item_bytes
    if start < len(costs):
        yield start, len(costs)


def split_parts(
    items: Sequence[Any], costs: Sequence[int], max_chunks: int, max_bytes: int
) -> Iterator[tuple[int, list[Any]]]:
    """(offset, items) parts, each within `max_chunks` chunks and `max_bytes` of JSON (part_bounds)."""
    sizes = [message_bytes(item) for item in items]
    for start, end in part_bounds(costs, sizes, max_chunks, max_bytes):
        yield start, list(items[start:end])
