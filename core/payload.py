"""Request bodies as I-JSON (RFC 7493): UTF-8, syntactically valid JSON, no duplicate member names, no
NaN/Infinity, numbers a 64-bit store can hold, nesting a reader can walk, and no lone surrogates in any
string. Every problem is an InvalidInputError naming where it is, so hostile JSON is a 400, never a 500.

Lone surrogates are reported by `lone_surrogates` rather than refused by `parse_json`, so a batch can
report the one bad item and index the others (`item_lists`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from typing import Any

from core.errors import InvalidInputError

BOM = "\ufeff"  # RFC 8259 §8.1: a parser MAY ignore a leading byte order mark; we do
MAX_DEPTH = 64  # no Quarry body nests beyond ~6 levels; 64 is far above that and far below recursion limits
INT64_MAX = 2**63 - 1  # SQLite INTEGER and DynamoDB-safe versions: bigger numbers cannot be stored
INT64_RULE = f"must be between -{INT64_MAX} and {INT64_MAX}"
_SURROGATE = re.compile("[\ud800-\udfff]")
_REPORTED = 20  # at most this many problem fields in one error body


class _Duplicate(ValueError):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


class _Constant(ValueError):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


def _unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for name, value in pairs:
        if name in seen:
            raise _Duplicate(name)
        seen[name] = value
    return seen


def _no_constant(name: str) -> Any:
    raise _Constant(name)


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise _Constant(text[:20])
    return value


def _invalid(message: str, where: str, problem: str) -> InvalidInputError:
    return InvalidInputError(message, {where: problem})


def decode_body(raw: bytes) -> str:
    """UTF-8 text of a body (a leading BOM dropped), or InvalidInputError naming the first bad byte."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _invalid(
            "request body is not UTF-8", "body", f"is not valid UTF-8 (bad byte at offset {exc.start})"
        ) from exc
    return text.removeprefix(BOM)


def parse_json(text: str) -> Any:
    """The JSON value of `text`, refusing everything I-JSON refuses but lone surrogates (see module)."""
    try:
        value = json.loads(
            text,
            object_pairs_hook=_unique_object,
            parse_constant=_no_constant,
            parse_float=_finite_float,
        )
    except _Duplicate as exc:
        raise _invalid("request body repeats a key", "body", f"repeats the key '{exc.name}'") from exc
    except _Constant as exc:
        raise _invalid(
            "request body has a number JSON cannot carry",
            "body",
            f"contains {exc.name}: NaN and Infinity are not JSON numbers",
        ) from exc
    except RecursionError as exc:
        raise _invalid(
            "request body nests too deeply", "body", f"nests deeper than {MAX_DEPTH} levels"
        ) from exc
    except json.JSONDecodeError as exc:
        raise _invalid("request body is not valid JSON", "body", f"is not valid JSON ({exc})") from exc
    except ValueError as exc:  # int() refusing a number of 4300+ digits
        raise _invalid(
            "request body has a number too large to store", "body", f"has a number beyond {INT64_MAX}"
        ) from exc
    _check_shape(value)
    return value


def checked_body(raw: bytes, item_lists: tuple[str, ...] = ()) -> str:
    """A request body's text once it is I-JSON: UTF-8 (`decode_body`), JSON within its limits
    (`parse_json`), no lone surrogate outside `item_lists` (`check_text`); InvalidInputError otherwise."""
    text = decode_body(raw)
    check_text(parse_json(text), item_lists)
    return text


def _children(value: Any, path: str) -> Iterable[tuple[str, Any]]:
    if isinstance(value, dict):
        return ((f"{path}.{k}" if path else str(k), v) for k, v in value.items())
    if isinstance(value, list):
        return ((f"{path}.{i}" if path else str(i), v) for i, v in enumerate(value))
    return ()


def _check_shape(value: Any) -> None:
    """Depth and integer range, walked without recursion."""
    stack: list[tuple[str, Any, int]] = [("", value, 1)]
    while stack:
        path, node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise _invalid(
                "request body nests too deeply", path or "body", f"nests deeper than {MAX_DEPTH} levels"
            )
        if isinstance(node, int) and not isinstance(node, bool) and abs(node) > INT64_MAX:
            raise _invalid("request body has a number too large to store", path or "body", INT64_RULE)
        stack.extend((p, child, depth + 1) for p, child in _children(node, path))


