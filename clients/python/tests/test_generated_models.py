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


def test_every_model_tolerates_fields_a_newer_server_adds(client: Quarry) -> None:
    """An answer with a field this client does not know still reads, the field kept in `model_extra`."""
    from pydantic import BaseModel, RootModel
    from quarry_client import models

    classes = [c for c in vars(models).values() if isinstance(c, type) and issubclass(c, BaseModel)
               and c.__module__ == models.__name__ and not issubclass(c, RootModel)]  # fmt: skip
    refusing = [c.__name__ for c in classes if c.model_config.get("extra") not in ("allow", "ignore")]
    assert not refusing, f"models refusing unknown fields: {refusing}"
    bundle = client.retrieve("tolerant-role", "rotate signing keys", lexical_only=True).model_dump(
        mode="json"
    )
    bundle["added_by_a_newer_server"] = {"x": 1}
    bundle["summary"]["also_new"] = True
    again = models.RetrievalBundle.model_validate(bundle)
    assert again.model_extra == {"added_by_a_newer_server": {"x": 1}}
