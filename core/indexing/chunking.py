"""Chunking of long texts for indexing (docs/architecture.md, Write path): ~300-token windows with a small
overlap, cut at word boundaries; a hit on a chunk reports its parent entity."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.indexing.entity_types import EntityType
from core.text import flatten_all, index_texts
from core.tokens import CHARS_PER_TOKEN

CHUNK_TOKENS = 300  # docs/architecture.md, Write path: ~300 tokens per chunk
CHUNK_OVERLAP_TOKENS = 30  # a small overlap: 10% keeps sentences cut at a border findable
# A chunked entity (a corpus document) may bring its own chunks under this field (POST /corpus).
PREMADE_CHUNKS_FIELD = "chunks"


def chunk_text(
    text: str, size_tokens: int = CHUNK_TOKENS, overlap_tokens: int = CHUNK_OVERLAP_TOKENS
) -> list[str]:
    """Split `text` into windows of ~size_tokens (ceil(len/4) estimate) overlapping by overlap_tokens."""
    words = text.split()
    if not words:
        return []
    size_chars = size_tokens * CHARS_PER_TOKEN
    overlap_chars = overlap_tokens * CHARS_PER_TOKEN
    chunks: list[str] = []
    start = 0
    while start < len(words):
        end, length = start, 0
        while end < len(words) and (length + len(words[end]) + 1 <= size_chars or end == start):
            length += len(words[end]) + 1
            end += 1
        chunks.append(" ".join(words[start:end]))
        if end >= len(words):
            break
        back, kept = end, 0
        while back > start + 1 and kept + len(words[back - 1]) + 1 <= overlap_chars:
            back -= 1
            kept += len(words[back]) + 1
        start = back
    return chunks


def _tiers(etype: EntityType, body: Mapping[str, Any]) -> dict[int, list[str]]:
    tiers: dict[int, list[str]] = {3: [], 2: [], 1: []}
    texts = flatten_all([body.get(spec.name) for spec in etype.fields])
    for spec, text in zip(etype.fields, texts, strict=True):
        if text:
            tiers[spec.boost].append(text)
    if etype.catch_all is not None:  # undeclared text fields, in name order (EntityType.caught)
        caught = flatten_all([body[name] for name in etype.caught(body)])
        tiers[etype.catch_all].extend(t for t in caught if t)
    return tiers


def premade_chunks(etype: EntityType, body: Mapping[str, Any]) -> list[str] | None:
    """A chunked type's own `chunks` (non-empty strings), used as they are instead of chunking its text."""
    given = body.get(PREMADE_CHUNKS_FIELD) if etype.chunked else None
    if not isinstance(given, list):
        return None
    pieces = [text for text in (c.strip() for c in flatten_all(given)) if text]
    return pieces or None


def build_chunks(etype: EntityType, body: Mapping[str, Any]) -> list[tuple[tuple[str, str, str], str]]:
    """(tiers, plain text) per chunk: chunked types use their pre-made `chunks` or split their boost-1 text."""
    tiers = _tiers(etype, body)
    top, mid, low = (" ".join(tiers[b]) for b in (3, 2, 1))
    pieces = premade_chunks(etype, body) or (chunk_text(low) if etype.chunked and low else [low])
    pieces = pieces or [""]
    indexed_top, indexed_mid, *indexed = index_texts([top, mid, *pieces])  # the tiers' search texts
    return [
        ((indexed_top, indexed_mid, text), " ".join(p for p in (top, mid, piece) if p))
        for piece, text in zip(pieces, indexed, strict=True)
    ]


def embedding_input(chunked: bool, title: str, plain: str) -> str:
    """The text a chunk's vector embeds: `title. text` for chunked types with a title (a document's chunk
    alone may not say what it is about), else the chunk's plain text. Indexing and reindexing share it."""
    return f"{title}. {plain}" if chunked and title else plain
