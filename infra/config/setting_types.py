"""The value types of QUARRY_* settings that pydantic's lax mode would coerce (infra/config/settings.py): a
setting is refused at start rather than read as a number it does not say; and the shape of QUARRY_API_KEYS."""

from __future__ import annotations

import json
import re
from typing import Annotated, Any

from pydantic import BeforeValidator

from core.indexing.entity_validation import CALLER_RULE, is_caller

ENV_PREFIX = "QUARRY_"
_DECIMAL = re.compile(r"[+-]?[0-9]+")


def _decimal(value: Any) -> Any:
    """An integer setting's text is decimal digits: lax mode would read "1.0" as 1 and "1_000" as 1000,
    and a bool as 0 or 1."""
    if isinstance(value, bool) or (isinstance(value, str) and not _DECIMAL.fullmatch(value.strip())):
        raise ValueError(f"must be a whole number in decimal digits, not {value!r}")
    return value


# An integer variable (QUARRY_MAX_BODY_BYTES=1048576): digits only.
WholeNumber = Annotated[int, BeforeValidator(_decimal)]


def check_api_keys(value: Any) -> Any:
    """QUARRY_API_KEYS: a JSON object {"<key>": {"tenant": "<id>", "scopes": [...], "caller": ...}}, each
    key a secret of its own."""
    if isinstance(value, str):
        value = json.loads(value) if value.strip() else {}
    if not isinstance(value, dict):
        raise ValueError('must be a JSON object {"<key>": {"tenant": "<id>", "scopes": [...]}}')
    for key, grant in value.items():
        if not key.strip():  # else a request without an Authorization header would act as this key
            raise ValueError("a key is empty or blank: every key must be a secret of its own")
        if not isinstance(grant, dict) or not isinstance(grant.get("tenant"), str):
            raise ValueError(f"key {key[:4]}…: needs a string 'tenant'")
        scopes = grant.get("scopes", [])
        if not isinstance(scopes, list) or not set(scopes) <= {"read", "write", "admin"}:
            raise ValueError(f"key {key[:4]}…: scopes must be a list of read, write, admin")
        if "caller" in grant and not (isinstance(grant["caller"], str) and is_caller(grant["caller"])):
            raise ValueError(f"key {key[:4]}…: 'caller' {CALLER_RULE}")
    return value
