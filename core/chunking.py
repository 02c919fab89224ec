"""Chunking of long texts for indexing (DESIGN.md §2): ~300-token windows with a small overlap,
cut at word boundaries; a hit on a chunk reports its parent entity."""

from __future__ import annotations

from core.scoring import CHARS_PER_TOKEN

CHUNK_TOKENS = 300  # DESIGN.md §2: ~300 tokens per chunk
CHUNK_OVERLAP_TOKENS = 30  # DESIGN.md §2: "small overlap" — 10% keeps sentences cut at a border findable


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
