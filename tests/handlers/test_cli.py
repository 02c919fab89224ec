"""The quarry CLI: the top-level --data-dir counts for every subcommand, ingest
errors read as line number + field + problem, and nothing but our own output reaches stderr."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from handlers.cli.main import main, parser
from tests.conftest import ROOT

RUN_TIMEOUT_SECONDS = 300  # a cold model load on a busy machine

LINES = (
    '{"id": "a", "title": "Plan the offsite"}\n'
    "not json\n"
    '{"id": "b", "status": "open"}\n'
    '{"id": "c/d", "title": "Bad id"}\n'
    "[1, 2]\n"
    '{"id": "e", "title": "Book the offsite venue"}\n'
)


@pytest.fixture
def fresh_container() -> Iterator[None]:
    from infra.wiring.root import set_container

    set_container(None)
    yield
    set_container(None)


@pytest.mark.parametrize(
    "argv",
    [
        ["search", "q"],
        ["ingest", "f.jsonl", "--type", "task"],
        ["serve"],
        ["eval", "--dataset", "d"],
        ["eval-cycle"],
        ["load-corpus", "c.json"],
        ["retrieve", "r", "task"],
    ],
)
def test_the_top_level_data_dir_reaches_every_subcommand(argv: list[str]) -> None:
    args = parser().parse_args(["--data-dir", "/tmp/top", *argv])
    assert args.data_dir == "/tmp/top"
    assert parser().parse_args([*argv[:1], "--data-dir", "/tmp/sub", *argv[1:]]).data_dir == "/tmp/sub"


def test_search_with_the_top_level_data_dir_reads_that_directory(
    tmp_path: Path, fresh_container: None, capsys: pytest.CaptureFixture[str]
) -> None:
    data, other = tmp_path / "data", tmp_path / "other"
    file = tmp_path / "tasks.jsonl"
    file.write_text('{"id": "v", "title": "Book the offsite venue"}\n')
    assert main(["--data-dir", str(data), "ingest", str(file), "--type", "task", "--quiet"]) == 0
    assert (data / "quarry.db").exists()
    capsys.readouterr()
    assert main(["--data-dir", str(data), "search", "offsite venue", "--json", "--strategy", "keyword"]) == 0
    assert [r["entity_id"] for r in json.loads(capsys.readouterr().out)["results"]] == ["v"]
    assert main(["--data-dir", str(other), "search", "offsite venue", "--json", "--strategy", "keyword"]) == 0
    assert json.loads(capsys.readouterr().out)["results"] == []


def test_ingest_errors_name_the_line_and_the_field_in_words(tmp_path: Path, local: Any, capsys: Any) -> None:
    file = tmp_path / "tasks.jsonl"
    file.write_text(LINES)
    assert main(["ingest", str(file), "--type", "task", "--tenant", "dev", "--quiet"]) == 1
    out, err = capsys.readouterr()
    assert json.loads(out.strip().splitlines()[-1])["indexed"] == 2
    lines = err.strip().splitlines()
    assert lines == [
        "line 2: not valid JSON (Expecting value at column 1)",
        "line 5: not a JSON object (each line must be one entity object)",
        "line 3: title: is required for a task",
        "line 4: id: must be 1-256 characters without whitespace, control characters, '/', '#' or '|', "
        "and not '.' or '..'",
    ]
    assert not any("items." in line or "{" in line for line in lines)


def test_ingest_prints_nothing_but_its_own_lines_on_stderr(tmp_path: Path) -> None:
    """A real run (the real local embedder): with --quiet, stderr holds the bad lines and nothing else."""
    file = tmp_path / "tasks.jsonl"
    file.write_text(LINES)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("QUARRY_", "HF_", "TRANSFORMERS_"))}
    env["PYTHONPATH"] = str(ROOT)
    command = [
        sys.executable,
        "-m",
        "handlers.cli.main",
        "--data-dir",
        str(tmp_path / "d"),
        "ingest",
        str(file),
    ]
    done = subprocess.run(
        [*command, "--type", "task", "--quiet"],
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_SECONDS,
        cwd=ROOT,
    )
    assert done.returncode == 1, done.stderr
    assert [line.split(":")[0] for line in done.stderr.strip().splitlines()] == [
        "line 2",
        "line 5",
        "line 3",
        "line 4",
    ], done.stderr
    assert (tmp_path / "d" / "quarry.db").exists()
