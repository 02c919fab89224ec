"""Packing a token budget: never over budget, ≥ 90% full when there is enough material, explicit links
within 30%, per-source shares honoured before overflow, graph lines within 7.5%, deterministic."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from core.context.graph import graph_allowance
from core.context.packing import EXPLICIT_LINK_BUDGET_SHARE, TARGET_FILL, Packer
from core.context.render import LINK_LABEL
from core.context.scoring import ContextItem, deduplicate, rank
from core.context.sources import EXPLICIT_LINK_SOURCE
from core.tokens import estimate_tokens

SOURCES = ("memory", "agent_memory_own", "agent_memory_peer", "vault", "psychic_cache")
LABELS = {**{s: s.upper() for s in SOURCES}, EXPLICIT_LINK_SOURCE: LINK_LABEL}
WORDS = "alpha beta gamma delta limiter login token budget vault memory agent context".split()


def text_of(n_chars: int, salt: int) -> str:
    words = [WORDS[(salt + i) % len(WORDS)] + str(salt) for i in range(n_chars // 6 + 1)]
    return " ".join(words)[:n_chars]


def item(i: int, source: str, n_chars: int, score: float) -> ContextItem:
    return ContextItem(f"memory:m-{i}", source, f"title {i}", text_of(n_chars, i), score, score)


def link(i: int, n_chars: int) -> ContextItem:
    return ContextItem(
        f"notes/n-{i}.md", EXPLICIT_LINK_SOURCE, f"notes/n-{i}.md", text_of(n_chars, 1000 + i), 1.0, 1.0
    )


items_strategy = st.lists(
    st.tuples(st.sampled_from(SOURCES), st.integers(1, 3000), st.floats(0.01, 1.5)),
    min_size=0,
    max_size=60,
)
shares_strategy = st.dictionaries(st.sampled_from(SOURCES), st.floats(0.0, 0.8), min_size=0, max_size=5)


@settings(max_examples=150, deadline=None)
@given(
    budget=st.integers(1, 16000),
    raw=items_strategy,
    shares=shares_strategy,
    link_sizes=st.lists(st.integers(1, 20000), max_size=4),
    graph_count=st.integers(0, 30),
)
def test_an_assembly_never_exceeds_its_budget(
    budget: int,
    raw: list[tuple[str, int, float]],
    shares: dict[str, float],
    link_sizes: list[int],
    graph_count: int,
) -> None:
    items = rank(item(i, s, n, score) for i, (s, n, score) in enumerate(raw))
    links = [link(i, n) for i, n in enumerate(link_sizes)]
    graph = [f"[GRAPH] Entity{i} | relates_to | Thing{i}" for i in range(graph_count)]
    packing = Packer(estimate_tokens, LABELS).pack(
        budget, items, shares, links, graph, graph_allowance(budget)
    )
    assert packing.total_tokens <= budget
    assert estimate_tokens(packing.block) <= budget  # the block itself, headers and separators included
    assert sum(p.tokens for p in packing.links) <= math.floor(budget * EXPLICIT_LINK_BUDGET_SHARE)
    assert packing.graph_tokens <= graph_allowance(budget)


@settings(max_examples=150, deadline=None)
@given(
    budget=st.integers(100, 16000),
    raw=st.lists(
        st.tuples(st.sampled_from(SOURCES), st.integers(20, 4000), st.floats(0.01, 1.5)),
        min_size=1,
        max_size=60,
    ),
    shares=shares_strategy,
)
def test_the_budget_is_at_least_90_percent_full_when_material_suffices(
    budget: int, raw: list[tuple[str, int, float]], shares: dict[str, float]
) -> None:
    items = rank(item(i, s, n, score) for i, (s, n, score) in enumerate(raw))
    packer = Packer(estimate_tokens, LABELS)
    material = sum(packer.whole(i).tokens for i in items)
    packing = packer.pack(budget, items, shares)
    if material >= budget:
        assert packing.total_tokens >= TARGET_FILL * budget
    else:
        assert packing.total_tokens == material  # everything fits, nothing is cut


def test_explicit_links_come_first_and_are_cut_to_30_percent() -> None:
    budget = 1000
    big = link(0, 40_000)
    items = [item(i, "memory", 400, 1.0 - i / 100) for i in range(20)]
    packing = Packer(estimate_tokens, LABELS).pack(budget, items, {"memory": 1.0}, [big])
    assert packing.block.startswith(f"[{LINK_LABEL}] notes/n-0.md")
    assert packing.links[0].truncated and packing.links[0].section.endswith("…")
    assert packing.links[0].tokens <= 300 and packing.links[0].tokens >= 290
    assert packing.total_tokens >= 0.9 * budget


def test_a_link_that_does_not_fit_stays_eligible_for_normal_retrieval() -> None:
    budget = 400  # link allowance 120 tokens: the first link fits, the second is left out
    first, second = item(1, "memory", 420, 0.9), item(2, "memory", 420, 0.8)
    linked = [ContextItem(i.id, EXPLICIT_LINK_SOURCE, i.title, i.text, 1.0, 1.0) for i in (first, second)]
    packing = Packer(estimate_tokens, LABELS).pack(budget, [first, second], {"memory": 1.0}, linked)
    assert [p.item.id for p in packing.links] == ["memory:m-1"] and packing.skipped_links == ("memory:m-2",)
    assert [p.item.id for p in packing.items] == ["memory:m-2"]  # retrieved, so packed as memory
    assert packing.block.count("memory:m-1") == 1  # the placed link is never repeated


def test_a_link_that_cannot_fit_is_reported_not_silently_dropped() -> None:
    tiny_budget = 10  # 30% = 3 tokens: not even the header fits
    packing = Packer(estimate_tokens, LABELS).pack(tiny_budget, [], {}, [link(0, 100)])
    assert packing.links == () and packing.skipped_links == ("notes/n-0.md",)


def test_each_source_gets_its_share_before_overflow() -> None:
    # memory has the ten best items, vault ten worse ones; each item costs ~100 tokens
    memory = [item(i, "memory", 380, 1.0 - i / 100) for i in range(10)]
    vault = [item(100 + i, "vault", 380, 0.5 - i / 100) for i in range(10)]
    budget = 1000
    by_score = Packer(estimate_tokens, LABELS).pack(
        budget, rank(memory + vault), {"memory": 1.0, "vault": 0.0}
    )
    shared = Packer(estimate_tokens, LABELS).pack(budget, rank(memory + vault), {"memory": 0.5, "vault": 0.5})
    assert {p.item.source for p in by_score.items} == {"memory"}
    vault_tokens = sum(p.tokens for p in shared.items if p.item.source == "vault")
    assert 0.4 * budget <= vault_tokens <= 0.5 * budget


def test_overflow_fills_what_a_thin_source_leaves() -> None:
    # vault has a 50% share but one small item: memory's leftovers fill the rest
    memory = [item(i, "memory", 380, 0.9 - i / 100) for i in range(20)]
    vault = [item(100, "vault", 40, 0.2)]
    packing = Packer(estimate_tokens, LABELS).pack(1000, rank(memory + vault), {"memory": 0.5, "vault": 0.5})
    assert "memory:m-100" in {p.item.id for p in packing.items}
    assert packing.total_tokens >= 900


def test_items_appear_best_first_and_packing_is_deterministic() -> None:
    items = rank(item(i, SOURCES[i % 5], 200 + 37 * i, (i * 7919 % 100) / 100 + 0.01) for i in range(40))
    first = Packer(estimate_tokens, LABELS).pack(2000, items, {s: 0.2 for s in SOURCES})
    again = Packer(estimate_tokens, LABELS).pack(2000, list(items), {s: 0.2 for s in SOURCES})
    scores = [p.item.score for p in first.items]
    assert scores == sorted(scores, reverse=True)
    assert first.block == again.block


def test_graph_lines_stay_within_7_5_percent_and_come_last() -> None:
    graph = [f"[GRAPH] Acme{i} | employs | Person{i}" for i in range(100)]
    items = [item(i, "memory", 400, 1.0 - i / 100) for i in range(30)]
    packing = Packer(estimate_tokens, LABELS).pack(
        2000, items, {"memory": 1.0}, (), graph, graph_allowance(2000)
    )
    assert 0 < packing.graph_tokens <= 150
    assert packing.block.rstrip().splitlines()[-1].startswith("[GRAPH]")
    assert graph_allowance(499) == 0 and graph_allowance(500) == 37


def test_a_custom_token_counter_is_respected() -> None:
    def words(text: str) -> int:  # a "tokenizer" that counts whitespace-separated words
        return len(text.split())

    items = [item(i, "memory", 600, 1.0 - i / 100) for i in range(30)]
    packing = Packer(words, LABELS).pack(300, items, {"memory": 1.0})
    assert packing.total_tokens <= 300 and words(packing.block) <= 300
    assert packing.total_tokens >= 270


def test_dedup_keeps_the_best_copy_of_an_entity_and_of_a_text() -> None:
    a = ContextItem("memory:m-1", "memory", "t", "The limiter allows 5 attempts.", 0.4, 0.4)
    a_again = ContextItem("memory:m-1", "agent_memory_peer", "t", "The limiter allows 5 attempts!", 0.9, 0.9)
    copy = ContextItem("memory:m-2", "vault", "t", "the LIMITER allows 5   attempts", 0.3, 0.3)
    other = ContextItem("memory:m-3", "vault", "t", "Something else entirely", 0.2, 0.2)
    kept = deduplicate([a, a_again, copy, other])
    assert [(k.id, k.source) for k in kept] == [("memory:m-1", "agent_memory_peer"), ("memory:m-3", "vault")]
    # text already in the block through an explicit link (another id) is not repeated
    linked = ContextItem("notes/limiter.md", EXPLICIT_LINK_SOURCE, "n", a.text, 1.0, 1.0)
    packing = Packer(estimate_tokens, LABELS).pack(1000, [a, other], {"memory": 0.5, "vault": 0.5}, [linked])
    assert [p.item.id for p in packing.items] == ["memory:m-3"]


def test_items_with_no_score_are_never_packed() -> None:
    muted = ContextItem("memory:m-1", "memory", "t", "text", 0.9, 0.0)
    assert deduplicate([muted]) == []
