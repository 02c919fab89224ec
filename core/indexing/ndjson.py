"""NDJSON uploads (POST /entities/ndjson; docs/api.md, Write jobs): a whole corpus in one request, one bulk
item a line (the NDJSON format, github.com/ndjson/ndjson-spec), indexed as ONE write job.

Each line is read as a request body is (core/payload.py: UTF-8, I-JSON, valid Unicode) and checked against
the published bulk item schema on its own. A line that fails is reported with its line number and the
others are indexed — unlike a JSON bulk request, whose schema breaks refuse the whole request: refusing a
100,000-line corpus for one bad line is unfriendly, and the job's status names every refused line. Blank
lines are skipped (the spec lets a parser ignore them) but counted, so a line number is the one an editor
shows.

The body is read twice and never held parsed: the first pass (`take_in`) checks every line and sizes the
job's parts; the second (`accepted_parts`) parses the accepted lines again and hands out one part at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

from core.errors import InvalidInputError, PayloadTooLargeError, QuarryError, RepeatedItemError
from core.indexing.write_jobs import message_bytes
from core.payload import check_text, decode_body, parse_json

Item = dict[str, Any]
ToItem = Callable[[dict[str, Any]], Item]  # a line's object as a bulk item (the field mapping of the upload)
_BOM = b"\xef\xbb\xbf"
_REPORTED = 20  # at most this many problem fields in a refusal of the whole upload (core/payload.py's bound)


@dataclass(slots=True)
class Intake:
    """What the first pass found: the accepted lines with their cost (chunks) and message size, and each
    refused line's error."""

    lines: list[int] = field(default_factory=list)
    costs: list[int] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)
    total: int = 0  # lines that are not blank


@dataclass(frozen=True, slots=True)
class LineRules:
    """How the first pass judges a line: the item schema, the entity an item names, and its cost."""

    problems: Callable[[Any, str], dict[str, str]]  # {`<where>.<field>`: rule} (EntityModels.item_problems)
    key: Callable[
        [Any], tuple[str, str] | None
    ]  # (type, id) of an item (core/indexing/bulk_writes.py item_key)
    cost: Callable[[Any], int]  # chunks to embed (core/indexing/write_jobs.py estimate_chunks)
    max_lines: int


def read_lines(stream: IO[bytes]) -> Iterator[tuple[int, bytes]]:
    """(line number from 1, bytes) of every line that is not blank, from the start of `stream`."""
    stream.seek(0)
    for number, raw in enumerate(stream, 1):
        line = raw.removeprefix(_BOM) if number == 1 else raw
        if line.strip():
            yield number, line


def parse_line(raw: bytes, to_item: ToItem | None) -> Item:
    """One line as a bulk item: a JSON object under the body rules (core/payload.py), mapped by `to_item`;
    InvalidInputError naming the problem (fields relative to the line)."""
    try:
        value = parse_json(decode_body(raw))
        check_text(value)
    except InvalidInputError as exc:  # the body rules' words, said of the line
        raise InvalidInputError(exc.message.replace("request body", "line", 1), exc.fields) from exc
    if not isinstance(value, dict):
        raise InvalidInputError("line is not a JSON object", {"": "must be one entity object"})
    return to_item(value) if to_item is not None else value


def at_line(number: int, path: str, prefix: str = "") -> str:
    """A field path as `line.<n>.<field>`: `prefix` (`items.<position>`) or `body` (the line itself) dropped."""
    rest = path.removeprefix(prefix) if prefix else path
    rest = "" if rest == "body" else rest.lstrip(".")
    return f"line.{number}" + (f".{rest}" if rest else "")


def line_error(number: int, item: Any, exc: QuarryError, prefix: str = "") -> dict[str, Any]:
    """One line's error as a job reports it: `index` (from 0), `line` (from 1), the id, the message, the
    code and the bad fields as `line.<n>.<field>`."""
    entity_id = item.get("id") if isinstance(item, Mapping) else None
    fields = getattr(exc, "fields", {}) or {}
    return {
        "index": number - 1,
        "line": number,
        "entity_id": entity_id if isinstance(entity_id, str) else None,
        "error": exc.message,
        "code": exc.code,
        "fields": {at_line(number, k, prefix): v for k, v in fields.items()},
    }


def relined(error: Mapping[str, Any], lines: Sequence[int]) -> dict[str, Any]:
    """A bulk error of a part (`index` its position in the part) as the error of the line it came from."""
    position = int(error.get("index", 0))
    number = lines[position]
    fields = {at_line(number, k, f"items.{position}"): v for k, v in (error.get("fields") or {}).items()}
    return {**error, "index": number - 1, "line": number, "fields": fields}


def _judge(number: int, item: Item, rules: LineRules, first: dict[tuple[str, str], int]) -> None:
    """InvalidInputError (or RepeatedItemError) when the item breaks the schema or repeats an entity."""
    where = f"line.{number}"
    problems = rules.problems(item, where)
    if problems:
        named = ", ".join(at.removeprefix(where + ".") for at in sorted(problems)[:_REPORTED])
        raise InvalidInputError(f"line {number} breaks the item schema: {named}", problems)
    key = rules.key(item)
    if key is not None and key in first:
        raise RepeatedItemError(":".join(key), first[key], unit="line")
    if key is not None:
        first[key] = number


def take_in(stream: IO[bytes], to_item: ToItem | None, rules: LineRules) -> Intake:
    """The first pass: every line checked on its own (see the module docstring); 413 beyond `max_lines`,
    400 when no line is accepted."""
    intake = Intake()
    first: dict[tuple[str, str], int] = {}
    for number, raw in read_lines(stream):
        intake.total += 1
        if intake.total > rules.max_lines:
            too_many = PayloadTooLargeError(f"at most {rules.max_lines} lines per upload", 0)
            too_many.fields = {"body": f"must hold at most {rules.max_lines} lines"}
            raise too_many
        item: Any = None
        try:
            item = parse_line(raw, to_item)
            _judge(number, item, rules, first)
        except QuarryError as exc:
            intake.errors.append(line_error(number, item, exc, f"line.{number}"))
            continue
        intake.lines.append(number)
        intake.costs.append(rules.cost(item))
        intake.sizes.append(message_bytes(item) + len(str(number)) + 1)  # the item and its line number
    _refuse_empty(intake)
    return intake


def _refuse_empty(intake: Intake) -> None:
    if not intake.total:
        raise InvalidInputError(
            "upload has no lines", {"body": "must hold at least one entity: a JSON object a line"}
        )
    if not intake.lines:
        fields = {k: v for e in intake.errors[:_REPORTED] for k, v in e["fields"].items()}
        raise InvalidInputError("no line of the upload is a valid entity: " + ", ".join(fields), fields)


def accepted_parts(
    stream: IO[bytes], to_item: ToItem | None, intake: Intake, bounds: Sequence[tuple[int, int]]
) -> Iterator[tuple[int, list[Item], tuple[int, ...]]]:
    """The second pass: (offset, items, their line numbers) of each part, `bounds` being [start, end) over
    the accepted lines; one part in memory at a time."""
    parts = iter(bounds)
    start, end = next(parts, (0, 0))
    items: list[Item] = []
    position = 0
    for number, raw in read_lines(stream):
        if position >= len(intake.lines) or number != intake.lines[position]:
            continue
        items.append(parse_line(raw, to_item))
        position += 1
        if position == end:
            yield start, items, tuple(intake.lines[start:end])
            items = []
            start, end = next(parts, (end, end))
