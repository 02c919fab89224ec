"""Keyword engines side by side on bench/scale.py's corpus: SQLite FTS5 (today's keyword leg, through
SqliteIndex.lexical) against tantivy (Lucene-style BM25 with block-max WAND), top 100, the same narrow
(SciFact queries) and broad (one frequent word) queries, title weighted 3 and text 1 in both.

Reuses the index bench/scale.py built for the size (`--sizes N --build-only`) under --work, or builds it.
The tantivy index is built once under --work and reused.

    .venv/bin/python bench/keyword_engines.py --size 100000
    .venv/bin/python bench/keyword_engines.py --smoke   # 300 chunks, 5 queries, tests/fixtures/beir_tiny
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import SMOKE_DATASET, summary  # noqa: E402
from bench._scale_corpus import SCIFACT, Space, query_texts, records, vocabulary  # noqa: E402
from bench.scale import BATCH, SMOKE_CHUNKS, K, build, lexical_queries  # noqa: E402
from core.indexing.entity_types import EntityTypeRegistry  # noqa: E402
from core.models import Filters  # noqa: E402


def tantivy_index(folder: Path, n: int, words: list[str], p: Any, space: Space) -> tuple[Any, dict[str, Any]]:
    import tantivy

    schema = tantivy.SchemaBuilder()
    schema.add_text_field("title", stored=False, tokenizer_name="en_stem")
    schema.add_text_field("body", stored=False, tokenizer_name="en_stem")
    schema.add_integer_field("rid", stored=True, indexed=False, fast=True)
    fresh = not folder.exists()
    folder.mkdir(parents=True, exist_ok=True)
    index = tantivy.Index(schema.build(), path=str(folder))
    stats: dict[str, Any] = {}
    if fresh:
        writer = index.writer(heap_size=200_000_000, num_threads=1)
        started = time.perf_counter()
        for start in range(0, n, BATCH):
            for r in records(start, min(BATCH, n - start), words, p, space):
                writer.add_document(
                    tantivy.Document(title=r.title, body=r.chunks[0].text, rid=int(r.key.entity_id[1:]))
                )
        writer.commit()
        writer.wait_merging_threads()
        stats["tantivy_ingest_per_s"] = round(n / (time.perf_counter() - started), 1)
    index.reload()
    return index, stats


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", type=Path, default=SCIFACT, help="whose words and queries (BEIR layout)")
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--work", default="/tmp/quarry-scale")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--smoke", action="store_true", help="300 chunks, 5 queries, tests/fixtures/beir_tiny")
    args = ap.parse_args(argv)
    if args.smoke:
        with tempfile.TemporaryDirectory(prefix="quarry-keyword-engines-") as work:
            args.dataset, args.size, args.queries, args.work = SMOKE_DATASET, SMOKE_CHUNKS, 5, work
            compare(args)
    else:
        compare(args)


def compare(args: Any) -> None:
    """Both engines on the same queries over bench/scale.py's corpus of --size chunks."""
    from infra.local.sqlite.index import build_sqlite_index

    words, p = vocabulary(args.dataset)
    space = Space()
    index, report = tantivy_index(Path(args.work) / f"tantivy-{args.size}", args.size, words, p, space)
    searcher = index.searcher()
    fts = build_sqlite_index(Path(args.work) / f"scale-{args.size}.db", keyword_engine="fts5")
    report |= build(fts, args.size, words, p, space)  # unless bench/scale.py built it already
    texts = query_texts(args.dataset)
    for name, queries in lexical_queries(EntityTypeRegistry(), words, texts).items():
        queries = [q for q in queries if q.terms][: args.queries]
        parsed = [
            index.parse_query(" ".join(q.terms), ["title", "body"], field_boosts={"title": 3.0, "body": 1.0})
            for q in queries
        ]
        ours, theirs, overlap = [], [], []
        for q, pq in zip(queries, parsed, strict=True):
            t = time.perf_counter()
            hits = searcher.search(pq, K).hits
            theirs.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            found = fts.lexical("bench", q, Filters(), K)
            ours.append((time.perf_counter() - t) * 1000)
            top10 = {searcher.doc(a)["rid"][0] for _, a in hits[:10]}
            overlap.append(
                len(top10 & {int(c.key.entity_id[1:]) for c in found[:10]}) / max(1, min(10, len(found)))
            )
        report[f"{name}_fts5"] = summary(ours)
        report[f"{name}_tantivy"] = summary(theirs)
        report[f"{name}_top10_overlap"] = round(sum(overlap) / len(overlap), 3)
    print(json.dumps({args.size: report}, indent=1))


if __name__ == "__main__":
    main()
