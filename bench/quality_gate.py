"""`make eval`'s verdict: Quarry's strategies beside the peers' naive fusions, per collection.

Reads what `quarry eval --json` and `bench/baselines.py --json` wrote for each collection, prints them
side by side (same metric code), and exits non-zero when Quarry's default (`auto`) scores below the best
naive fusion of bm25s and the same embedding model (RRF k 60, convex α 0.6, min-max 0.5) on any of them,
or when its keyword leg falls more than 0.005 below bm25s (issue 12's bars).

    .venv/bin/python bench/quality_gate.py scifact cranfield [--results bench/results]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

NAIVE_FUSIONS = ("rrf", "convex", "minmax")
KEYWORD_TOLERANCE = 0.005  # issue 12: keyword leg ≥ bm25s nDCG@10 − 0.005


def verdict(name: str, quarry: dict, peers: dict) -> list[str]:
    """The problems of one collection (empty when Quarry clears both bars)."""
    ndcg = {k: v["ndcg_at_10"] for k, v in quarry["strategies"].items()}
    peer = {k: v["ndcg_at_10"] for k, v in peers["systems"].items()}
    best = max(NAIVE_FUSIONS, key=lambda f: peer[f])
    problems = []
    if ndcg["auto"] < peer[best]:
        problems.append(f"{name}: default {ndcg['auto']:.4f} < best naive fusion {best} {peer[best]:.4f}")
    if ndcg.get("keyword", 1.0) < peer["bm25"] - KEYWORD_TOLERANCE:
        problems.append(
            f"{name}: keyword {ndcg['keyword']:.4f} < bm25s {peer['bm25']:.4f} − {KEYWORD_TOLERANCE}"
        )
    return problems


def table(name: str, quarry: dict, peers: dict) -> str:
    """Both sides in one nDCG@10 / Recall@100 / MRR@10 table."""
    rows = [
        f"{name} ({quarry['split']}, {quarry['queries']} queries)",
        f"{'system':<22} {'nDCG@10':>8} {'R@100':>8} {'MRR@10':>8}",
    ]
    for label, figures in [
        *(
            (f"quarry {k}" + (" (default)" if k == "auto" else ""), v)
            for k, v in quarry["strategies"].items()
        ),
        *((f"peer {k}", v) for k, v in peers["systems"].items()),
    ]:
        rows.append(
            f"{label:<22} {figures['ndcg_at_10']:>8.3f} {figures['recall_at_100']:>8.3f} "
            f"{figures['mrr_at_10']:>8.3f}"
        )
    return "\n".join(rows)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("collections", nargs="+")
    parser.add_argument("--results", type=Path, default=Path(__file__).resolve().parent / "results")
    args = parser.parse_args()
    problems: list[str] = []
    for name in args.collections:
        quarry = json.loads((args.results / f"{name}.json").read_text())
        peers = json.loads((args.results / f"baselines_{name}.json").read_text())
        print(table(name, quarry, peers), end="\n\n")
        problems += verdict(name, quarry, peers)
    for line in problems:
        print(f"BELOW THE BAR: {line}", file=sys.stderr)
    if not problems:
        print(
            "Quarry's default ≥ the best naive fusion and its keyword leg ≥ bm25s − 0.005 on every collection."
        )
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
