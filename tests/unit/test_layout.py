"""One name, one place (docs/architecture.md, Layers): no module or package name is used twice in `core/`,
so a reader who sees `scoring` knows which room they are in.

Nothing is allowed to be reused today; an entry added to KNOWN_DUPLICATES must describe the tree exactly
(a stale allowance would let a duplicate come back unseen).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "core"

# name → every path (relative to the repository) where `core/` uses it: none since core/ was arranged by capability
KNOWN_DUPLICATES: dict[str, set[str]] = {}


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


def test_no_module_name_is_used_twice_in_core_beyond_the_known_duplicates() -> None:
    reused = {name: where for name, where in places_by_name(CORE).items() if len(where) > 1}
    new = {name: sorted(where) for name, where in reused.items() if name not in KNOWN_DUPLICATES}
    assert not new, f"a module name used in more than one place of core/ (rename one): {new}"


def test_every_known_duplicate_still_describes_the_tree() -> None:
    places = places_by_name(CORE)
    stale = {
        name: {"listed": sorted(listed), "now": sorted(places.get(name, set()))}
        for name, listed in KNOWN_DUPLICATES.items()
        if places.get(name, set()) != listed
    }
    assert not stale, f"KNOWN_DUPLICATES no longer matches core/ (delete or correct these entries): {stale}"


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
