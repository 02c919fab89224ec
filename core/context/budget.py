"""Token budgets and per-caller source weights, each with the caller → `*` → default fallback
(docs/conformance.md#token-budgets)."""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from core.state import CallerBudget, SourceWeight

NULL_NAMESPACE_BUDGET = 2000  # docs/conformance.md#token-budgets: no namespace → 2000 tokens
# Global default when a namespace is given and nobody configured a budget. The specification read it from
# a configuration table; 4000 is our choice (docs/conformance.md#token-budgets): a mission-scoped request
# gets twice the namespace-less allowance.
DEFAULT_TOKEN_BUDGET = 4000
MAX_TOKEN_BUDGET = 16000  # docs/conformance.md#token-budgets: a request asks for ≤ 16000
DEFAULT_WEIGHT = 1.0  # docs/conformance.md#token-budgets: a source nobody weighted counts at face value
# Bounds learning keeps a budget within when neither the caller nor `*` configured any: below 500 tokens
# the knowledge-graph allotment switches off (docs/conformance.md#knowledge-graph); above 16000 a request
# is refused.
DEFAULT_MIN_BUDGET = 500
DEFAULT_MAX_BUDGET = MAX_TOKEN_BUDGET


class BudgetOrigin(enum.Enum):
    """Where the budget of an assembly came from."""

    REQUEST = "request"
    CALLER = "caller"
    WILDCARD = "wildcard"
    NO_NAMESPACE = "no_namespace"
    DEFAULT = "default"


@dataclass(frozen=True, slots=True)
class ResolvedBudget:
    """The budget an assembly packs to, and which rule chose it."""

    tokens: int
    origin: BudgetOrigin


def resolve_budget(
    requested: int | None,
    caller_budget: CallerBudget | None,
    wildcard_budget: CallerBudget | None,
    namespace: str | None,
    default_budget: int = DEFAULT_TOKEN_BUDGET,
) -> ResolvedBudget:
    """Request → caller's configured budget → `*` → 2000 when no namespace → the global default."""
    if requested is not None:
        return ResolvedBudget(requested, BudgetOrigin.REQUEST)
    if caller_budget is not None:
        return ResolvedBudget(caller_budget.budget, BudgetOrigin.CALLER)
    if wildcard_budget is not None:
        return ResolvedBudget(wildcard_budget.budget, BudgetOrigin.WILDCARD)
    if namespace is None:
        return ResolvedBudget(NULL_NAMESPACE_BUDGET, BudgetOrigin.NO_NAMESPACE)
    return ResolvedBudget(default_budget, BudgetOrigin.DEFAULT)


def default_share(source_count: int) -> float:
    """The token share of a source nobody has configured: an equal split of the configured sources."""
    return 1.0 / max(source_count, 1)


def resolve_weights(
    sources: Sequence[str],
    caller_rows: Sequence[SourceWeight],
    wildcard_rows: Sequence[SourceWeight],
    caller: str,
    configured_count: int,
) -> dict[str, SourceWeight]:
    """The effective row per source: the caller's own, else `*`'s, else weight 1.0 and an equal share.

    A row inherited from `*` or made up from defaults keeps its origin's `manual` flag and caller, so
    learning can tell whether it may move it (it never moves a manual `*` row on a caller's behalf).
    """
    own = {w.source: w for w in caller_rows}
    wild = {w.source: w for w in wildcard_rows}
    share = default_share(configured_count)
    resolved: dict[str, SourceWeight] = {}
    for name in sources:
        row = own.get(name) or wild.get(name)
        resolved[name] = row or SourceWeight(caller, name, DEFAULT_WEIGHT, share)
    return resolved


def effective_shares(weights: Mapping[str, SourceWeight]) -> dict[str, float]:
    """Token shares of the active sources, scaled down to sum to 1 when they add up to more."""
    shares = {name: max(0.0, w.token_share) for name, w in weights.items()}
    total = sum(shares.values())
    if total <= 1.0:
        return shares
    return {name: share / total for name, share in shares.items()}
