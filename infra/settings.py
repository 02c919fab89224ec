"""All configuration, read once from `QUARRY_*` environment variables (pydantic-settings).

Nothing else in Quarry reads the environment. A wrong or missing setting fails at start with a message
naming the variable (`load_settings`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from core.errors import InvalidInputError

ENV_PREFIX = "QUARRY_"
DEFAULT_BODY_LIMIT = 1_048_576  # 1 MiB: a 500-item bulk of typical entities fits; API Gateway allows 10 MB


class Settings(BaseSettings):
    """Every QUARRY_* variable (see README, Configuration)."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore", frozen=True)

    backend: Literal["local", "aws"] = "local"
    data_dir: Path = Path(".quarry")
    index: Literal["sqlite", "opensearch"] | None = None
    state: Literal["sqlite", "dynamodb"] | None = None
    cache: Literal["sqlite", "memory", "dynamodb"] | None = None
    embedder: Literal["local", "bedrock"] | None = None
    entity_types_file: Path | None = None

    api_keys: dict[str, dict[str, Any]] = Field(default_factory=dict)

    fusion: Literal["rrf", "convex"] = "convex"
    alpha: float = Field(default=0.6, ge=0.0, le=1.0)
    rrf_k: int = Field(default=60, ge=1, le=1000)
    max_query_chars: int = Field(default=1000, ge=1, le=100_000)
    max_limit: int = Field(default=100, ge=1, le=100)
    max_body_bytes: int = Field(default=DEFAULT_BODY_LIMIT, ge=1024)
    max_batch_items: int = Field(default=500, ge=1, le=500)
    cache_ttl_seconds: float = Field(default=300.0, ge=0.0)

    @field_validator("api_keys", mode="before")
    @classmethod
    def _parse_keys(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = json.loads(value) if value.strip() else {}
        if not isinstance(value, dict):
            raise ValueError('must be a JSON object {"<key>": {"tenant": "<id>", "scopes": [...]}}')
        for key, grant in value.items():
            if not isinstance(grant, dict) or not isinstance(grant.get("tenant"), str):
                raise ValueError(f"key {key[:4]}…: needs a string 'tenant'")
            scopes = grant.get("scopes", [])
            if not isinstance(scopes, list) or not set(scopes) <= {"read", "write", "admin"}:
                raise ValueError(f"key {key[:4]}…: scopes must be a list of read, write, admin")
        return value

    @property
    def index_kind(self) -> str:
        return self.index or ("opensearch" if self.backend == "aws" else "sqlite")

    @property
    def state_kind(self) -> str:
        return self.state or ("dynamodb" if self.backend == "aws" else "sqlite")

    @property
    def cache_kind(self) -> str:
        return self.cache or ("dynamodb" if self.backend == "aws" else "sqlite")

    @property
    def embedder_kind(self) -> str:
        return self.embedder or ("bedrock" if self.backend == "aws" else "local")

    @property
    def sqlite_path(self) -> Path:
        return self.data_dir / "quarry.db"


def load_settings(**overrides: Any) -> Settings:
    """Settings from the environment; errors name the QUARRY_* variable that is wrong."""
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        problems = {
            ENV_PREFIX + str(err["loc"][0]).upper(): err["msg"] for err in exc.errors() if err.get("loc")
        }
        detail = "; ".join(f"{k}: {v}" for k, v in problems.items())
        raise InvalidInputError(f"invalid configuration: {detail}", problems) from exc
