"""The local embedder against sentence-transformers' own vectors, and its behaviour as a port adapter:
lazy loading, batching, other BERT folders (CLS pooling, query prefix), broken model files. Each exact
runtime (the NumPy reference and the fp32 ONNX graph) is held to the same strict bar; the int8 graph and
the graph cache are tested in test_onnx_embedder.py."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from core.errors import UnavailableError
from infra.local.onnx import bert
from infra.local.onnx.embedder import LocalEmbedder, default_model_dir

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
REFERENCE = FIXTURES / "minilm-reference.jsonl"
EQUALITY_BAR = 0.99999  # cosine to sentence-transformers' vector (shared/embeddings/README.md)
# Measured here: the tanh approximation of GELU still reaches 0.9999937 on the worst reference text, so the
# published bar alone cannot tell it from the exact GELU. The exact pass reaches 0.9999999 on its worst
# text; a bar ten times tighter separates the two with margin on both sides.
STRICT_BAR = 0.999999

pytestmark = pytest.mark.embedder
EXACT_RUNTIMES = ["numpy", "onnx"]


@pytest.fixture(scope="module", params=EXACT_RUNTIMES)
def exact_embedder(request: pytest.FixtureRequest) -> LocalEmbedder:
    """MiniLM on each exact runtime (the ONNX graph is cached in the user cache, built once)."""
    if request.param != "numpy":
        pytest.importorskip("onnxruntime")
    embedder = LocalEmbedder(runtime=request.param)
    embedder.warm()
    return embedder


@pytest.fixture(params=EXACT_RUNTIMES)
def runtime(request: pytest.FixtureRequest) -> str:
    if request.param != "numpy":
        pytest.importorskip("onnxruntime")
    return str(request.param)


def reference() -> list[dict[str, Any]]:
    return [json.loads(line) for line in REFERENCE.read_text().splitlines() if line.strip()]


def cosines(vectors: list[np.ndarray], rows: list[dict[str, Any]]) -> np.ndarray:
    ref = np.asarray([r["vector"] for r in rows], dtype=np.float64)
    ref /= np.linalg.norm(ref, axis=1, keepdims=True)
    return np.einsum("ij,ij->i", np.asarray(vectors, dtype=np.float64), ref)


def test_reproduces_every_reference_vector_in_one_batch(exact_embedder: LocalEmbedder) -> None:
    rows = reference()
    assert len(rows) == 52
    vectors = exact_embedder.embed([r["text"] for r in rows])
    sims = cosines(vectors, rows)
    worst = int(np.argmin(sims))
    assert sims.min() >= EQUALITY_BAR, f"{rows[worst]['text'][:60]!r}: cosine {sims[worst]:.7f}"
    assert sims.min() >= STRICT_BAR, f"{rows[worst]['text'][:60]!r}: cosine {sims[worst]:.7f}"
    assert all(v.dtype == np.float32 and v.shape == (384,) for v in vectors)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_reproduces_reference_vectors_one_text_at_a_time(exact_embedder: LocalEmbedder) -> None:
    rows = reference()[::5]  # batching must not change a vector: padding is masked out
    sims = cosines([exact_embedder.embed([r["text"]])[0] for r in rows], rows)
    assert sims.min() >= STRICT_BAR


def test_the_bar_catches_the_tanh_gelu(real_embedder: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The equality test is sharp enough to tell the exact GELU from its tanh approximation."""

    def tanh_gelu(x: np.ndarray) -> np.ndarray:
        x[...] = 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)))
        return x

    fresh = LocalEmbedder(runtime="numpy")
    monkeypatch.setattr(bert, "gelu", tanh_gelu)
    rows = reference()
    sims = cosines(fresh.embed([r["text"] for r in rows]), rows)
    assert sims.min() < STRICT_BAR


def test_long_texts_are_truncated_at_256_word_pieces(exact_embedder: LocalEmbedder) -> None:
    base = "the estrogen receptor binds chromatin " * 60  # ~300 word pieces
    assert np.allclose(exact_embedder.embed([base])[0], exact_embedder.embed([base + " extra " * 50])[0])


