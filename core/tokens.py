"""Token estimates for budgets and chunk sizes: ceil(characters / 4), replaceable by any TokenCounter."""

from __future__ import annotations

import math
from collections.abc import Callable

CHARS_PER_TOKEN = 4  # docs/conformance.md#token-estimate: ceil(len / 4)

TokenCounter = Callable[[str], int]


def estimate_tokens(text: str) -> int:
    """Token estimate ceil(len/4) (docs/conformance.md#token-estimate); replaceable by any TokenCounter."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)
