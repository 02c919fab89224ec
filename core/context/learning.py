"""The learning cycle (docs/architecture.md, The learning cycle; docs/conformance.md#learning-cycle): from a
caller's logged assemblies and their feedback, move each source's weight and token share and the caller's
budget. Pure: rows in, one LearningUpdate out; the service applies it atomically.

Which assemblies learn: every caller's, not only those that send feedback (the specification takes all
unprocessed rows). A row joins a batch once it has feedback, or once FEEDBACK_WINDOW_SECONDS have passed since
it was logged without any (its caller had the time to report; it counts as unused, as in the specification:
docs/conformance.md#feedback-window). A batch needs EVAL_BATCH_SIZE such rows. The budget learns from the
whole batch, so a caller that never sends feedback gets the specification's −5% for unused budget; weights
learn only from the batch's rows with feedback (docs/conformance.md#weights-from-feedback, a departure: an
assembly nobody reported on says nothing about which source helped, and appearance alone would reward
whichever source already returns the most).

Per source, over the batch's N assemblies with feedback (items from explicit links and unconfigured
sources are ignored):

- appearance_rate = assemblies where the source returned at least one item / N
- usage_rate      = its items that feedback marked used / its items returned (0 when none returned)
- confidence      = mean normalised score ([0, 1] within the source) of its used items (0 when none)
- effectiveness   = 0.5·confidence + 0.3·usage_rate + 0.2·appearance_rate (conformance.md#learning-cycle)

Only sources with evidence (appearance_rate > 0) move; a source that returned nothing says nothing about
its usefulness. Among them, with ē their mean effectiveness and S the sum of their current shares:

- weight target = clamp(1.0 · effectiveness / ē, 0.1, 1.5): as effective as the average → weight 1.0,
  twice as effective → 1.5 (capped). Weights only matter relative to each other, so the target is too.
- share target  = clamp(S · effectiveness / Σ effectiveness, 0.05, 0.8): the share the evidence sources
  already hold together is redistributed in proportion to effectiveness.
- new = old + 0.1 · (target − old), clamped again; a row whose effective value is manual (the caller's,
  or the `*` row it inherits) never moves. Every change writes a history row.

Budget, per assembly: fill = total_tokens / budget; used fraction = tokens_used / total_tokens when the
feedback reported tokens, else the tokens of the items marked used / total_tokens (capped at 1).

- saturated:      fill ≥ 0.9 (the packer fills ≥ 90% whenever it had more material than room)
- used:           used fraction ≥ 0.5
- grow +10%       when more than half the batch was saturated and used (the caller wanted more)
- shrink −5%      otherwise, when the batch is mostly unused: mean used fraction < 0.2
- the result is rounded and clamped to the caller's min/max (else `*`'s, else 500..16000).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from core.context.budget import DEFAULT_MAX_BUDGET, DEFAULT_MIN_BUDGET
from core.state import AssemblyLogEntry, CallerBudget, LearningUpdate, SourceWeight, WeightChange
from core.timestamps import iso_timestamp

LEARNING_RATE = 0.1  # docs/conformance.md#learning-cycle (as are the bounds and the batch below)
WEIGHT_MIN, WEIGHT_MAX = 0.1, 1.5
TOKEN_SHARE_MIN, TOKEN_SHARE_MAX = 0.05, 0.8
EVAL_BATCH_SIZE = 10  # fewer assemblies ready to learn from → no learning yet
# How long an assembly waits for feedback before it learns as unused (docs/conformance.md#feedback-window).
# The specification has no wait (its nightly cycle takes every row, so feedback sent a minute after the
# run was never learned from); an agent reports within its task, so an hour is generous (our judgement).
FEEDBACK_WINDOW_SECONDS = 3600
CONFIDENCE_WEIGHT, USAGE_WEIGHT, APPEARANCE_WEIGHT = 0.5, 0.3, 0.2  # docs/conformance.md#learning-cycle
NEUTRAL_WEIGHT = 1.0  # the weight of a source exactly as effective as the average
BUDGET_GROWTH = 1.10  # docs/conformance.md#learning-cycle: +10% when saturated and used
BUDGET_SHRINK = 0.95  # docs/conformance.md#learning-cycle: −5% when mostly unused
SATURATED_FILL = 0.9  # = packing.TARGET_FILL: a full block means the budget, not material, was the limit
USED_FRACTION = 0.5  # an assembly counts as used when half its tokens were used
MOSTLY_UNUSED_FRACTION = 0.2  # a batch is mostly unused when on average < 20% of its tokens were used
GROWTH_MAJORITY = 0.5  # grow only when more than half the batch was saturated and used
PRECISION = 6  # decimals kept in stored weights and shares (no float noise in history rows)


@dataclass(frozen=True, slots=True)
class SourceStats:
    """What one batch says about one source."""

    assemblies: int
    appearances: int = 0
    returned: int = 0
    used: int = 0
    used_score: float = 0.0

    @property
    def appearance_rate(self) -> float:
        """Share of the batch's assemblies the source contributed to."""
        return self.appearances / self.assemblies if self.assemblies else 0.0

    @property
    def usage_rate(self) -> float:
        """Share of the source's returned items that feedback marked used."""
        return self.used / self.returned if self.returned else 0.0

    @property
    def confidence(self) -> float:
        """Mean normalised score of the source's used items."""
        return self.used_score / self.used if self.used else 0.0

    @property
    def effectiveness(self) -> float:
        """0.5·confidence + 0.3·usage_rate + 0.2·appearance_rate (docs/conformance.md#learning-cycle)."""
        return (
            CONFIDENCE_WEIGHT * self.confidence
            + USAGE_WEIGHT * self.usage_rate
            + APPEARANCE_WEIGHT * self.appearance_rate
        )


