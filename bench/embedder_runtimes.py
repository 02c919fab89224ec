"""The local embedder's runtimes side by side in one process, interleaved: each round times every
(runtime, threads) pair once, so a shared machine's load hits all of them alike (bench/embedder.py runs one
runtime per fresh process instead, with import and load times and peak memory).

    .venv/bin/python bench/embedder_runtimes.py [--rounds 60] [--passages 32]
    .venv/bin/python bench/embedder_runtimes.py --smoke   # 2 rounds over tests/fixtures/beir_tiny's passages

Prints the 10-word query's P50 and best time, and SciFact abstracts per second (median and best of 3).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._common import SMOKE_DATASET  # noqa: E402
from bench.embedder import QUERY, SCIFACT, scifact_texts  # noqa: E402
from infra.local.onnx.embedder import LocalEmbedder  # noqa: E402


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--corpus", type=Path, default=SCIFACT, help="a BEIR corpus.jsonl")
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--passages", type=int, default=32)
    parser.add_argument("--smoke", action="store_true", help="2 rounds over tests/fixtures/beir_tiny")
    args = parser.parse_args(argv)
    warmup, passes = 10, 3
    if args.smoke:
        args.corpus, args.rounds, args.passages, warmup, passes = SMOKE_DATASET / "corpus.jsonl", 2, 4, 1, 1
    if not args.corpus.exists():
        print(f"needs {args.corpus} (the shared datasets)", file=sys.stderr)
        return 2
    texts = scifact_texts(args.passages, args.corpus)
    # NumPy's threads are BLAS's (process-wide), so it is measured once
    configs = [("numpy", 2)] + [(r, t) for r in ("onnx", "onnx-int8") for t in (1, 2)]
    embedders = {c: LocalEmbedder(runtime=c[0], threads=c[1]) for c in configs}  # type: ignore[arg-type]
    for e in embedders.values():
        e.warm()
        for _ in range(warmup):
            e.embed_query([QUERY])
    query: dict[tuple[str, int], list[float]] = {c: [] for c in configs}
    rate: dict[tuple[str, int], list[float]] = {c: [] for c in configs}
    for _ in range(args.rounds):
        for c, e in embedders.items():
            started = time.perf_counter()
            e.embed_query([QUERY])
            query[c].append((time.perf_counter() - started) * 1000)
    for _ in range(passes):
        for c, e in embedders.items():
            started = time.perf_counter()
            e.embed(texts)
            rate[c].append(len(texts) / (time.perf_counter() - started))
    for c in configs:
        print(
            f"{c[0]:<10} threads={c[1]}  query P50 {np.median(query[c]):6.2f} ms (best {min(query[c]):5.2f})  "
            f"passages/s {np.median(rate[c]):5.1f} (best {max(rate[c]):5.1f})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
