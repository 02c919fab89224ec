"""The Lambda artifact: Quarry's source packages and the pinned runtime dependencies, nothing else.

`sam build` runs this through the root Makefile (`build-<Function>` targets, BuildMethod: makefile):
`python deploy/lambda_artifact.py "$ARTIFACTS_DIR"` copies `source_files()` and installs
requirements-lambda.txt (every package pinned, installed with --no-deps as arm64 wheels for the
functions' runtime, so the lock is exactly what ships). tests/infra/test_artifact.py builds the same file
list without the network and fails when tests, benches, data or a torch-sized dependency enter it.

`python deploy/lambda_artifact.py --lock` regenerates the lock from pyproject.toml's dependencies (needs
the package index).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "requirements-lambda.txt"
PACKAGES = ("core", "infra", "handlers")
PACKAGE_DATA = (".py", ".json")
# Modules that run only on a laptop or in a study, never in a function: the CLI, the local server (with its
# key, CORS and console) and the MCP server (handlers/), the BEIR evaluation harness and its SQLite embedding
# cache (infra/beir/). Matched by prefix.
LOCAL_ONLY = (
    "handlers/cli/",
    "handlers/local_server/",
    "handlers/mcp/",
    "infra/beir/",
)
# Folders of installed dependencies that never run in a function (numpy alone ships 15 MB of tests).
DEPENDENCY_JUNK = frozenset({"tests"})
# Lambda's code directory is read-only, so Python cannot cache bytecode there: without .pyc files every cold
# start compiles every module it imports (bench/cold_start.py --no-bytecode shows the cost). The build
# compiles them when it runs on the runtime's Python (`sam build --use-container`, the python3.12 image).
RUNTIME_PYTHON = (3, 12)
RUNTIME_BYTECODE_TAG = "cpython-312"
# The functions' runtime (template.yaml Globals: python3.12, arm64).
PLATFORM = ("--platform", "manylinux2014_aarch64", "--implementation", "cp", "--python-version", "3.12")
LOCK_HEADER = """\
# What the Lambda functions install: every package pinned (`python deploy/lambda_artifact.py --lock`
# regenerates it from pyproject.toml's [project] dependencies for python3.12 on arm64). The build installs
# it with --no-deps, so this list is exactly what ships (deploy/lambda_artifact.py). No dev tools, no tqdm
# (CLI progress bars), no evaluation harness; the local embedder's packages come in a layer
# (layers/local-embedder). tests/infra/test_artifact.py checks it is closed, minimal and free of deep-learning frameworks.
"""


def source_files(root: Path = ROOT) -> list[Path]:
    """The source files the functions run, relative to `root`, sorted."""
    found: list[Path] = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*")):
            rel = path.relative_to(root)
            if not path.is_file() or path.suffix not in PACKAGE_DATA or "__pycache__" in rel.parts:
                continue
            if rel.as_posix().startswith(LOCAL_ONLY):
                continue
            found.append(rel)
    return found


def locked(lock: Path = LOCK) -> dict[str, str]:
    """Pinned distribution name -> version from the lock file."""
    pins: dict[str, str] = {}
    for line in lock.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            if not version:
                raise ValueError(f"{lock.name}: {line!r} is not pinned with ==")
            pins[name.strip()] = version.strip()
    return pins


def ships(rel: Path) -> bool:
    """Whether an installed dependency file ships: not its own test suite, console scripts, or bytecode of
    another Python than the runtime's."""
    if rel.suffix == ".pyc":
        return rel.parent.name == "__pycache__" and RUNTIME_BYTECODE_TAG in rel.name
    return not (set(rel.parts[:-1]) & DEPENDENCY_JUNK or rel.parts[0] == "bin")


def build(target: Path, platform: str = PLATFORM[1]) -> None:
    """Copy the sources and install the locked dependencies into `target` (sam's ARTIFACTS_DIR); another
    `platform` (manylinux2014_x86_64) builds a copy this machine can import, to measure it."""
    target.mkdir(parents=True, exist_ok=True)
    for rel in source_files():
        (target / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, target / rel)
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-compile"]
    pip += [
        "--only-binary=:all:",
        "--platform",
        platform,
        *PLATFORM[2:],
        "--target",
        str(target),
        "-r",
        str(LOCK),
    ]
    subprocess.run(pip, check=True)
    for path in sorted(target.rglob("*"), reverse=True):  # deepest first: files before their folders
        rel = path.relative_to(target)
        if path.is_dir() and (rel.name in DEPENDENCY_JUNK or rel.parts == ("bin",)):
            shutil.rmtree(path)
        elif path.is_file() and not ships(rel):
            path.unlink()
    if sys.version_info[:2] == RUNTIME_PYTHON:
        # unchecked-hash: valid whatever mtimes the zip and Lambda's unpacking leave
        compile_all = [
            sys.executable,
            "-m",
            "compileall",
            "-q",
            "-j",
            "0",
            "--invalidation-mode",
            "unchecked-hash",
        ]
        subprocess.run([*compile_all, str(target)], check=True)
    else:
        print(f"lambda_artifact: Python {sys.version_info.major}.{sys.version_info.minor} is not the runtime's "
              "3.12: no bytecode shipped, every cold start compiles (build with `sam build --use-container`)",
              file=sys.stderr)  # fmt: skip


def lock() -> None:
    """Resolve pyproject.toml's dependencies for the functions' runtime and write the pins."""
    wanted = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        pip = [sys.executable, "-m", "pip", "install", "--quiet", "--dry-run", "--ignore-installed"]
        pip += ["--only-binary=:all:", *PLATFORM, "--target", tmp, "--report", str(report), *wanted]
        subprocess.run(pip, check=True)
        installs = json.loads(report.read_text())["install"]
    pins = sorted((i["metadata"]["name"], i["metadata"]["version"]) for i in installs)
    LOCK.write_text(LOCK_HEADER + "".join(f"{name}=={version}\n" for name, version in pins))


if __name__ == "__main__":
    if sys.argv[1:] == ["--lock"]:
        lock()
    elif len(sys.argv) == 2:
        build(Path(sys.argv[1]))
    elif len(sys.argv) == 4 and sys.argv[2] == "--platform":
        build(Path(sys.argv[1]), sys.argv[3])
    else:
        sys.exit("usage: lambda_artifact.py ARTIFACTS_DIR [--platform PLATFORM] | --lock")
