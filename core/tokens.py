"""Token counts for budgets and chunk sizes: the estimate ceil(characters / 4), or the caller's own encoding
(`token_encoding`: a real BPE tokenizer, infra/text_models/token_counters.py) through any TokenCounter."""

from __future__ import annotations

import math
from collections.abc import Callable

CHARS_PER_TOKEN = 4  # docs/conformance.md#token-estimate: ceil(len / 4)

TokenCounter = Callable[[str], int]

ESTIMATE = "estimate"  # ceil(len / 4): the default, needing no tokenizer
# Encodings a caller may count its budget in: OpenAI's cl100k_base (GPT-4, GPT-3.5) and o200k_base
# (GPT-4o and later), counted offline by the tables the `tokens` extra ships (pyproject.toml).
TOKEN_ENCODINGS = (ESTIMATE, "cl100k_base", "o200k_base")


def estimate_tokens(text: str) -> int:
    """Token estimate ceil(len/4) (docs/conformance.md#token-estimate); replaceable by any TokenCounter."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)
