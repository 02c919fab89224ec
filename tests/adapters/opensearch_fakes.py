"""Test doubles for the OpenSearch *server* (never for the adapter under test).

- `FakeOpenSearch`: an in-memory stand-in for the cluster's document APIs that the adapter's write path
  depends on, following OpenSearch's documented behaviour: `_bulk` `create` actions (409 when the
  document exists) and `index` actions with `if_seq_no`/`if_primary_term` (409 when the document changed
  since), `require_alias`, realtime `_mget` with each document's `_seq_no`, the index template/alias calls. `_msearch`
  answers from a queue of canned responses (search ranking is OpenSearch's job; the live suite covers it).
  Every response it returns validates against the specification's response schemas (tested).
- `FakeConnection`: an opensearch-py `Connection` that plays a script of failures and answers, so the
  real `Transport`/`OpenSearch` client (and its exception classes) run unchanged.
"""

from __future__ import annotations

import copy
import json
import types
from collections.abc import Callable
from typing import Any

from opensearchpy import Connection
from opensearchpy.exceptions import NotFoundError, RequestError
from opensearchpy.serializer import JSONSerializer


def _shards() -> dict[str, int]:
    return {"total": 2, "successful": 1, "failed": 0}


def conflict_item(alias_index: str, doc_id: str, reason: str, action: str = "index") -> dict[str, Any]:
    """A bulk item refused by a failed condition (document exists / changed since read), as OpenSearch
    reports it."""
    return {
        action: {
            "_index": alias_index,
            "_id": doc_id,
            "status": 409,
            "error": {
                "type": "version_conflict_engine_exception",
                "reason": reason,
                "index": alias_index,
                "shard": "0",
                "index_uuid": "Hc3bGEEFTQyu2KQCRfN8Xw",
            },
        }
    }


def throttled_item(alias_index: str, doc_id: str, action: str = "index") -> dict[str, Any]:
    """A bulk item rejected because the write queue was full."""
    return {
        action: {
            "_index": alias_index,
            "_id": doc_id,
            "status": 429,
            "error": {"type": "rejected_execution_exception", "reason": "rejected execution of write"},
        }
    }


def search_response(hits: list[dict[str, Any]]) -> dict[str, Any]:
    """A complete search response around `hits`."""
    top = max((h.get("_score") or 0.0 for h in hits), default=None)
    return {
        "took": 3,
        "timed_out": False,
        "_shards": {"total": 1, "successful": 1, "skipped": 0, "failed": 0},
        "hits": {"total": {"value": len(hits), "relation": "eq"}, "max_score": top, "hits": hits},
        "status": 200,
    }


def error_item(status: int, error_type: str, reason: str) -> dict[str, Any]:
    """An `_msearch` item that failed."""
    cause = {"type": error_type, "reason": reason}
    return {"error": {"root_cause": [cause], **cause}, "status": status}


class _FakeIndices:
    def __init__(self, server: FakeOpenSearch) -> None:
        self._server = server

    def put_index_template(self, *, name: str, body: dict[str, Any], **params: Any) -> dict[str, Any]:
        self._server.log.append(("put_index_template", name, body, params))
        self._server.templates[name] = copy.deepcopy(body)
        return {"acknowledged": True}

    def refresh(self, *, index: str, **params: Any) -> dict[str, Any]:
        self._server.log.append(("refresh", index, None, params))
        return {"_shards": {"total": 1, "successful": 1, "failed": 0}}

    def exists_alias(self, *, name: str, **params: Any) -> bool:
        self._server.log.append(("exists_alias", name, None, params))
        return name in self._server.aliases

    def get_mapping(self, *, index: str, **params: Any) -> dict[str, Any]:
        self._server.log.append(("get_mapping", index, None, params))
        name = index if index in self._server.concrete else self._server.aliases[index]
        return {name: {"mappings": copy.deepcopy(self._server.concrete[name]["mappings"])}}

    def create(self, *, index: str, body: dict[str, Any], **params: Any) -> dict[str, Any]:
        self._server.log.append(("create", index, body, params))
        if index in self._server.concrete:
            info = {
                "error": {
                    "type": "resource_already_exists_exception",
                    "reason": f"index [{index}/abc] already exists",
                },
                "status": 400,
            }
            raise RequestError(400, "resource_already_exists_exception", info)
        self._server.concrete[index] = copy.deepcopy(body)
        for alias in body.get("aliases", {}):
            self._server.aliases[alias] = index
        return {"acknowledged": True, "shards_acknowledged": True, "index": index}


