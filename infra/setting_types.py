"""The value types of QUARRY_* settings that pydantic's lax mode would coerce (infra/settings.py): a
setting is refused at start rather than read as a number it does not say."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BeforeValidator

_DECIMAL = re.compile(r"[+-]?[0-9]+")


def _decimal(value: Any) -> Any:
    """An integer setting's text is decimal digits: lax mode would read "1.0" as 1 and "1_000" as 1000,
    and a bool as 0 or 1."""
    if isinstance(value, bool) or (isinstance(value, str) and not _DECIMAL.fullmatch(value.strip())):
        raise ValueError(f"must be a whole number in decimal digits, not {value!r}")
    return value


# An integer variable (QUARRY_MAX_BODY_BYTES=1048576): digits only.
WholeNumber = Annotated[int, BeforeValidator(_decimal)]
