"""The working tree against a base release, on the same machine in one run: each benchmark alternates between
the two trees (base, head, head, base, … so drift in the machine's load falls on both sides alike), and the
figures both report are printed side by side with their ratio, head / base.

The base is `git archive BASE` unpacked under .cache/bench-base/<commit> (once) and run with this venv's
interpreter: its bench scripts put their own tree first on the import path, and `quarry serve` is started by
them as `python -m handlers.cli.main` from that tree, so each side runs its own code with the same packages. The
passage embeddings are read from one cache (--cache-dir), so neither side embeds the corpus again.

    .venv/bin/python bench/compare.py --base 6532a22                      # search + peers, 2 rounds
    .venv/bin/python bench/compare.py --base v1 --benches search,peers,load --rounds 3
    .venv/bin/python bench/compare.py --base 590e50c --benches cpu,cpu-keyword --rounds 4   # CPU per search
    .venv/bin/python bench/compare.py --base HEAD --benches search --rounds 1 --smoke   # the tool itself
    make bench-compare BASE=6532a22

A ratio below 1 is the working tree faster (latency) or a higher rate being lower (load: read each row's
name). Figures go to --json: every run's numbers per side, and the medians and ratios printed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._common import shared_datasets, write_json  # noqa: E402

BASES = ROOT / ".cache" / "bench-base"
# What each benchmark is asked on both sides: the sizes of docs/benchmarks.md's runs (2,000 entities, SciFact).
BENCHES: dict[str, list[str]] = {
    "search": ["bench/search_latency.py", "--entities", "2000", "--queries", "300"],
    "peers": ["bench/peers.py", "--rounds", "2"],
    "load": ["bench/load.py", "--entities", "2000", "--rates", "50,100", "--seconds", "10"],
    # CPU per search by layer: the figure a shared machine still measures (wall clock there is noise).
    "cpu": ["bench/cpu_budget.py", "--entities", "2000", "--queries", "200", "--strategy", "hybrid"],
    "cpu-keyword": ["bench/cpu_budget.py", "--entities", "2000", "--queries", "200", "--strategy", "keyword"],
}
# The leaves worth a ratio: latencies, rates and the node's own time; counts and settings are left out.
FIGURE_WORDS = ("p50", "p90", "p95", "p99", "mean", "median", "per_s", "sustained", "took", "_ms", "rate")


def resolve(ref: str) -> str:
    """The full commit a ref names (a clear error when it names none)."""
    done = subprocess.run(
        ["git", "rev-parse", "--verify", f"{ref}^{{commit}}"], cwd=ROOT, capture_output=True, text=True
    )
    if done.returncode:
        raise SystemExit(f"--base {ref!r} names no commit of this repository")
    return done.stdout.strip()


def base_tree(commit: str) -> Path:
    """The base commit's files under .cache/bench-base/<commit>, unpacked once."""
    target = BASES / commit
    if (target / ".complete").exists():
        return target
    target.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryFile() as archive:
        subprocess.run(["git", "archive", "--format=tar", commit], cwd=ROOT, stdout=archive, check=True)
        archive.seek(0)
        with tarfile.open(fileobj=archive) as tar:
            tar.extractall(target, filter="data")
    (target / ".complete").touch()
    return target


def run_side(tree: Path, bench: str, extra: Sequence[str], out: Path, smoke: bool) -> dict[str, Any]:
    """One benchmark run in `tree` with this interpreter; its JSON figures."""
    args = [BENCHES[bench][0], "--smoke"] if smoke else BENCHES[bench]
    command = [sys.executable, *args, *extra, "--json", str(out)]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    print(f"  {tree.name[:12] if tree != ROOT else 'working tree'}: {' '.join(command[1:])}", flush=True)
    subprocess.run(command, cwd=tree, env=env, check=True, stdout=subprocess.DEVNULL)
    return dict(json.loads(out.read_text()))


