"""Request examples of the OpenAPI document, by operation id: what the README's "Try it" sends."""

from __future__ import annotations

from typing import Any

REQUEST_EXAMPLES: dict[str, dict[str, Any]] = {
    "search": {
        "hybrid": {"query": "API throttling protection", "limit": 10},
        "filtered": {"query": "task: login", "filters": {"status": "open"}, "explain": True},
        "identifier": {"query": "checkRateLimit", "strategy": "keyword"},
    },
    "embed": {
        "a query": {"texts": ["API throttling protection"], "kind": "query"},
        "passages": {"texts": ["Keys rotate monthly", "Rate limiter caps calls"], "kind": "passage"},
    },
    "bulkWrite": {
        "tasks and memories": {
            "items": [
                {"type": "task", "id": "t1", "title": "Fix login bug", "status": "open", "version": 1},
                {"type": "memory", "id": "m1", "content": "checkRateLimit validates request frequency"},
            ]
        }
    },
    "uploadEntities": {  # the lines of one NDJSON upload, one item a line (handlers/http_api/openapi.py `_ndjson_upload`)
        "a task and a memory": [
            {"type": "task", "id": "t2", "title": "Renew the TLS certificate", "status": "open"},
            {"type": "memory", "id": "m2", "content": "Certificates renew 30 days before expiry"},
        ]
    },
    "putEntity": {"task": {"title": "Fix login bug", "description": "Users cannot sign in", "version": 2}},
    "patchEntity": {"status only": {"status": "done", "version": 3}},
    "assembleContext": {
        "agent": {"query": "how do we rate-limit clients?", "caller": "support-bot", "token_budget": 2000}
    },
    "sendFeedback": {
        "used two": {"assembly_id": "asm_01", "used_source_ids": ["memory:m1", "task:t1"], "tokens_used": 900}
    },
    "retrieve": {"role": {"role_id": "support", "task_text": "customer cannot sign in after reset"}},
    "loadCorpus": {
        "one document": {
            "documents": [{"id": "doc-1", "title": "Rate limits", "text": "Each client may send 100 calls."}]
        }
    },
}


def add_examples(doc: dict[str, Any]) -> None:
    """Attach REQUEST_EXAMPLES to the request bodies of their operations, in each media type they take (an
    NDJSON upload's example is its lines as an array, as its schema states them)."""
    for ops in doc["paths"].values():
        for op in ops.values():
            examples = REQUEST_EXAMPLES.get(op.get("operationId", ""))
            for body in op.get("requestBody", {}).get("content", {}).values():
                if examples:
                    body["examples"] = {name: {"value": value} for name, value in examples.items()}
