"""The `quarry reindex` CLI tests' shared setup: a second model folder, five notes ingested, a runner."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from infra.local.onnx.embedder import default_model_dir
from tests.conftest import ROOT

Run = Callable[..., subprocess.CompletedProcess[str]]


def ingested_with_a_model_copy(tmp_path: Path, **env: str) -> tuple[Path, Run]:
    """A copy of the default model folder (`minilm-copy`, another folder holding a model), five notes
    "harbor crane note 0..4" ingested through the CLI, and `quarry(*args)` running the CLI with `env`."""
    folder = tmp_path / "minilm-copy"
    shutil.copytree(default_model_dir(), folder)
    notes = tmp_path / "notes.jsonl"
    notes.write_text(
        "\n".join(json.dumps({"id": f"n{i}", "content": f"harbor crane note {i}"}) for i in range(5))
    )
    base = {
        "PYTHONPATH": str(ROOT),
        "PATH": "/usr/bin:/bin",
        "QUARRY_DATA_DIR": str(tmp_path / "data"),
        # the copy's graph (90 MB, keyed by this temporary path) stays in the test's folder, not ~/.cache
        "QUARRY_EMBEDDER_CACHE_DIR": str(tmp_path / "onnx-cache"),
    }

    def quarry(*args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "handlers.cli.main", *args],
            env=base | env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
            **kwargs,
        )

    quarry("ingest", str(notes), "--type", "memory", "--quiet", check=True)
    return folder, quarry
