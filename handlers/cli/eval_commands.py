"""`quarry eval` (retrieval quality on a BEIR folder) and `quarry eval-cycle` (the context learning cycle)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from handlers.cli.governance_commands import DATA_DIR_HELP, command_container


def cmd_eval(args: argparse.Namespace) -> int:
    """Measure retrieval quality on a BEIR folder: nDCG@10, Recall@100, MRR@10 per strategy."""
    from infra.beir.embedding_cache import CachingEmbedder
    from infra.beir.evaluation import eval_index, run_eval
    from infra.beir.report import format_table, plot_report

    c = command_container(args.data_dir)
    cache_dir = Path(args.cache_dir) if args.cache_dir else c.settings.data_dir / "embeddings"
    kind = args.index or c.settings.index_kind
    with eval_index(c.settings, c.embedder.dimension, kind) as index:
        report = run_eval(
            args.dataset,
            CachingEmbedder(c.embedder, cache_dir, progress=not args.quiet),
            split=args.split,
            strategies=[s.strip() for s in args.strategies.split(",") if s.strip()],
            default=c.search_settings,
            work_dir=args.work_dir,
            registry=c.registry,
            progress=not args.quiet,
            tune=args.tune,
            index=index,
            keyword_engine=c.settings.keyword_engine,
        )
    failures = report.failures
    if failures and not args.allow_errors:
        print(
            f"quarry eval: {len(failures)} failure(s); no figures reported (they would be wrong):",
            file=sys.stderr,
        )
        for line in failures[:20]:
            print(f"  {line}", file=sys.stderr)
        if len(failures) > 20:
            print(f"  … and {len(failures) - 20} more", file=sys.stderr)
        print("  (--allow-errors reports the figures anyway, with these counts)", file=sys.stderr)
        return 1
    print(format_table(report))
    if failures:
        docs = len(report.ingest.errors)
        queries = {k: len(v) for k, v in report.query_errors.items()}
        print(
            f"WITH ERRORS (--allow-errors): {docs} document(s) not indexed; failed queries per strategy: {queries}"
        )
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(report.to_json(), indent=2) + "\n")
    if args.plot:
        plot_report(report, args.plot)
    return 0


def cmd_learning_cycle(args: argparse.Namespace) -> int:
    """Run the context learning cycle for every caller with enough new feedback; print what changed."""
    report = command_container(args.data_dir).learning.run(args.tenant)
    print(report.model_dump_json(indent=2))
    return 0


def register(sub: Any) -> None:
    """`quarry eval` (the BEIR run) and `quarry eval-cycle` (the context learning cycle)."""
    e = sub.add_parser("eval", help="measure retrieval quality on a BEIR-format dataset")
    e.add_argument("--dataset", required=True, help="folder with corpus.jsonl, queries.jsonl, qrels/")
    e.add_argument("--split", default="test", help="qrels split naming the test queries (default test)")
    e.add_argument("--strategies", default="keyword,semantic,rrf,convex,auto")
    e.add_argument("--json", default=None, help="write the figures as JSON to this file")
    e.add_argument("--plot", default=None, help="write a bar chart (PNG) to this file")
    e.add_argument("--work-dir", default=None, help="where the fresh index goes (default: a temp dir)")
    e.add_argument("--cache-dir", default=None, help="embedding cache (default <data dir>/embeddings)")
    e.add_argument("--tune", action="store_true", help="also grid-search the fusion setting on these queries")
    e.add_argument(
        "--allow-errors",
        action="store_true",
        help="report figures even when documents or queries failed (the counts are printed beside them)",
    )
    e.add_argument(
        "--index",
        choices=["sqlite", "opensearch"],
        default=None,
        help="where the fresh evaluation index goes (default QUARRY_INDEX; opensearch: QUARRY_OPENSEARCH_URL, "
        "a temporary index beside the alias, deleted afterwards)",
    )
    e.add_argument("--quiet", action="store_true")
    e.add_argument("--data-dir", default=argparse.SUPPRESS, help=DATA_DIR_HELP)
    e.set_defaults(func=cmd_eval)
    lc = sub.add_parser("eval-cycle", help="run the context learning cycle (what the nightly Lambda does)")
    lc.add_argument("--tenant", default=None, help="only this tenant (default: every tenant)")
    lc.add_argument("--data-dir", default=argparse.SUPPRESS, help=DATA_DIR_HELP)
    lc.set_defaults(func=cmd_learning_cycle)
