"""How items read in the context block: one section per item, a `[LABEL] id` header (plus the title when
the text does not already start with it) and the text; sections separated by a blank line."""

from __future__ import annotations

from collections.abc import Sequence

from core.tokens import TokenCounter

SEPARATOR = "\n\n"
TRUNCATION_MARK = "…"
MAX_TITLE_CHARS = 80  # a header names the item; the text carries the substance
LINK_LABEL = "LINK"


def header(label: str, item_id: str, title: str, text: str) -> str:
    """`[LABEL] id`, plus `· title` when the text does not begin with the title."""
    line = f"[{label}] {item_id}"
    name = " ".join(title.split())
    if not name or name == item_id:
        return line
    short = name[:MAX_TITLE_CHARS]
    if " ".join(text.split()).lower().startswith(short.lower()):
        return line
    return f"{line} · {short}{TRUNCATION_MARK if len(name) > MAX_TITLE_CHARS else ''}"


def section(label: str, item_id: str, title: str, text: str) -> str:
    """One item as it appears in the block."""
    body = text.strip()
    top = header(label, item_id, title, body)
    return f"{top}\n{body}" if body else top


def section_cost(text: str, counter: TokenCounter) -> int:
    """Tokens a section costs in the block, its separator included (so parts add up to at least the
    whole for the default ceil(len/4) counter)."""
    return counter(text + SEPARATOR)


def line_cost(line: str, counter: TokenCounter) -> int:
    """Tokens one `[GRAPH]` line costs, its newline included."""
    return counter(line + "\n")


def block(sections: Sequence[str], graph: Sequence[str]) -> str:
    """The context block: sections in order, then the graph lines (last, so no separator follows them)."""
    parts = list(sections)
    if graph:
        parts.append("\n".join(graph))
    return SEPARATOR.join(parts)
