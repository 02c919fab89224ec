"""The base of Quarry's pydantic models: their validators are built on first use, not at import.

A Lambda handler imports every request and response model its routes name; building all their schemas
at import cost ~250 ms of cold start (bench/cold_start.py). `defer_build` builds each model's schema the
first time it validates or serialises, so a request pays only for the models it touches.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class QuarryModel(BaseModel):
    """pydantic.BaseModel with deferred schema building (subclasses' model_config merges with this)."""

    model_config = ConfigDict(defer_build=True)
