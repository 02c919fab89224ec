"""bench/lambda_cold_start.py runs (at its smoke size: the API function only, first asked /health and first
asked a search), and so does bench/token_layer.py (one start with and one without the token-encodings layer):
their figures are there and plausible."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import ROOT

BENCH_SECONDS = 600  # a fresh clone builds the artifact and the layer first


def smoke_run(bench: str, opensearch_url: str, tmp_path: Path) -> tuple[Any, dict[str, Any]]:
    """bench/<bench>.py --smoke against the node: the finished process and the figures it wrote."""
    out = tmp_path / "figures.json"
    done = subprocess.run(
        [sys.executable, f"bench/{bench}.py", "--smoke", "--json", str(out)],
        cwd=ROOT,
        env={**os.environ, "QUARRY_OPENSEARCH_URL": opensearch_url},
        capture_output=True,
        text=True,
        timeout=BENCH_SECONDS,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done, json.loads(out.read_text())


def test_the_lambda_cold_start_bench_measures_every_function_warm_requests_and_serve(
    lambda_runtime: None, opensearch_url: str, tmp_path: Path
) -> None:
    done, report = smoke_run("lambda_cold_start", opensearch_url, tmp_path)
    assert set(report["cold"]) == {
        "ApiFunction",
        "ApiFunction (first request a keyword search)",
        "runtime (a handler doing nothing)",
    }
    for row in report["cold"].values():
        assert 0 < row["first_duration_ms"]["p50"] <= row["first_answer_ms"]["p50"]
        assert row["peak_rss_mb"] > 0
    assert set(report["warm"]) == {"health", "keyword search", "hybrid search", "assembly"}
    assert report["serve_hybrid_round_trip_ms"]["p50"] > 0 and report["hybrid_vs_serve"] > 0
    assert report["hybrid_paired"]["in_process_ms"]["p50"] > 0
    # quarry serve on the function's own backends, alternating with the emulated function
    assert report["hybrid_paired"]["serve_same_backends_round_trip_ms"]["p50"] > 0
    assert report["hybrid_vs_serve_same_backends"] > 0
    assert "api_search_first_beyond_runtime_ms" in report
    assert "API cold start beyond the runtime's own start" in done.stdout


def test_the_token_layer_bench_times_starts_with_and_without_the_layer(
    lambda_runtime: None, opensearch_url: str, tmp_path: Path
) -> None:
    _, report = smoke_run("token_layer", opensearch_url, tmp_path)
    assert 60 < report["layer"]["unzipped_mb"] < 120 and 0 < report["layer"]["zipped_mb"] < 60
    assert report["without the layer"]["cold"] > 0 and report["cold_with_over_without"] > 0
    with_layer = report["with the layer"]
    assert with_layer["cold"] > 0 and with_layer["first_cl100k"] > 0 and with_layer["warm_cl100k"] > 0
