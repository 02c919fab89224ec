"""Validation of entity bodies against their type, naming each bad field (docs/architecture.md, Errors and
authentication)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

from core.errors import InvalidInputError
from core.indexing.entity_types import EntityType
from core.payload import INT64_MAX, field_problems
from core.state import WILDCARD_CALLER
from core.timestamps import parse_timestamp

MAX_ID_CHARS = 256  # an id is a key, not a document
MAX_LABEL_CHARS = 200  # source / owner / namespace are labels
# The id alphabet, the same on every route (path, bulk, corpus, queue consumer): 1-256 characters of any
# script, without whitespace, '/', '#' or '|' (path and key separators), control or unpaired surrogate
# characters; and not '.' or '..' (path segments with a meaning of their own).
ID_PATTERN = re.compile(r"^[^\s/#|]{1,256}$")
ID_RULE = f"must be 1-{MAX_ID_CHARS} characters without whitespace, control characters, '/', '#' or '|', and not '.' or '..'"
# The same rule as one regular expression for the OpenAPI document, read alike by JSON Schema (ECMA-262)
# and Python `re` (its look-ahead is beyond Rust `regex`): every character `str.isspace()` or category Cc
# names, spelled out (`\s` differs between engines), and '/', '#', '|'. tests/handlers/
# test_openapi_document.py checks it against `is_valid_id`.
_SPACE_OR_CONTROL = r"\x00-\x20\x7f-\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
# The end of the text is `(?![\s\S])`, not `$`: Python's `$` also matches before a final newline ("a\n"),
# ECMA-262's does not; "no character follows" means the same in both.
END_OF_TEXT = r"(?![\s\S])"
ID_JSON_PATTERN = rf"^(?!\.\.?{END_OF_TEXT})[^{_SPACE_OR_CONTROL}/#|]{{1,{MAX_ID_CHARS}}}{END_OF_TEXT}"
# Text with at least one character that `str.strip()` keeps (the whitespace `str.isspace()` names, spelled
# out as above): what "not blank" means on every route.
_WHITESPACE = r"\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
WHITESPACE_CLASS = f"[{_WHITESPACE}]"
NONBLANK_PATTERN = f"[^{_WHITESPACE}]"
VERSION_RULE = f"must be an integer from 0 to {INT64_MAX}"
VECTOR_FIELDS = frozenset({"embedding"})  # a write's own vector: finite numbers of any size
_BAD_CATEGORIES = frozenset({"Cc", "Cs"})  # controls (NUL included) and lone surrogates
_SCALARS = (str, int, float, bool)


def _check_text(name: str, value: Any, max_chars: int, errors: dict[str, str], path: str) -> None:
    values = value if isinstance(value, list) else [value]
    if not all(isinstance(v, str) for v in values):
        errors[path + name] = "must be a string or a list of strings"
    elif sum(len(v) for v in values) > max_chars:
        errors[path + name] = f"must be at most {max_chars} characters"


def _check_common(body: Mapping[str, Any], errors: dict[str, str], path: str) -> None:
    version = body.get("version")
    if version is not None and not is_version(version):
        errors[path + "version"] = VERSION_RULE
    for stamp in ("created_at", "updated_at"):
        value = body.get(stamp)
        if value is not None and (not isinstance(value, str) or parse_timestamp(value) is None):
            errors[path + stamp] = "must be an ISO-8601 timestamp"
    for label in ("source", "owner", "namespace"):
        value = body.get(label)
        if value is not None and (not isinstance(value, str) or not 0 < len(value) <= MAX_LABEL_CHARS):
            errors[path + label] = f"must be a non-empty string of at most {MAX_LABEL_CHARS} characters"


def at_least_one(alternatives: list[dict[str, Any]]) -> dict[str, Any]:
    """JSON Schema: at least one of `alternatives` holds. Written `not allOf not` rather than `anyOf`, the
    same rule, so client generators keep the object one model (openapi-python-client types a top-level
    `anyOf` as a union of partial objects, and cannot then reference it)."""
    return {"not": {"allOf": [{"not": a} for a in alternatives]}}


def is_whole_number(value: object) -> bool:
    """A non-negative JSON integer: `7`, or `7.0` (JSON and JSON Schema do not tell them apart)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return value >= 0 and float(value).is_integer()


def is_version(version: object) -> bool:
    """True for a version a 64-bit store can hold: a JSON integer (`7` or `7.0`) from 0 to 2^63 - 1
    (VERSION_RULE)."""
    return is_whole_number(version) and version <= INT64_MAX  # type: ignore[operator]


def is_valid_id(entity_id: object) -> bool:
    """True when `entity_id` is in the id alphabet (see ID_PATTERN)."""
    return (
        isinstance(entity_id, str)
        and ID_PATTERN.match(entity_id) is not None
        and entity_id not in (".", "..")
        and not any(unicodedata.category(ch) in _BAD_CATEGORIES for ch in entity_id)
    )


def validate_id(entity_id: str, path: str = "id") -> None:
    """Reject ids outside the id alphabet, naming the field."""
    if not is_valid_id(entity_id):
        raise InvalidInputError("invalid entity id", {path: ID_RULE})


MAX_CALLER_CHARS = 128  # caller names are identifiers, not prose
# A caller name: 1-128 characters without whitespace or '/', and not '.' or '..' (it is a path segment of
# PUT /context/weights/{caller}/{source}); OIDC subjects such as Auth0's `auth0|5f7c…` are callers.
CALLER_PATTERN = re.compile(rf"^[^\s/]{{1,{MAX_CALLER_CHARS}}}$")
CALLER_RULE = (
    f"must be 1-{MAX_CALLER_CHARS} characters without whitespace, control or format characters (bidi "
    "overrides, zero-width) or '/', and not '.' or '..'"
)
_BAD_IN_NAMES = _BAD_CATEGORIES | {"Cf"}  # a caller is shown in the console, logs and exports


