"""Every benchmark runs end to end at its smoke size (`--smoke`), so none rots unseen (docs/development.md,
the checks CI runs): each bench's own `main`, in this process, on tests/fixtures/beir_tiny where it needs a dataset,
with hashing vectors where it does not measure the embedder, on the OpenSearch node `make test` starts
where it needs one, and in the browser when the console's browser tests may run. The figures are not
judged (they come from a tiny corpus on a busy machine); that each is there and well formed is.
"""

from __future__ import annotations

import importlib
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT

SMOKE_TESTED: dict[str, str] = {}  # bench name → the test here that runs it
ELSEWHERE = {  # benches whose smoke run needs the emulator, the OpenSearch node or the cluster
    "lambda_cold_start": "tests/lambda_runtime/test_cold_start_bench.py",
    "opensearch_profile": "tests/adapters/test_opensearch_benches.py",
    "routing": "tests/cluster/test_routing.py",
    "token_layer": "tests/lambda_runtime/test_cold_start_bench.py",
}
STRATEGIES = {"keyword", "semantic", "rrf", "convex", "auto"}  # infra/beir/evaluation.py ALL_STRATEGIES
PEERS = {"bm25", "minilm", "rrf", "convex", "minmax"}  # bench/baselines.py's systems


def smoke(bench: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Mark a test as the smoke run of bench/<bench>.py."""

    def register(test: Callable[..., None]) -> Callable[..., None]:
        SMOKE_TESTED[bench] = test.__name__
        return test

    return register


def run(bench: str, *argv: str) -> int:
    """bench/<bench>.py's main with these arguments; its exit code (None counts as 0)."""
    module = importlib.import_module(f"bench.{bench}")
    return int(module.main(list(argv)) or 0)


@pytest.fixture(autouse=True)
def isolated() -> Iterator[None]:
    """A bench may set environment defaults (Powertools) or install a container: neither outlives it."""
    from infra.wiring.root import set_container

    saved = dict(os.environ)
    yield
    set_container(None)
    os.environ.clear()
    os.environ.update(saved)


def figures(path: Path) -> Any:
    return json.loads(path.read_text())


def latency(summary: dict[str, float]) -> bool:
    """A P50/P99/mean summary of positive milliseconds, P50 ≤ P99."""
    return 0 < summary["p50"] <= summary["p99"] and summary["mean"] > 0


def metrics(row: dict[str, float]) -> bool:
    """nDCG@10, Recall@100 and MRR@10, each within [0, 1]."""
    return all(0.0 <= row[k] <= 1.0 for k in ("ndcg_at_10", "recall_at_100", "mrr_at_10"))


def test_every_bench_has_a_smoke_run() -> None:
    benches = {p.stem for p in (ROOT / "bench").glob("*.py") if not p.stem.startswith("_")}
    assert benches == set(SMOKE_TESTED) | set(ELSEWHERE), "a bench without a smoke run (add it here)"
    for bench in benches:
        assert "--smoke" in (ROOT / "bench" / f"{bench}.py").read_text(), f"bench/{bench}.py has no --smoke"


@smoke("assembly_latency")
def test_assembly_latency(tmp_path: Path) -> None:
    assert run("assembly_latency", "--smoke", "--json", str(tmp_path / "out.json")) == 0
    out = figures(tmp_path / "out.json")
    assert out["items"] == 50 and out["queries"] == 12 and "HASHING" in out["embedder"]
    assert set(out["runs"]) == {"parallel fan-out (8)", "sequential fan-out (1)"}
    for r in out["runs"].values():
        assert latency(r["wall_ms"]) and latency(r["retrieval_ms"])
        assert r["mean_tokens"] > 0 and 0 < r["mean_fill"] <= 1


@smoke("baselines")
def test_baselines(tmp_path: Path) -> None:
    assert run("baselines", "--smoke", "--json", str(tmp_path / "out.json")) == 0
    out = figures(tmp_path / "out.json")
    assert out["dataset"] == "beir_tiny" and out["queries"] == 3
    assert set(out["systems"]) == PEERS and all(metrics(m) for m in out["systems"].values())


@smoke("cold_start")
def test_cold_start(tmp_path: Path) -> None:
    run("cold_start", "--smoke", "--json", str(tmp_path / "out.json"))
    out = figures(tmp_path / "out.json")
    assert set(out) == {"python -c pass (process)", "import handlers.lambda_functions.api"}
    assert all(0 < row["min"] <= row["median"] <= row["max"] for row in out.values())


@smoke("console_load")
def test_console_load(tmp_path: Path) -> None:
    from tests.browser.driver import require_browser

    require_browser()  # the browser tests' rule: skip without chromium, fail so in CI
    assert run("console_load", "--smoke", "--json", str(tmp_path / "out.json")) == 0
    out = figures(tmp_path / "out.json")
    assert out["entities"] == 30 and out["runs"] == 2 and out["embedder"] == "fake"
    assert 0 < out["first_results_ms"]["median"] <= out["first_results_ms"]["max"]
    assert out["last_load_phases_ms"]["/search end"] > out["last_load_phases_ms"]["/search start"]


@smoke("embedder")
def test_embedder(tmp_path: Path) -> None:
    assert run("embedder", "--smoke", "--json", str(tmp_path / "out.json")) == 0
    out = figures(tmp_path / "out.json")
    assert out["passages"] == 8 and out["passages_per_second"] > 0 and out["peak_rss_mb"] > 0
    assert latency(out["query_ms"]) and out["model_load_ms"] > 0
    assert {"infra.local.onnx.embedder", "tokenizers", "numpy"} <= set(out["import_ms"])


@smoke("embedder_runtimes")
def test_embedder_runtimes(capsys: pytest.CaptureFixture[str]) -> None:
    assert run("embedder_runtimes", "--smoke") == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines() if "query P50" in line]
    assert [r[:2] for r in rows] == [["numpy", "threads=2"]] + [
        [runtime, f"threads={t}"] for runtime in ("onnx", "onnx-int8") for t in (1, 2)
    ]


