"""The client's models are generated from the server's OpenAPI document, never written by hand: the
committed document is what `quarry serve` publishes, and regenerating the models from it changes nothing.
When either fails: `make client-models`, and commit both files."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from quarry_client import Quarry

HERE = Path(__file__).resolve().parents[1]
REGENERATE = "the server's schemas changed: run `make client-models` and commit the result"


def generator():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("generate_models", HERE / "generate_models.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_document_is_what_the_server_publishes(client: Quarry) -> None:
    committed = json.loads((HERE / "openapi.json").read_text(encoding="utf-8"))
    assert client.openapi() == committed, REGENERATE


def test_regenerating_the_models_is_a_no_op(tmp_path: Path) -> None:
    module = generator()
    module.generate(tmp_path / "models.py")
    assert (tmp_path / "models.py").read_text() == module.MODELS.read_text(), REGENERATE
