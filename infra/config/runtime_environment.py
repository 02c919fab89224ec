"""What this process's environment says beyond Quarry's own settings (infra/config/settings.py): whether
it runs inside a Lambda function, and where the user's cache directory is. Read with pydantic-settings, as
the settings are."""

from __future__ import annotations

from pathlib import Path

from pydantic_settings import BaseSettings, SettingsConfigDict


def onnx_cache_under(xdg_cache_home: Path | None) -> Path:
    """The ONNX graph cache inside the user's cache directory."""
    return (xdg_cache_home or Path.home() / ".cache") / "quarry" / "onnx"


class UserCache(BaseSettings):
    """XDG_CACHE_HOME alone, for an embedder built without the settings (a test, a bench)."""

    model_config = SettingsConfigDict(extra="ignore", frozen=True)

    xdg_cache_home: Path | None = None


def default_onnx_cache_dir() -> Path:
    """The ONNX graph cache when no settings say where (infra/local/onnx/embedder.py)."""
    return onnx_cache_under(UserCache().xdg_cache_home)


class LambdaRuntime(BaseSettings):
    """What the Lambda runtime sets in every execution environment: the function's name."""

    model_config = SettingsConfigDict(extra="ignore", frozen=True)

    aws_lambda_function_name: str | None = None


def in_lambda() -> bool:
    """True inside a Lambda function (its runtime sets AWS_LAMBDA_FUNCTION_NAME; the emulator too)."""
    return bool(LambdaRuntime().aws_lambda_function_name)
