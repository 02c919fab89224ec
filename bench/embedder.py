"""The local embedder's cost on this machine: import time, model load, one query, a corpus, memory.

Reports single-query latency P50/P99 for a 10-word query (goal ≤ 3 ms P50), passages per second over
SciFact abstracts (title + text, truncated at 256 word pieces like sentence-transformers; goal ≥ 40/s on
2 cores), the model load time, the import time of the embedder module and of its libraries, and the peak
resident memory of a process that loads the model and embeds the corpus sample. Each figure is measured
in a fresh subprocess so one does not warm the next.

    .venv/bin/python bench/embedder.py [--runtime numpy|onnx|onnx-int8] [--passages 500] [--queries 200]
                                       [--repeat 1] [--json FILE]
    .venv/bin/python bench/embedder.py --smoke   # tests/fixtures/beir_tiny's passages, 5 queries, 1 run

`--runtime` picks the embedder's runtime (default: the embedder's own, onnx when onnxruntime is installed);
`--repeat N` runs each probe N times in fresh processes and reports the min and median of the runs (the
machines are shared: one run says little). The ONNX graph is built before timing (the cache).

sentence-transformers is not compared here: it needs torch, which these machines cannot install without
several GB of CUDA wheels. Equality with it is checked instead against its own vectors
(tests/adapters/test_local_embedder.py, shared/embeddings/minilm-reference.jsonl).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._common import SMOKE_DATASET, shared_datasets, summary, write_json  # noqa: E402

SCIFACT = shared_datasets() / "scifact" / "corpus.jsonl"
QUERY = "which proteins regulate the estrogen receptor in breast cancer cells"  # 10 words, 14 word pieces
GOAL_QUERY_P50_MS = 3.0  # docs/architecture.md, Performance goals
GOAL_PASSAGES_PER_S = 40.0  # docs/architecture.md, Performance goals

_QUERY_PROBE = """
import json, time
from infra.local.onnx.embedder import LocalEmbedder
e = LocalEmbedder(threads={threads}, runtime={runtime!r})
started = time.perf_counter(); e.warm(); load = time.perf_counter() - started
for _ in range(20): e.embed_query([{query!r}])
took = []
for _ in range({n}):
    t = time.perf_counter(); e.embed_query([{query!r}]); took.append((time.perf_counter() - t) * 1000)