class FakeOpenSearch:
    """See the module docstring. `docs` maps `_id` → (version, source) of the one index behind the alias."""

    def __init__(self) -> None:
        self.docs: dict[str, tuple[int, dict[str, Any]]] = {}  # _id → (_version, _source)
        self.seq_nos: dict[str, tuple[int, int]] = {}  # _id → (_seq_no, _primary_term)
        self.next_seq_no = -1  # the shard's last sequence number: the first write gets 0
        self.templates: dict[str, Any] = {}
        self.concrete: dict[str, Any] = {}  # index name → the body it was created with
        self.aliases: dict[str, str] = {}
        self.log: list[tuple[str, Any, Any, dict[str, Any]]] = []
        self.msearch_responses: list[dict[str, Any] | Callable[[list[dict[str, Any]]], dict[str, Any]]] = []
        self.bulk_interceptor: Callable[[int, dict[str, Any]], dict[str, Any] | None] | None = None
        self.indices = _FakeIndices(self)
        # what opensearch-py's helpers read from a client: its transport's serializer
        self.transport = types.SimpleNamespace(serializer=JSONSerializer())

    version_number = "2.19.1"

    def info(self, **params: Any) -> dict[str, Any]:
        self.log.append(("info", None, None, params))
        return {"version": {"number": self.version_number, "distribution": "opensearch"}}

    def calls(self, api: str) -> list[tuple[str, Any, Any, dict[str, Any]]]:
        """The logged calls to one API."""
        return [c for c in self.log if c[0] == api]

    # -- documents ---------------------------------------------------------------------------------------

    def _write(self, action: dict[str, Any], source: dict[str, Any]) -> dict[str, Any]:
        (kind, spec), *_ = action.items()
        alias, doc_id = spec["_index"], spec["_id"]
        if spec.get("require_alias") and alias not in self.aliases:
            return {
                kind: {
                    "_index": alias,
                    "_id": doc_id,
                    "status": 404,
                    "error": {
                        "type": "index_not_found_exception",
                        "reason": f"no such index [{alias}] and [require_alias] request flag is [true]",
                    },
                }
            }
        concrete = self.aliases.get(alias, alias)
        stored = self.docs.get(doc_id)
        if kind == "create" and stored is not None:
            reason = f"[{doc_id}]: version conflict, document already exists (current version [{stored[0]}])"
            return conflict_item(concrete, doc_id, reason, "create")
        if "if_seq_no" in spec:
            current = self.seq_nos.get(doc_id)
            if current is None or current != (spec["if_seq_no"], spec["if_primary_term"]):
                reason = (
                    f"[{doc_id}]: version conflict, required seqNo [{spec['if_seq_no']}], primary term "
                    f"[{spec['if_primary_term']}]. current document has seqNo [{(current or (-1, 0))[0]}]"
                )
                return conflict_item(concrete, doc_id, reason)
        version = (stored[0] + 1) if stored else 1
        self.next_seq_no += 1
        self.docs[doc_id] = (version, json.loads(json.dumps(source)))
        self.seq_nos[doc_id] = (self.next_seq_no, 1)
        return {
            kind: {
                "_index": concrete,
                "_id": doc_id,
                "_version": version,
                "result": "updated" if stored else "created",
                "_shards": _shards(),
                "_seq_no": self.next_seq_no,
                "_primary_term": 1,
                "status": 200 if stored else 201,
            }
        }

    def bulk(self, body: list[dict[str, Any]] | str, **params: Any) -> dict[str, Any]:
        if isinstance(body, str):  # NDJSON, as opensearch-py's helpers.streaming_bulk sends it
            body = [json.loads(line) for line in body.splitlines() if line.strip()]
        self.log.append(("bulk", None, copy.deepcopy(body), params))
        items = []
        for n in range(0, len(body), 2):
            forced = self.bulk_interceptor(n // 2, body[n]) if self.bulk_interceptor else None
            items.append(forced if forced is not None else self._write(body[n], body[n + 1]))
        errors = any(next(iter(i.values())).get("error") for i in items)
        return {"took": 7, "errors": errors, "items": items}

    def mget(self, *, body: dict[str, Any], index: str, **params: Any) -> dict[str, Any]:
        self.log.append(("mget", index, copy.deepcopy(body), params))
        if index not in self.aliases:
            info = {"error": {"type": "index_not_found_exception", "reason": f"no such index [{index}]"}}
            raise NotFoundError(404, "index_not_found_exception", info)
        docs = []
        for spec in body["docs"]:
            found = self.docs.get(spec["_id"])
            entry: dict[str, Any] = {
                "_index": self.aliases[index],
                "_id": spec["_id"],
                "found": found is not None,
            }
            if found is not None:
                source = copy.deepcopy(found[1])
                if isinstance(spec.get("_source"), dict):
                    for field in spec["_source"].get("excludes", []):
                        source.pop(field, None)
                    if "includes" in spec["_source"]:
                        source = _included(source, spec["_source"]["includes"])
                seq_no, term = self.seq_nos[spec["_id"]]
                entry.update(
                    {"_version": found[0], "_seq_no": seq_no, "_primary_term": term, "_source": source}
                )
            docs.append(entry)
        return {"docs": docs}

    def _matching(self, query: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        """Documents matching a `term` query or a bool of `term` filters (what the catalog sends)."""
        terms = [c["term"] for c in query.get("bool", {}).get("filter", [])] or [query["term"]]
        return [
            (doc_id, source)
            for doc_id, (_, source) in self.docs.items()
            if all(source.get(field) == value for t in terms for field, value in t.items())
        ]

    def search(self, *, index: str, body: dict[str, Any], **params: Any) -> dict[str, Any]:
        """A sorted search: term filters, `sort` on keyword fields (desc), `search_after`, `size`."""
        self.log.append(("search", index, copy.deepcopy(body), params))
        if index not in self.aliases:
            info = {"error": {"type": "index_not_found_exception", "reason": f"no such index [{index}]"}}
            raise NotFoundError(404, "index_not_found_exception", info)
        fields = [next(iter(spec)) for spec in body.get("sort", [])]
        rows = sorted(
            ([str(src.get(f) or "") for f in fields], doc_id, src)
            for doc_id, src in self._matching(body["query"])
        )
        rows.reverse()
        after = body.get("search_after")
        if after is not None:
            rows = [r for r in rows if r[0] < list(after)]
        hits = []
        for values, doc_id, src in rows[: body.get("size", 10)]:
            source = copy.deepcopy(src)
            for field in body.get("_source", {}).get("excludes", []):
                source.pop(field, None)
            hits.append(
                {
                    "_index": self.aliases[index],
                    "_id": doc_id,
                    "_score": None,
                    "_source": source,
                    "sort": values,
                }
            )
        return search_response(hits)

    def delete_by_query(self, *, index: str, body: dict[str, Any], **params: Any) -> dict[str, Any]:
        """Delete every matching document; answers like OpenSearch's `_delete_by_query`."""
        self.log.append(("delete_by_query", index, copy.deepcopy(body), params))
        doomed = [doc_id for doc_id, _ in self._matching(body["query"])]
        for doc_id in doomed:
            del self.docs[doc_id]
        return {
            "took": 5,
            "timed_out": False,
            "total": len(doomed),
            "deleted": len(doomed),
            "batches": 1,
            "version_conflicts": 0,
            "noops": 0,
            "retries": {"bulk": 0, "search": 0},
            "throttled_millis": 0,
            "requests_per_second": -1.0,
            "throttled_until_millis": 0,
            "failures": [],
        }

    def msearch(self, *, body: list[dict[str, Any]], **params: Any) -> dict[str, Any]:
        self.log.append(("msearch", None, copy.deepcopy(body), params))
        answer = self.msearch_responses.pop(0)
        return answer(body) if callable(answer) else answer


class FakeConnection(Connection):
    """Plays `script` (a list shared with the test): an exception to raise, or (status, body) to answer.

    Every attempt is appended to `attempts`. Pass both through the client: `OpenSearch(...,
    connection_class=FakeConnection, script=[...], attempts=[])` (the Transport hands extra keyword
    arguments to the connection class).
    """

    def __init__(
        self, script: list[Any] | None = None, attempts: list[Any] | None = None, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.script = script if script is not None else []
        self.attempts = attempts if attempts is not None else []

    def perform_request(
        self,
        method: str,
        url: str,
        params: Any = None,
        body: Any = None,
        timeout: Any = None,
        ignore: Any = (),
        headers: Any = None,
    ) -> Any:
        self.attempts.append((method, url))
        step = self.script.pop(0) if self.script else (200, {})
        if isinstance(step, Exception):
            raise step
        status, payload = step
        raw = json.dumps(payload)
        if not 200 <= status < 300 and status not in ignore:
            self._raise_error(status, raw, "application/json")
        return status, {"content-type": "application/json"}, raw


def _included(source: dict[str, Any], paths: list[str]) -> dict[str, Any]:
    """`_source` filtered to `paths` as OpenSearch filters it: a dotted path reaches into objects and into
    every element of an array of objects (`chunks.embedding`)."""
    out: dict[str, Any] = {}
    for name, value in source.items():
        if name in paths:
            out[name] = value
            continue
        inner = [p[len(name) + 1 :] for p in paths if p.startswith(f"{name}.")]
        if not inner:
            continue
        if isinstance(value, dict):
            out[name] = _included(value, inner)
        elif isinstance(value, list):
            out[name] = [_included(v, inner) if isinstance(v, dict) else v for v in value]
    return out