@dataclass(frozen=True, slots=True)
class WeightAdjustment:
    """One source's move, with the evidence behind it."""

    source: str
    old_weight: float
    new_weight: float
    old_share: float
    new_share: float
    effectiveness: float


@dataclass(frozen=True, slots=True)
class BudgetAdjustment:
    """The caller's budget move and why."""

    old_budget: int
    new_budget: int
    reason: str


@dataclass(frozen=True, slots=True)
class CallerLearning:
    """One caller's learning step: what to write, and a readable account of it."""

    update: LearningUpdate
    stats: Mapping[str, SourceStats]
    weights: tuple[WeightAdjustment, ...]
    budget: BudgetAdjustment | None


def collect_stats(entries: Sequence[AssemblyLogEntry], sources: Sequence[str]) -> dict[str, SourceStats]:
    """Appearances, returned and used items and used scores per configured source over the batch."""
    counts = {name: [0, 0, 0, 0.0] for name in sources}
    for entry in entries:
        used = set(entry.used_ids or ())
        seen: set[str] = set()
        for item in entry.sources:
            c = counts.get(item.source)
            if c is None:
                continue
            seen.add(item.source)
            c[1] += 1
            if item.id in used:
                c[2] += 1
                c[3] += item.score
        for name in seen:
            counts[name][0] += 1
    n = len(entries)
    return {k: SourceStats(n, int(a), int(r), int(u), float(s)) for k, (a, r, u, s) in counts.items()}


def _clamp(value: float, low: float, high: float) -> float:
    return round(min(high, max(low, value)), PRECISION)


def _step(old: float, target: float, low: float, high: float) -> float:
    return _clamp(old + LEARNING_RATE * (target - old), low, high)


def _targets(
    stats: Mapping[str, SourceStats], rows: Mapping[str, SourceWeight]
) -> dict[str, tuple[float, float]]:
    """(weight target, share target) of every source with evidence (see the module docstring)."""
    evidence = {name: s.effectiveness for name, s in stats.items() if s.appearances > 0 and name in rows}
    total = sum(evidence.values())
    if not evidence or total <= 0:
        return {}
    mean = total / len(evidence)
    pool = sum(rows[name].token_share for name in evidence)
    return {
        name: (
            _clamp(NEUTRAL_WEIGHT * e / mean, WEIGHT_MIN, WEIGHT_MAX),
            _clamp(pool * e / total, TOKEN_SHARE_MIN, TOKEN_SHARE_MAX),
        )
        for name, e in evidence.items()
    }


