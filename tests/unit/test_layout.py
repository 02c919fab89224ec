"""One name, one place (docs/architecture.md, Layers): no module or package name is used twice in `core/`,
so a reader who sees `scoring` knows which room they are in.

No exceptions are kept: a name that must be reused is a sign that two rooms hold one concept.
"""

from __future__ import annotations

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