@smoke("engine_compare")
def test_engine_compare(tmp_path: Path) -> None:
    run("engine_compare", "--smoke", "--json", str(tmp_path / "out.json"))
    rows = figures(tmp_path / "out.json")["rows"]
    assert {r["strategy"] for r in rows} == STRATEGIES
    assert all(r["queries"] == 3 and 0 < r["p"] <= 1 and 0 <= r["fts5"] <= 1 for r in rows)


@smoke("feedback_latency")
def test_feedback_latency(tmp_path: Path) -> None:
    assert run("feedback_latency", "--smoke", "--json", str(tmp_path / "out.json")) == 0
    out = figures(tmp_path / "out.json")
    assert latency(out["feedback"]) and latency(out["no feedback"]) and "extra per query" in out


@smoke("fusion_study")
def test_fusion_study(tmp_path: Path) -> None:
    assert run("fusion_study", "--smoke", "--json", str(tmp_path / "out.json")) == 0
    out = figures(tmp_path / "out.json")
    assert out["dataset"] == "beir_tiny" and metrics(out["rows"]["keyword"])
    assert any(name.startswith("auto convex") for name in out["rows"])
    assert 0 <= out["tuned_auto"]["ndcg_at_10"] <= 1 and "alpha" in out["current"]["setting"]


@smoke("keyword_engines")
def test_keyword_engines(capsys: pytest.CaptureFixture[str]) -> None:
    run("keyword_engines", "--smoke")
    out = capsys.readouterr().out
    report = json.loads(out[out.index("{") :])["300"]
    for kind in ("narrow", "broad", "stop_words_only"):
        assert latency(report[f"{kind}_fts5"]) and latency(report[f"{kind}_tantivy"])
        assert 0 <= report[f"{kind}_top10_overlap"] <= 1


@smoke("serve_tail")
def test_serve_tail(tmp_path: Path) -> None:
    assert run("serve_tail", "--smoke", "--json", str(tmp_path / "out.json")) == 0
    out = figures(tmp_path / "out.json")
    assert out["requests"] == 40 and out["strategy"] == "hybrid"
    lat = out["latency_ms"]
    assert 0 < lat["p50"] <= lat["p99"] <= lat["p999"] <= lat["max"]
    assert 0 <= out["slow"]["count"] <= 40
    assert out["server_cpu_ms_per_search"] > 0


