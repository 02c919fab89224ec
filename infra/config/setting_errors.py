"""How a wrong configuration is told (infra/config/settings.py): one ConfigurationError naming every QUARRY_*
variable that is wrong, whether pydantic refused its value or the chosen adapters need one not given."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from pydantic_settings import SettingsError

from core.errors import ConfigurationError
from infra.config.setting_types import ENV_PREFIX

if TYPE_CHECKING:
    from infra.config.settings import Settings


def missing_settings(settings: Settings) -> dict[str, str]:
    """Settings required by the chosen adapters but not given, or naming files that are not there:
    {QUARRY_VARIABLE: what is wrong}."""
    problems: dict[str, str] = {}
    if settings.triples_file is not None and not settings.triples_file.is_file():
        problems[ENV_PREFIX + "TRIPLES_FILE"] = f"no such file: {settings.triples_file}"
    if settings.links_root is not None and not settings.links_root.is_dir():
        problems[ENV_PREFIX + "LINKS_ROOT"] = f"no such directory: {settings.links_root}"
    if settings.index_kind == "opensearch" and not settings.opensearch_url:
        problems[ENV_PREFIX + "OPENSEARCH_URL"] = (
            "is required when the index is OpenSearch (QUARRY_INDEX=opensearch, the default of QUARRY_BACKEND=aws)"
        )
    return problems


def configuration_error(problems: dict[str, str]) -> ConfigurationError:
    """One ConfigurationError naming every variable that is wrong."""
    detail = "; ".join(f"{k}: {v}" for k, v in problems.items())
    return ConfigurationError(f"invalid configuration: {detail}", problems)


def problems_of(exc: ValidationError) -> dict[str, str]:
    """{QUARRY_VARIABLE: what is wrong} for each value pydantic refused."""
    return {
        ENV_PREFIX + str(err["loc"][0]).upper(): ": ".join([*map(str, err["loc"][1:]), _message(err)])
        for err in exc.errors()
        if err.get("loc")
    }


def _message(err: Any) -> str:
    return str(err["msg"]).removeprefix("Value error, ")


def unparsable(exc: SettingsError) -> dict[str, str]:
    """{QUARRY_VARIABLE: why} for pydantic-settings' 'error parsing value for field "<name>"' (its message
    names the field, its cause says what is wrong with the JSON)."""
    import re

    field = re.search(r'field "(\w+)"', str(exc))
    variable = ENV_PREFIX + field.group(1).upper() if field else ENV_PREFIX + "*"
    return {variable: f"is not valid JSON ({exc.__cause__})" if exc.__cause__ else str(exc)}
