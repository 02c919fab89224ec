"""What the LangChain and LlamaIndex retrievers share: a search hit or an assembled source as plain text with
its id, score and metadata, framework-free (each framework module wraps these in its own types)."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import Any

from quarry_client import models as m

_MARK = re.compile(r"</?mark>")


@dataclass(frozen=True, slots=True)
class Passage:
    """One retrieved text: `id` is `type:id` for a search hit, the source item's id for an assembly."""

    id: str
    text: str
    score: float
    metadata: dict[str, Any]


def plain(snippet: str) -> str:
    """A search snippet as plain text: highlight tags dropped, HTML entities decoded."""
    return html.unescape(_MARK.sub("", snippet))


def hit_passage(result: m.SearchResult) -> Passage:
    """A search hit: title and snippet as the text; the entity's metadata, its type, id, title and score."""
    key = f"{result.entity_type}:{result.entity_id}"
    metadata = {**result.metadata, "id": key, "entity_type": result.entity_type, "entity_id": result.entity_id,
                "title": result.title, "score": result.score}  # fmt: skip
    text = "\n".join(part for part in (result.title, plain(result.snippet)) if part)
    return Passage(key, text, result.score, metadata)


def source_passages(answer: m.AssembleResponse) -> list[Passage]:
    """The assembled block cut at each source's section (each starts with a `[label] <id>` line, see the
    server's core/context/render.py), in block order; the whole block as one passage when a source's
    section cannot be found."""
    block, starts = answer.context_block, []
    for source in answer.sources:
        at = block.find(f"] {source.id}", starts[-1] + 1 if starts else 0)
        line = block.rfind("\n", 0, at) + 1 if at >= 0 else -1
        if at < 0 or block[line] != "[":
            return [_whole(answer)]
        starts.append(line)
    ends = [*starts[1:], len(block)]
    return [
        Passage(source.id, block[start:end].strip(), source.score, _source_metadata(answer, source))
        for source, start, end in zip(answer.sources, starts, ends, strict=True)
    ]


def best_passages(passages: list[Passage], k: int | None) -> list[Passage]:
    """The `k` best-scored passages (ties: the earlier one), in their order; all of them when k is None."""
    if k is None or k >= len(passages):
        return passages
    kept = set(sorted(range(len(passages)), key=lambda i: (-passages[i].score, i))[:k])
    return [p for i, p in enumerate(passages) if i in kept]


def _source_metadata(answer: m.AssembleResponse, source: m.ContextSource) -> dict[str, Any]:
    return {"id": source.id, "source": source.source, "title": source.title, "score": source.score,
            "tokens": source.tokens, "truncated": source.truncated, "assembly_id": answer.assembly_id,
            "token_budget": answer.token_budget}  # fmt: skip


def _whole(answer: m.AssembleResponse) -> Passage:
    metadata = {"assembly_id": answer.assembly_id, "token_budget": answer.token_budget,
                "total_tokens": answer.total_tokens, "sources": [s.id for s in answer.sources]}  # fmt: skip
    return Passage(answer.assembly_id or "context", answer.context_block, 1.0, metadata)
