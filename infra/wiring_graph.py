"""Which parts of the composition root (infra/wiring.py) are built from which, read from the container
class's own source, so that an override can drop exactly the parts built from the one it replaces. Used only
when a part is overridden (tests, benches, the evaluation harness), never at a cold start."""

from __future__ import annotations

import ast
import functools
import inspect
import textwrap
from collections.abc import Iterable
from functools import cached_property
from typing import Any

# Overridable besides the cached parts: the clock (set in __init__) and the model-folder loader (a method).
PLAIN_PARTS = frozenset({"clock", "load_embedder"})


def built_from(container: type, replaced: Iterable[str]) -> set[str]:
    """Every part built, directly or transitively, from one of `replaced`; TypeError for an unknown name."""
    graph = dependents(container)
    replaced = list(replaced)
    unknown = sorted(set(replaced) - graph.keys())
    if unknown:
        raise TypeError(
            f"{container.__name__} has no part named {', '.join(unknown)} (parts: {', '.join(sorted(graph))})"
        )
    stale: set[str] = set()
    pending = list(replaced)
    while pending:
        for dependent in graph[pending.pop()]:
            if dependent not in stale:
                stale.add(dependent)
                pending.append(dependent)
    return stale


@functools.cache
def dependents(container: type) -> dict[str, frozenset[str]]:
    """{part: the parts whose build reads it}. A reference inside a lambda is resolved when the lambda is
    called, so it is not a build-time dependency (the job queue's callbacks find the current `jobs`)."""
    parts = {name for name, member in vars(container).items() if isinstance(member, cached_property)}
    parts |= PLAIN_PARTS
    uses: dict[str, set[str]] = {name: set() for name in parts}
    source = ast.parse(textwrap.dedent(inspect.getsource(container))).body[0]
    assert isinstance(source, ast.ClassDef)
    for node in source.body:
        if isinstance(node, ast.FunctionDef) and node.name in parts:
            for used in _self_reads(node, parts):
                uses[used].add(node.name)
    return {name: frozenset(users - {name}) for name, users in uses.items()}


def _self_reads(function: ast.FunctionDef, parts: set[str]) -> set[str]:
    """The parts a method reads as `self.<part>` outside any lambda or nested function."""
    found: set[str] = set()
    pending: list[Any] = list(function.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Lambda | ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
            and node.attr in parts
        ):
            found.add(node.attr)
        pending.extend(ast.iter_child_nodes(node))
    return found
