"""Explicit links: entity ids or paths confined to the links root (absolute, `..` and symlinks out are
refused and never read); knowledge-graph entity extraction and `[GRAPH]` lines."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from core.context.graph import Triple, extract_entities, graph_lines
from core.context.links import MAX_LINKS, parse_links
from core.errors import InvalidInputError
from core.models import EntityKey
from core.scoring import parse_timestamp
from infra import links as links_module
from infra.links import FileLinkReader

TYPES = {"task", "memory", "document"}


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, Path]:
    root = tmp_path / "vault"
    (root / "notes").mkdir(parents=True)
    (root / "notes" / "plan.md").write_text("The plan: ship the limiter.")
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET")
    return {"root": root, "secret": secret}


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every path the reader opens (to prove a refused path is never read)."""
    seen: list[str] = []
    real_open = os.open

    def spy(path: Any, flags: int, *args: Any) -> int:
        seen.append(str(path))
        return real_open(path, flags, *args)

    monkeypatch.setattr(links_module.os, "open", spy)
    return seen


def test_links_are_entity_ids_or_relative_paths() -> None:
    parsed = parse_links(["task:t-1", "notes/plan.md", "unknowntype:x"], TYPES)
    assert parsed[0].entity == EntityKey("task", "t-1")
    assert parsed[1].path == "notes/plan.md" and parsed[2].path == "unknowntype:x"


@pytest.mark.parametrize(
    "bad", ["/etc/passwd", "../secret.txt", "notes/../../secret.txt", "C:\\Windows\\win.ini", "~/x", ""]
)
def test_absolute_and_climbing_paths_are_refused_before_any_read(bad: str) -> None:
    with pytest.raises(InvalidInputError) as err:
        parse_links(["task:t-1", bad], TYPES)
    assert list(err.value.fields) == ["explicit_links.1"]


def test_too_many_links_are_refused() -> None:
    with pytest.raises(InvalidInputError):
        parse_links([f"task:t-{i}" for i in range(MAX_LINKS + 1)], TYPES)


def test_reader_reads_a_file_under_the_root(tree: dict[str, Path]) -> None:
    reader = FileLinkReader(tree["root"])
    assert reader.read("notes/plan.md", 1000) == "The plan: ship the limiter."
    assert reader.read("notes/plan.md", 8) == "The plan"
    assert reader.read("notes/missing.md", 1000) is None


def test_a_symlink_pointing_out_of_the_root_is_refused_and_never_opened(
    tree: dict[str, Path], opened: list[str]
) -> None:
    (tree["root"] / "notes" / "escape.md").symlink_to(tree["secret"])
    (tree["root"] / "up").symlink_to(tree["root"].parent, target_is_directory=True)
    reader = FileLinkReader(tree["root"])
    for path in ("notes/escape.md", "up/secret.txt"):
        with pytest.raises(InvalidInputError, match="outside the links root"):
            reader.read(path, 1000)
    assert opened == []


def test_the_reader_refuses_absolute_and_climbing_paths_itself(
    tree: dict[str, Path], opened: list[str]
) -> None:
    reader = FileLinkReader(tree["root"])
    for path in (str(tree["secret"]), "../secret.txt"):
        with pytest.raises(InvalidInputError):
            reader.read(path, 1000)
    assert opened == []


def test_a_symlink_that_stays_inside_the_root_is_followed(tree: dict[str, Path]) -> None:
    (tree["root"] / "latest.md").symlink_to(tree["root"] / "notes" / "plan.md")
    assert FileLinkReader(tree["root"]).read("latest.md", 100) == "The plan: ship the limiter."


def test_directories_and_fifos_are_refused_without_blocking(tree: dict[str, Path]) -> None:
    os.mkfifo(tree["root"] / "pipe")
    reader = FileLinkReader(tree["root"])
    for path in ("notes", "pipe"):
        with pytest.raises(InvalidInputError, match="not a regular file"):
            reader.read(path, 100)


def test_entities_are_quoted_phrases_names_and_identifiers_not_question_words() -> None:
    found = extract_entities('What does Acme Corp know about "rate limiter" and checkRateLimit? How')
    assert found == ["rate limiter", "Acme Corp", "checkRateLimit"]
    assert extract_entities("what is up") == []


def test_graph_lines_keep_current_facts_once() -> None:
    now = parse_timestamp("2026-06-01T00:00:00Z") or 0.0
    facts = [
        Triple("1", "Ann", "works_at", "Acme", valid_from="2024-01-01"),
        Triple("2", "ann", "WORKS_AT", "acme"),  # the same fact again
        Triple("3", "Ann", "worked_at", "Initech", valid_to="2023-12-31"),  # over
    ]
    assert graph_lines(facts, now) == ["[GRAPH] Ann | works_at | Acme (valid 2024-01-01 → now)"]
