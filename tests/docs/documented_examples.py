"""The runnable examples of README.md and docs/*.md, and how their answers are checked (tests/docs).

Every fenced ```sh (or bash, shell) block of a page is run, unless the line before it says why not:
`<!-- not run: the reason -->`. A page's runnable blocks run in order, in one bash session, against a
fresh `quarry serve` with an empty data directory, from a directory laid out as a clone after `make
serve` (`.venv/bin/quarry`, `.quarry/`, `demo/`); the one substitution made is the server's address for
`http://127.0.0.1:3000`, so runs do not collide on a port.

A block is a list of steps. A comment line `# → ANSWER` ends a step and says what it prints: JSON is
compared as a subset (an object's keys given must be there with matching values; a non-empty list's items
must appear in that order, others may come between; `[]` means empty), anything else must appear in the
output as written. A step that does more than set variables must say what it answers; every step must
exit 0. Elided values (`...`, `…`) are not allowed in a runnable block: what is too long to show is
produced by a command (`V=$(quarry embed "text")`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FENCE = re.compile(r"^```(\w*)\s*$")
RUNNABLE_LANGUAGES = frozenset({"sh", "bash", "shell"})
NOT_RUN = re.compile(r"^<!--\s*not run:\s*(.*?)\s*-->$")
ANSWER = re.compile(r"^\s*# → ?(.*)$")
CONTINUED = re.compile(r"^\s*#   (.*)$")  # a long answer goes on over comment lines indented by 3
ASSIGNMENT = re.compile(r"^\s*(export\s+)?[A-Za-z_][A-Za-z0-9_]*=")
ELISIONS = ("...", "…")
DOCUMENTED_URL = "http://127.0.0.1:3000"


@dataclass
class Step:
    """Commands and the answer the page gives for them (None: they only set variables)."""

    line: int  # where the step starts in the page (1-based)
    commands: list[str] = field(default_factory=list)
    answer: str | None = None

    @property
    def needs_answer(self) -> bool:
        """Whether the step does more than set variables (and so must say what it prints)."""
        code = [c for c in self.commands if c.strip() and not c.lstrip().startswith("#")]
        starts = [c for c in code if not c.startswith((" ", "\t"))]
        return any(not ASSIGNMENT.match(c) for c in starts)


@dataclass
class Block:
    """One fenced shell block of a page: run (its steps) or not (and why)."""

    page: Path
    line: int
    text: str
    not_run: str | None
    steps: list[Step]


def blocks(page: Path) -> list[Block]:
    """Every shell block of `page`, in order."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if fence is None:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        if fence.group(1) in RUNNABLE_LANGUAGES:
            before = next((lines[j].strip() for j in range(i - 1, -1, -1) if lines[j].strip()), "")
            marker = NOT_RUN.match(before)
            body = lines[i + 1 : end]
            found.append(
                Block(page, i + 1, "\n".join(body), marker.group(1) if marker else None, steps(body, i + 2))
            )
        i = end + 1
    return found


def steps(body: list[str], first_line: int) -> list[Step]:
    """A block's lines cut into steps at each `# →` answer."""
    out: list[Step] = []
    current = Step(first_line)
    for n, text in enumerate(body, first_line):
        answer = ANSWER.match(text)
        more = CONTINUED.match(text)
        if answer is not None:
            current.answer = answer.group(1)
            out.append(current)
            current = Step(n + 1)
        elif more is not None and out and out[-1].answer is not None and not current.commands:
            out[-1].answer += more.group(1)
        else:
            current.commands.append(text)
    if any(c.strip() for c in current.commands):
        out.append(current)
    return out


def matches(expected: Any, actual: Any) -> bool:
    """Whether `actual` holds `expected` (module docstring: objects by subset, lists as ordered picks)."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            k in actual and matches(v, actual[k]) for k, v in expected.items()
        )
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return False
        if not expected:
            return actual == []
        rest = iter(actual)
        return all(any(matches(e, a) for a in rest) for e in expected)
    if isinstance(expected, bool) or isinstance(actual, bool):
        return expected is actual
    return bool(expected == actual)


def parsed(output: str) -> Any:
    """A step's output as JSON: one document, or one per line (NDJSON); None when it is not JSON."""
    try:
        return json.loads(output)
    except ValueError:
        pass
    try:
        return [json.loads(line) for line in output.splitlines() if line.strip()]
    except ValueError:
        return None


def answered(answer: str, output: str) -> bool:
    """Whether a step's output is what the page says it answers."""
    try:
        expected = json.loads(answer)
    except ValueError:
        return answer in output
    got = parsed(output)
    if isinstance(got, list) and not isinstance(expected, list) and len(got) == 1:
        got = got[0]
    return got is not None and matches(expected, got)