def adjust_weights(
    caller: str,
    stats: Mapping[str, SourceStats],
    rows: Mapping[str, SourceWeight],
    at: str,
) -> tuple[list[SourceWeight], list[WeightChange], list[WeightAdjustment]]:
    """New rows, history rows and adjustments for every non-manual source whose values move."""
    written, history, adjustments = [], [], []
    for name, (w_target, s_target) in sorted(_targets(stats, rows).items()):
        row, e = rows[name], stats[name].effectiveness
        if row.manual:
            continue
        weight = _step(row.weight, w_target, WEIGHT_MIN, WEIGHT_MAX)
        share = _step(row.token_share, s_target, TOKEN_SHARE_MIN, TOKEN_SHARE_MAX)
        if weight == row.weight and share == row.token_share:
            continue
        s = stats[name]
        reason = (
            f"learning: effectiveness {e:.3f} (confidence {s.confidence:.3f}, usage {s.usage_rate:.3f},"
            f" appearance {s.appearance_rate:.3f}) over {s.assemblies} assemblies"
        )
        written.append(SourceWeight(caller, name, weight, share, False, at))
        history.append(WeightChange(caller, name, row.weight, weight, row.token_share, share, reason, at))
        adjustments.append(WeightAdjustment(name, row.weight, weight, row.token_share, share, e))
    return written, history, adjustments


def used_fraction(entry: AssemblyLogEntry) -> float:
    """Share of the assembly's tokens the caller used (reported tokens, else the used items' tokens)."""
    if entry.total_tokens <= 0:
        return 0.0
    if entry.tokens_used is not None:
        return min(1.0, entry.tokens_used / entry.total_tokens)
    used = set(entry.used_ids or ())
    return min(1.0, sum(s.tokens for s in entry.sources if s.id in used) / entry.total_tokens)


def budget_factor(entries: Sequence[AssemblyLogEntry]) -> tuple[float, str] | None:
    """+10% when most assemblies were saturated and used, −5% when mostly unused, else None."""
    if not entries:
        return None
    fractions = [used_fraction(e) for e in entries]
    hot = sum(
        1
        for e, f in zip(entries, fractions, strict=True)
        if e.budget > 0 and e.total_tokens >= SATURATED_FILL * e.budget and f >= USED_FRACTION
    )
    if hot / len(entries) > GROWTH_MAJORITY:
        return BUDGET_GROWTH, f"{hot}/{len(entries)} assemblies saturated and used"
    mean = sum(fractions) / len(fractions)
    if mean < MOSTLY_UNUSED_FRACTION:
        return BUDGET_SHRINK, f"mostly unused: mean {mean:.0%} of tokens used"
    return None


def adjust_budget(
    caller: str, entries: Sequence[AssemblyLogEntry], base: CallerBudget | None, at: str
) -> tuple[CallerBudget | None, BudgetAdjustment | None]:
    """The caller's new budget row (from its own, else `*`'s, else the batch's latest budget)."""
    decision = budget_factor(entries)
    if decision is None:
        return None, None
    factor, reason = decision
    if base is None:
        base = CallerBudget(caller, entries[-1].budget, DEFAULT_MIN_BUDGET, DEFAULT_MAX_BUDGET)
    new = int(min(base.max_budget, max(base.min_budget, round(base.budget * factor))))
    if new == base.budget:
        return None, None
    row = CallerBudget(caller, new, base.min_budget, base.max_budget, at)
    return row, BudgetAdjustment(base.budget, new, reason)


def settled_before(now: float) -> str:
    """The creation time before which an assembly without feedback is learned from (as unused)."""
    return iso_timestamp(now - FEEDBACK_WINDOW_SECONDS)


def learn(
    caller: str,
    entries: Sequence[AssemblyLogEntry],
    rows: Mapping[str, SourceWeight],
    budget: CallerBudget | None,
    at: str,
) -> CallerLearning:
    """One learning step for a caller over `entries` (its effective rows per configured source): weights
    from the entries with feedback, the budget from all of them."""
    stats = collect_stats([e for e in entries if e.used_ids is not None], list(rows))
    weights, history, adjustments = adjust_weights(caller, stats, rows, at)
    new_budget, budget_change = adjust_budget(caller, entries, budget, at)
    update = LearningUpdate(
        caller=caller,
        weights=tuple(weights),
        history=tuple(history),
        budget=new_budget,
        processed_ids=tuple(e.assembly_id for e in entries),
    )
    return CallerLearning(update, stats, tuple(adjustments), budget_change)