def lone_surrogates(value: Any, path: str = "") -> dict[str, str]:
    """{path: problem} for every string (or object key) holding a lone UTF-16 surrogate such as \\ud800."""
    found: dict[str, str] = {}
    stack: list[tuple[str, Any]] = [(path, value)]
    while stack and len(found) < _REPORTED:
        where, node = stack.pop()
        if isinstance(node, str) and _SURROGATE.search(node):
            found[where or "body"] = "contains a lone surrogate (\\ud800-\\udfff), which is not valid Unicode"
        elif isinstance(node, dict):
            for key in node:
                if _SURROGATE.search(str(key)):
                    found[where or "body"] = "has a key with a lone surrogate, which is not valid Unicode"
        stack.extend(_children(node, where))
    return found


def out_of_range(value: Any, path: str = "", vectors: frozenset[str] = frozenset()) -> dict[str, str]:
    """{path: problem} for every number beyond ±(2^63 - 1) in an entity's or a corpus document's fields,
    however written: the published schema states their values as JSON values, whose numbers that large are
    integers (`1.6e226` is one), so the gate refuses them by value, not only when written as integers.
    Top-level keys in `vectors` hold a vector, whose numbers only need to be finite."""
    found: dict[str, str] = {}
    if isinstance(value, dict):
        value = {k: v for k, v in value.items() if k not in vectors}
    stack: list[tuple[str, Any]] = [(path, value)]
    while stack and len(found) < _REPORTED:
        where, node = stack.pop()
        if isinstance(node, (int, float)) and not isinstance(node, bool) and abs(node) > INT64_MAX:
            found[where or "body"] = INT64_RULE
        stack.extend(_children(node, where))
    return found


def field_problems(value: Any, path: str = "", vectors: frozenset[str] = frozenset()) -> dict[str, str]:
    """{path: problem} of `lone_surrogates` and of `out_of_range` together: the values of an entity's
    fields that a write cannot store."""
    return {**lone_surrogates(value, path), **out_of_range(value, path, vectors)}


def check_value(value: Any) -> None:
    """InvalidInputError unless an already parsed value is I-JSON: depth, integer range and no lone
    surrogates (for values that did not arrive as a body, such as MCP tool arguments)."""
    _check_shape(value)
    check_text(value)


def check_text(value: Any, item_lists: tuple[str, ...] = ()) -> None:
    """InvalidInputError naming each lone surrogate outside `item_lists` (top-level keys whose items are
    validated one by one, so one bad item is reported in place and never fails the rest)."""
    if isinstance(value, dict) and item_lists:
        value = {k: v for k, v in value.items() if k not in item_lists}
    found = lone_surrogates(value)
    if found:
        raise InvalidInputError("request body is not valid Unicode: " + ", ".join(sorted(found)), found)


# A JSON value's top-level type as JSON Schema names it, with the article a message puts before it.
_JSON_TYPES: tuple[tuple[type | tuple[type, ...], str], ...] = (
    (bool, "boolean"),  # before int: a Python bool is an int
    (dict, "object"),
    (list, "array"),
    (str, "string"),
    ((int, float), "number"),
    (type(None), "null"),
)
_ARTICLES = {"object": "a JSON object", "array": "an array", "string": "a string", "number": "a number",
             "integer": "an integer", "boolean": "a boolean", "null": "null"}  # fmt: skip


def json_type(value: Any) -> str:
    """The JSON Schema type of a parsed JSON value (`integer` is reported as `number`)."""
    return next((name for kinds, name in _JSON_TYPES if isinstance(value, kinds)), "object")


def check_top_type(value: Any, expected: str, what: str = "the request body", where: str = "body") -> None:
    """InvalidInputError unless `value`'s top-level JSON type is `expected` (a JSON Schema type, the one the
    route's request-body schema takes): a body of another type is refused whole, never applied in part."""
    found = json_type(value)
    if found == expected or (expected == "integer" and found == "number" and float(value).is_integer()):
        return
    wanted, got = _ARTICLES.get(expected, expected), _ARTICLES[found]
    raise InvalidInputError(f"{what} must be {wanted}, not {got}", {where: f"must be {wanted}, not {got}"})
