"""Helpers shared by the benchmarks: percentiles, a synthetic corpus, the datasets, a stand-in embedder."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import random
import re
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
# What every `--smoke` run reads instead of a shared dataset: eight documents, BEIR layout, train and test
# qrels (tests/fixtures/beir_tiny).
SMOKE_DATASET = ROOT / "tests" / "fixtures" / "beir_tiny"
HASH_DIMENSION = 384  # same width as MiniLM, so the k-NN matmul costs the same
BULK = 500  # POST /entities maximum
JOB_SECONDS = 600.0  # a deadline for one write job (10,000 MiniLM-embedded entities take minutes here)
SERVER_START_SECONDS = 120.0  # `quarry serve` prints its URL once the socket is bound
SERVER_STOP_SECONDS = 20.0

TOPICS = {
    "auth": ["login", "password", "token", "session", "oauth", "sso", "mfa", "expired", "refresh", "signin"],
    "billing": ["invoice", "payment", "refund", "stripe", "subscription", "charge", "receipt", "tax", "plan"],
    "infra": ["deploy", "lambda", "timeout", "memory", "latency", "scaling", "queue", "retry", "cache"],
    "search": ["index", "query", "ranking", "bm25", "vector", "embedding", "recall", "snippet", "fusion"],
    "mobile": ["ios", "android", "crash", "push", "notification", "offline", "sync", "battery", "release"],
    "data": ["migration", "schema", "backup", "replica", "postgres", "dynamodb", "ttl", "partition", "etl"],
}
VERBS = ["fix", "investigate", "document", "review", "refactor", "measure", "remove", "add", "test", "ship"]
FILLER = ["the", "for", "with", "when", "after", "users", "customers", "team", "weekly", "urgent", "new"]


def synthetic_entities(n: int, seed: int = 7) -> list[dict[str, object]]:
    """n reproducible tasks and memories about a handful of engineering topics."""
    rng = random.Random(seed)
    items: list[dict[str, object]] = []
    for i in range(n):
        topic = rng.choice(sorted(TOPICS))
        words = rng.sample(TOPICS[topic], 4) + rng.sample(FILLER, 3)
        rng.shuffle(words)
        sentence = " ".join(words)
        if i % 2:
            items.append(
                {
                    "type": "memory",
                    "id": f"m{i}",
                    "content": f"{rng.choice(VERBS)} {sentence}",
                    "category": topic,
                    "version": 1,
                }
            )
        else:
            items.append(
                {
                    "type": "task",
                    "id": f"t{i}",
                    "title": f"{rng.choice(VERBS)} {' '.join(words[:3])}",
                    "description": sentence,
                    "tags": [topic],
                    "status": rng.choice(["open", "done"]),
                    "domain": topic,
                    "version": 1,
                }
            )
    return items


def queries(n: int, seed: int = 11) -> list[str]:
    """n reproducible queries: keywords, identifiers and questions over the same topics."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        topic = rng.choice(sorted(TOPICS))
        words = rng.sample(TOPICS[topic], 2)
        shape = i % 3
        out.append(
            " ".join(words)
            if shape == 0
            else f"how do we {rng.choice(VERBS)} {words[0]} {words[1]}?"
            if shape == 1
            else f"{rng.choice(VERBS)} {words[0]}"
        )
    return out


def percentile(values: Sequence[float], pct: float) -> float:
    """The pct-th percentile (nearest-rank on the sorted values)."""
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(pct / 100 * len(ordered) + 0.5) - 1))
    return ordered[index]


def summary(values: Sequence[float]) -> dict[str, float]:
    """P50 / P99 / mean of a list of milliseconds."""
    return {"p50": percentile(values, 50), "p99": percentile(values, 99), "mean": statistics.fmean(values)}


def shared_datasets() -> Path:
    """../shared/datasets beside the checkout (as `make eval` finds it), or two levels up from a worktree;
    the first place when neither exists (a fresh clone: the caller says what is missing)."""
    places = [ROOT.parent / "shared" / "datasets", ROOT.parent.parent / "shared" / "datasets"]
    return next((p for p in places if p.is_dir()), places[0])


class HashingEmbedder:
    """Deterministic bag-of-words hashing into 384 dims: a benchmark's stand-in (NOT a semantic model),
    used by `--smoke` runs and where a bench says so in its output."""

    dimension = HASH_DIMENSION
    model_id = "bench-hashing-384"

    def embed(self, texts: Sequence[str]) -> list[np.ndarray]:
        out = []
        for text in texts:
            vec = np.zeros(HASH_DIMENSION, dtype=np.float32)
            for word in text.lower().split():
                vec[int.from_bytes(hashlib.md5(word.encode()).digest()[:4], "big") % HASH_DIMENSION] += 1.0
            out.append(vec / (float(np.linalg.norm(vec)) or 1.0))
        return out

    def embed_query(self, texts: Sequence[str]) -> list[np.ndarray]:
        return self.embed(texts)

    # The Embedder port's capabilities (core/ports/), spelled out: this module imports nothing from the
    # tree it measures, so it also runs against a release before them.
    vectors_id = model_id

    def for_tenant(self, tenant_id: str) -> HashingEmbedder:
        return self

    def brings_own(self, tenant_id: str) -> bool:
        return False


