"""`JsonlTripleStore`: the TripleStore port over a JSON Lines file (QUARRY_TRIPLES_FILE), for local use.

One fact per line: `{"tenant_id", "subject", "predicate", "object", "id"?, "valid_from"?, "valid_to"?}`.
The file is read once, on first use, and indexed by lower-cased subject and object. A malformed line makes
the store unavailable (the assembly reports it in `warnings`) rather than silently dropping facts.
"""

from __future__ import annotations

import json
import threading
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from core.context.graph import Triple
from core.errors import UnavailableError

REQUIRED = ("tenant_id", "subject", "predicate", "object")


def _triple(number: int, raw: object) -> tuple[str, Triple]:
    if not isinstance(raw, dict) or not all(isinstance(raw.get(k), str) and raw[k] for k in REQUIRED):
        raise ValueError(f"line {number}: needs string fields {', '.join(REQUIRED)}")
    return raw["tenant_id"], Triple(
        id=str(raw.get("id") or f"t{number}"),
        subject=raw["subject"],
        predicate=raw["predicate"],
        object=raw["object"],
        valid_from=raw.get("valid_from"),
        valid_to=raw.get("valid_to"),
    )


class JsonlTripleStore:
    """Facts from a JSONL file, looked up by entity name per tenant."""

    def __init__(self, path: str | Path) -> None:
        self._path = Path(path)
        self._by_name: dict[tuple[str, str], list[Triple]] | None = None
        self._lock = threading.Lock()

    def _load(self) -> dict[tuple[str, str], list[Triple]]:
        with self._lock:
            if self._by_name is None:
                index: dict[tuple[str, str], list[Triple]] = defaultdict(list)
                try:
                    lines = self._path.read_text(encoding="utf-8").splitlines()
                    for number, line in enumerate(lines, 1):
                        if line.strip():
                            tenant, t = _triple(number, json.loads(line))
                            index[(tenant, t.subject.lower())].append(t)
                            if t.object.lower() != t.subject.lower():
                                index[(tenant, t.object.lower())].append(t)
                except (OSError, ValueError) as exc:
                    raise UnavailableError("triples", f"{self._path}: {exc}") from exc
                self._by_name = dict(index)
            return self._by_name

    def triples(self, tenant_id: str, entities: Sequence[str], per_entity: int) -> list[Triple]:
        """Up to `per_entity` facts naming each entity as subject or object, in file order."""
        by_name = self._load()
        found: list[Triple] = []
        for name in entities:
            found.extend(by_name.get((tenant_id, name.lower()), [])[: max(per_entity, 0)])
        return found
