"""The client is typed for its users: `mypy --strict` passes on a program using it (tests/typed_program.py:
searches with typed options, the models' fields, the errors, the async client, the LangChain store),
which needs the package's `py.typed` and models whose constrained fields are not Any. mypy is one of the
client venv's tools (Makefile CLIENT_TOOLS)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PROGRAM = Path(__file__).with_name("typed_program.py")


def test_mypy_strict_passes_on_a_program_using_the_client(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "mypy", "--strict", "--config-file=", f"--cache-dir={tmp_path / 'cache'}",
               str(PROGRAM)]  # fmt: skip
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