@smoke("load")
def test_load(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from bench.load import HELD_P99_MS, HELD_SHARE

    args = ("--smoke", "--strategies", "keyword,hybrid,floor", "--json", str(tmp_path / "out.json"))
    assert run("load", *args) == 0
    assert "300 entities ingested" in capsys.readouterr().out  # through a write job, waited for
    out = figures(tmp_path / "out.json")
    assert [(r["strategy"], r["offered_per_s"], r["requests"]) for r in out["runs"]] == [
        ("keyword", 20.0, 20),
        ("hybrid", 20.0, 20),
        ("floor", 20.0, 20),  # hybrid searches by a tenant of one entity, on the same server
    ]
    for r in out["runs"]:
        assert r["ok"] > 0 and latency(r["latency_ms"])
        assert r["client_cpu_ms_per_request"] > 0  # the load generator's own share of the cores
        served = r["sustained_per_s"] >= HELD_SHARE * r["offered_per_s"]
        assert r["held"] == (r["errors"] == 0 and served and r["latency_ms"]["p99"] <= HELD_P99_MS)
    assert "P99 ≤ 100 ms" in out["held"]["rule"]
    # capacity as a share of a bound measured in the same run
    assert set(out["bounds"]) == {"hybrid", "keyword"}
    for strategy, bound in out["bounds"].items():
        assert bound["cpu_ms_each"] > 0 and bound["per_s"] == pytest.approx(
            bound["cores"] * 1000 / bound["cpu_ms_each"]
        )
        row = out["capacity"][strategy]
        assert row["held_per_s"] == out["held"]["highest_offered_per_s"][strategy]
        assert row["share_of_bound"] == pytest.approx(row["held_per_s"] / bound["per_s"])
    assert out["capacity"]["floor"]["bound_per_s"] == out["bounds"]["hybrid"]["per_s"]


@smoke("query_batch")
def test_query_batch(tmp_path: Path) -> None:
    assert run("query_batch", "--smoke", "--query-batch", "1,4", "--json", str(tmp_path / "out.json")) == 0
    out = figures(tmp_path / "out.json")
    assert set(out["model_cpu_ms_per_query_by_batch"]) == {"1", "2", "4", "8", "16"}
    assert [t["query_batch"] for t in out["turns"]] == [1, 4]
    for turn in out["turns"]:
        assert turn["errors"] == 0 and turn["searches_per_s"] > 0 and latency(turn["latency_ms"])


@smoke("long_queries")
def test_long_queries(tmp_path: Path) -> None:
    assert run("long_queries", "--smoke", "--json", str(tmp_path / "out.json")) == 0
    out = figures(tmp_path / "out.json")
    assert out["queries"] == 3 and metrics(out["quarry_keyword"]) and metrics(out["bm25s"])


@smoke("peers")
def test_peers(tmp_path: Path, opensearch_url: str) -> None:
    args = ["--smoke", "--opensearch", opensearch_url, "--json", str(tmp_path / "out.json")]
    assert run("peers", *args) == 0
    out = figures(tmp_path / "out.json")
    for size in ("top10", "top100"):
        assert latency(out["latency_ms"][size]["opensearch"]) and latency(out["latency_ms"][size]["quarry"])
    assert metrics(out["quality"]["opensearch"]) and metrics(out["quality"]["quarry"])


@smoke("peers_cpu")
def test_peers_cpu(capsys: pytest.CaptureFixture[str]) -> None:
    assert run("peers_cpu", "--smoke") == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("top")]
    assert len(rows) == 2 and all("index" in r and "service" in r and "handler" in r for r in rows)


@smoke("feedback_variants")
def test_feedback_variants(tmp_path: Path) -> None:
    assert run("feedback_variants", "--smoke", "--json", str(tmp_path / "out.json")) == 0
    got = figures(tmp_path / "out.json")
    rows = {k: v for k, v in got.items() if isinstance(v, dict)}
    assert len(rows) == 6 and all(metrics(r) for r in rows.values())


@smoke("prf_study")
def test_prf_study(tmp_path: Path) -> None:
    assert run("prf_study", "--smoke", "--json", str(tmp_path / "out.json")) == 0
    rows = figures(tmp_path / "out.json")["rows"]
    assert {"keyword", "convex a=0.7", "rocchio k=1 b=0.5 a=0.7", "rm3 k=5 terms=5 repeat=2 keyword"} <= set(
        rows
    )
    assert all(0 <= v <= 1 for v in rows.values())


@smoke("quality_defaults")
def test_quality_defaults(tmp_path: Path) -> None:
    assert run("quality_defaults", "--smoke", "--json", str(tmp_path / "out.json")) == 0
    out = figures(tmp_path / "out.json")
    assert out["candidate"]["alpha"] == 0.7
    for key in ("test/current", "test/candidate", "train/current", "train/candidate"):
        assert set(out[key]) == STRATEGIES and all(metrics(m) for m in out[key].values())


