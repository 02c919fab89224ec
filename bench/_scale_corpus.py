"""The synthetic corpus of the scale benches (bench/scale.py, bench/keyword_engines.py): entities of 60 words
drawn from a BEIR corpus's word frequencies, each with a 384-dim unit vector drawn around 2,000 cluster
centres (random vectors have no neighbourhoods; real embeddings do), and the collection's queries."""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import shared_datasets  # noqa: E402
from core.models import Chunk, EntityKey, EntityRecord  # noqa: E402

SCIFACT = shared_datasets() / "scifact"  # its word frequencies and queries
DIM, WORDS, CENTRES = 384, 60, 2000
TYPES = ("memory", "document", "task")  # task: 10% of entities, the filter measured


def vocabulary(dataset: Path = SCIFACT) -> tuple[list[str], np.ndarray]:
    """The words of a BEIR corpus, most frequent first, and their frequencies."""
    counts: Counter[str] = Counter()
    with (dataset / "corpus.jsonl").open() as fh:
        for line in fh:
            doc = json.loads(line)
            counts.update(re.findall(r"[a-z][a-z0-9-]+", (doc["title"] + " " + doc["text"]).lower()))
    words = [w for w, _ in counts.most_common()]
    freq = np.array([counts[w] for w in words], dtype=np.float64)
    return words, freq / freq.sum()


def query_texts(dataset: Path = SCIFACT) -> list[str]:
    with (dataset / "queries.jsonl").open() as fh:
        return [json.loads(line)["text"] for line in fh]


class Space:
    """Clustered unit vectors: entity i and query j draw from the same centres."""

    def __init__(self, seed: int = 5) -> None:
        rng = np.random.default_rng(seed)
        self.centres = rng.standard_normal((CENTRES, DIM)).astype(np.float32)

    def vectors(self, seed: int, n: int) -> np.ndarray:
        rng = np.random.default_rng(seed)
        v = self.centres[rng.integers(0, CENTRES, n)] + 0.9 * rng.standard_normal((n, DIM)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)


def records(start: int, n: int, words: list[str], p: np.ndarray, space: Space) -> list[EntityRecord]:
    rng = np.random.default_rng(start + 1)
    drawn = rng.choice(len(words), size=(n, WORDS), p=p)
    vecs = space.vectors(start + 2, n)
    out = []
    for j in range(n):
        i = start + j
        text = " ".join(words[w] for w in drawn[j])
        title = " ".join(words[w] for w in drawn[j][:8])
        etype = "task" if i % 10 == 0 else TYPES[i % 2]
        out.append(
            EntityRecord(
                tenant_id="bench",
                key=EntityKey(etype, f"e{i}"),
                version=1,
                source="memory",
                owner=f"agent{i % 5}",
                namespace=None,
                created_at="2026-11-01T00:00:00Z",
                updated_at="2026-11-01T00:00:00Z",
                title=title,
                body={"content": text},
                metadata={},
                content_hash=str(i),
                chunks=(Chunk(0, (title, "", text), text, vecs[j]),),
            )
        )
    return out
