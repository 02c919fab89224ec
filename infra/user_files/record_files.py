"""Records from the files users have: JSONL (one object a line), a JSON array of objects, or CSV with a
header row; each with where it came from (`line 3`, `item 3`, `row 3`) so a bad one is reported there.
How a record becomes an entity (`--id-field`, `--map`) is core/indexing/field_maps.py.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

Record = tuple[str, dict[str, Any] | str]  # (where, the object, or why this record is not one)


def file_format(path: Path) -> str:
    """`csv` by extension, `json` when the first non-blank character opens an array, else `jsonl`."""
    if path.suffix.lower() == ".csv":
        return "csv"
    with path.open(encoding="utf-8") as handle:
        while chunk := handle.read(4096):
            stripped = chunk.lstrip()
            if stripped:
                return "json" if stripped.startswith("[") else "jsonl"
    return "jsonl"


def read_records(path: Path) -> Iterator[Record]:
    """Every record of the file, in order (OSError when it cannot be opened)."""
    kind = file_format(path)
    if kind == "csv":
        with path.open(encoding="utf-8", newline="") as handle:
            for number, row in enumerate(csv.DictReader(handle), 2):  # row 1 is the header
                yield f"row {number}", {k: v for k, v in row.items() if k is not None}
        return
    if kind == "json":
        try:
            items = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            yield "file", f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
            return
        for number, item in enumerate(items if isinstance(items, list) else [items], 1):
            yield f"item {number}", item if isinstance(item, dict) else "not a JSON object"
        return
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if line.strip():
                yield f"line {number}", _object(line)


def _object(line: str) -> dict[str, Any] | str:
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        return f"not valid JSON ({exc.msg} at column {exc.colno})"
    return obj if isinstance(obj, dict) else "not a JSON object (each line must be one entity object)"
