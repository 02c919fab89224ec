"""A search's `filters` parsed into `core.models.Filters`; every error names the field and the operator.

A field's value is a value (equal to it), a list (any of them), or an object of operators that must all
hold: `gt`/`gte`/`lt`/`lte` (a number, compared with numeric values, or an ISO 8601 date or date-time,
compared with text values that start with a date), `in` (any of a list), `not` (none of a value or list;
entities without the field pass) and `exists` (true: the field has a value; false: it has none). A list
field (tags) matches when any of its values does.

Dates compare as text, as stored: a date-only upper bound covers its whole day (`lte: "2026-01-31"` keeps
`2026-01-31T23:00:00Z`, `gt: "2026-01-31"` leaves it out), and date-times order correctly only when they
share a time zone designator (write UTC, `Z`, as `created_at` and `updated_at` are).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from core.errors import InvalidInputError
from core.models import Condition, Filters, Scalar
from core.timestamps import DATE_ONLY_CHARS, is_date_bound

RANGE_OPERATORS = ("gt", "gte", "lt", "lte")
OPERATORS = (*RANGE_OPERATORS, "in", "not", "exists")
COLUMN_FIELDS = ("source", "owner", "namespace")  # text columns: values, `in`, `not`, `exists`
TIME_FIELDS = ("created_at", "updated_at")  # timestamp columns: ranges only
COMMON_FILTERS = (*COLUMN_FIELDS, *TIME_FIELDS)
# Sorts after anything a time can add to a date (UTF-8 bytes, as SQLite's and Lucene's text order compare).
DAY_END = "\uffff"
NUMBER = "number"
DATE = "date"


MAX_FACETS = 10  # facet fields per search
FACET_VALUES = 100  # values per facet field, most frequent first (then by value)


def facet_key(value: Any) -> str:
    """A metadata value as a facet's key: true/false, 5 for 5.0, text as is (OpenSearch's filter terms,
    infra/opensearch/documents.py keyword, are the same strings)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    return str(value)


def check_facets(fields: Sequence[str] | None, filterable: set[str]) -> tuple[str, ...]:
    """The facet fields asked for, each once: filterable fields and the text columns (not timestamps)."""
    allowed = filterable - set(TIME_FIELDS)
    errors = {
        f"facets.{i}": "is not a facet field; facet fields: " + ", ".join(sorted(allowed))
        for i, field in enumerate(fields or ())
        if field not in allowed
    }
    if errors:
        raise InvalidInputError("invalid facets", errors)
    return tuple(dict.fromkeys(fields or ()))


def parse_filters(raw: Mapping[str, Any] | None, types: Sequence[str], filterable: set[str]) -> Filters:
    """The request's filters for a search of `types`; InvalidInputError lists every bad field/operator."""
    errors: dict[str, str] = {}
    metadata: dict[str, tuple[Scalar, ...]] = {}
    common: dict[str, tuple[str, ...]] = {}
    conditions: list[Condition] = []
    for key, value in (raw or {}).items():
        if key not in filterable:
            errors[f"filters.{key}"] = "is not filterable; filterable: " + ", ".join(sorted(filterable))
            continue
        ops = value if isinstance(value, dict) else {"in": value if isinstance(value, list) else [value]}
        if not ops:
            errors[f"filters.{key}"] = "must name an operator: " + ", ".join(OPERATORS)
        for op, operand in ops.items():
            path = f"filters.{key}" if not isinstance(value, dict) else f"filters.{key}.{op}"
            try:
                parsed = _operand(key, op, operand)
            except ValueError as exc:
                errors[path] = str(exc)
                continue
            if isinstance(parsed, Condition):
                conditions.append(parsed)
            elif key in COLUMN_FIELDS:
                common[key] = tuple(str(v) for v in parsed)
            else:
                metadata[key] = parsed
    if errors:
        raise InvalidInputError("invalid filters", errors)
    return Filters(
        entity_types=tuple(types),
        metadata=metadata,
        sources=common.get("source", ()),
        owners=common.get("owner", ()),  # one or several: any of them (never silently dropped)
        namespaces=common.get("namespace", ()),
        conditions=tuple(conditions),
    )


def _operand(key: str, op: str, operand: Any) -> Condition | tuple[Scalar, ...]:
    """One operator's operand checked: the any-of values for `in`, else its Condition (ValueError: why not)."""
    column = key in COMMON_FILTERS
    if op not in OPERATORS:
        raise ValueError("is not an operator; operators: " + ", ".join(OPERATORS))
    if key in TIME_FIELDS and op not in RANGE_OPERATORS:
        raise ValueError(f"{key} takes ranges only: " + ", ".join(RANGE_OPERATORS))
    if op in RANGE_OPERATORS:
        if key in COLUMN_FIELDS:
            raise ValueError(f"ranges apply to numbers and dates; {key} is text")
        kind, bound = _bound(op, operand)
        if key in TIME_FIELDS and kind != DATE:
            raise ValueError(f"{key} is a timestamp: the bound must be an ISO 8601 date")
        if kind == DATE and len(bound) == DATE_ONLY_CHARS and op in ("lte", "gt"):
            bound = str(bound) + DAY_END  # the whole day is at most / not after the date
        return Condition(key, op, (bound,), kind, column)
    if op == "exists":
        if not isinstance(operand, bool):
            raise ValueError("must be true or false")
        return Condition(key, op, (operand,), column=column)
    values = _scalars(operand, op == "not")
    return Condition(key, op, values, column=column) if op == "not" else values


def _bound(op: str, operand: Any) -> tuple[str, Any]:
    if isinstance(operand, (int, float)) and not isinstance(operand, bool):
        return NUMBER, operand
    if isinstance(operand, str) and is_date_bound(operand):
        return DATE, operand
    raise ValueError("must be a number or an ISO 8601 date (2026-01-31 or 2026-01-31T09:30:00Z)")


def _scalars(operand: Any, one_allowed: bool) -> tuple[Scalar, ...]:
    values = [operand] if one_allowed and not isinstance(operand, list) else operand
    if not isinstance(values, list):
        raise ValueError("must be a list of values")
    if not values:
        raise ValueError("must not be an empty list")
    if not all(isinstance(v, (str, int, float, bool)) for v in values):
        raise ValueError("must hold strings, numbers or booleans")
    return tuple(values)
