"""Context budgets counted in the caller's token encoding (infra/text_models/token_counters.py, core/tokens.py): the real
BPE counts of the `tokens` extra (bpe-openai, tables inside its wheel), packing by them, and the answer when
the extra is not installed."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import pytest

from core.context.context_api import AssembleRequest
from core.errors import InvalidInputError
from core.tokens import estimate_tokens
from infra.text_models.token_counters import SLICE_CHARS, BpeTokenCounters
from tests.conftest import require_tokens_extra
from tests.fakes import fake_container

# Long words BPE encodes in few tokens: 680 characters, ceil(len/4) = 170, 71 tokens in both encodings.
WORDY = "internationalization of the configuration management infrastructure " * 10
BUDGET = 120  # under the estimate of WORDY's section, over its real count


@pytest.fixture
def counters() -> BpeTokenCounters:
    require_tokens_extra()
    return BpeTokenCounters()


@pytest.mark.parametrize("encoding", ["cl100k_base", "o200k_base"])
def test_real_counts_in_each_encoding(counters: BpeTokenCounters, encoding: str) -> None:
    count = counters.counter(encoding)
    assert count("hello world") == 2
    assert count("") == 0
    assert count(WORDY) == 71 < estimate_tokens(WORDY)
    assert count("the " * 100) == 101 > estimate_tokens("the " * 100)  # the estimate is not a bound


def test_a_text_past_the_tokenizers_limit_is_counted_in_slices(counters: BpeTokenCounters) -> None:
    count = counters.counter("cl100k_base")
    text = "word " * (SLICE_CHARS // 2)  # 1.25 M characters: bpe-openai alone refuses a million
    assert abs(count(text) - 2 * count("word " * (SLICE_CHARS // 4))) <= 2


def _container(tmp_path: Path, counters: Any, **settings: Any) -> Any:
    c = fake_container(tmp_path, token_counters=counters)
    c.indexing.put("acme", "memory", "m", {"content": WORDY}, c.clock.now())
    return c


def _assemble(c: Any, **request: Any) -> Any:
    return c.context.assemble(
        "acme", AssembleRequest(query="configuration management", caller="agent", log=False, **request), None
    )


def test_the_real_count_packs_whole_what_the_estimate_would_cut(
    counters: BpeTokenCounters, tmp_path: Path
) -> None:
    c = _container(tmp_path, counters)
    estimated = _assemble(c, token_budget=BUDGET)
    assert estimated.token_encoding == "estimate"
    assert [s.truncated for s in estimated.sources] in ([], [True])  # ceil(len/4) says it does not fit
    counted = _assemble(c, token_budget=BUDGET, token_encoding="cl100k_base")
    assert counted.token_encoding == "cl100k_base"
    assert [(s.id, s.truncated) for s in counted.sources] == [("memory:m", False)]
    real = counters.counter("cl100k_base")
    assert counted.total_tokens <= BUDGET and real(counted.context_block) <= counted.total_tokens
    assert counted.sources[0].tokens == real(counted.context_block + "\n\n")
    assert math.ceil(len(counted.context_block) / 4) > BUDGET  # the estimate would have refused this block


def test_a_callers_configured_encoding_is_its_default(counters: BpeTokenCounters, tmp_path: Path) -> None:
    from dataclasses import replace

    c = _container(tmp_path, counters)
    c.context.settings = replace(c.context.settings, token_encodings={"agent": "o200k_base"})
    answer = _assemble(c, token_budget=BUDGET)
    assert answer.token_encoding == "o200k_base"
    assert [(s.id, s.truncated) for s in answer.sources] == [("memory:m", False)]


def test_an_encoding_without_its_tokenizer_installed_is_a_400(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "bpe_openai", None)  # import fails as when the extra is absent
    c = _container(tmp_path, BpeTokenCounters())
    with pytest.raises(InvalidInputError) as caught:
        _assemble(c, token_budget=BUDGET, token_encoding="cl100k_base")
    assert "tokens" in caught.value.fields["token_encoding"]
    assert _assemble(c, token_budget=BUDGET).token_encoding == "estimate"  # the estimate needs nothing
