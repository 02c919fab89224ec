"""Retrieval quality metrics over golden sets: nDCG@10, Recall@100 and MRR@10 (docs/architecture.md,
Evaluation).

Definitions follow trec_eval (the reference implementation behind pytrec_eval and BEIR), and a test
cross-checks them against pytrec_eval on random runs:

- nDCG@k (`ndcg_cut_k`): DCG = Σ_{i<k} gain_i / log2(i + 2) with the graded relevance as the gain (linear,
  not 2^rel − 1); divided by the DCG of the judged documents sorted by relevance.
- Recall@k (`recall_k`): relevant documents (relevance ≥ 1) in the top k / all relevant documents.
- MRR@k: 1 / (rank of the first relevant document) when it is within the top k, else 0 (trec_eval's
  `recip_rank` on the run cut at k).

Unlike trec_eval, every query of the golden set counts: a query the system answered with nothing scores
0 instead of being left out of the mean, so an empty result can never raise the average.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass

# Cut-offs of every evaluation (docs/architecture.md, Evaluation; the BEIR conventions: nDCG@10 headline,
# Recall@100 for first-stage depth).
NDCG_CUTOFF = 10
RECALL_CUTOFF = 100
MRR_CUTOFF = 10
# trec_eval's default `relevance_level`: a judged document counts as relevant from this grade up.
RELEVANT_FROM = 1

Judgements = Mapping[str, int]
"""Document id → graded relevance for one query (0 or less: judged not relevant)."""
Qrels = Mapping[str, Judgements]
"""Query id → its judgements: the golden set."""
Ranking = Sequence[str]
"""Document ids, best first."""
Run = Mapping[str, Ranking]
"""Query id → what the system returned, best first."""


@dataclass(frozen=True, slots=True)
class Metrics:
    """The three figures every evaluation reports for one query or averaged over a golden set."""

    ndcg_at_10: float
    recall_at_100: float
    mrr_at_10: float

    def as_dict(self) -> dict[str, float]:
        """The figures under the JSON names used in reports (`ndcg_at_10`, …)."""
        return asdict(self)


ZERO = Metrics(0.0, 0.0, 0.0)


def _unique(ranking: Iterable[str]) -> list[str]:
    """The ranking with repeated ids dropped (first occurrence wins), so no document counts twice."""
    return list(dict.fromkeys(ranking))


def dcg(gains: Iterable[float]) -> float:
    """Discounted cumulative gain with trec_eval's discount log2(rank + 1), rank from 1."""
    return sum(g / math.log2(i + 2) for i, g in enumerate(gains))


def ndcg_at_k(ranking: Ranking, judgements: Judgements, k: int = NDCG_CUTOFF) -> float:
    """nDCG@k with linear graded gains (trec_eval `ndcg_cut`); 0 when nothing relevant is judged."""
    ideal = dcg(sorted((max(r, 0) for r in judgements.values()), reverse=True)[:k])
    if ideal <= 0:
        return 0.0
    return dcg(max(judgements.get(d, 0), 0) for d in _unique(ranking)[:k]) / ideal


def recall_at_k(ranking: Ranking, judgements: Judgements, k: int = RECALL_CUTOFF) -> float:
    """Share of the relevant documents found in the top k (trec_eval `recall_k`)."""
    relevant = {d for d, r in judgements.items() if r >= RELEVANT_FROM}
    if not relevant:
        return 0.0
    return len(relevant.intersection(_unique(ranking)[:k])) / len(relevant)


def reciprocal_rank_at_k(ranking: Ranking, judgements: Judgements, k: int = MRR_CUTOFF) -> float:
    """1 / rank of the first relevant document within the top k, else 0."""
    for rank, doc in enumerate(_unique(ranking)[:k], start=1):
        if judgements.get(doc, 0) >= RELEVANT_FROM:
            return 1.0 / rank
    return 0.0


def evaluate_query(ranking: Ranking, judgements: Judgements) -> Metrics:
    """All three figures for one query."""
    return Metrics(
        ndcg_at_10=ndcg_at_k(ranking, judgements, NDCG_CUTOFF),
        recall_at_100=recall_at_k(ranking, judgements, RECALL_CUTOFF),
        mrr_at_10=reciprocal_rank_at_k(ranking, judgements, MRR_CUTOFF),
    )


def per_query(run: Run, qrels: Qrels) -> dict[str, Metrics]:
    """Figures for every query of the golden set; a query missing from the run scores 0."""
    return {qid: evaluate_query(run.get(qid, ()), judged) for qid, judged in qrels.items()}


def mean_metrics(values: Iterable[Metrics]) -> Metrics:
    """The arithmetic mean of each figure (0 for no values)."""
    items = list(values)
    if not items:
        return ZERO
    n = len(items)
    return Metrics(
        ndcg_at_10=sum(m.ndcg_at_10 for m in items) / n,
        recall_at_100=sum(m.recall_at_100 for m in items) / n,
        mrr_at_10=sum(m.mrr_at_10 for m in items) / n,
    )


def evaluate(run: Run, qrels: Qrels) -> Metrics:
    """Mean figures over every query of the golden set."""
    return mean_metrics(per_query(run, qrels).values())


def ranking_from_scores(scores: Mapping[str, float]) -> list[str]:
    """Ids by score, best first; ties in trec_eval's order (document id descending), so both agree."""
    return [d for d, _ in sorted(scores.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)]
