"""The Python examples of docs/clients.md run as written, in order, against `quarry serve` (QUARRY_URL and
QUARRY_API_KEY name it and a tenant of their own, as a reader's shell would)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import REPO

DOC = REPO / "docs" / "clients.md"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)


def blocks() -> list[str]:
    return BLOCK.findall(DOC.read_text(encoding="utf-8"))


def test_the_document_has_a_rag_example_per_framework() -> None:
    code = "\n".join(blocks())
    assert "quarry_client.langchain import QuarryVectorStore" in code
    assert "VectorStoreIndex.from_vector_store" in code and "MetadataFilters" in code


@pytest.mark.parametrize("number", range(len(blocks())))
def test_each_python_example_runs(number: int, server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QUARRY_URL", server)
    monkeypatch.setenv("QUARRY_API_KEY", "k-docs")
    code = blocks()[number]
    exec(compile(code, f"{Path(DOC).name}, python block {number + 1}", "exec"), {"__name__": "docs_example"})  # noqa: S102 - the document's own examples
