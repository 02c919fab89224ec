"""The onnxruntime paths of the local embedder: the int8 graph's own equality and retrieval figures, the
graph cache (built once, rebuilt when damaged or when the weights change, safe with two processes), a
graph prebuilt into the model folder, and what happens when onnxruntime is missing. fp32 equality with
the reference is in test_local_embedder.py (same tests as the NumPy pass)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from core.errors import UnavailableError
from infra.local.onnx.embedder import LocalEmbedder
from tests.adapters.test_local_embedder import STRICT_BAR, cosines, reference, tiny_bert

pytest.importorskip("onnxruntime")
pytestmark = pytest.mark.embedder
ROOT = Path(__file__).resolve().parents[2]
# ../shared beside a clone; /work/shared for a worktree one level deeper
SCIFACT = next(
    (
        p / "shared" / "datasets" / "scifact"
        for p in (ROOT.parent, ROOT.parent.parent)
        if (p / "shared").is_dir()
    ),
    ROOT.parent / "shared" / "datasets" / "scifact",
)
# int8 is not the same model: its own floors, measured here over the 52 in one batch with 7-bit weights
# (worst reference text 0.9842, mean 0.9958, here on AVX-512 VNNI; 8-bit weights gave 0.9859 / 0.9965 here
# but 0.9802 / 0.9949 under `qemu-x86_64 -cpu Haswell`, whose AVX2 u8×s8 kernels saturate). The floors
# leave a little room for onnxruntime's int8 kernels differing between CPUs (NEON on Lambda arm64).
INT8_MIN_COSINE = 0.98
INT8_MEAN_COSINE = 0.995


@pytest.fixture(scope="module")
def int8_embedder() -> LocalEmbedder:
    embedder = LocalEmbedder(runtime="onnx-int8")
    embedder.warm()
    return embedder


def test_int8_stays_close_to_the_reference_vectors(int8_embedder: LocalEmbedder) -> None:
    rows = reference()
    sims = cosines(int8_embedder.embed([r["text"] for r in rows]), rows)
    print(f"int8 vs sentence-transformers: min cosine {sims.min():.5f}, mean {sims.mean():.5f}")
    assert sims.min() >= INT8_MIN_COSINE
    assert sims.mean() >= INT8_MEAN_COSINE
    assert sims.min() < STRICT_BAR  # it is a different model: the exact tests would not hold it


def ndcg_at_10(ranked: list[str], relevant: dict[str, int]) -> float:
    gains = sum(relevant.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:10]))
    ideal = sum(g / math.log2(i + 2) for i, g in enumerate(sorted(relevant.values(), reverse=True)[:10]))
    return gains / ideal if ideal else 0.0


@pytest.mark.skipif(not SCIFACT.exists(), reason=f"needs the shared SciFact copy at {SCIFACT}")
def test_int8_retrieves_like_the_exact_model_on_a_scifact_sample(int8_embedder: LocalEmbedder) -> None:
    """80 SciFact test queries over their judged abstracts plus 220 others: dense-only nDCG@10."""
    from infra.beir.datasets import load_beir

    data = load_beir(SCIFACT, "test")
    queries = sorted(data.qrels)[:80]
    judged = {d for q in queries for d in data.qrels[q]}
    docs = [d for d in data.corpus if d.doc_id in judged]
    docs += [d for d in data.corpus if d.doc_id not in judged][: 300 - len(docs)]
    texts = [f"{d.title} {d.text}".strip() for d in docs]
    ids = [d.doc_id for d in docs]
    scores = {}
    for runtime in ("onnx", "onnx-int8"):
        embedder = LocalEmbedder(runtime=runtime) if runtime == "onnx" else int8_embedder
        matrix = np.asarray(embedder.embed(texts))
        found = []
        for q, vector in zip(queries, embedder.embed_query([data.queries[q] for q in queries]), strict=True):
            ranked = [ids[i] for i in np.argsort(-(matrix @ vector))[:10]]
            found.append(ndcg_at_10(ranked, data.qrels[q]))
        scores[runtime] = float(np.mean(found))
    print(f"SciFact sample nDCG@10: fp32 {scores['onnx']:.4f}, int8 {scores['onnx-int8']:.4f}")
    assert scores["onnx"] > 0.5  # the sample is a real retrieval task
    assert abs(scores["onnx-int8"] - scores["onnx"]) <= 0.02


# ------------------------------------------------------------------ the graph cache


def graphs(cache: Path) -> list[Path]:
    return sorted(cache.glob("*.onnx"))


def test_the_graph_is_built_once_and_reused(tmp_path: Path) -> None:
    folder = tiny_bert(tmp_path / "tiny", cls_pooling=False)
    first = LocalEmbedder(folder, runtime="onnx", cache_dir=tmp_path / "cache")
    vector = first.embed(["rate limiter"])[0]
    [graph] = graphs(tmp_path / "cache")
    before = graph.stat()
    second = LocalEmbedder(folder, runtime="onnx", cache_dir=tmp_path / "cache")
    assert np.allclose(second.embed(["rate limiter"])[0], vector, atol=1e-6)
    after = graph.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)  # not rebuilt
    assert [p.name for p in (tmp_path / "cache").iterdir() if p.name.startswith(".build-")] == []


def test_a_corrupt_cached_graph_is_rebuilt_not_fatal(tmp_path: Path) -> None:
    folder = tiny_bert(tmp_path / "tiny", cls_pooling=False)
    expected = LocalEmbedder(folder, runtime="numpy").embed(["rate limiter"])[0]
    LocalEmbedder(folder, runtime="onnx", cache_dir=tmp_path / "cache").warm()
    [graph] = graphs(tmp_path / "cache")
    graph.write_bytes(graph.read_bytes()[:1000])  # a half-written or damaged file
    vector = LocalEmbedder(folder, runtime="onnx", cache_dir=tmp_path / "cache").embed(["rate limiter"])[0]
    assert np.allclose(vector, expected, atol=1e-5)
    assert graphs(tmp_path / "cache") == [graph] and graph.stat().st_size > 1000


def test_changed_weights_get_a_new_graph(tmp_path: Path) -> None:
    folder = tiny_bert(tmp_path / "tiny", cls_pooling=False)
    old = LocalEmbedder(folder, runtime="onnx", cache_dir=tmp_path / "cache").embed(["rate limiter"])[0]
    [old_graph] = graphs(tmp_path / "cache")
    (folder / "model.safetensors").unlink()
    tiny_bert(tmp_path / "other", cls_pooling=False, hidden=48)
    for name in ("model.safetensors", "config.json"):
        (folder / name).write_bytes((tmp_path / "other" / name).read_bytes())
    new = LocalEmbedder(folder, runtime="onnx", cache_dir=tmp_path / "cache").embed(["rate limiter"])[0]
    assert new.shape == (48,) and old.shape == (32,)
    # the stale graph is removed (the cache does not grow by a graph per reinstall); another folder's stays
    [new_graph] = graphs(tmp_path / "cache")
    assert new_graph != old_graph
    LocalEmbedder(tmp_path / "other", runtime="onnx", cache_dir=tmp_path / "cache").warm()
    assert new_graph in graphs(tmp_path / "cache") and len(graphs(tmp_path / "cache")) == 2


def test_two_processes_building_at_once_both_get_the_graph(tmp_path: Path) -> None:
    folder = tiny_bert(tmp_path / "tiny", cls_pooling=False)
    code = (
        "import sys; from pathlib import Path; from infra.local.onnx.embedder import LocalEmbedder\n"
        "e = LocalEmbedder(Path(sys.argv[1]), runtime='onnx-int8', cache_dir=Path(sys.argv[2]))\n"
        "print(e.embed(['rate limiter'])[0].tolist())\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(folder), str(tmp_path / "cache")],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=120)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0]
    assert np.allclose(json.loads(outputs[0]), json.loads(outputs[1]))
    assert len(graphs(tmp_path / "cache")) == 1
    assert not [p for p in (tmp_path / "cache").iterdir() if p.name.startswith(".build-")]


def test_a_graph_prebuilt_into_the_model_folder_needs_no_cache(tmp_path: Path) -> None:
    folder = tiny_bert(tmp_path / "tiny", cls_pooling=True)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "infra.local.onnx.encoder_graph",
            str(folder),
            str(folder / "onnx"),
            "--pooling",
            "cls",
            "--variant",
            "fp32",
        ],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    embedder = LocalEmbedder(folder, runtime="onnx", cache_dir=tmp_path / "cache")
    expected = LocalEmbedder(folder, runtime="numpy").embed(["rate limiter"])[0]
    assert np.allclose(embedder.embed(["rate limiter"])[0], expected, atol=1e-5)
    assert not (tmp_path / "cache").exists()


# ------------------------------------------------------------------ onnxruntime missing


def test_without_onnxruntime_the_default_is_numpy_and_onnx_is_unavailable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # as if not installed
    folder = tiny_bert(tmp_path / "tiny", cls_pooling=False)
    assert LocalEmbedder(folder).runtime == "numpy"
    assert LocalEmbedder(folder).embed(["rate limiter"])[0].shape == (32,)
    embedder = LocalEmbedder(folder, runtime="onnx", cache_dir=tmp_path / "cache")
    with pytest.raises(UnavailableError) as caught:
        embedder.embed(["rate limiter"])
    assert "onnxruntime" in caught.value.message
