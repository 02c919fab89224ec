"""Fusion study, part 2: score normalisations (z-score, min-max with a lower bound), a per-query
α choice, and pseudo-relevance feedback — Rocchio on the query vector (core.search.pseudo_relevance) and RM3-style
expansion of the keyword query — all through Quarry's own index, scored with core.search.ranking_metrics.

    .venv/bin/python bench/prf_study.py --dataset ../shared/datasets/scifact --split train \
        [--work-dir .quarry/eval/scifact] [--reuse] [--rm3] [--json FILE]
    .venv/bin/python bench/prf_study.py --smoke   # tests/fixtures/beir_tiny, hashing vectors, with --rm3
    .venv/bin/python bench/prf_study.py --dataset .quarry/scifact-long --split test --reuse \
        --work-dir .quarry/eval/scifact          # the long-query set (bench/long_queries.py builds it)

Each query's lexical and vector lists are retrieved once without feedback (as POST /search's first pass:
limit 100, the eval's lifted term cap); every variant re-fuses them offline, and the feedback variants
run the extra vector (or keyword) search each configuration needs. Tune only on SciFact train and
Cranfield; SciFact test and the long-query set are for reporting.
"""

from __future__ import annotations

import argparse
import collections
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import write_json
from bench.fusion_study import DEFAULT_CACHE, build_index, smoke_options  # noqa: E402
from core.indexing.entity_types import EntityTypeRegistry  # noqa: E402
from core.models import Candidate, Filters, LexicalQuery  # noqa: E402
from core.search.fusion import fuse_convex  # noqa: E402
from core.search.fusion_tuning import QueryLists  # noqa: E402
from core.search.planning import SearchSettings  # noqa: E402
from core.search.pseudo_relevance import feedback_chunks, rocchio  # noqa: E402
from core.search.query import parse_query  # noqa: E402
from core.search.ranking_metrics import Qrels, ndcg_at_k  # noqa: E402
from core.search.tuning_service import FusionTuningService  # noqa: E402
from core.text import STOPWORDS, light_stem, tokens  # noqa: E402
from infra.beir.evaluation import EVAL_MAX_TERMS, EVAL_TENANT  # noqa: E402

FLOOR = 0.2  # SearchSettings.min_vector_similarity
DEPTH = 200  # candidates per retriever (a limit-100 search)
Scores = dict[str, float]
Fusion = Callable[[list[tuple[str, float]], list[tuple[str, float]]], Scores]


def pairs(cands: Sequence[Candidate], floor: float | None = None) -> list[tuple[str, float]]:
    """(entity id, score) best first, vector hits below `floor` dropped."""
    return [(c.key.entity_id, c.score) for c in cands if floor is None or c.score >= floor]


def convex(alpha: float) -> Fusion:
    """α·cosine + (1−α)·bm25/max (the default's normalisation)."""

    def fused(lex: list[tuple[str, float]], vec: list[tuple[str, float]]) -> Scores:
        top = max((s for _, s in lex), default=0.0) or 1.0
        out: Scores = {}
        for d, s in lex:
            out[d] = out.get(d, 0.0) + (1 - alpha) * s / top
        for d, s in vec:
            out[d] = out.get(d, 0.0) + alpha * max(0.0, s)
        return out

    return fused


def zscore(alpha: float, missing_is_min: bool = True) -> Fusion:
    """α·z(cosine) + (1−α)·z(bm25), z over each list; a document missing from a list gets that list's
    lowest z (or 0)."""

    def norm(lst: list[tuple[str, float]]) -> tuple[Scores, float]:
        if not lst:
            return {}, 0.0
        values = [s for _, s in lst]
        mean, sd = statistics.fmean(values), statistics.pstdev(values) or 1.0
        z = {d: (s - mean) / sd for d, s in lst}
        return z, (min(z.values()) if missing_is_min else 0.0)

    def fused(lex: list[tuple[str, float]], vec: list[tuple[str, float]]) -> Scores:
        (zl, ml), (zv, mv) = norm(lex), norm(vec)
        return {d: (1 - alpha) * zl.get(d, ml) + alpha * zv.get(d, mv) for d in set(zl) | set(zv)}

    return fused


