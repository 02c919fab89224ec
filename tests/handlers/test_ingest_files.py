"""`quarry ingest` on the files users have: BEIR's JSONL with `--id-field _id --map …`, JSON arrays and
CSV; a missing file or an unknown type fails once (exit 2, one message)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from handlers.cli.main import main
from tests.conftest import ROOT, api_event, invoke

SCIFACT = ROOT.parent / "shared" / "datasets" / "scifact" / "corpus.jsonl"


def _ids(query: str, tenant: str = "dev") -> list[str]:
    body = {"query": query, "strategy": "keyword", "limit": 5}
    status, answer = invoke(api_event("search", tenant=tenant, body=body))
    assert status == 200, answer
    return [r["entity_id"] for r in answer["results"]]


@pytest.mark.skipif(not SCIFACT.is_file(), reason=f"SciFact's BEIR corpus is not at {SCIFACT}")
def test_scifact_beir_corpus_loads_with_the_mapping_flags_alone(local: Any, capsys: Any) -> None:
    argv = [
        "ingest",
        str(SCIFACT),
        "--type",
        "document",
        "--id-field",
        "_id",
        "--map",
        "title=title,text=text",
    ]
    assert main([*argv, "--quiet"]) == 0
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert report["indexed"] == report["lines"] == 5183 and report["errors"] == 0
    # SciFact document 4983, found by words of its title
    assert _ids("microstructural development newborn cerebral white matter diffusion tensor")[0] == "4983"


def test_json_arrays_and_csv_load_with_their_fields_mapped(tmp_path: Path, local: Any, capsys: Any) -> None:
    array = tmp_path / "papers.json"
    array.write_text(json.dumps([{"key": 7, "name": "Graph neural networks", "abstract": "message passing"}]))
    table = tmp_path / "papers.csv"
    table.write_text('key,name,abstract\nc1,"Sparse retrieval, revisited",inverted lists\n,No id,here\n')
    mapping = ["--type", "document", "--id-field", "key", "--map", "title=name,text=abstract", "--quiet"]
    assert main(["ingest", str(array), *mapping]) == 0
    assert main(["ingest", str(table), *mapping]) == 1  # row 3 has no id
    out, err = capsys.readouterr()
    assert [json.loads(line)["indexed"] for line in out.strip().splitlines()] == [1, 1]
    assert len(err.strip().splitlines()) == 1 and err.startswith("row 3: id: ")
    assert _ids("message passing") == ["7"]
    assert _ids("inverted lists") == ["c1"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["ingest", "/nonexistent/corpus.jsonl", "--type", "document"], "no such file"),
        (["ingest", "{file}", "--type", "spaceship"], "spaceship"),
    ],
)
def test_a_missing_file_or_unknown_type_fails_once(
    tmp_path: Path, local: Any, capsys: Any, argv: list[str], message: str
) -> None:
    file = tmp_path / "tasks.jsonl"
    file.write_text('{"id": "a", "title": "one"}\n' * 50)
    assert main([a.format(file=file) for a in argv]) == 2
    out, err = capsys.readouterr()
    assert out == "" and message in err
    assert len([line for line in err.splitlines() if line.startswith("error")]) == 1


def test_a_bad_mapping_is_refused_by_the_parser(capsys: Any) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["ingest", "x.jsonl", "--type", "document", "--map", "title"])
    assert stop.value.code == 2 and "FIELD=SOURCE_FIELD" in capsys.readouterr().err
