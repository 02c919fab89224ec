"""The development venv `make setup` builds stays under its size budget (a fresh clone installs it before
its first test): no pip or setuptools inside, no bytecode compiled ahead, no extra the two commands do not
need."""

from __future__ import annotations

import os
import sys
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# The budget a new user's disk and first `make serve` pay for; 606 MiB with pip inside, 590 MiB
# without (docs/development.md).
MAX_VENV_BYTES = 600 * 2**20
BLOCK = 512  # st_blocks counts 512-byte units (POSIX)


def installed_bytes(prefix: Path) -> int:
    """The disk the venv's files take (as `du` counts it), without the bytecode Python writes on import
    (it depends on what has run)."""
    total = 0
    for folder, dirs, files in os.walk(prefix):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        total += sum(os.lstat(os.path.join(folder, f)).st_blocks * BLOCK for f in files)
    return total


def has(distribution: str) -> bool:
    try:
        metadata.distribution(distribution)
    except metadata.PackageNotFoundError:
        return False
    return True


def test_the_development_venv_stays_under_its_budget() -> None:
    prefix = Path(sys.prefix)
    if prefix != ROOT / ".venv":
        pytest.skip(f"measures the venv `make setup` builds at {ROOT / '.venv'}; these tests run in {prefix}")
    if has("matplotlib"):
        pytest.skip("the bench extra (`make setup-bench`) is installed: the budget is for `make setup` alone")
    size = installed_bytes(prefix)
    assert size < MAX_VENV_BYTES, (
        f"{prefix} holds {size / 2**20:.0f} MiB (budget {MAX_VENV_BYTES / 2**20:.0f})"
    )
