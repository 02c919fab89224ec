"""What every request passes before routing: body size (413), media type (415) and the body as I-JSON
(400 naming the problem, core/payload.py). The body is handed on as plain UTF-8 text (base64 decoded, BOM
dropped), so Powertools parses exactly what was checked.

An NDJSON upload (`UPLOAD`) is the exception: its own size limit (QUARRY_MAX_NDJSON_BYTES) and media type,
and its lines are checked one by one by the route (core/indexing/ndjson.py), so the gate leaves the body as it came.
The local server hands such a body over as a file it streamed the request into (`UPLOAD_FILE`)."""

from __future__ import annotations

import base64
import binascii
import io
from collections.abc import Mapping
from typing import IO, Any

from core.errors import InvalidInputError, PayloadTooLargeError, QuarryError
from core.payload import checked_body
from handlers.http_api import json_answers

# Routes whose top-level list holds items validated one by one: a bad item is reported in its place.
ITEM_LISTS: dict[tuple[str, str], tuple[str, ...]] = {
    ("POST", "/entities"): ("items",),
    ("POST", "/corpus"): ("documents",),
}
JSON_TYPES = ("application/json",)
UPLOAD = ("POST", "/entities/ndjson")
NDJSON_TYPES = ("application/x-ndjson", "application/jsonl")
# The event key under which the local server passes an upload's body as a file (handlers/local_server/devserver.py): set
# in-process only; an event from API Gateway cannot carry it (its top-level keys are API Gateway's own).
UPLOAD_FILE = "quarryUploadFile"


def _error(status: int, exc: QuarryError, headers: Mapping[str, str] | None = None) -> dict[str, Any]:
    fields = getattr(exc, "fields", {}) or {}
    body = {"error": {"code": exc.code, "message": exc.message, "fields": dict(fields)}}
    return {
        "statusCode": status,
        "headers": {"Content-Type": "application/json", **(headers or {})},
        "body": json_answers.dumps(body),
        "isBase64Encoded": False,
    }


def _raw_body(event: Mapping[str, Any]) -> bytes:
    body = event.get("body") or ""
    if not event.get("isBase64Encoded"):
        return body.encode("utf-8", "surrogatepass")
    try:
        return base64.b64decode(body, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise InvalidInputError("request body is not valid base64", {"body": "is not valid base64"}) from exc


def _media_type(headers: Mapping[str, Any]) -> str | None:
    """The lower-cased media type of the Content-Type header, or None without one."""
    raw = next((str(v) for k, v in headers.items() if k.lower() == "content-type"), None)
    return raw.split(";", 1)[0].strip().lower() if raw is not None else None


def _unsupported(media: str | None, accepted: str = "application/json") -> dict[str, Any]:
    message = (
        "a request body needs a Content-Type header"
        if not media
        else f"content type '{media}' is not supported"
    )
    exc = InvalidInputError(message, {"content-type": f"must be {accepted}"})
    exc.code = "unsupported_media_type"
    return _error(415, exc)


def _is_json(media: str) -> bool:
    return media in JSON_TYPES or (media.startswith("application/") and media.endswith("+json"))


def _screen_upload(event: dict[str, Any], raw: bytes, limit: int) -> dict[str, Any] | None:
    """An NDJSON upload's size and media type (its lines are the route's to check)."""
    if len(raw) > limit:
        return _error(413, PayloadTooLargeError(f"request body exceeds {limit} bytes", limit))
    media = _media_type(event.get("headers") or {})
    if media not in NDJSON_TYPES:
        return _unsupported(media, " or ".join(NDJSON_TYPES))
    return None


def body_file(event: Mapping[str, Any]) -> IO[bytes]:
    """An upload's body as a binary file: the local server's own, else the event's body (base64 decoded)."""
    given = event.get(UPLOAD_FILE)
    return given if given is not None else io.BytesIO(_raw_body(event))


def screen(event: dict[str, Any], max_body_bytes: int, max_ndjson_bytes: int) -> dict[str, Any] | None:
    """A ready error response for a request refused before routing; None (the event's body made plain
    text) when it may go on."""
    http = (event.get("requestContext") or {}).get("http") or {}
    method = str(http.get("method", "")).upper()
    try:
        raw = _raw_body(event)
    except InvalidInputError as exc:
        return _error(400, exc)
    if (method, str(event.get("rawPath", ""))) == UPLOAD:
        return _screen_upload(event, raw, max_ndjson_bytes)
    if len(raw) > max_body_bytes:
        return _error(
            413, PayloadTooLargeError(f"request body exceeds {max_body_bytes} bytes", max_body_bytes)
        )
    if not raw:  # every method's body is screened (DELETE /tenant's included), or a route may parse it raw
        return None
    media = _media_type(event.get("headers") or {})
    if str(event.get("rawPath", "")) == UPLOAD[1] and media in NDJSON_TYPES:
        return None  # another method on the upload's path: the router answers 405
    if media is None or not _is_json(media):
        return _unsupported(media)
    try:
        text = checked_body(raw, ITEM_LISTS.get((method, str(event.get("rawPath", ""))), ()))
    except InvalidInputError as exc:
        return _error(400, exc)
    event["body"], event["isBase64Encoded"] = text, False
    return None
