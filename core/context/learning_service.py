"""The learning side of context assembly (docs/architecture.md, The learning cycle): the eval cycle (nightly
or POST /context/eval), manual weight overrides, and the read views of what learning keeps (weights, budgets,
log, callers)."""

from __future__ import annotations

from collections.abc import Sequence

from core.context.budget import (
    DEFAULT_MAX_BUDGET,
    DEFAULT_MIN_BUDGET,
    DEFAULT_WEIGHT,
    NULL_NAMESPACE_BUDGET,
    default_share,
    resolve_weights,
)
from core.context.context_api import (
    DEFAULT_WEIGHTS_PAGE,
    MAX_LOG_PAGE,
    MAX_WEIGHTS_PAGE,
    BudgetAdjustmentOut,
    BudgetOut,
    BudgetRequest,
    BudgetsResponse,
    CallersResponse,
    EvalResponse,
    LogEntryOut,
    LogResponse,
    ManualWeightRequest,
    WeightAdjustmentOut,
    WeightOut,
    WeightsResponse,
)
from core.context.learning import EVAL_BATCH_SIZE, CallerLearning, learn, settled_before
from core.context.sources import SourceSpec
from core.cursor import decode_position, encode_position
from core.errors import InvalidInputError
from core.indexing.entity_validation import validate_caller
from core.ports import Clock, FeedbackLoop
from core.state import (
    MAX_LEARNING_ROWS,
    WILDCARD_CALLER,
    CallerBudget,
    SourceWeight,
    WeightChange,
)
from core.timestamps import iso_timestamp

# Learning steps per caller per cycle: each takes up to MAX_LEARNING_ROWS assemblies, so one night absorbs
# 16 × 64 = 1024 assemblies per caller; the rest waits for the next run (our bound, keeps a run short).
MAX_STEPS_PER_CALLER = 16


def _seen_by(caller: str, only: str | None) -> bool:
    """Whether a row of `caller` is shown to a principal bound to `only` (None: bound to no caller):
    its own rows and the `*` rows that apply to it."""
    return only is None or caller in (only, WILDCARD_CALLER)


def budget_row(
    caller: str, request: BudgetRequest, base: CallerBudget | None, at: str, current: int
) -> CallerBudget:
    """The caller's new budget row: the request's values over `base`'s (else the default bounds); a budget
    the request leaves out — `base`'s, else `current`, the budget an assembly would use now — is clamped
    into the new bounds, one it gives must lie within them."""
    low = request.min_budget or (base.min_budget if base else DEFAULT_MIN_BUDGET)
    high = request.max_budget or (base.max_budget if base else DEFAULT_MAX_BUDGET)
    errors: dict[str, str] = {}
    if low > high:
        errors["min_budget"] = f"must not exceed max_budget ({high})"
    if request.budget is not None and not low <= request.budget <= high:
        errors["budget"] = f"must lie within min_budget..max_budget ({low}..{high})"
    if errors:
        raise InvalidInputError("invalid budget", errors)
    budget = request.budget
    if budget is None:
        budget = min(high, max(low, base.budget if base else current))
    return CallerBudget(caller, budget, low, high, at)


