"""The JSON text of the API's answers, written by orjson: the resolver's serializer, and the answers made
before it runs (the body gate's refusals, a configuration failure, the local server's own 4xx and 5xx).

Powertools writes an answer with the standard library's encoder (compact separators, its Encoder for
Decimals, models and dataclasses). A search's answer is a few hundred values, and that encoder walks them in
Python: ~0.25 ms of a 10-hit keyword search, more at 100 hits. orjson writes the same JSON values in a
fraction of it. What differs is spelling only: characters beyond ASCII are written as UTF-8 rather than
`\\u` escapes (the body is UTF-8 either way), and a float's shortest form may be spelled differently
(`1e-05` → `1e-5`); a client parses the same values.

What orjson cannot write (an integer beyond 64 bits, a type it does not know and the fallback below does not
name) is written by Powertools' own serializer, as before, so no answer fails that did not fail before.
"""

from __future__ import annotations

import json
from decimal import Decimal
from functools import partial
from typing import Any

import orjson
from aws_lambda_powertools.shared.json_encoder import Encoder
from pydantic import BaseModel

_STANDARD = partial(json.dumps, separators=(",", ":"), cls=Encoder)  # Powertools' default serializer
_OPTIONS = orjson.OPT_NON_STR_KEYS  # int keys become strings, as json.dumps writes them


def _other(value: Any) -> Any:
    """What orjson does not write itself, as Powertools' Encoder writes it."""
    if isinstance(value, Decimal):
        return None if value.is_nan() else str(value)
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    raise TypeError(type(value).__name__)


def dumps(value: Any) -> str:
    """An answer's JSON text."""
    try:
        return orjson.dumps(value, default=_other, option=_OPTIONS).decode()
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return _STANDARD(value)


__all__ = ["dumps"]
