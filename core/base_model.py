"""The base of Quarry's pydantic models: their validators are built on first use, not at import.

A Lambda handler imports every request and response model its routes name; building all their schemas
at import cost ~250 ms of cold start (bench/cold_start.py). `defer_build` builds each model's schema the
first time it validates or serialises, so a request pays only for the models it touches.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict


class QuarryModel(BaseModel):
    """pydantic.BaseModel with deferred schema building (subclasses' model_config merges with this)."""

    model_config = ConfigDict(defer_build=True)


def _json_number(value: Any) -> Any:
    """A JSON number as such: never read from a string, nor from true/false."""
    if isinstance(value, str | bool):
        raise ValueError("must be a number")
    return value


def _json_integer(value: Any) -> Any:
    """A JSON integer: `7`, or `7.0` (JSON Schema does not tell them apart), never "7", true or 7.5."""
    value = _json_number(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, float):
        raise ValueError("must be an integer")
    return value


# Request fields typed as JSON types, as the OpenAPI document states them (pydantic's lax mode would read
# "7" as 7 and 0 as false; its strict mode would refuse 7.0, which JSON Schema calls an integer).
# The validators go after any constraint (`Annotated[int, Field(ge=1), JSON_INTEGER] | None`), or pydantic
# cannot fold the constraint into the schema it publishes.
JSON_INTEGER = BeforeValidator(_json_integer)
JSON_NUMBER = BeforeValidator(_json_number)
JsonInt = Annotated[int, JSON_INTEGER]
JsonFloat = Annotated[float, JSON_NUMBER]
