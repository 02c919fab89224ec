"""One name, one place (docs/architecture.md, Layers): no module or package name is used twice in `core/`,
so a reader who sees `scoring` knows which room they are in.

No exceptions are kept: a name that must be reused is a sign that two rooms hold one concept.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "core"


def places_by_name(root: Path, base: Path = ROOT) -> dict[str, set[str]]:
    """Each module (`x.py`) and package (a folder with `__init__.py`) name under `root` → where it is
    (relative to `base`)."""
    places: dict[str, set[str]] = defaultdict(set)
    for path in root.rglob("*.py"):
        if "__pycache__" in path.parts:
            continue
        if path.name == "__init__.py":
            if path.parent != root:
                places[path.parent.name].add(str(path.parent.relative_to(base)))
            continue
        places[path.stem].add(str(path.relative_to(base)))
    return places


def test_no_module_name_is_used_twice_in_core() -> None:
    reused = {name: sorted(where) for name, where in places_by_name(CORE).items() if len(where) > 1}
    assert not reused, f"a module name used in more than one place of core/ (rename one): {reused}"


def test_the_check_sees_modules_and_packages(tmp_path: Path) -> None:
    """The rule itself: a module named like a package, or two modules named alike, are found."""
    for folder in ("pkg", "pkg/inner", "other"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "__init__.py").write_text("")
    (tmp_path / "inner.py").write_text("")
    (tmp_path / "pkg" / "alone.py").write_text("")
    (tmp_path / "other" / "alone.py").write_text("")
    found = places_by_name(tmp_path, base=tmp_path)
    assert found["inner"] == {"inner.py", "pkg/inner"}
    assert found["alone"] == {"pkg/alone.py", "other/alone.py"}
    assert found["pkg"] == {"pkg"}


# Module names used in more than one room of core/, infra/ and handlers/, each the same concept in every
# room (docs/architecture.md#repeated-names says why); any other repetition fails below.
SAME_CONCEPT = {
    "errors": 5,  # the error tree and its translation at each boundary
    "catalog": 4,  # the entity catalog: rules, each backend's part, its routes
    "state": 3,  # what the StateStore keeps, each backend's StateStore
    "jobs": 2,  # write jobs: DynamoDB's JobStore, GET /jobs/{id}
    "lifecycle": 2,  # a tenant's data lifecycle and its routes
    "cache": 2,  # the Cache port, one adapter per backend
    "fences": 2,  # the TenantFences port, one adapter per backend
    "index": 2,  # each backend's SearchIndex
    "writes": 2,  # each backend's IndexWriter part
    "reindex": 2,  # each backend's half of `quarry reindex`
    "context": 2,  # the context capability's MCP tools and HTTP routes
    "entities": 2,  # the entities' MCP tools and HTTP routes
    "nightly": 2,  # the nightly run's tasks and its Lambda function
}


def test_module_names_repeat_across_layers_only_for_one_concept() -> None:
    counts: dict[str, int] = defaultdict(int)
    for layer in ("core", "infra", "handlers"):
        for path in (ROOT / layer).rglob("*.py"):
            if path.name != "__init__.py" and "__pycache__" not in path.parts:
                counts[path.stem] += 1
    repeated = {name: n for name, n in counts.items() if n > 1}
    assert repeated == SAME_CONCEPT, (
        "a module name repeated across layers: rename it, or add it to SAME_CONCEPT"
    )


def test_infra_and_handlers_keep_nothing_loose_at_their_top() -> None:
    """Every module of infra/ and handlers/ is in a package named for what it holds (docs/architecture.md#rooms)."""
    loose = [
        p.name
        for layer in ("infra", "handlers")
        for p in (ROOT / layer).glob("*.py")
        if p.name != "__init__.py"
    ]
    assert loose == []


# Small pieces (docs/architecture.md#layers): a function a reader takes in at once, a module a reader can
# hold in mind. Generated client code (clients/) is not ours to shape.
MAX_FUNCTION_LINES = 50  # from its `def` to its last line, decorators left out
MAX_MODULE_LINES = 400
SIZED = ("core", "infra", "handlers", "deploy", "bench", "scripts")


def oversized(root: Path, base: Path = ROOT) -> list[str]:
    """Each function longer than MAX_FUNCTION_LINES and each module longer than MAX_MODULE_LINES under
    `root` (relative to `base`), with its length."""
    found = []
    for path in sorted(root.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        text, where = path.read_text(), str(path.relative_to(base))
        if (lines := len(text.splitlines())) > MAX_MODULE_LINES:
            found.append(f"{where}: {lines} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    found.append(f"{where}:{node.lineno} {node.name}: {length} lines")
    return found


def test_no_function_over_50_lines_and_no_module_over_400() -> None:
    found = [f for folder in SIZED for f in oversized(ROOT / folder)]
    assert found == [], "split these into well-named pieces: " + "; ".join(found)


def test_the_size_check_sees_long_functions_and_modules(tmp_path: Path) -> None:
    """The rule itself: 51 lines of a function (a method, a nested function) or 401 of a module fail,
    50 and 400 pass; a decorator is not counted."""

    def function(name: str, lines: int, indent: str = "") -> str:
        body = "".join(f"{indent}    x{i} = {i}\n" for i in range(lines - 2))
        return f"{indent}@decorated\n{indent}def {name}():\n{body}{indent}    return 0\n"

    (tmp_path / "fits.py").write_text(function("fits", 50) + "class C:\n" + function("method", 50, "    "))
    (tmp_path / "long.py").write_text(
        function("long", 51) + "class C:\n" + function("method", 51, "    ") + "def outer():\n"
        + function("inner", 51, "    ")
    )  # fmt: skip
    (tmp_path / "big.py").write_text("x = 0\n" * 401)
    (tmp_path / "full.py").write_text("x = 0\n" * 400)
    assert oversized(tmp_path, base=tmp_path) == [
        "big.py: 401 lines",
        "long.py:2 long: 51 lines",
        "long.py:106 outer: 53 lines",
        "long.py:55 method: 51 lines",
        "long.py:108 inner: 51 lines",
    ]
