"""Token counters in the caller's encoding (core/tokens.py TOKEN_ENCODINGS): the ceil(len/4) estimate, or
OpenAI's BPE encodings counted offline by bpe-openai, whose rank tables ship inside its wheel (the
`tokens` extra, pyproject.toml; tiktoken would download them at run time). bpe-openai is imported the
first time a caller asks for a real encoding, never at start-up (its import alone takes ~1.1 s: its Rust
library is 72 MB), and each encoding's tables are loaded once per process (~0.05-0.1 s for cl100k_base,
~0.2 s for o200k_base); docs/benchmarks.md#token-encodings-layer."""

from __future__ import annotations

import functools
import threading
from typing import Any

from core.errors import InvalidInputError
from core.tokens import ESTIMATE, TOKEN_ENCODINGS, TokenCounter, estimate_tokens

# bpe-openai refuses a text of a million characters or more; longer texts are counted in slices this long
# (cut at whitespace where one is near, so a word is rarely split: at most one token more per cut).
SLICE_CHARS = 500_000
CUT_SEARCH_CHARS = 1_000  # how far back from a slice's end a whitespace cut is looked for
# Texts whose counts each encoding's counter remembers: an assembly's candidates (~20-100 per source) of
# a few hundred recent assemblies; ~6 MB of texts at 1,500 characters (our sizing, not measured).
COUNT_CACHE = 4_096


def _slices(text: str) -> list[str]:
    out, start = [], 0
    while len(text) - start > SLICE_CHARS:
        end = start + SLICE_CHARS
        space = text.rfind(" ", end - CUT_SEARCH_CHARS, end)
        end = space if space > start else end
        out.append(text[start:end])
        start = end
    out.append(text[start:])
    return out


class BpeTokenCounters:
    """TokenCounters: the estimate, and the BPE encodings loaded on first use (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._encodings: dict[str, Any] = {}
        self._counters: dict[str, TokenCounter] = {}

    def counter(self, encoding: str) -> TokenCounter:
        """The counter for `encoding` (see the module docstring): one per encoding and process, remembering
        the counts of the last COUNT_CACHE texts (an assembly costs every candidate whole, and the same
        memories come back assembly after assembly)."""
        if encoding == ESTIMATE:
            return estimate_tokens
        if encoding not in TOKEN_ENCODINGS:
            raise InvalidInputError(
                "unknown token encoding", {"token_encoding": "must be one of: " + ", ".join(TOKEN_ENCODINGS)}
            )
        with self._lock:
            found = self._counters.get(encoding)
        if found is not None:
            return found
        tables = self._load(encoding)

        @functools.lru_cache(maxsize=COUNT_CACHE)
        def count(text: str) -> int:
            return sum(len(tables.encode_ordinary(piece)) for piece in _slices(text)) if text else 0

        with self._lock:
            return self._counters.setdefault(encoding, count)

    def _load(self, encoding: str) -> Any:
        with self._lock:
            if encoding not in self._encodings:
                try:
                    import bpe_openai
                except ImportError as exc:
                    raise InvalidInputError(
                        "token encoding not installed",
                        {
                            "token_encoding": f"{encoding} needs the `tokens` extra: pip install 'quarry[tokens]'"
                        },
                    ) from exc
                self._encodings[encoding] = bpe_openai.get_encoding(encoding)
            return self._encodings[encoding]