def minmax(alpha: float, vector_bound: float | None, lexical_bound: float | None = 0.0) -> Fusion:
    """Min-max per list; with a lower bound (OpenSearch's `lower_bounds`, mode clip) the bound, not the
    list's minimum, maps to 0 and scores below it count 0; None = the plain list minimum."""

    def norm(lst: list[tuple[str, float]], bound: float | None) -> Scores:
        if not lst:
            return {}
        hi = max(s for _, s in lst)
        lo = min(s for _, s in lst) if bound is None else bound
        span = (hi - lo) or 1.0
        return {d: max(0.0, (s - lo) / span) for d, s in lst}

    def fused(lex: list[tuple[str, float]], vec: list[tuple[str, float]]) -> Scores:
        a, b = norm(lex, lexical_bound), norm(vec, vector_bound)
        return {d: (1 - alpha) * a.get(d, 0.0) + alpha * b.get(d, 0.0) for d in set(a) | set(b)}

    return fused


def ndcg(scores: Scores, judged: Mapping[str, int]) -> float:
    """nDCG@10 of a score map (ties broken by id, as core.search.fusion's determinism)."""
    ranking = [d for d, _ in sorted(scores.items(), key=lambda x: (-x[1], x[0]))][:10]
    return ndcg_at_k(ranking, judged, 10)


def mean_ndcg(
    runs: Mapping[str, QueryLists],
    qrels: Qrels,
    fusion: Fusion,
    vector: Mapping[str, list[tuple[str, float]]] | None = None,
    lexical: Mapping[str, list[tuple[str, float]]] | None = None,
) -> float:
    """Mean nDCG@10 over every judged query (missing lists score 0); `vector`/`lexical` replace a leg."""
    total = 0.0
    for qid, judged in qrels.items():
        r = runs.get(qid)
        if r is None:
            continue
        lex = lexical[qid] if lexical is not None else pairs(r.lexical)
        vec = vector[qid] if vector is not None else pairs(r.vector, FLOOR)
        total += ndcg(fusion(lex, vec), judged)
    return total / max(1, len(qrels))