def api_call(method: str, path: str, body: Any = None, tenant: str = "bench") -> tuple[int, Any]:
    """One request through the HTTP API Lambda handler, in-process, as `tenant` with read and write scopes;
    (status, decoded JSON body)."""
    from handlers.lambda_functions.api import lambda_handler
    from handlers.local_server.devserver import FakeLambdaContext, build_event

    raw = b"" if body is None else json.dumps(body).encode()
    headers = {"content-type": "application/json"} if body is not None else {}
    event = build_event(method, path, headers, raw, {"tenant": tenant, "scopes": ["read", "write"]})
    with contextlib.redirect_stdout(io.StringIO()):  # Powertools prints EMF metrics per call
        result = lambda_handler(event, FakeLambdaContext(aws_request_id="bench"))
    return int(result["statusCode"]), json.loads(result["body"]) if result.get("body") else None


def index_entities(items: Sequence[dict[str, Any]], tenant: str = "bench") -> int:
    """POST /entities in bulks; a bulk answered 202 (a write job) is followed on GET /jobs/{id} until done.
    The number of write jobs; raises when an item is refused or a job does not finish within JOB_SECONDS."""
    jobs = 0
    for at in range(0, len(items), BULK):
        batch = list(items[at : at + BULK])
        status, body = api_call("POST", "/entities", {"items": batch}, tenant)
        if status == 202:
            jobs += 1
            body = wait_for_job(body["job_id"], tenant)
        elif status != 200:
            raise RuntimeError(f"POST /entities answered {status}: {body}")
        if body["indexed"] != len(batch):
            raise RuntimeError(
                f"{len(batch) - body['indexed']} of {len(batch)} not indexed: {body['errors'][:3]}"
            )
    return jobs


def wait_for_job(job_id: str, tenant: str = "bench") -> dict[str, Any]:
    """GET /jobs/{id} until the job is done (polled on a deadline); its final status."""
    deadline = time.monotonic() + JOB_SECONDS
    while True:
        status, body = api_call("GET", f"/jobs/{job_id}", tenant=tenant)
        if status != 200:
            raise RuntimeError(f"GET /jobs/{job_id} answered {status}: {body}")
        if body["status"] == "done":
            return dict(body)
        if time.monotonic() > deadline:
            raise RuntimeError(f"job {job_id} not done after {JOB_SECONDS:.0f} s: {body}")
        time.sleep(0.05)


@dataclass
class LocalServer:
    """A `quarry serve` process tree this bench started, on a free loopback port."""

    proc: subprocess.Popen[str]
    port: int
    drain: threading.Thread | None  # reads what the server prints, once it has started

    def stop(self) -> None:
        """Stop it by its PID (SIGTERM, SIGKILL after SERVER_STOP_SECONDS), wait, close its pipe."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=SERVER_STOP_SECONDS)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.drain is not None:
            self.drain.join(timeout=SERVER_STOP_SECONDS)  # the pipe ends when the server's processes have
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def start_server(data_dir: Path, workers: int, env: Mapping[str, str]) -> LocalServer:
    """`quarry serve --workers N` over data_dir on a free loopback port, with `env` added to this process's
    environment (keys, cache TTL); returns once it prints its URL."""
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "QUARRY_ACCESS_LOG": "false", **env}
    command = [sys.executable, "-m", "handlers.cli.main", "serve", "--host", "127.0.0.1", "--port", "0"]
    command += ["--workers", str(workers), "--data-dir", str(data_dir)]
    proc = subprocess.Popen(command, env=environment, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert proc.stdout is not None
    deadline = time.monotonic() + SERVER_START_SECONDS
    while time.monotonic() < deadline:
        found = re.search(r"http://[\d.]+:(\d+)", proc.stdout.readline())
        if found:
            # keep reading what the server prints, so a full pipe never blocks it
            drain = threading.Thread(target=proc.stdout.read, daemon=True)
            drain.start()
            return LocalServer(proc, int(found.group(1)), drain)
        if proc.poll() is not None:
            break
    LocalServer(proc, 0, None).stop()
    raise RuntimeError("the Quarry server did not start")


def tree_cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) used so far by process `pid` and its live children (a `quarry serve`
    parent and its workers), from /proc; 0.0 where /proc is not there."""
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    total = 0.0
    try:
        entries = os.listdir("/proc")
    except OSError:
        return 0.0
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue  # ended meanwhile
        fields = stat[stat.rfind(")") + 2 :].split()  # after "pid (name) ": state, ppid, ...
        if int(entry) == pid or int(fields[1]) == pid:
            total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
    return total


def write_json(path: str | Path, body: Any, indent: int = 2) -> None:
    """A benchmark's figures as JSON at `path` (its folder made), ending in a newline."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(body, indent=indent, ensure_ascii=False) + "\n")