def test_blank_and_empty_inputs() -> None:
    embedder = LocalEmbedder()
    assert embedder.embed([]) == []
    assert embedder.embed_query([]) == []


def test_constructing_and_asking_the_dimension_loads_no_weights() -> None:
    code = (
        "import sys\n"
        "from infra.local.onnx.embedder import LocalEmbedder\n"
        "e = LocalEmbedder()\n"
        "assert e.dimension == 384 and e.model_id == 'sentence-transformers/all-MiniLM-L6-v2'\n"
        "heavy = [m for m in ('tokenizers', 'safetensors', 'infra.local.onnx.bert') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    root = Path(__file__).resolve().parents[2]
    subprocess.run([sys.executable, "-c", code], check=True, cwd=root)


# ------------------------------------------------------------------ another BERT folder


def tiny_bert(path: Path, *, cls_pooling: bool, hidden: int = 32) -> Path:
    """A small random BERT checkpoint in a sentence-transformers folder (MiniLM's tokenizer)."""
    from safetensors.numpy import save_file

    src = default_model_dir()
    path.mkdir(parents=True)
    shutil.copy(src / "tokenizer.json", path / "tokenizer.json")
    vocab, inter, layers = 30522, 64, 2
    config = {
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": 4,
        "intermediate_size": inter,
        "layer_norm_eps": 1e-12,
        "max_position_embeddings": 64,
        "hidden_act": "gelu",
    }
    (path / "config.json").write_text(json.dumps(config))
    (path / "1_Pooling").mkdir()
    (path / "1_Pooling" / "config.json").write_text(
        json.dumps({"pooling_mode_cls_token": cls_pooling, "pooling_mode_mean_tokens": not cls_pooling})
    )
    rng = np.random.default_rng(7)

    def r(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.05).astype(np.float32)

    w = {
        "embeddings.word_embeddings.weight": r(vocab, hidden),
        "embeddings.position_embeddings.weight": r(64, hidden),
        "embeddings.token_type_embeddings.weight": r(2, hidden),
        "embeddings.LayerNorm.weight": np.ones(hidden, np.float32),
        "embeddings.LayerNorm.bias": np.zeros(hidden, np.float32),
    }
    for i in range(layers):
        p = f"encoder.layer.{i}."
        for name in ("query", "key", "value"):
            w[p + f"attention.self.{name}.weight"] = r(hidden, hidden)
            w[p + f"attention.self.{name}.bias"] = r(hidden)
        w[p + "attention.output.dense.weight"] = r(hidden, hidden)
        w[p + "attention.output.dense.bias"] = r(hidden)
        w[p + "intermediate.dense.weight"] = r(inter, hidden)
        w[p + "intermediate.dense.bias"] = r(inter)
        w[p + "output.dense.weight"] = r(hidden, inter)
        w[p + "output.dense.bias"] = r(hidden)
        for ln in ("attention.output.LayerNorm", "output.LayerNorm"):
            w[p + ln + ".weight"] = np.ones(hidden, np.float32)
            w[p + ln + ".bias"] = np.zeros(hidden, np.float32)
    save_file(w, str(path / "model.safetensors"))
    return path


def test_any_bert_folder_with_cls_pooling_and_a_query_prefix(tmp_path: Path, runtime: Any) -> None:
    folder = tiny_bert(tmp_path / "tiny", cls_pooling=True)
    embedder = LocalEmbedder(folder, query_prefix="query: ", runtime=runtime, cache_dir=tmp_path / "cache")
    assert embedder.dimension == 32
    assert embedder.model_id == "local:tiny"
    assert embedder.describe()["pooling"] == "cls"
    [passage] = embedder.embed(["rate limiter"])
    assert passage.shape == (32,)
    assert np.isclose(np.linalg.norm(passage), 1.0, atol=1e-5)
    # CLS pooling: the first token's state, normalised (checked against the encoder directly)
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.no_padding()  # the file asks for padding to 128; the embedder pads per batch instead
    ids = np.asarray([tokenizer.encode("rate limiter").ids])
    assert ids[0, 0] == 101 and ids[0, -1] == 102  # [CLS] … [SEP]
    hidden = bert.load_encoder(folder).forward(ids, np.ones_like(ids, dtype=np.float32))[0, 0]
    assert np.allclose(passage, hidden / np.linalg.norm(hidden), atol=1e-5)
    # the prefix is prepended to queries only
    assert np.allclose(embedder.embed_query(["rate limiter"])[0], embedder.embed(["query: rate limiter"])[0])
    assert not np.allclose(embedder.embed_query(["rate limiter"])[0], passage)


def test_mean_pooling_ignores_padding_in_mixed_batches(tmp_path: Path, runtime: Any) -> None:
    folder = tiny_bert(tmp_path / "tiny", cls_pooling=False)
    embedder = LocalEmbedder(folder, runtime=runtime, cache_dir=tmp_path / "cache")
    texts = ["a", "a much longer text about rate limiting and login throttling", "b c"]
    batch = embedder.embed(texts)
    for text, vector in zip(texts, batch, strict=True):
        assert np.allclose(vector, embedder.embed([text])[0], atol=1e-5)


PASSAGES = [
    "Rate limiter caps how many calls each client may send per minute",
    "The checkRateLimit function validates request frequency",
    "Vitamin D deficiency is associated with an increased risk of respiratory infection " * 3,
    "A login limiter locks an account after five failures",
    "Billing rate limiter uses a token bucket per account and refills it every second " * 8,
    "short",
]


def test_a_passage_gets_the_same_vector_whatever_is_embedded_beside_it(exact_embedder: LocalEmbedder) -> None:
    # An evaluation resumed from a half-filled embedding cache embeds its passages in other company than
    # a cold run: their vectors (and so the ranking) must not depend on it, down to the last bit.
    together = exact_embedder.embed(PASSAGES)
    for i, text in enumerate(PASSAGES):
        alone = exact_embedder.embed([text])[0]
        np.testing.assert_array_equal(alone, together[i])
        reordered = exact_embedder.embed([PASSAGES[(i + 1) % len(PASSAGES)], text, *PASSAGES[:2]])[1]
        np.testing.assert_array_equal(reordered, together[i])
        assert together[i].dtype == np.float32


def test_the_vectors_id_names_what_shapes_the_vectors(tmp_path: Path) -> None:
    onnx, numpy_pass = LocalEmbedder(runtime="onnx"), LocalEmbedder(runtime="numpy")
    prefixed = LocalEmbedder(runtime="onnx", query_prefix="query: ")
    assert onnx.model_id == numpy_pass.model_id  # the same model: an index built with one serves the other
    assert len({onnx.vectors_id, numpy_pass.vectors_id, prefixed.vectors_id}) == 3  # never one cache entry


# ------------------------------------------------------------------ broken model files


def copy_model(tmp_path: Path) -> Path:
    folder = tmp_path / "model"
    shutil.copytree(default_model_dir(), folder)
    return folder


@pytest.mark.parametrize(
    ("damage", "expected"),
    [
        ("truncate-weights", "model.safetensors"),
        ("garbage-tokenizer", "tokenizer.json"),
        ("missing-weights", "model.safetensors"),
        ("garbage-config", "config.json"),
    ],
)
def test_a_broken_model_folder_is_unavailable_not_a_crash(
    tmp_path: Path, damage: str, expected: str, runtime: Any
) -> None:
    folder = copy_model(tmp_path)
    if damage == "truncate-weights":
        data = (folder / "model.safetensors").read_bytes()
        (folder / "model.safetensors").write_bytes(data[: len(data) // 3])
    elif damage == "garbage-tokenizer":
        (folder / "tokenizer.json").write_text("{not json")
    elif damage == "missing-weights":
        (folder / "model.safetensors").unlink()
    else:
        (folder / "config.json").write_text("[]")
    embedder = LocalEmbedder(folder, runtime=runtime, cache_dir=tmp_path / "cache")
    with pytest.raises(UnavailableError) as caught:
        embedder.embed(["hello"])
    assert expected in str(caught.value.message) or "model folder" in str(caught.value.message)
    with pytest.raises(UnavailableError):  # a second call fails the same way, fast (not re-read)
        embedder.embed_query(["hello"])
