"""The layer rule (docs/architecture.md, Layers): core imports only stdlib, pydantic, numpy and itself; infra never imports
handlers or the Powertools event handler; nothing reads the environment outside infra/config/settings.py."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CORE_ALLOWED = {
    "core",
    "pydantic",
    "pydantic_core",
    "numpy",
    "__future__",
}  # pydantic_core: pydantic's own errors
INFRA_FORBIDDEN = {"handlers", "aws_lambda_powertools"}


def imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


def sources(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


@pytest.mark.parametrize("path", sources("core"), ids=lambda p: str(p.relative_to(ROOT)))
def test_core_imports_only_the_standard_library_pydantic_and_numpy(path: Path) -> None:
    stdlib = set(sys.stdlib_module_names)
    bad = {m for m in imports(path) if m not in CORE_ALLOWED and m not in stdlib}
    forbidden_stdlib = {"sqlite3", "os", "time", "random"} & imports(path)
    assert not bad and not forbidden_stdlib, f"{path}: {sorted(bad | forbidden_stdlib)}"


@pytest.mark.parametrize("path", sources("infra"), ids=lambda p: str(p.relative_to(ROOT)))
def test_infra_never_imports_handlers(path: Path) -> None:
    assert not imports(path) & INFRA_FORBIDDEN, path


def test_only_settings_reads_the_environment() -> None:
    offenders = []
    for package in ("core", "handlers"):
        for path in sources(package):
            text = path.read_text()
            if "os.environ[" in text or "os.getenv(" in text or "environ.get(" in text:
                offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []
