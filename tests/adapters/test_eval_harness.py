"""`quarry eval` end to end on a tiny BEIR folder: real index and search service, a fake embedder."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from core.errors import InvalidInputError
from core.models import Vector
from core.ports import Embedder
from infra.beir.embedding_cache import CachingEmbedder
from infra.beir.evaluation import run_eval
from infra.beir.report import format_table, plot_report

TINY = Path(__file__).resolve().parent.parent / "fixtures" / "beir_tiny"
DIMENSION = 64


class FakeBagOfWordsEmbedder(Embedder):
    """Hashed bag of words: texts sharing words get close vectors; counts the texts it embedded."""

    def __init__(self) -> None:
        self.embedded = 0

    @property
    def dimension(self) -> int:
        return DIMENSION

    @property
    def model_id(self) -> str:
        return "fake-bow"

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        self.embedded += len(texts)
        out = []
        for text in texts:
            v = np.zeros(DIMENSION, dtype=np.float32)
            for word in text.lower().split():
                v[int(hashlib.sha256(word.encode()).hexdigest(), 16) % DIMENSION] += 1.0
            norm = float(np.linalg.norm(v))
            out.append(v / norm if norm else v)
        return out

    def embed_query(self, texts: Sequence[str]) -> list[Vector]:
        return self.embed(texts)


def test_report_has_every_strategy_and_names_the_default(tmp_path: Path) -> None:
    report = run_eval(TINY, FakeBagOfWordsEmbedder(), work_dir=tmp_path, progress=False)
    body = report.to_json()
    assert body["dataset"] == "beir_tiny"
    assert body["queries"] == 3
    assert body["default"] == "auto"
    assert list(body["strategies"]) == ["keyword", "semantic", "rrf", "convex", "auto"]
    for figures in body["strategies"].values():
        assert set(figures) == {"ndcg_at_10", "recall_at_100", "mrr_at_10"}
    # The keyword side finds every relevant document of this corpus at rank 1.
    assert body["strategies"]["keyword"]["mrr_at_10"] == 1.0
    # The empty document (no title, no text: nothing to index) is skipped and counted, not an error.
    ingest = body["ingest"]
    assert (ingest["documents"], ingest["indexed"], ingest["errors"], ingest["empty"]) == (8, 7, 0, 1)
    json.dumps(body)
    assert "auto*" in format_table(report)


def test_default_is_reported_even_when_not_asked_for(tmp_path: Path) -> None:
    report = run_eval(
        TINY, FakeBagOfWordsEmbedder(), strategies=["keyword"], work_dir=tmp_path, progress=False
    )
    assert list(report.strategies) == ["keyword", "auto"]


def test_second_run_embeds_nothing_new(tmp_path: Path) -> None:
    first = FakeBagOfWordsEmbedder()
    run_eval(TINY, CachingEmbedder(first, tmp_path / "cache", progress=False), work_dir=tmp_path / "w")
    second = FakeBagOfWordsEmbedder()
    again = run_eval(
        TINY, CachingEmbedder(second, tmp_path / "cache", progress=False), work_dir=tmp_path / "w"
    )
    assert first.embedded > 0
    assert second.embedded == 0
    assert again.ingest.indexed == 7  # a fresh index each run, not the previous one's leftovers


def test_unknown_strategy_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="bm42"):
        run_eval(TINY, FakeBagOfWordsEmbedder(), strategies=["bm42"], work_dir=tmp_path, progress=False)


def test_plot_is_a_png_or_names_the_missing_bench_tools(tmp_path: Path) -> None:
    """With the bench extra a PNG; without it (`make setup` alone) a clear error naming how to get it."""
    import importlib.util

    from core.errors import ConfigurationError

    report = run_eval(TINY, FakeBagOfWordsEmbedder(), work_dir=tmp_path, progress=False)
    if importlib.util.find_spec("matplotlib") is None:
        with pytest.raises(ConfigurationError, match="make setup-bench"):
            plot_report(report, tmp_path / "chart.png")
        assert not (tmp_path / "chart.png").exists()
        return
    plot_report(report, tmp_path / "chart.png")
    assert (tmp_path / "chart.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_tuning_lists_reproduce_what_search_returns(tmp_path: Path) -> None:
    # Given the tiny corpus indexed through the real write path,
    from core.indexing.entity_types import EntityTypeRegistry
    from core.indexing.indexing_service import IndexingService
    from core.search.fusion_tuning import fused_ranking
    from core.search.planning import SearchSettings
    from core.search.search_service import SearchService
    from core.search.tuning_service import FusionTuningService, current_setting
    from infra.beir.datasets import load_beir
    from infra.beir.evaluation import EVAL_TENANT, ingest, run_queries
    from infra.local.cache import MemoryCache
    from infra.local.sqlite.index import build_sqlite_index
    from infra.timing.clock import SystemClock

    data = load_beir(TINY)
    embedder, registry, settings = FakeBagOfWordsEmbedder(), EntityTypeRegistry(), SearchSettings()
    index = build_sqlite_index(tmp_path / "i.sqlite")
    ingest(data, IndexingService(index, embedder, registry, MemoryCache()), 0.0, progress=False)
    service = SearchService(index, embedder, MemoryCache(), registry, SystemClock(), settings)
    # when the tuner re-fuses its collected lists with the current setting,
    lists = FusionTuningService(index, embedder, registry, settings).lists(EVAL_TENANT, data.queries)
    refused = {q: fused_ranking(current_setting(settings), lists[q], 100) for q in lists}
    # then it ranks exactly as POST /search does with the default strategy.
    assert refused == run_queries(service, data, "auto")


def test_tune_reports_a_setting_that_does_not_score_below_the_current_one(tmp_path: Path) -> None:
    report = run_eval(TINY, FakeBagOfWordsEmbedder(), work_dir=tmp_path, progress=False, tune=True)
    tuning = report.to_json()["tuning"]
    from core.search.planning import SearchSettings

    assert tuning["current"]["fusion"] == SearchSettings().fusion.value
    assert tuning["best_ndcg_at_10"] >= tuning["current_ndcg_at_10"]
    assert "fusion tuning" in format_table(report)


UNTITLED = Path(__file__).resolve().parent.parent / "fixtures" / "beir_untitled"


def test_title_less_documents_and_a_query_over_1000_characters_evaluate(tmp_path: Path) -> None:
    """BEIR corpora often have no titles, and long-query collections ask more than a search box holds."""
    report = run_eval(
        UNTITLED, FakeBagOfWordsEmbedder(), strategies=["keyword"], work_dir=tmp_path, progress=False
    )
    assert report.ingest.indexed == report.ingest.documents == 5
    assert report.failures == [] and report.ingest.empty == []
    # every query, the long one included (qrels: v2 → u4), finds its document first
    assert report.strategies["keyword"].mrr_at_10 == 1.0
    assert report.strategies["auto"].ndcg_at_10 > 0.9


def test_a_failed_document_or_query_is_reported_not_scored_as_zero(tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    shutil.copytree(UNTITLED, broken)
    with (broken / "corpus.jsonl").open("a") as handle:
        handle.write(
            json.dumps({"_id": "bad id", "title": "", "text": "a document whose id has a space"}) + "\n"
        )
    report = run_eval(
        broken, FakeBagOfWordsEmbedder(), strategies=["keyword"], work_dir=tmp_path / "w", progress=False
    )
    assert report.ingest.indexed == 5
    assert any(line.startswith("document bad id: id:") for line in report.failures), report.failures


def test_quarry_eval_refuses_to_print_figures_when_something_failed(tmp_path: Path) -> None:
    import subprocess
    import sys

    broken = tmp_path / "broken"
    shutil.copytree(UNTITLED, broken)
    with (broken / "corpus.jsonl").open("a") as handle:
        handle.write(
            json.dumps({"_id": "bad id", "title": "", "text": "a document whose id has a space"}) + "\n"
        )
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ)
    base = [
        sys.executable,
        "-m",
        "handlers.cli.main",
        "--data-dir",
        str(tmp_path / "d"),
        "eval",
        "--dataset",
        str(broken),
        "--strategies",
        "keyword",
        "--quiet",
    ]
    refused = subprocess.run(base, cwd=root, env=env, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 1
    assert "document bad id: id:" in refused.stderr and "nDCG@10" not in refused.stdout
    allowed = subprocess.run(
        [*base, "--allow-errors"], cwd=root, env=env, capture_output=True, text=True, timeout=120
    )
    assert allowed.returncode == 0, allowed.stderr
    assert "nDCG@10" in allowed.stdout and "1 document(s) not indexed" in allowed.stdout


SCIFACT = Path(__file__).resolve().parents[2].parent / "shared" / "datasets" / "scifact"
SLICE_QUERIES = 10  # SciFact test queries kept, with their relevant abstracts
SLICE_FILLERS = 30  # other abstracts beside them


def scifact_slice(folder: Path, keep: slice = slice(None)) -> Path:
    """A small BEIR folder cut from SciFact: SLICE_QUERIES test queries, their abstracts and fillers; `keep`
    selects part of its corpus (what an interrupted run had embedded)."""
    qrels = [line.split("\t") for line in (SCIFACT / "qrels" / "test.tsv").read_text().splitlines()[1:]]
    queries = list(dict.fromkeys(q for q, _, _ in qrels))[:SLICE_QUERIES]
    relevant = {d for q, d, _ in qrels if q in queries}
    corpus = [json.loads(line) for line in (SCIFACT / "corpus.jsonl").read_text().splitlines()]
    chosen = [d for d in corpus if d["_id"] in relevant] + [d for d in corpus if d["_id"] not in relevant][
        :SLICE_FILLERS
    ]
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in chosen[keep]))
    wanted = set(queries)
    lines = (SCIFACT / "queries.jsonl").read_text().splitlines()
    (folder / "queries.jsonl").write_text("".join(x + "\n" for x in lines if json.loads(x)["_id"] in wanted))
    kept = [r for r in qrels if r[0] in wanted]
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join("\t".join(r) + "\n" for r in kept)
    )
    return folder


def stored_vectors(work_dir: Path, doc_ids: list[str]) -> dict[tuple[str, int], bytes]:
    """Every chunk vector an evaluation's index holds, as raw bytes (for a bit-for-bit comparison)."""
    from core.models import EntityKey
    from infra.beir.evaluation import EVAL_TENANT, INDEX_FILE
    from infra.local.sqlite.index import build_sqlite_index

    wanted = [(EntityKey("document", d), n) for d in doc_ids for n in range(4)]
    found = build_sqlite_index(work_dir / INDEX_FILE).chunk_vectors(EVAL_TENANT, wanted)
    return {(k.entity_id, n): np.asarray(v, dtype=np.float32).tobytes() for (k, n), v in found.items()}


@pytest.mark.embedder
@pytest.mark.slow
def test_the_same_evaluation_ranks_the_same_cold_warm_and_resumed(
    tmp_path: Path, real_embedder: object
) -> None:
    # `quarry eval` reported rrf nDCG@10 differing in the fourth decimal between a cold and a warm embedding
    # cache: a passage's vector depended on the passages embedded beside it (and the cache mixed runtimes),
    # so a cache filled by another run (here: an interrupted one, resumed) fed the index other vectors.
    if not SCIFACT.exists():
        pytest.skip(f"{SCIFACT} is absent (the shared BEIR datasets sit beside the repository)")
    folder = scifact_slice(tmp_path / "slice")
    half = scifact_slice(tmp_path / "half", slice(None, None, 2))  # what an interrupted run had embedded
    doc_ids = [json.loads(line)["_id"] for line in (folder / "corpus.jsonl").read_text().splitlines()]

    def evaluate(cache: str, work: str) -> tuple[object, dict[tuple[str, int], bytes]]:
        embedder = CachingEmbedder(real_embedder, tmp_path / cache, progress=False)  # type: ignore[arg-type]
        report = run_eval(
            folder, embedder, strategies=["semantic", "rrf"], work_dir=tmp_path / work, progress=False
        )
        assert not report.failures
        return report.to_json()["strategies"], stored_vectors(tmp_path / work, doc_ids)

    cold = evaluate("cold", "w1")
    warm = evaluate("cold", "w2")  # the same cache, now full
    run_eval(half, CachingEmbedder(real_embedder, tmp_path / "resumed", progress=False), progress=False)  # type: ignore[arg-type]
    resumed = evaluate("resumed", "w3")
    assert len(cold[1]) >= len(doc_ids)
    assert cold[1] == warm[1] == resumed[1]  # the index holds the same vectors, to the last bit
    assert cold[0] == warm[0] == resumed[0]  # and so every figure


def write_beir(
    folder: Path, docs: list[dict[str, str]], queries: dict[str, str], qrels: dict[str, str]
) -> Path:
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (folder / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in queries.items())
    )
    lines = "".join(f"{q}\t{d}\t1\n" for q, d in qrels.items())
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + lines)
    return folder


def test_a_warm_cache_and_another_ingest_order_rank_exactly_like_a_cold_run(tmp_path: Path) -> None:
    # Copies of one text score exactly alike on both legs, so only the tie rule orders them; one copy of
    # each is the relevant one, so any order of arrival that decided a rank would change the metrics.
    texts = [
        "Glaciers carve valleys as the ice slowly flows downhill",
        "Coral reefs bleach when the ocean water grows too warm",
        "Bees pollinate flowers while they collect nectar",
    ]
    docs = [{"_id": f"g{g}c{c}", "title": "", "text": t} for g, t in enumerate(texts) for c in range(4)]
    docs += [
        {"_id": f"o{i}", "title": "", "text": f"unrelated note number {i} about shipping"} for i in range(6)
    ]
    queries = {
        "q0": "how glaciers carve valleys",
        "q1": "warm ocean bleaches coral",
        "q2": "bees and flowers",
    }
    qrels = {"q0": "g0c2", "q1": "g1c1", "q2": "g2c3"}
    cache = tmp_path / "cache"
    cold = write_beir(tmp_path / "cold", docs, queries, qrels)
    warm = write_beir(tmp_path / "warm", list(reversed(docs)), queries, qrels)
    first_embedder = CachingEmbedder(FakeBagOfWordsEmbedder(), cache, progress=False)
    first = run_eval(cold, first_embedder, work_dir=tmp_path / "w1", progress=False).to_json()
    inner = FakeBagOfWordsEmbedder()
    second = run_eval(
        warm, CachingEmbedder(inner, cache, progress=False), work_dir=tmp_path / "w2", progress=False
    )
    assert inner.embedded == 0  # the second run took every passage and query from the cache
    assert second.to_json()["strategies"] == first["strategies"]
