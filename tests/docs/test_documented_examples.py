"""Every example of README.md and docs/*.md runs, and answers what its page says (the rules of a page are in
tests/docs/documented_examples.py): a page's blocks in order against a fresh `quarry serve` with the real
model, from a directory laid out as a clone after `make serve`."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.docs.documented_examples import (
    DOCUMENTED_URL,
    ELISIONS,
    Block,
    Step,
    answered,
    blocks,
    matches,
    steps,
)
from tests.handlers.serving import free_port

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
START_TIMEOUT_SECONDS = 60
PAGE_TIMEOUT_SECONDS = 240
STEP_END = "@@quarry-doc-step@@"


def runnable(page: Path) -> list[Block]:
    return [b for b in blocks(page) if b.not_run is None]


RUN_PAGES = [p for p in PAGES if runnable(p)]


# -- the rules, on every page ----------------------------------------------------------------------------


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_shell_block_runs_or_says_why_not(page: Path) -> None:
    for block in blocks(page):
        where = f"{page.name}:{block.line}"
        if block.not_run is not None:
            assert block.not_run, f"{where}: `<!-- not run: -->` needs a reason"
            continue
        assert not any(e in block.text for e in ELISIONS), f"{where}: an elided value in a runnable block"
        for step in block.steps:
            assert step.answer is not None or not step.needs_answer, (
                f"{page.name}:{step.line}: say what this prints with a `# → ANSWER` line after it"
            )


def test_the_readme_and_the_api_page_have_runnable_examples() -> None:
    assert {p.name for p in RUN_PAGES} >= {"README.md", "api.md"}


@pytest.mark.parametrize(
    ("expected", "actual", "holds"),
    [
        ({"a": 1}, {"a": 1, "b": 2}, True),
        ({"a": 1}, {"a": 2}, False),
        ({"r": [{"id": "x"}, {"id": "z"}]}, {"r": [{"id": "x"}, {"id": "y"}, {"id": "z"}]}, True),
        ({"r": [{"id": "z"}, {"id": "x"}]}, {"r": [{"id": "x"}, {"id": "y"}, {"id": "z"}]}, False),
        ({"r": []}, {"r": [1]}, False),
        ({"ok": True}, {"ok": 1}, False),
        (0.5, 0.5, True),
    ],
)
def test_answers_compare_as_a_subset(expected: object, actual: object, holds: bool) -> None:
    assert matches(expected, actual) is holds


def test_steps_end_at_each_answer_and_text_answers_are_found_in_the_output() -> None:
    body = ["V=$(echo 1)", 'echo "{\\"a\\": $V}"', '# → {"a": 1}', "echo one two", "# → one"]
    cut = steps(body, 1)
    assert [(s.commands, s.answer) for s in cut] == [
        (["V=$(echo 1)", 'echo "{\\"a\\": $V}"'], '{"a": 1}'),
        (["echo one two"], "one"),
    ]
    assert answered('{"a": 1}', '{"a": 1, "b": 2}\n') and answered("one", "one two\n")
    assert not answered('{"a": 2}', '{"a": 1}') and not Step(1, ["X=1"]).needs_answer


# -- running a page ------------------------------------------------------------------------------------


@pytest.fixture
def clone(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A directory as a clone after `make serve` (its `.venv/bin/quarry` runs this tree), and a fresh
    server over its `.quarry` on a free port."""
    root = tmp_path / "clone"
    (root / ".venv" / "bin").mkdir(parents=True)
    quarry = root / ".venv" / "bin" / "quarry"
    quarry.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m handlers.cli.main "$@"\n')
    quarry.chmod(0o755)
    (root / "demo").symlink_to(ROOT / "demo")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("QUARRY_", "POWERTOOLS_"))}
    env["PYTHONPATH"] = str(ROOT)
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "handlers.cli.main", "serve", "--workers", "1", "--port", str(port)],
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert server.stdout is not None
        deadline, lines = time.monotonic() + START_TIMEOUT_SECONDS, []
        while not any("export QUARRY_KEY=" in line for line in lines):
            assert time.monotonic() < deadline and server.poll() is None, lines
            lines.append(server.stdout.readline())
        yield root, f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.communicate(timeout=30)


def script(page: Path, url: str) -> tuple[str, list[Step]]:
    """The page's runnable blocks as one bash script that marks the end of each step with its status."""
    parts, run = ["set -o pipefail"], []
    for block in runnable(page):
        for step in block.steps:
            code = "\n".join(step.commands).replace(DOCUMENTED_URL, url)
            parts += [code, f'printf "\\n{STEP_END} %d\\n" "$?"']
            run.append(step)
    return "\n".join(parts) + "\n", run


@pytest.mark.slow
@pytest.mark.embedder
@pytest.mark.parametrize("page", RUN_PAGES, ids=lambda p: p.name)
def test_the_pages_examples_answer_what_the_page_says(page: Path, clone: tuple[Path, str]) -> None:
    root, url = clone
    text, run = script(page, url)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("QUARRY_", "POWERTOOLS_"))}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(
        ["bash", "-c", text],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=PAGE_TIMEOUT_SECONDS,
        check=False,
    )
    outputs = done.stdout.split(f"\n{STEP_END} ")
    assert len(outputs) == len(run) + 1, done.stderr[-3000:]
    for n, step in enumerate(run):
        output = outputs[n].split("\n", 1)[1] if n else outputs[n]
        status = outputs[n + 1].split("\n", 1)[0]
        shown = textwrap.indent("\n".join(step.commands), "    ")
        where = f"{page.name}:{step.line}\n{shown}\nprinted:\n{output[:3000]}\nstderr:\n{done.stderr[-2000:]}"
        assert status == "0", f"exited {status}: {where}"
        if step.answer is not None:
            assert answered(step.answer, output), f"the page says it answers {step.answer}; {where}"