@smoke("quality_gate")
def test_quality_gate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run("quality_gate", "--smoke") == 0  # make eval's chain on the tiny collection
    assert "quarry auto (default)" in capsys.readouterr().out
    # and the gate itself: a default below the best naive fusion fails it, naming the collection
    same = {"ndcg_at_10": 0.5, "recall_at_100": 0.5, "mrr_at_10": 0.5}
    quarry = {"split": "test", "queries": 1, "strategies": {s: same for s in STRATEGIES}}
    peers = {"systems": {p: {**same, "ndcg_at_10": 0.6 if p == "rrf" else 0.5} for p in PEERS}}
    (tmp_path / "c.json").write_text(json.dumps(quarry))
    (tmp_path / "baselines_c.json").write_text(json.dumps(peers))
    assert run("quality_gate", "c", "--results", str(tmp_path)) == 1
    assert "BELOW THE BAR: c: default 0.5000 < best naive fusion rrf 0.6000" in capsys.readouterr().err


@smoke("reindex_speed")
def test_reindex_speed(opensearch_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    os.environ["QUARRY_OPENSEARCH_URL"] = opensearch_url  # restored after the test
    run("reindex_speed", "--smoke")
    report = json.loads(next(line for line in capsys.readouterr().out.splitlines() if line.startswith("{")))
    assert report["documents"] == report["chunks"] == 20 and report["took_s"] > 0
    assert report["new_index"] != report["old_index"]


@smoke("scale")
def test_scale(tmp_path: Path) -> None:
    run("scale", "--smoke", "--json", str(tmp_path / "out.json"))
    row = figures(tmp_path / "out.json")["300"]
    for key in ("vector_exact", "numpy_bound", "keyword_narrow", "hybrid_service_top20", "one_entity_upsert"):
        assert latency(row[key]), key
    assert 0 <= row["vector_approx_probe8"]["recall_at_100"] <= 1 and row["memory"]["rss_mb"] > 0


@smoke("search_latency")
def test_search_latency(tmp_path: Path) -> None:
    args = ["--smoke", "--cache-dir", str(tmp_path / "vectors"), "--json", str(tmp_path / "out.json")]
    assert run("search_latency", *args) == 0
    out = figures(tmp_path / "out.json")
    assert out["entities"] == 50 and set(out["latency_ms"]) == {"keyword", "semantic", "hybrid", "auto"}
    assert all(latency(s) for s in out["latency_ms"].values()) and 0 <= out["cache_hit_ratio"] <= 1


@smoke("sentence_windows")
def test_sentence_windows(tmp_path: Path) -> None:
    run("sentence_windows", "--smoke", "--json", str(tmp_path / "out.json"))
    out = figures(tmp_path / "out.json")
    assert out["documents"] == 8 and out["windows"] >= 8
    assert {f"{split}: document" for split in ("train", "test")} <= set(out["rows"])
    assert all(0 <= v <= 1 for row in out["rows"].values() for v in row.values())


@smoke("compare")
def test_compare(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    assert (
        run(
            "compare", "--base", "HEAD", "--benches", "search", "--rounds", "1", "--smoke", "--json", str(out)
        )
        == 0
    )
    body = figures(out)
    compared = {row["figure"]: row for row in body["benches"]["search"]["compared"]}
    assert "latency_ms.keyword.p50" in compared and "latency_ms.hybrid.p50" in compared
    assert all(row["ratio"] is not None and row["ratio"] > 0 for row in compared.values())
    assert (
        len(body["benches"]["search"]["runs"]["base"]) == len(body["benches"]["search"]["runs"]["head"]) == 1
    )


@smoke("cpu_budget")
def test_cpu_budget(tmp_path: Path) -> None:
    from core.search import candidate_fusion
    from infra.local.sqlite.index import SqliteIndex

    def wrapped() -> tuple[object, ...]:
        return (
            SqliteIndex.retrieve_many,
            SqliteIndex.displayed,
            candidate_fusion.fuse,
            candidate_fusion.feedback_search,
        )

    originals = wrapped()
    assert run("cpu_budget", "--smoke", "--json", str(tmp_path / "out.json")) == 0
    out = figures(tmp_path / "out.json")
    per = out["cpu_ms_per_search"]
    layers = [
        "embedding",
        "retrieval",
        "feedback",
        "fusion",
        "display",
        "results",
        "service other",
        "handler",
    ]
    assert set(per) == {*layers, "total"} and per["total"] > 0
    assert sum(per[layer] for layer in layers) == pytest.approx(per["total"])  # the layers add up
    # a hybrid search's both retrievals, its feedback and its page's display values were seen, and the
    # feedback's own search (inside the feedback) counted once, as retrieval: no layer went below zero
    assert per["retrieval"] > 0 and per["feedback"] > 0 and per["display"] > 0
    assert min(per.values()) >= 0
    assert wrapped() == originals  # the instrumentation is gone afterwards
