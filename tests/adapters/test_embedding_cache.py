"""The on-disk embedding cache: a second run embeds nothing, and an interrupted run keeps its batches."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from core.models import Vector
from core.ports import Embedder
from infra.beir.embedding_cache import CachingEmbedder

DIMENSION = 8


class FakeEmbedder(Embedder):
    """Deterministic vectors from the text's hash; counts what it embedded and can fail on demand."""

    def __init__(
        self, model_id: str = "fake-v1", fail_after: int | None = None, vectors_id: str | None = None
    ) -> None:
        self._model_id = model_id
        self._vectors_id = vectors_id or model_id
        self.embedded: list[str] = []
        self.fail_after = fail_after

    @property
    def dimension(self) -> int:
        return DIMENSION

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def vectors_id(self) -> str:
        return self._vectors_id

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        if self.fail_after is not None and len(self.embedded) + len(texts) > self.fail_after:
            raise RuntimeError("model crashed")
        self.embedded.extend(texts)
        out = []
        for text in texts:
            seed = int.from_bytes(hashlib.sha256(f"{self._model_id}:{text}".encode()).digest()[:4], "big")
            v = np.random.default_rng(seed).standard_normal(DIMENSION).astype(np.float32)
            out.append(v / np.linalg.norm(v))
        return out

    def embed_query(self, texts: Sequence[str]) -> list[Vector]:
        return self.embed(texts)


TEXTS = [f"passage number {i}" for i in range(10)]


def test_second_run_embeds_nothing_and_returns_identical_vectors(tmp_path: Path) -> None:
    first_inner = FakeEmbedder()
    first = CachingEmbedder(first_inner, tmp_path, batch_size=3, progress=False).embed(TEXTS)
    again_inner = FakeEmbedder()
    again = CachingEmbedder(again_inner, tmp_path, batch_size=3, progress=False).embed(TEXTS)
    assert len(first_inner.embedded) == len(TEXTS)
    assert again_inner.embedded == []
    for a, b in zip(first, again, strict=True):
        assert a.dtype == np.float32
        np.testing.assert_array_equal(a, b)


def test_order_and_duplicates_are_preserved_and_each_text_embedded_once(tmp_path: Path) -> None:
    inner = FakeEmbedder()
    cache = CachingEmbedder(inner, tmp_path, progress=False)
    cache.embed(["b"])
    out = cache.embed(["a", "b", "a", "c"])
    assert inner.embedded == ["b", "a", "c"]
    np.testing.assert_array_equal(out[0], out[2])
    np.testing.assert_array_equal(out[1], FakeEmbedder().embed(["b"])[0])
    assert cache.misses == 3


def test_models_do_not_share_vectors(tmp_path: Path) -> None:
    CachingEmbedder(FakeEmbedder("model-a"), tmp_path, progress=False).embed(TEXTS)
    other = FakeEmbedder("model-b")
    CachingEmbedder(other, tmp_path, progress=False).embed(TEXTS)
    assert len(other.embedded) == len(TEXTS)


def test_vectors_of_another_runtime_or_prefix_are_not_served(tmp_path: Path) -> None:
    # numpy and onnx runs of one model differ in the last bits: a warm cache of one must not feed the other
    first = FakeEmbedder("model-a", vectors_id="model-a|onnx")
    CachingEmbedder(first, tmp_path, progress=False).embed(TEXTS)
    other = FakeEmbedder("model-a", vectors_id="model-a|numpy")
    CachingEmbedder(other, tmp_path, progress=False).embed(TEXTS)
    assert len(other.embedded) == len(TEXTS)


def test_interrupted_run_keeps_finished_batches(tmp_path: Path) -> None:
    crashing = FakeEmbedder(fail_after=7)
    with pytest.raises(RuntimeError):
        CachingEmbedder(crashing, tmp_path, batch_size=3, progress=False).embed(TEXTS)
    resumed = FakeEmbedder()
    CachingEmbedder(resumed, tmp_path, batch_size=3, progress=False).embed(TEXTS)
    assert resumed.embedded == TEXTS[6:]


def test_reports_the_inner_model(tmp_path: Path) -> None:
    cache = CachingEmbedder(FakeEmbedder("m"), tmp_path, progress=False)
    assert (cache.model_id, cache.dimension) == ("m", DIMENSION)
