"""schemathesis extensions (loaded through schemathesis.toml `hooks`): NDJSON request bodies.

/openapi.json states an NDJSON upload (POST /entities/ndjson) as an array of bulk items, one a line on the
wire (handlers/openapi.py `_ndjson_upload`); this serializer writes the generated array that way."""

from __future__ import annotations

import json
from typing import Any

import schemathesis


@schemathesis.serializer("application/x-ndjson", "application/jsonl")
def ndjson(ctx: Any, value: Any) -> bytes:
    """Each item of a generated array as one line; anything else (a negative case) as one line."""
    items = value if isinstance(value, list) else [value]
    return b"".join(
        json.dumps(item, ensure_ascii=False).encode("utf-8", "surrogatepass") + b"\n" for item in items
    )
