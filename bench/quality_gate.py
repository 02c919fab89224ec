"""`make eval`'s verdict: Quarry's strategies beside the peers' naive fusions, per collection.

Reads what `quarry eval --json` and `bench/baselines.py --json` wrote for each collection, prints them
side by side (same metric code), and exits non-zero when Quarry's default (`auto`) scores below the best
naive fusion of bm25s and the same embedding model (RRF k 60, convex α 0.6, min-max 0.5) on any of them,
or when its keyword leg falls more than 0.005 below bm25s (the quality bars below).

    .venv/bin/python bench/quality_gate.py scifact cranfield [--results bench/results]
    .venv/bin/python bench/quality_gate.py --smoke   # `make eval` on tests/fixtures/beir_tiny, then the gate

`--smoke` writes both files for the tiny fixture collection into a temporary folder (Quarry's eval through
infra/beir/evaluation.py's run_eval, as `quarry eval --json` does, and bench/baselines.py --smoke; hashing vectors
on both sides) and gates them.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

NAIVE_FUSIONS = ("rrf", "convex", "minmax")
KEYWORD_TOLERANCE = 0.005  # the keyword leg must reach bm25s nDCG@10 − 0.005


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


def smoke_results(folder: Path) -> list[str]:
    """`make eval` at smoke size into `folder`: the tiny fixture's eval and baselines JSON; its name."""
    from bench._common import SMOKE_DATASET, HashingEmbedder
    from bench.baselines import main as baselines
    from infra.beir.evaluation import run_eval

    name = SMOKE_DATASET.name
    report = run_eval(SMOKE_DATASET, HashingEmbedder(), progress=False)
    (folder / f"{name}.json").write_text(json.dumps(report.to_json(), indent=2) + "\n")
    baselines(["--smoke", "--json", str(folder / f"baselines_{name}.json")])
    return [name]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("collections", nargs="*", help="e.g. scifact cranfield (none with --smoke)")
    parser.add_argument("--results", type=Path, default=Path(__file__).resolve().parent / "results")
    parser.add_argument(
        "--smoke", action="store_true", help="evaluate tests/fixtures/beir_tiny, then gate it"
    )
    args = parser.parse_args(argv)
    if not args.smoke:
        if not args.collections:
            parser.error("name at least one collection")
        return gate(args.collections, args.results)
    with tempfile.TemporaryDirectory(prefix="quarry-gate-") as tmp:
        return gate(smoke_results(Path(tmp)), Path(tmp))


def gate(collections: Sequence[str], results: Path) -> int:
    """Print each collection's table and the problems; 1 when any collection is below a bar."""
    problems: list[str] = []
    for name in collections:
        quarry = json.loads((results / f"{name}.json").read_text())
        peers = json.loads((results / f"baselines_{name}.json").read_text())
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
