"""Loading BEIR folders: the corpus, the test queries of a split, graded qrels, and malformed input."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.errors import InvalidInputError
from infra.beir.datasets import document_entity, load_beir, load_qrels

TINY = Path(__file__).resolve().parent.parent / "fixtures" / "beir_tiny"


def test_test_split_keeps_only_judged_queries() -> None:
    data = load_beir(TINY)
    assert data.name == "beir_tiny"
    assert sorted(data.queries) == ["q1", "q2", "q3"]
    assert data.queries["q2"] == "what makes a wing stall"
    assert len(data.corpus) == 8


def test_crlf_qrels_parse_to_clean_ids_and_grades() -> None:
    qrels = load_beir(TINY).qrels
    assert qrels["q2"] == {"d4": 2, "d8": 1}
    assert qrels["q3"] == {"d5": 1, "d1": 0}


def test_train_split_selects_other_queries() -> None:
    data = load_beir(TINY, split="train")
    assert list(data.queries) == ["q4"]
    assert data.qrels == {"q4": {"d2": 1}}


def test_documents_become_document_entities() -> None:
    doc = load_beir(TINY).corpus[0]
    assert document_entity(doc) == {
        "type": "document",
        "id": "d1",
        "title": "Photosynthesis in plants",
        "text": "Chlorophyll absorbs light and converts carbon dioxide and water into glucose and oxygen.",
    }


def test_missing_split_is_reported_by_path() -> None:
    with pytest.raises(InvalidInputError, match="dev.tsv"):
        load_beir(TINY, split="dev")


def test_qrels_without_header_and_with_bad_score(tmp_path: Path) -> None:
    good = tmp_path / "good.tsv"
    good.write_text("1\t10\t2\n1\t11\t1\n")
    assert load_qrels(good) == {"1": {"10": 2, "11": 1}}
    bad = tmp_path / "bad.tsv"
    bad.write_text("query-id\tcorpus-id\tscore\n1\t10\thigh\n")
    with pytest.raises(InvalidInputError, match="line 2"):
        load_qrels(bad)


def test_judged_query_without_text_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "qrels").mkdir()
    (tmp_path / "corpus.jsonl").write_text('{"_id": "d1", "title": "t", "text": "x"}\n')
    (tmp_path / "queries.jsonl").write_text('{"_id": "q1", "text": "x"}\n')
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq9\td1\t1\n")
    with pytest.raises(InvalidInputError, match="q9"):
        load_beir(tmp_path)
