"""The OpenSearch benchmarks run (at a tiny size) against the live node, so they do not rot: the phase
profile of the handler's OpenSearch path (bench/opensearch_profile.py). The routing bench needs the
cluster: tests/cluster/test_routing.py runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.live]
ROOT = Path(__file__).resolve().parents[2]


def run_bench(script: str, url: str, tmp_path: Path, *args: str) -> dict[str, object]:
    out = tmp_path / "result.json"
    env = {**os.environ, "QUARRY_OPENSEARCH_URL": url}
    command = [sys.executable, f"bench/{script}", "--json", str(out), *args]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(out.read_text())


def test_the_phase_profile_accounts_for_every_search(opensearch_url: str, tmp_path: Path) -> None:
    got = run_bench(
        "opensearch_profile.py", opensearch_url, tmp_path, "--smoke", "--cache-dir", str(tmp_path / "emb")
    )
    profile = got["profile_ms"]
    assert set(profile) == {"keyword", "semantic", "hybrid"}  # type: ignore[arg-type]
    keyword = profile["keyword"]  # type: ignore[index]
    assert keyword["trips"]["p50"] == 1 and keyword["direct_took"]["p50"] >= 0
    phases = sum(keyword[p]["mean"] for p in ("embed", "node", "wire", "client", "quarry"))
    assert phases == pytest.approx(keyword["total"]["mean"])
