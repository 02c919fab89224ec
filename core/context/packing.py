"""Packing a token budget (docs/architecture.md, Context assembly; docs/conformance.md#packing):
explicit links first within 30% of the budget, knowledge-graph lines within 7.5%, then each source up to its
token share of what remains, then greedy overflow of the best leftovers, then one truncated item to fill the
tail. Retrieved items that repeat a placed link (same id or same text) are left out; a link that did not fit
its allowance leaves its entity to normal retrieval, where it competes like any other item.

Every part is costed as it is rendered (header, text and separator), so the sum of the parts never
exceeds the budget, and with the default counter neither does the block itself.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from core.context import render
from core.context.scoring import ContextItem
from core.tokens import TokenCounter

EXPLICIT_LINK_BUDGET_SHARE = 0.3  # docs/conformance.md#explicit-links: links first, within 30%
# The packer aims to fill at least this much of the budget whenever there is enough material.
TARGET_FILL = 0.9
# A truncated item shorter than this is noise; below it the tail stays empty unless it is over 10% of
# the budget (24 tokens ≈ one sentence at ceil(len/4)).
MIN_FRAGMENT_TOKENS = 24
TAIL_ATTEMPTS = 3  # leftovers tried for the tail when a long header leaves no room for text


@dataclass(frozen=True, slots=True)
class Packed:
    """An item in the block: its rendered section, what it cost, and whether it was cut short."""

    item: ContextItem
    section: str
    tokens: int
    truncated: bool = False


@dataclass(frozen=True, slots=True)
class Packing:
    """The packed block: links, retrieved items (best first), graph lines, and what did not fit."""

    links: tuple[Packed, ...]
    items: tuple[Packed, ...]
    graph: tuple[str, ...]
    graph_tokens: int
    skipped_links: tuple[str, ...]

    @property
    def total_tokens(self) -> int:
        """Tokens of every part, as costed against the budget."""
        return sum(p.tokens for p in (*self.links, *self.items)) + self.graph_tokens

    @property
    def block(self) -> str:
        """The context block text."""
        return render.block([p.section for p in (*self.links, *self.items)], self.graph)


class Packer:
    """Packs items for one counter and one set of source labels."""

    def __init__(self, counter: TokenCounter, labels: Mapping[str, str]) -> None:
        self._count = counter
        self._labels = labels

    def _render(self, item: ContextItem, text: str) -> str:
        label = self._labels.get(item.source, item.source.upper())
        return render.section(label, item.id, item.title, text)

    def fit(self, item: ContextItem, allowance: int) -> Packed | None:
        """The item whole if it fits, else its longest prefix (marked …) that fits, else None."""
        if allowance <= 0:
            return None
        whole = self.whole(item)
        if whole.tokens <= allowance:
            return whole
        text = item.text.strip()
        low, high, best = 1, len(text) - 1, None
        while low <= high:  # cost grows with the prefix length, so bisect on it
            mid = (low + high) // 2
            cut = self._render(item, text[:mid].rstrip() + render.TRUNCATION_MARK)
            cut_cost = render.section_cost(cut, self._count)
            if cut_cost <= allowance:
                best, low = Packed(item, cut, cut_cost, truncated=True), mid + 1
            else:
                high = mid - 1
        return best

    def _links(self, links: Sequence[ContextItem], allowance: int) -> tuple[list[Packed], list[str]]:
        packed, skipped, used = [], [], 0
        for link in links:
            room = allowance - used
            got = self.fit(link, room) if room >= 1 else None
            if got is None or (got.truncated and room < MIN_FRAGMENT_TOKENS):
                skipped.append(link.id)
                continue
            packed.append(got)
            used += got.tokens
        return packed, skipped

    def _graph(self, lines: Sequence[str], allowance: int) -> tuple[list[str], int]:
        kept, used = [], 0
        for line in lines:
            cost = render.line_cost(line, self._count)
            if used + cost <= allowance:
                kept.append(line)
                used += cost
        return kept, used

    def pack(
        self,
        budget: int,
        items: Sequence[ContextItem],
        shares: Mapping[str, float],
        links: Sequence[ContextItem] = (),
        graph: Sequence[str] = (),
        graph_allowance: int = 0,
    ) -> Packing:
        """Pack `items` (best first) into `budget` tokens; see the module docstring for the order."""
        packed_links, skipped = self._links(links, math.floor(budget * EXPLICIT_LINK_BUDGET_SHARE))
        placed_ids = {p.item.id for p in packed_links}
        placed_texts = {p.item.content_hash for p in packed_links}
        items = [i for i in items if i.id not in placed_ids and i.content_hash not in placed_texts]
        used = sum(p.tokens for p in packed_links)
        graph_kept, graph_used = self._graph(graph, min(graph_allowance, budget - used))
        room = budget - used - graph_used
        whole = [self.whole(item) for item in items]
        caps = {source: math.floor(share * room) for source, share in shares.items()}
        chosen = _within_caps(whole, caps, room)
        chosen = _overflow(whole, chosen, room)
        chosen = self._tail(items, chosen, room, budget)
        ranked = [chosen[i] for i in sorted(chosen)]
        return Packing(tuple(packed_links), tuple(ranked), tuple(graph_kept), graph_used, tuple(skipped))

    def whole(self, item: ContextItem) -> Packed:
        """The item rendered in full, with its cost."""
        text = self._render(item, item.text)
        return Packed(item, text, render.section_cost(text, self._count))

    def _tail(
        self, items: Sequence[ContextItem], chosen: dict[int, Packed], room: int, budget: int
    ) -> dict[int, Packed]:
        """Fill what the whole items left with the best leftover cut to fit (when that space matters)."""
        left = room - sum(p.tokens for p in chosen.values())
        if left < MIN_FRAGMENT_TOKENS and left <= budget * (1 - TARGET_FILL):
            return chosen
        leftovers = [i for i in range(len(items)) if i not in chosen][:TAIL_ATTEMPTS]
        for i in leftovers:
            got = self.fit(items[i], left)
            if got is not None:
                return {**chosen, i: got}
        return chosen


def _within_caps(whole: Sequence[Packed], caps: Mapping[str, int], room: int) -> dict[int, Packed]:
    """Best first, each source up to its cap (and all within `room`); positions → packed items."""
    chosen: dict[int, Packed] = {}
    per_source: dict[str, int] = {}
    total = 0
    for i, p in enumerate(whole):
        source = p.item.source
        spent = per_source.get(source, 0)
        if spent + p.tokens <= caps.get(source, 0) and total + p.tokens <= room:
            chosen[i] = p
            per_source[source] = spent + p.tokens
            total += p.tokens
    return chosen


def _overflow(whole: Sequence[Packed], chosen: dict[int, Packed], room: int) -> dict[int, Packed]:
    """Greedy overflow: the best leftovers that still fit, regardless of their source's cap."""
    total = sum(p.tokens for p in chosen.values())
    for i, p in enumerate(whole):
        if i not in chosen and total + p.tokens <= room:
            chosen[i] = p
            total += p.tokens
    return dict(chosen)