def figures(body: Any, path: str = "") -> Iterator[tuple[str, float]]:
    """Every numeric leaf whose path names a latency or a rate, as (path, value)."""
    if isinstance(body, Mapping):
        for key, value in body.items():
            yield from figures(value, f"{path}.{key}" if path else str(key))
    elif isinstance(body, list):
        for i, value in enumerate(body):
            label = _label(value)
            yield from figures(value, f"{path}[{label if label is not None else i}]")
    elif isinstance(body, int | float) and not isinstance(body, bool) and _is_figure(path):
        yield path, float(body)


def _is_figure(path: str) -> bool:
    return any(word in path.lower() for word in FIGURE_WORDS)


def _label(item: Any) -> str | None:
    """A list item's name when it has one (a load row's strategy and rate), so both sides' rows pair up."""
    if not isinstance(item, Mapping):
        return None
    parts = [f"{k}={item[k]}" for k in ("strategy", "size", "rate", "offered_per_s", "k") if k in item]
    return ",".join(parts) or None


def compare(runs: Mapping[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Per figure both sides report: the median over rounds of each side and head / base."""
    per_side = {side: [dict(figures(run)) for run in side_runs] for side, side_runs in runs.items()}
    shared = sorted(set.intersection(*(set(r) for rs in per_side.values() for r in rs)))
    rows = []
    for name in shared:
        base = statistics.median(r[name] for r in per_side["base"])
        head = statistics.median(r[name] for r in per_side["head"])
        rows.append({"figure": name, "base": base, "head": head, "ratio": head / base if base else None})
    return rows


def print_rows(bench: str, rows: Sequence[dict[str, Any]]) -> None:
    print(f"\n{bench}: head / base (median of rounds)")
    width = max((len(r["figure"]) for r in rows), default=10)
    for r in rows:
        ratio = "n/a" if r["ratio"] is None else f"{r['ratio']:.2f}x"
        print(f"  {r['figure']:<{width}}  {r['base']:>10.2f}  {r['head']:>10.2f}  {ratio:>7}")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--base", required=True, help="a commit, tag or branch: the release to compare against"
    )
    parser.add_argument("--benches", default="search,peers", help=f"comma-separated, of {', '.join(BENCHES)}")
    parser.add_argument("--rounds", type=int, default=2, help="runs per side and benchmark (alternated)")
    parser.add_argument("--cache-dir", type=Path, default=ROOT / ".quarry" / "embeddings")
    parser.add_argument("--opensearch", help="the node peers.py compares against (its default otherwise)")
    parser.add_argument("--json", type=Path, default=ROOT / "bench" / "results" / "compare.json")
    parser.add_argument(
        "--smoke", action="store_true", help="each bench at its smoke size (a base that has one)"
    )
    args = parser.parse_args(argv)
    benches = [b.strip() for b in args.benches.split(",") if b.strip()]
    unknown = [b for b in benches if b not in BENCHES]
    if unknown:
        raise SystemExit(f"unknown benches {unknown}: choose from {', '.join(BENCHES)}")
    commit = resolve(args.base)
    trees = {"base": base_tree(commit), "head": ROOT}
    report: dict[str, Any] = {"base": commit, "load_average": os.getloadavg(), "benches": {}}
    with tempfile.TemporaryDirectory(prefix="quarry-compare-") as tmp:
        for bench in benches:
            extra = ["--cache-dir", str(args.cache_dir.resolve())]
            if bench == "peers":  # the base tree lies elsewhere: name the shared SciFact copy for both
                extra += ["--dataset", str(shared_datasets() / "scifact")]
                extra += ["--opensearch", args.opensearch] if args.opensearch else []
            runs: dict[str, list[dict[str, Any]]] = {"base": [], "head": []}
            print(f"{bench}: {args.rounds} rounds per side, alternating", flush=True)
            for i in range(args.rounds):
                order = ("base", "head") if i % 2 == 0 else ("head", "base")
                for side in order:
                    out = Path(tmp) / f"{bench}-{side}-{i}.json"
                    runs[side].append(run_side(trees[side], bench, extra, out, args.smoke))
            rows = compare(runs)
            print_rows(bench, rows)
            report["benches"][bench] = {"runs": runs, "compared": rows}
    report["load_average_after"] = os.getloadavg()
    write_json(args.json, report)
    print(f"\nload average {report['load_average']} → {report['load_average_after']}; figures in {args.json}")


if __name__ == "__main__":
    main()