def _character_class(excluded: Callable[[str], bool]) -> str:
    """The inside of a regular-expression class listing every code point `excluded` holds for, read alike
    by Python `re` and ECMA-262 with the `u` flag: BMP code points as `\\uXXXX`, others as themselves."""

    def spell(code: int) -> str:
        return f"\\u{code:04x}" if code <= 0xFFFF else chr(code)

    spans: list[str] = []
    start = None
    for code in range(0x110000 + 1):
        inside = code <= 0x10FFFF and excluded(chr(code))
        if inside and start is None:
            start = code
        elif not inside and start is not None:
            spans.append(spell(start) if start == code - 1 else f"{spell(start)}-{spell(code - 1)}")
            start = None
    return "".join(spans)


def _not_in_caller(ch: str) -> bool:
    return ch.isspace() or ch == "/" or unicodedata.category(ch) in _BAD_IN_NAMES


@cache
def caller_json_pattern(wildcard: bool = False) -> str:
    """The caller rule as one pattern for the OpenAPI document (tests/handlers/test_openapi_document.py
    checks it against `is_caller`); with `wildcard`, `*` too, where it means every caller. Built on first
    use (0.2 s: every code point is looked at), never at import."""
    excluded = _character_class(_not_in_caller)
    reserved = r"\.\.?" if wildcard else r"(\.\.?|\*)"
    return rf"^(?!{reserved}{END_OF_TEXT})[^{excluded}]{{1,{MAX_CALLER_CHARS}}}{END_OF_TEXT}"


def caller_schema(wildcard: bool = False) -> dict[str, Any]:
    """The caller rule as JSON Schema: the one schema every published caller has (a body's, a query's or a
    path's, an MCP tool's argument), so what a schema admits is what the server takes."""
    pattern = caller_json_pattern(wildcard)
    return {"type": "string", "minLength": 1, "maxLength": MAX_CALLER_CHARS, "pattern": pattern}


def validate_caller(caller: str, path: str = "caller", wildcard: bool = False) -> str:
    """`caller` when it is a caller name (the same rule on every route, body, query and path; `*` only
    where it means every caller), else InvalidInputError naming `path`."""
    if caller == WILDCARD_CALLER:
        if wildcard:
            return caller
        raise InvalidInputError(
            "invalid caller", {path: "'*' is reserved: in a weight pin it means every caller"}
        )
    if not is_caller(caller):
        raise InvalidInputError("invalid caller", {path: CALLER_RULE})
    return caller


def is_caller(name: str) -> bool:
    """True when `name` is a caller name (CALLER_RULE); `*` is not one."""
    return (
        name != WILDCARD_CALLER
        and CALLER_PATTERN.match(name) is not None
        and name not in (".", "..")
        and not any(unicodedata.category(ch) in _BAD_IN_NAMES for ch in name)
    )


def _has_text(value: Any) -> bool:
    """A non-blank string, or a list holding one."""
    if isinstance(value, str):
        return bool(value.strip())
    return isinstance(value, list) and any(_has_text(v) for v in value)


def _untitled_document(etype: EntityType, body: Mapping[str, Any]) -> bool:
    """A chunked type (a document) may come without a title when it has text or chunks: a title is not
    needed to be found, and many corpora (BEIR's among them) have none."""
    body_fields = [f.name for f in etype.fields if f.boost == 1] + ["chunks"]
    return etype.chunked and any(_has_text(body.get(f)) for f in body_fields)


def _title_required(etype: EntityType) -> str:
    """Why a write without a title is refused, stating the rule whichever fields came: a document may have
    text or chunks instead (`_untitled_document`)."""
    if not etype.chunked:
        return f"is required for a {etype.name}"
    others = [f.name for f in etype.fields if f.boost == 1] + ["chunks"]
    return f"is required for a {etype.name} without {' or '.join(others)}"


def validate_body(
    etype: EntityType, body: Any, max_text_chars: int, partial: bool = False, path: str = ""
) -> dict[str, Any]:
    """The body as a dict if it fits `etype`; else InvalidInputError naming every bad field."""
    if not isinstance(body, Mapping):
        raise InvalidInputError(
            "entity must be a JSON object", {path.rstrip(".") or "body": "must be an object"}
        )
    errors: dict[str, str] = {}
    searchable = etype.searchable_names | {etype.title_field}
    for name, value in body.items():
        if value is None:
            continue
        if name in searchable:
            _check_text(name, value, max_text_chars, errors, path)
        elif name in etype.filterable and name not in ("source",):
            items = value if isinstance(value, list) else [value]
            if not all(isinstance(v, _SCALARS) for v in items):
                errors[path + name] = "must be a string, number, boolean or a list of them"
    _check_common(body, errors, path)
    errors.update(field_problems(dict(body), path.rstrip("."), vectors=VECTOR_FIELDS))
    if not partial and not _has_text(body.get(etype.title_field)) and not _untitled_document(etype, body):
        errors.setdefault(path + etype.title_field, _title_required(etype))
    if partial and not body:
        errors[path.rstrip(".") or "body"] = "must change at least one field"
    if errors:
        raise InvalidInputError(f"invalid {etype.name}", errors)
    return _whole_version(dict(body))


def _whole_version(body: dict[str, Any]) -> dict[str, Any]:
    """`version: 7.0` stored as 7."""
    if isinstance(body.get("version"), float):
        body["version"] = int(body["version"])
    return body
