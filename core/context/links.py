"""Explicit links (docs/architecture.md, Context assembly): entity ids (`type:id`) or file paths relative to a
configured root.

Core refuses, before anything is read, every path that is absolute or climbs (`..`); the file reader in
`infra` resolves symlinks and refuses again whatever lands outside the root. A refused link is an
InvalidInputError naming `explicit_links.<i>` — the request fails rather than silently dropping it.
"""

from __future__ import annotations

import re
from collections.abc import Container, Sequence
from dataclasses import dataclass

from core.errors import InvalidInputError
from core.models import EntityKey

# Per request; each is one index lookup or one file read (our bound: docs/conformance.md#explicit-links).
MAX_LINKS = 20
MAX_LINK_CHARS = 1024  # a path or id longer than this is not a link anyone wrote by hand
_DRIVE = re.compile(r"^[A-Za-z]:")
_ENTITY = re.compile(r"^([a-z][a-z0-9_]*):([^/\\]+)$")


@dataclass(frozen=True, slots=True)
class Link:
    """One explicit link: an entity of the tenant, or a relative path under the links root."""

    raw: str
    entity: EntityKey | None = None
    path: str | None = None


def _refuse(index: int, link: str, reason: str) -> InvalidInputError:
    return InvalidInputError(
        f"explicit link '{link[:200]}' refused: {reason}", {f"explicit_links.{index}": reason}
    )


def check_relative_path(index: int, link: str) -> str:
    """The path with `/` separators; InvalidInputError when absolute, climbing or malformed."""
    if not link.strip() or "\x00" in link or len(link) > MAX_LINK_CHARS:
        raise _refuse(index, link, "is not a usable path")
    path = link.replace("\\", "/")
    if path.startswith("/") or _DRIVE.match(path) or path.startswith("~"):
        raise _refuse(index, link, "absolute paths are refused; give a path relative to the links root")
    if ".." in path.split("/"):
        raise _refuse(index, link, "'..' is refused; the path must stay under the links root")
    return path


def parse_links(links: Sequence[str], entity_types: Container[str]) -> list[Link]:
    """Classify each link: `type:id` for a known entity type is an entity, anything else a path."""
    if len(links) > MAX_LINKS:
        raise InvalidInputError(
            "too many explicit links", {"explicit_links": f"at most {MAX_LINKS} links per request"}
        )
    parsed = []
    for i, raw in enumerate(links):
        match = _ENTITY.match(raw)
        if match and match.group(1) in entity_types:
            parsed.append(Link(raw, entity=EntityKey(match.group(1), match.group(2))))
        else:
            parsed.append(Link(raw, path=check_relative_path(i, raw)))
    return parsed
