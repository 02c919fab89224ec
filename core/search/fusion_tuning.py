"""Fusion tuning on a golden set: grid-search the fusion method and its parameter (RRF k, convex α) for the
best mean nDCG@10, and adopt the winner only when it scores strictly above the current setting on that same
golden set (a tie keeps the current one).

The input is what each retriever returned per query (the lists `SearchIndex.retrieve` gives the search
service), so every setting is scored by re-fusing the same candidates with `core.search.fusion.fuse` — exactly
the ranking POST /search would produce with that setting, without re-running retrieval.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from core.models import Candidate
from core.search.fusion import PLAIN_CONVEX_ALPHA, RRF_K, FusionMethod, fuse
from core.search.ranking_metrics import NDCG_CUTOFF, Qrels, ndcg_at_k

ALPHA_STEP = 0.05  # convex α over 0..1 in steps of 0.05 (the one α grid; overlays use every other point)
ALPHA_GRID = tuple(round(i * ALPHA_STEP, 2) for i in range(21))
# RRF k: small k trusts the top ranks, large k flattens toward rank-agnostic voting; 60 is Cormack et al.
# 2009's default, the grid spans the range published sweeps explore (1 … 200).
RRF_K_GRID = (1, 5, 10, 20, 30, 40, 50, 60, 80, 100, 150, 200)
PLAIN_RRF_ALPHA = 0.5  # core.search.fusion.fuse_rrf: α = 0.5 weighs both lists equally (plain RRF)


@dataclass(frozen=True, slots=True)
class FusionSetting:
    """A fusion method with its parameter: α for convex, k for RRF."""

    method: FusionMethod
    alpha: float = PLAIN_CONVEX_ALPHA
    rrf_k: int = RRF_K

    def describe(self) -> dict[str, object]:
        """JSON-ready form: `{"fusion": "convex", "alpha": 0.6}` or `{"fusion": "rrf", "rrf_k": 60}`."""
        if self.method is FusionMethod.RRF:
            return {"fusion": "rrf", "rrf_k": self.rrf_k}
        return {"fusion": "convex", "alpha": self.alpha}


@dataclass(frozen=True, slots=True)
class QueryLists:
    """What both retrievers returned for one golden query, best first.

    `alpha_shift` is the lean the `auto` strategy gives this query (question-like → toward the vector
    side), so tuning scores the same α the service would use for it.
    """

    lexical: tuple[Candidate, ...]
    vector: tuple[Candidate, ...]
    alpha_shift: float = 0.0


@dataclass(frozen=True, slots=True)
class TuningResult:
    """The current setting and the grid's best, with their scores, and which one to adopt."""

    current: FusionSetting
    current_score: float
    best: FusionSetting
    best_score: float
    adopted: FusionSetting
    grid: tuple[tuple[FusionSetting, float], ...] = field(default=())

    @property
    def changed(self) -> bool:
        """True when the adopted setting differs from the current one."""
        return self.adopted != self.current


def _clamp(value: float) -> float:
    return min(1.0, max(0.0, value))


def fused_ranking(setting: FusionSetting, lists: QueryLists, depth: int = NDCG_CUTOFF) -> list[str]:
    """The top `depth` entity ids in the order POST /search would return them under `setting`."""
    base = setting.alpha if setting.method is FusionMethod.CONVEX else PLAIN_RRF_ALPHA
    alpha = _clamp(base + lists.alpha_shift)
    fused = fuse(setting.method, lists.lexical, lists.vector, alpha, setting.rrf_k)
    return [f.candidate.key.entity_id for f in fused[:depth]]


def score_setting(setting: FusionSetting, runs: Mapping[str, QueryLists], qrels: Qrels) -> float:
    """Mean nDCG@10 of `setting` over every golden query (a query without lists scores 0)."""
    if not qrels:
        return 0.0
    empty = QueryLists((), ())
    total = sum(
        ndcg_at_k(fused_ranking(setting, runs.get(qid, empty)), judged, NDCG_CUTOFF)
        for qid, judged in qrels.items()
    )
    return total / len(qrels)


def settings_grid(
    alphas: Iterable[float] = ALPHA_GRID, rrf_ks: Iterable[int] = RRF_K_GRID
) -> list[FusionSetting]:
    """Every convex α and every RRF k of the grid."""
    grid = [FusionSetting(FusionMethod.CONVEX, alpha=a) for a in alphas]
    return grid + [FusionSetting(FusionMethod.RRF, rrf_k=k) for k in rrf_ks]


def _preference(setting: FusionSetting, current: FusionSetting) -> tuple[int, float]:
    """Among equal scores prefer the current method, then the parameter nearest the current one."""
    same = setting.method is current.method
    if setting.method is FusionMethod.RRF:
        return (0 if same else 1, abs(setting.rrf_k - current.rrf_k) / max(RRF_K_GRID))
    return (0 if same else 1, abs(setting.alpha - current.alpha))


def tune_fusion(
    runs: Mapping[str, QueryLists],
    qrels: Qrels,
    current: FusionSetting,
    candidates: Sequence[FusionSetting] | None = None,
) -> TuningResult:
    """Best setting on the golden set; adopted only when it scores strictly above the current one."""
    current_score = score_setting(current, runs, qrels)
    scored = [(s, score_setting(s, runs, qrels)) for s in (candidates or settings_grid())]
    best, best_score = current, current_score
    for setting, value in scored:
        better = value > best_score
        tie_preferred = value == best_score and _preference(setting, current) < _preference(best, current)
        if better or tie_preferred:
            best, best_score = setting, value
    adopted = best if best_score > current_score else current
    return TuningResult(current, current_score, best, best_score, adopted, tuple(scored))
