"""Explicit links: entity ids or paths confined to the links root (absolute, `..` and symlinks out are
refused and never read); knowledge-graph entity extraction and `[GRAPH]` lines."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest

from core.context.graph import Triple, extract_entities, graph_lines
from core.context.links import MAX_LINKS, parse_links
from core.errors import InvalidInputError
from core.models import EntityKey
from core.timestamps import parse_timestamp
from infra.user_files import file_links as links_module
from infra.user_files.file_links import FileLinkReader

TYPES = {"task", "memory", "document"}
RACE_READS = 3000  # the issue saw 93 escapes in 10,557 reads of the check-then-open reader


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, Path]:
    root = tmp_path / "vault"
    (root / "notes").mkdir(parents=True)
    (root / "notes" / "plan.md").write_text("The plan: ship the limiter.")
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET")
    return {"root": root, "secret": secret}


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch, tree: dict[str, Path]) -> list[str]:
    """Every file outside the root the reader manages to open (to prove a refused path is never read)."""
    seen: list[str] = []
    real_open = os.open
    secret = os.stat(tree["secret"])

    def spy(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        fd = real_open(path, flags, *args, **kwargs)
        info = os.fstat(fd)
        if (info.st_dev, info.st_ino) == (secret.st_dev, secret.st_ino):
            seen.append(str(path))
        return fd

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


def test_a_relative_symlink_that_climbs_but_stays_inside_is_followed(tree: dict[str, Path]) -> None:
    (tree["root"] / "other").mkdir()
    (tree["root"] / "other" / "plan.md").symlink_to("../notes/plan.md")
    assert FileLinkReader(tree["root"]).read("other/plan.md", 100) == "The plan: ship the limiter."


def test_a_relative_symlink_climbing_out_is_refused(tree: dict[str, Path], opened: list[str]) -> None:
    (tree["root"] / "notes" / "up.md").symlink_to("../../secret.txt")
    with pytest.raises(InvalidInputError, match="outside the links root"):
        FileLinkReader(tree["root"]).read("notes/up.md", 100)
    assert opened == []


def test_a_symlink_loop_is_a_400_not_a_500(tree: dict[str, Path]) -> None:
    (tree["root"] / "a").symlink_to("b")
    (tree["root"] / "b").symlink_to("a")
    (tree["root"] / "self").symlink_to("self/x")
    reader = FileLinkReader(tree["root"])
    for path in ("a", "a/x.md", "self"):
        with pytest.raises(InvalidInputError, match="symlink loop"):
            reader.read(path, 100)


def test_a_file_with_other_hard_links_is_refused(tree: dict[str, Path], opened: list[str]) -> None:
    os.link(tree["secret"], tree["root"] / "notes" / "hard.md")
    with pytest.raises(InvalidInputError, match="hard links"):
        FileLinkReader(tree["root"]).read("notes/hard.md", 100)


def test_swapping_a_directory_for_a_symlink_mid_request_never_escapes(tmp_path: Path) -> None:
    """A bounded race: one thread flips `root/d` between a directory and a symlink to a directory outside
    with the same file names, while reads of `d/f.txt` run. Not one read may return the outside text."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "f.txt").write_text("OUTSIDE")
    inner = tmp_path / "inner"  # the real directory, renamed in and out of place
    inner.mkdir()
    (inner / "f.txt").write_text("inside")
    link = tmp_path / "link"
    link.symlink_to(outside, target_is_directory=True)
    target = root / "d"
    os.rename(inner, target)
    stop = threading.Event()

    def flip() -> None:
        while not stop.is_set():
            os.rename(target, inner)  # the directory leaves…
            os.rename(link, target)  # …a symlink to outside takes its place
            os.rename(target, link)
            os.rename(inner, target)

    flipper = threading.Thread(target=flip)
    flipper.start()
    reader = FileLinkReader(root)
    answers: dict[str, int] = {}
    try:
        for _ in range(RACE_READS):
            try:
                got = reader.read("d/f.txt", 100)
            except InvalidInputError:
                got = "refused"
            answers[str(got)] = answers.get(str(got), 0) + 1
    finally:
        stop.set()
        flipper.join()
    assert "OUTSIDE" not in answers, answers
    assert answers.get("inside", 0) > 0, answers  # the race really ran both ways


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