class LearningService:
    """Runs learning cycles and manages weights for the configured sources."""

    def __init__(
        self, state: FeedbackLoop, clock: Clock, sources: Sequence[SourceSpec], default_budget: int
    ) -> None:
        self._state = state
        self._clock = clock
        self._sources = [s.name for s in sources]
        self._default_budget = default_budget

    # reads

    def weights(
        self,
        tenant_id: str,
        limit: int = DEFAULT_WEIGHTS_PAGE,
        cursor: str | None = None,
        only: str | None = None,
    ) -> WeightsResponse:
        """A page of stored weight rows (by caller, source), the configured sources and the defaults;
        `only`: the caller a bound key speaks for (its rows and `*`'s)."""
        if not 1 <= limit <= MAX_WEIGHTS_PAGE:
            raise InvalidInputError("invalid limit", {"limit": f"must be between 1 and {MAX_WEIGHTS_PAGE}"})
        after = decode_position(cursor) if cursor is not None else None
        rows = [
            w
            for w in self._state.list_weights(tenant_id)
            if _seen_by(w.caller, only) and (after is None or (w.caller, w.source) > after)
        ]
        page = rows[:limit]
        more = len(rows) > limit
        return WeightsResponse(
            weights=[WeightOut.model_validate(w, from_attributes=True) for w in page],
            next_cursor=encode_position((page[-1].caller, page[-1].source)) if more else None,
            sources=list(self._sources),
            default_weight=DEFAULT_WEIGHT,
            default_token_share=round(default_share(len(self._sources)), 6),
        )

    def budgets(self, tenant_id: str, only: str | None = None) -> BudgetsResponse:
        """Configured and learned caller budgets, with the fallbacks (`only`: as in `weights`)."""
        return BudgetsResponse(
            budgets=[
                BudgetOut.model_validate(b, from_attributes=True)
                for b in self._state.list_budgets(tenant_id)
                if _seen_by(b.caller, only)
            ],
            null_namespace_budget=NULL_NAMESPACE_BUDGET,
            default_budget=self._default_budget,
        )

    def log(
        self, tenant_id: str, caller: str | None, namespace: str | None, limit: int, cursor: str | None
    ) -> LogResponse:
        """A page of the assembly log, newest first."""
        if not 1 <= limit <= MAX_LOG_PAGE:
            raise InvalidInputError("invalid limit", {"limit": f"must be between 1 and {MAX_LOG_PAGE}"})
        if caller is not None:
            validate_caller(caller)
        page = self._state.list_assemblies(tenant_id, caller, namespace, limit, cursor)
        # from_attributes reaches the nested sources too (AssemblySource → LogSource)
        entries = [LogEntryOut.model_validate(e, from_attributes=True) for e in page.entries]
        return LogResponse(data=entries, next_cursor=page.next_cursor)

    def callers(self, tenant_id: str, only: str | None = None) -> CallersResponse:
        """Every caller in the tenant's assembly log (`only`: a bound key sees itself alone)."""
        return CallersResponse(data=[c for c in self._state.list_callers(tenant_id) if only in (None, c)])

    # writes

    def _resolved(self, tenant_id: str, caller: str) -> dict[str, SourceWeight]:
        return resolve_weights(
            self._sources,
            self._state.get_weights(tenant_id, caller),
            self._state.get_weights(tenant_id, WILDCARD_CALLER) if caller != WILDCARD_CALLER else [],
            caller,
            len(self._sources),
        )

    def set_weight(self, tenant_id: str, caller: str, source: str, request: ManualWeightRequest) -> WeightOut:
        """Pin (or, with manual=false, release) a caller's weight and share for one source."""
        validate_caller(caller, wildcard=True)
        if source not in self._sources:
            raise InvalidInputError(
                "invalid weight override",
                {"source": "unknown source; configured: " + ", ".join(self._sources)},
            )
        current = self._resolved(tenant_id, caller)[source]
        at = iso_timestamp(self._clock.now())
        row = SourceWeight(
            caller,
            source,
            current.weight if request.weight is None else request.weight,
            current.token_share if request.token_share is None else request.token_share,
            request.manual,
            at,
        )
        reason = "manual override" if request.manual else "manual override released"
        change = WeightChange(
            caller, source, current.weight, row.weight, current.token_share, row.token_share, reason, at
        )
        self._state.put_weight(tenant_id, row, change)
        return WeightOut.model_validate(row, from_attributes=True)

    def set_budget(self, tenant_id: str, caller: str, request: BudgetRequest) -> BudgetOut:
        """Set a caller's budget and the min/max learning keeps it within; what the request leaves out
        comes from the caller's row, else `*`'s, else the default budget clamped into the bounds."""
        validate_caller(caller, wildcard=True)
        base = self._state.get_budget(tenant_id, caller)
        if base is None and caller != WILDCARD_CALLER:
            base = self._state.get_budget(tenant_id, WILDCARD_CALLER)
        row = budget_row(caller, request, base, iso_timestamp(self._clock.now()), self._default_budget)
        self._state.put_budget(tenant_id, row)
        return BudgetOut.model_validate(row, from_attributes=True)

    def _step(self, tenant_id: str, caller: str, at: str, settled: str) -> CallerLearning | None:
        entries = self._state.unprocessed_assemblies(tenant_id, caller, MAX_LEARNING_ROWS, settled)
        if len(entries) < EVAL_BATCH_SIZE:
            return None
        budget = self._state.get_budget(tenant_id, caller) or self._state.get_budget(
            tenant_id, WILDCARD_CALLER
        )
        return learn(caller, entries, self._resolved(tenant_id, caller), budget, at)

    def run(self, tenant_id: str | None = None) -> EvalResponse:
        """One learning cycle for every caller (of one tenant, or of all) with ≥ 10 assemblies ready: with
        feedback, or logged without any more than an hour ago (core.context.learning)."""
        now = self._clock.now()
        at, settled = iso_timestamp(now), settled_before(now)
        pending = [
            (t, c)
            for t, c in self._state.pending_callers(EVAL_BATCH_SIZE, settled)
            if tenant_id is None or t == tenant_id
        ]
        out = EvalResponse(
            callers=0,
            assemblies=0,
            weight_adjustments=[],
            budget_adjustments=[],
            weights_count=0,
            budgets_count=0,
            skipped=[],
        )
        for tenant, caller in pending:
            out.callers += 1
            for _ in range(MAX_STEPS_PER_CALLER):
                step = self._step(tenant, caller, at, settled)
                if step is None:
                    break
                if not self._state.apply_learning(tenant, step.update):
                    out.skipped.append(f"{tenant}/{caller}: rows taken by a concurrent cycle")
                    break
                _account(out, tenant, caller, step)
        out.weights_count = len(out.weight_adjustments)
        out.budgets_count = len(out.budget_adjustments)
        return out


def _account(out: EvalResponse, tenant: str, caller: str, step: CallerLearning) -> None:
    out.assemblies += len(step.update.processed_ids)
    out.weight_adjustments.extend(
        WeightAdjustmentOut(
            tenant_id=tenant,
            caller=caller,
            source=a.source,
            old_weight=a.old_weight,
            new_weight=a.new_weight,
            old_share=a.old_share,
            new_share=a.new_share,
            effectiveness=round(a.effectiveness, 6),
        )
        for a in step.weights
    )
    if step.budget is not None:
        out.budget_adjustments.append(
            BudgetAdjustmentOut(
                tenant_id=tenant,
                caller=caller,
                old_budget=step.budget.old_budget,
                new_budget=step.budget.new_budget,
                reason=step.budget.reason,
            )
        )
