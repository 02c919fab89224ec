"""`core.models.Filters` evaluated on one stored entity, in Python: what infra/local/sqlite/sql.py
`filter_sql` states in SQL (the filter contract, tests/adapters/search_filter_contract.py, holds both)."""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from typing import Any

from core.models import Condition, Filters, StoredEntity
from core.search.filters import DATE, NUMBER

_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "gt": operator.gt,
    "gte": operator.ge,
    "lt": operator.lt,
    "lte": operator.le,
}
_DATED = re.compile(
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}"
)  # text a date range compares with (infra.local.sqlite.sql._RANGE_VALUES)


def passes(entity: StoredEntity, filters: Filters) -> bool:
    """Whether a live entity is within every restriction of `filters`."""
    owner = entity.owner
    checks = (
        not filters.entity_types or entity.key.entity_type in filters.entity_types,
        not filters.sources or entity.source in filters.sources,
        not filters.namespaces or entity.namespace in filters.namespaces,
        filters.owner is None or owner == filters.owner,
        not filters.owners or owner in filters.owners,
        filters.exclude_owner is None or owner != filters.exclude_owner,
    )
    if not all(checks):
        return False
    for name, allowed in filters.metadata.items():
        if not any(_equal(v, a) for v in field_values(entity, name, False) for a in allowed):
            return False
    return all(_holds(entity, c) for c in filters.conditions)


def field_values(entity: StoredEntity, name: str, column: bool) -> list[Any]:
    """A field's non-null values (each value of a list): an entity column, or a metadata value."""
    value = getattr(entity, name) if column else entity.metadata.get(name)
    values = value if isinstance(value, list) else [value]
    return [v for v in values if v is not None]


def _equal(value: Any, wanted: Any) -> bool:
    """JSON equality: a boolean equals only a boolean, a number only a number."""
    return isinstance(value, bool) == isinstance(wanted, bool) and value == wanted


def _holds(entity: StoredEntity, c: Condition) -> bool:
    values = field_values(entity, c.field, c.column)
    if c.op == "exists":
        return bool(values) == c.values[0]
    if c.op == "not":
        return not any(_equal(v, w) for v in values for w in c.values)
    compare, bound = _COMPARE[c.op], c.values[0]
    return any(_comparable(v, c) and compare(v, bound) for v in values)


def _comparable(value: Any, c: Condition) -> bool:
    """Whether a value takes part in a range: a number for a number bound, dated text for a date bound."""
    if c.column:
        return isinstance(value, str)
    if c.kind == NUMBER:
        return isinstance(value, int | float) and not isinstance(value, bool)
    return c.kind == DATE and isinstance(value, str) and bool(_DATED.match(value))