def per_query_alpha(runs: Mapping[str, QueryLists], qrels: Qrels, queries: Mapping[str, str]) -> dict:
    """Best convex α per tercile of a query feature (length, BM25 top-10 drop, cosine top-10 drop,
    top-10 overlap): a per-query choice only pays if the best α differs between terciles consistently."""
    alphas = (0.5, 0.6, 0.7, 0.8, 0.9)
    rows = []
    for qid, judged in qrels.items():
        r = runs.get(qid)
        if r is None:
            continue
        lex, vec = pairs(r.lexical), pairs(r.vector, FLOOR)
        ls, vs = [s for _, s in lex], [s for _, s in vec]
        feats = {
            "words": float(len(queries[qid].split())),
            "bm25_drop": (ls[0] - ls[min(9, len(ls) - 1)]) / ls[0] if ls and ls[0] else 0.0,
            "cosine_drop": vs[0] - vs[min(9, len(vs) - 1)] if vs else 0.0,
            "overlap": float(len({d for d, _ in lex[:10]} & {d for d, _ in vec[:10]})),
        }
        rows.append((feats, {a: ndcg(convex(a)(lex, vec), judged) for a in alphas}))
    out: dict[str, list[dict]] = {}
    for feat in rows[0][0] if rows else ():
        values = sorted(f[feat] for f, _ in rows)
        edges = [values[0], values[len(values) // 3], values[2 * len(values) // 3], values[-1]]
        buckets = []
        for lo, hi in zip(edges, edges[1:], strict=False):
            sel = [nd for f, nd in rows if lo <= f[feat] <= hi]
            means = {a: statistics.fmean(nd[a] for nd in sel) for a in alphas}
            best = max(means, key=lambda a: means[a])
            buckets.append({"range": [lo, hi], "queries": len(sel), "best_alpha": best, "ndcg": means})
        out[feat] = buckets
    return out


def rocchio_lists(
    index,
    tenant: str,
    runs: Mapping[str, QueryLists],
    vectors: Mapping[str, np.ndarray],
    docs: int,
    weight: float,
    first_alpha: float,
    filters: Filters,
) -> tuple[dict[str, list[tuple[str, float]]], float]:
    """Each query's vector leg searched again with the Rocchio-moved vector (core.search.pseudo_relevance) after a first
    convex fusion at `first_alpha`; and the mean extra milliseconds per query."""
    out: dict[str, list[tuple[str, float]]] = {}
    started = time.perf_counter()
    for qid, r in runs.items():
        vector = tuple(c for c in r.vector if c.score >= FLOOR)
        first = fuse_convex(r.lexical, vector, first_alpha)
        chunks = feedback_chunks(first, vector, docs)
        stored = index.chunk_vectors(tenant, chunks)
        found = [stored[c] for c in chunks if c in stored]
        if not found:
            out[qid] = pairs(vector)
            continue
        moved = rocchio(vectors[qid], found, weight)
        out[qid] = pairs(index.vector(tenant, moved, filters, DEPTH), FLOOR)
    return out, (time.perf_counter() - started) * 1000 / max(1, len(runs))


def expansion_terms(docs: Sequence[tuple[str, float]], original: Sequence[str], count: int) -> list[str]:
    """RM3-style: the words of the feedback documents weighted by term frequency × document weight,
    in at least two of them, not stop words, not the query's own (by light stem)."""
    weight: dict[str, float] = collections.defaultdict(float)
    seen_in: collections.Counter[str] = collections.Counter()
    surface: dict[str, str] = {}
    own = {light_stem(t) for t in original}
    for text, w in docs:
        words = [t.lower() for t in tokens(text)]
        words = [t for t in words if len(t) > 2 and not t.isdigit() and t not in STOPWORDS]
        if not words:
            continue
        tf = collections.Counter(light_stem(t) for t in words)
        for t in words:
            surface.setdefault(light_stem(t), t)
        for stem, n in tf.items():
            if stem not in own:
                weight[stem] += w * n / len(words)
                seen_in[stem] += 1
    ranked = sorted((-v, s) for s, v in weight.items() if seen_in[s] >= 2)
    return [surface[s] for _, s in ranked[:count]]


def rm3_lists(
    index,
    tenant: str,
    runs: Mapping[str, QueryLists],
    queries: Mapping[str, str],
    docs: int,
    terms: int,
    repeat: int,
    first_alpha: float,
    filters: Filters,
    registry: EntityTypeRegistry,
) -> tuple[dict[str, list[tuple[str, float]]], float]:
    """Each query's keyword leg searched again with `terms` expansion words from the top `docs` fused
    results (weight 1 each; the query's own words weigh `repeat` × their count, capped at 8)."""
    out: dict[str, list[tuple[str, float]]] = {}
    started = time.perf_counter()
    for qid, r in runs.items():
        parsed = parse_query(queries[qid], registry, EVAL_MAX_TERMS)
        vector = tuple(c for c in r.vector if c.score >= FLOOR)
        first = fuse_convex(r.lexical, vector, first_alpha)[:docs]
        if not first:
            out[qid] = pairs(r.lexical)
            continue
        top = first[0].score or 1.0
        feedback = [(f"{f.candidate.title} {f.candidate.text}", f.score / top) for f in first]
        extra = [t for t in expansion_terms(feedback, parsed.terms, terms) if t not in parsed.terms]
        weights = [
            min(8, parsed.weights[i] * repeat if i < len(parsed.weights) else repeat)
            for i in range(len(parsed.terms))
        ]
        query = LexicalQuery(
            parsed.terms + tuple(extra), parsed.phrases, weights=tuple(weights) + (1,) * len(extra)
        )
        out[qid] = pairs(index.lexical(tenant, query, filters, DEPTH))
    return out, (time.perf_counter() - started) * 1000 / max(1, len(runs))


def study(data, index, embedder, with_rm3: bool, with_rocchio: bool = True) -> dict[str, object]:
    """Every variant's mean nDCG@10 on one split."""
    registry = EntityTypeRegistry()
    settings = SearchSettings(max_terms=EVAL_MAX_TERMS, feedback_docs=0)
    service = FusionTuningService(index, embedder, registry, settings)
    queries = {q: data.queries[q] for q in data.qrels if q in data.queries}
    runs = service.lists(EVAL_TENANT, queries, strategy="hybrid", vector_floor=-1.0)
    qrels = data.qrels
    rows: dict[str, float] = {}
    for a in (0.6, 0.7, 0.8):
        rows[f"convex a={a}"] = mean_ndcg(runs, qrels, convex(a))
    for a in (0.4, 0.5, 0.6, 0.7):
        rows[f"zscore a={a}"] = mean_ndcg(runs, qrels, zscore(a))
        rows[f"zscore(missing 0) a={a}"] = mean_ndcg(runs, qrels, zscore(a, missing_is_min=False))
        rows[f"minmax a={a}"] = mean_ndcg(runs, qrels, minmax(a, None, None))
        for bound in (0.0, 0.1, 0.2, 0.3):
            rows[f"minmax lower bounds bm25 0 cosine {bound} a={a}"] = mean_ndcg(
                runs, qrels, minmax(a, bound)
            )
    ids = list(runs)
    texts = [parse_query(queries[q], registry, EVAL_MAX_TERMS).text for q in ids]
    vectors = dict(zip(ids, embedder.embed_query(texts), strict=True))
    filters = Filters(entity_types=registry.names())
    cost: dict[str, float] = {}
    for docs in (1, 2, 3) if with_rocchio else ():
        for weight in (0.5, 1.0, 2.0):
            vec, ms = rocchio_lists(index, EVAL_TENANT, runs, vectors, docs, weight, 0.8, filters)
            cost[f"rocchio k={docs} b={weight}"] = ms
            for a in (0.7, 0.75, 0.8):
                rows[f"rocchio k={docs} b={weight} a={a}"] = mean_ndcg(runs, qrels, convex(a), vector=vec)
    if with_rm3:
        for docs, terms, repeat in ((5, 5, 2), (5, 10, 2), (10, 10, 2), (10, 10, 4)):
            lex, ms = rm3_lists(
                index, EVAL_TENANT, runs, queries, docs, terms, repeat, 0.8, filters, registry
            )
            name = f"rm3 k={docs} terms={terms} repeat={repeat}"
            cost[name] = ms
            rows[f"{name} keyword"] = mean_ndcg(runs, qrels, lambda lx, _v: dict(lx), lexical=lex)
            for a in (0.7, 0.8):
                rows[f"{name} a={a}"] = mean_ndcg(runs, qrels, convex(a), lexical=lex)
    rows["keyword"] = mean_ndcg(runs, qrels, lambda lx, _v: dict(lx))
    return {"rows": rows, "ms_per_query": cost, "per_query_alpha": per_query_alpha(runs, qrels, queries)}


def main(argv: Sequence[str] | None = None) -> int:
    """Print the study and write it as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, help="a BEIR folder (required unless --smoke)")
    parser.add_argument("--split", default="test")
    parser.add_argument("--work-dir", type=Path)
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--reuse", action="store_true")
    parser.add_argument("--rm3", action="store_true", help="also the keyword-leg expansion (slow)")
    parser.add_argument("--rm3-only", action="store_true", help="the keyword-leg expansion without Rocchio")
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--smoke", action="store_true", help="tests/fixtures/beir_tiny, hashing vectors, --rm3"
    )
    args = parser.parse_args(argv)
    args.rm3 = args.rm3 or args.smoke
    with tempfile.TemporaryDirectory(prefix="quarry-prf-study-") as scratch:
        return run(args, smoke_options(args, parser, scratch))


def run(args: Any, work: Path) -> int:
    """Build (or reuse) the index in `work`, study it, print and write the figures."""
    data, index, embedder = build_index(
        args.dataset, args.split, work, args.cache_dir, args.reuse, smoke=args.smoke
    )
    result = study(data, index, embedder, args.rm3 or args.rm3_only, not args.rm3_only)
    print(f"{data.name} ({args.split}, {len(data.qrels)} queries)")
    for name, value in cast(dict[str, float], result["rows"]).items():
        print(f"{name:<48} {value:.4f}")
    for name, ms in cast(dict[str, float], result["ms_per_query"]).items():
        print(f"{name:<48} {ms:.1f} ms/query (extra search, busy machine)")
    if args.json:
        body = {"dataset": data.name, "split": args.split, "queries": len(data.qrels), **result}
        write_json(args.json, body, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