print(json.dumps({{"load_s": load, "took_ms": took}}))
"""

_CORPUS_PROBE = """
import json, resource, time
from infra.local.onnx.embedder import LocalEmbedder
texts = json.load(open({texts!r}))
e = LocalEmbedder(threads={threads}, runtime={runtime!r}); e.warm()
e.embed(texts[:16])
started = time.perf_counter(); e.embed(texts); took = time.perf_counter() - started
print(json.dumps({{"seconds": took, "n": len(texts), "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
"""


def run(code: str) -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def import_ms(module: str, runs: int) -> float:
    """Median wall time of `import module` in a fresh interpreter, minus the interpreter's own start."""
    code = f"import time; t = time.perf_counter(); import {module}; print((time.perf_counter() - t) * 1000)"
    times = [
        float(
            subprocess.run(
                [sys.executable, "-c", code], cwd=ROOT, check=True, capture_output=True, text=True
            ).stdout
        )
        for _ in range(runs)
    ]
    return sorted(times)[len(times) // 2]


def scifact_texts(n: int, corpus: Path = SCIFACT) -> list[str]:
    """The first n passages (title + text) of a BEIR corpus, SciFact's by default."""
    rows = [json.loads(line) for line in corpus.read_text().splitlines()[:n]]
    return [f"{r.get('title', '')} {r['text']}".strip() for r in rows]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--corpus", type=Path, default=SCIFACT, help="a BEIR corpus.jsonl")
    parser.add_argument("--passages", type=int, default=500)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--runtime", choices=["numpy", "onnx", "onnx-int8"], default=None)
    parser.add_argument("--repeat", type=int, default=1, help="runs of each probe (min and median reported)")
    parser.add_argument("--json", help="default: bench/results/embedder[-RUNTIME].json (none with --smoke)")
    parser.add_argument("--smoke", action="store_true", help="tests/fixtures/beir_tiny, 5 queries, 1 run")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    import_runs = 1 if args.smoke else 5
    if args.smoke:
        args.corpus, args.passages, args.queries, args.repeat = SMOKE_DATASET / "corpus.jsonl", 8, 5, 1
    if not args.corpus.exists():
        print(f"needs {args.corpus} (the shared datasets)", file=sys.stderr)
        return 2
    out = _report(args, *_probe(args, import_runs))
    if args.smoke and not args.json:
        return 0
    runtime = args.runtime
    target = Path(args.json or f"bench/results/embedder{'-' + runtime if runtime else ''}.json")
    write_json(target, out)
    return 0


def _probe(
    args: argparse.Namespace, import_runs: int
) -> tuple[dict[str, float], list[dict[str, Any]], list[dict[str, Any]]]:
    """Each module's import time, then `args.repeat` runs of the query probe and of the corpus probe,
    each in a fresh process."""
    runtime = args.runtime
    modules = ["infra.local.onnx.embedder", "tokenizers", "safetensors.numpy", "numpy", "onnxruntime"]
    imports = {m: import_ms(m, import_runs) for m in modules if m != "onnxruntime" or runtime != "numpy"}
    run(
        _QUERY_PROBE.format(threads=args.threads, runtime=runtime, query=QUERY, n=1)
    )  # builds a missing graph
    queries = [
        run(_QUERY_PROBE.format(threads=args.threads, runtime=runtime, query=QUERY, n=args.queries))
        for _ in range(args.repeat)
    ]
    with tempfile.TemporaryDirectory(prefix="quarry-bench-embedder-") as tmp:
        texts_file = Path(tmp) / "texts.json"
        texts_file.write_text(json.dumps(scifact_texts(args.passages, args.corpus)))
        corpora = [
            run(_CORPUS_PROBE.format(threads=args.threads, runtime=runtime, texts=str(texts_file)))
            for _ in range(args.repeat)
        ]
    return imports, queries, corpora


def _report(
    args: argparse.Namespace,
    imports: dict[str, float],
    queries: list[dict[str, Any]],
    corpora: list[dict[str, Any]],
) -> dict[str, Any]:
    """The median run (the best in brackets) printed; the figures to write."""
    runtime = args.runtime
    summaries = sorted((summary(r["took_ms"]) for r in queries), key=lambda s: s["p50"])
    rates = sorted(c["n"] / c["seconds"] for c in corpora)
    q, rate = summaries[len(summaries) // 2], rates[len(rates) // 2]  # the median run
    query, corpus = queries[0], max(corpora, key=lambda c: c["peak_rss_mb"])
    loads = sorted(r["load_s"] for r in queries)
    query = {**query, "load_s": loads[len(loads) // 2]}

    label = runtime or "default (onnx if onnxruntime is installed)"
    print(
        f"machine: {os.cpu_count()} cores · threads for the embedder: {args.threads} · runtime: {label} · "
        f"{args.repeat} run(s) of each probe: median run shown, best run in brackets"
    )
    print(
        f"import: infra.local.onnx.embedder {imports['infra.local.onnx.embedder']:.0f} ms (lazy: no model libraries) · "
        f"tokenizers {imports['tokenizers']:.0f} ms · safetensors {imports['safetensors.numpy']:.0f} ms · "
        f"numpy {imports['numpy']:.0f} ms"
        + (f" · onnxruntime {imports['onnxruntime']:.0f} ms" if "onnxruntime" in imports else "")
    )
    print(f"model load: {query['load_s'] * 1000:.0f} ms")
    best = summaries[0]
    print(
        f"10-word query: P50 {q['p50']:.2f} ms [{best['p50']:.2f}] · P99 {q['p99']:.2f} ms [{best['p99']:.2f}] "
        f"(goal P50 ≤ {GOAL_QUERY_P50_MS:.0f} ms)"
    )
    print(
        f"{args.corpus.parent.name} passages: {rate:.1f} passages/s [{rates[-1]:.1f}] over {corpus['n']} "
        f"(goal ≥ {GOAL_PASSAGES_PER_S:.0f}/s) · peak RSS {corpus['peak_rss_mb']:.0f} MB"
    )
    return {
        "machine": f"{os.cpu_count()} cores",
        "threads": args.threads,
        "runtime": runtime,
        "runs": args.repeat,
        "query_p50_ms_runs": [s["p50"] for s in summaries],
        "passages_per_second_runs": rates,
        "import_ms": imports,
        "model_load_ms": query["load_s"] * 1000,
        "query_ms": q,
        "passages_per_second": rate,
        "passages": corpus["n"],
        "peak_rss_mb": corpus["peak_rss_mb"],
    }


if __name__ == "__main__":
    raise SystemExit(main())
