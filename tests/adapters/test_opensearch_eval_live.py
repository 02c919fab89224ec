"""`quarry eval --index opensearch`: the same evaluation on a fresh index of the live node, deleted afterwards,
with figures beside the local index's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from handlers.cli import eval_commands
from handlers.cli import main as cli
from infra.beir.evaluation import eval_index, run_eval
from infra.config.settings import load_settings
from infra.opensearch import build_client
from tests.adapters.test_eval_harness import TINY, FakeBagOfWordsEmbedder

pytestmark = [pytest.mark.live]


def _eval_aliases(url: str) -> list[str]:
    return [a for a in build_client(url).indices.get_alias() if "-eval-" in a]


def test_eval_on_opensearch_scores_every_strategy_and_leaves_no_index(
    opensearch_url: str, tmp_path: Path
) -> None:
    settings = load_settings(opensearch_url=opensearch_url, opensearch_index_prefix="quarry-evaltest")
    embedder = FakeBagOfWordsEmbedder()
    local = run_eval(TINY, embedder, work_dir=tmp_path, progress=False).to_json()
    with eval_index(settings, embedder.dimension, "opensearch") as index:
        remote = run_eval(TINY, embedder, work_dir=tmp_path, progress=False, index=index).to_json()
    counts = ("documents", "indexed", "errors")
    assert [remote["ingest"][c] for c in counts] == [local["ingest"][c] for c in counts]
    assert list(remote["strategies"]) == list(local["strategies"])
    assert remote["strategies"]["keyword"]["mrr_at_10"] == 1.0  # as on the local index
    for name, figures in remote["strategies"].items():
        assert figures["ndcg_at_10"] == pytest.approx(local["strategies"][name]["ndcg_at_10"], abs=0.2), name
    assert not [a for a in _eval_aliases(opensearch_url) if a.startswith("quarry-evaltest")]


def test_the_cli_takes_the_index_flag(
    opensearch_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    from tests.conftest import make_container

    monkeypatch.setenv("QUARRY_OPENSEARCH_URL", opensearch_url)
    monkeypatch.setenv("QUARRY_OPENSEARCH_INDEX_PREFIX", "quarry-clitest")
    container = make_container(tmp_path / "data", FakeBagOfWordsEmbedder())
    monkeypatch.setattr(eval_commands, "command_container", lambda data_dir: container)
    out = tmp_path / "report.json"
    assert (
        cli.main(["eval", "--dataset", str(TINY), "--index", "opensearch", "--quiet", "--json", str(out)])
        == 0
    )
    assert json.loads(out.read_text())["strategies"]["keyword"]["mrr_at_10"] == 1.0
    assert not [a for a in _eval_aliases(opensearch_url) if a.startswith("quarry-clitest")]
