"""What a function needs to run in the Lambda Runtime Interface Emulator on this machine, built and cached
under .cache/lambda: the emulator itself and the Python 3.12 runtime environment (`make lambda-runtime`),
the function's artifact (`make build-<LogicalId>`, as `sam build` runs it) and its layers (their folders'
Makefiles). deploy/lambda_emulator.py runs a function from them."""

from __future__ import annotations

import fcntl
import hashlib
import platform
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from deploy.lambda_artifact import LOCK, source_files
from deploy.lambda_template import CACHE, ROOT, Stack

RIE = CACHE / "go" / "bin" / "aws-lambda-rie"
RUNTIME_PYTHON = CACHE / "python3.12" / "bin" / "python"
SETUP_HINT = "run `make lambda-runtime` (builds both into .cache/lambda; docs/deployment.md, Running the Lambda functions locally)"


def lambda_platform() -> tuple[str, str]:
    """(pip platform tag, machine) of this machine, for building what it can import."""
    machine = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}[
        platform.machine().lower()
    ]
    return f"manylinux2014_{machine}", machine


def missing() -> list[str]:
    """What this machine lacks to run a function in the emulator, each with how to get it."""
    problems = []
    if not RIE.exists():
        how = "needs Go 1.22+ (https://go.dev/dl/)" if shutil.which("go") is None else "Go is installed"
        problems.append(f"the Lambda Runtime Interface Emulator is not built ({how}): {SETUP_HINT}")
    if not (RUNTIME_PYTHON.parent.parent / ".installed").exists():  # written once awslambdaric is in
        problems.append(
            "the Python 3.12 runtime environment (awslambdaric) is not built; it needs Python 3.12 "
            f"(`pyenv install 3.12` or python3.12 on PATH): {SETUP_HINT}"
        )
    if sys.platform != "linux" or shutil.which("unshare") is None:
        problems.append("a private mount namespace needs Linux and util-linux's `unshare`")
    return problems


@contextmanager
def _build_lock() -> Iterator[None]:
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / "build.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # a test run and `make invoke` may build at the same time
        yield


def _digest(paths: Sequence[Path], *extra: str) -> str:
    h = hashlib.sha256("\0".join(extra).encode())
    for path in sorted(paths):
        h.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


def _cached_build(kind: str, key: str, build: Any) -> Path:
    """`CACHE/<kind>/<key>`, built by `build(folder)` unless there; older builds of `kind` are removed."""
    target = CACHE / kind / key
    with _build_lock():
        if (target / ".quarry-built").exists():
            return target
        scratch = CACHE / kind / f".{key}.tmp"
        shutil.rmtree(scratch, ignore_errors=True)
        build(scratch)
        (scratch / ".quarry-built").touch()
        for old in (CACHE / kind).iterdir():
            if old.name != scratch.name:
                shutil.rmtree(old, ignore_errors=True)
        scratch.rename(target)
    return target


def build_artifact(function_id: str) -> Path:
    """The function's artifact for this machine, built by `make build-<function_id>` as `sam build`
    runs it (cached by the sources, the lock and the build script)."""
    tag, _ = lambda_platform()
    files = [ROOT / p for p in source_files()] + [LOCK, ROOT / "deploy" / "lambda_artifact.py"]
    key = _digest(files, tag, "python3.12")

    def build(folder: Path) -> None:
        make = ["make", "-s", "--no-print-directory", f"build-{function_id}", f"ARTIFACTS_DIR={folder}"]
        make += [f"PYTHON={RUNTIME_PYTHON}", f"LAMBDA_PLATFORM={tag}"]
        subprocess.run(make, cwd=ROOT, check=True, stdout=sys.stderr)

    return _cached_build("artifact", key, build)


def build_layer(stack: Stack, layer_id: str) -> Path:
    """A layer's content for this machine, built by its folder's Makefile (`build-<layer_id>`, as
    `sam build` runs it) with this machine's architecture; the folder Lambda extracts to /opt."""
    resource = stack.source["Resources"][layer_id]
    folder = ROOT / resource["Properties"]["ContentUri"]
    _, machine = lambda_platform()
    graph = [
        ROOT / "infra" / "local" / "onnx" / name for name in ("encoder_graph.py", "proto.py", "bert.py")
    ]  # its builder
    key = _digest([p for p in folder.rglob("*") if p.is_file()] + graph, machine)

    def build(target: Path) -> None:
        make = ["make", "-s", "--no-print-directory", "-C", str(folder), f"build-{layer_id}"]
        make += [f"ARTIFACTS_DIR={target}", f"LAMBDA_ARCH={machine}", f"PYTHON={sys.executable}"]
        subprocess.run(make, cwd=ROOT, check=True, stdout=sys.stderr)

    return _cached_build(f"layer-{layer_id}", key, build)
