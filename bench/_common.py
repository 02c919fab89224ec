"""Helpers shared by the benchmarks: percentiles, a synthetic corpus, table printing."""

from __future__ import annotations

import random
import statistics
from collections.abc import Sequence

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
