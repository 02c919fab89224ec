"""An approximate index for large tenants: IVF-Flat (inverted lists over k-means centroids) in NumPy.

Trained on the rows of the shared vector files as they were when training began, saved beside them and
memory-mapped by every process. A search scores the rows of the `probe` lists nearest the query plus the
rows appended since training (the tail, scored exactly), then drops tombstones and filtered-out rows, so
it never serves a deleted chunk and always sees new ones. Exact search stays below a size threshold
(`QUARRY_ANN_MIN_CHUNKS`) and takes over whenever the approximate answer is short of k entities.

Chosen over the registry's HNSW engines after measuring them here (see docs/benchmarks.md, "What one machine holds"):
building an HNSW graph of 1M vectors takes most of an hour on two busy cores and must be rebuilt or
mutated per write, while IVF trains in seconds to minutes, appends for free and maps as plain arrays.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

TRAIN_PER_LIST = 32  # training sample rows per list
TRAIN_ITERATIONS = 6
BLOCK = 16384  # rows assigned / scored per block


def list_count(rows: int) -> int:
    return max(16, int(np.sqrt(rows)))


def train(
    matrix: npt.NDArray[np.float32], live: npt.NDArray[np.uint8], seed: int = 0
) -> npt.NDArray[np.float32]:
    """Spherical k-means centroids over a sample of the live rows."""
    rng = np.random.default_rng(seed)
    candidates = np.flatnonzero(live)
    lists = list_count(candidates.size)
    sample = np.sort(rng.choice(candidates, size=min(candidates.size, lists * TRAIN_PER_LIST), replace=False))
    data = np.asarray(matrix[sample], dtype=np.float32)
    centroids = data[rng.choice(data.shape[0], size=lists, replace=False)].copy()
    for _ in range(TRAIN_ITERATIONS):
        nearest = np.concatenate(
            [np.argmax(data[b : b + BLOCK] @ centroids.T, axis=1) for b in range(0, len(data), BLOCK)]
        )
        sums = np.zeros_like(centroids)
        np.add.at(sums, nearest, data)
        empty = ~sums.any(axis=1)
        sums[empty] = data[rng.choice(data.shape[0], size=int(empty.sum()), replace=False)]
        centroids = sums / np.linalg.norm(sums, axis=1, keepdims=True)
    return centroids


def assign(
    matrix: npt.NDArray[np.float32], centroids: npt.NDArray[np.float32]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Rows grouped by nearest centroid: (row order, list offsets)."""
    nearest = (
        np.concatenate(
            [
                np.argmax(np.asarray(matrix[b : b + BLOCK]) @ centroids.T, axis=1)
                for b in range(0, matrix.shape[0], BLOCK)
            ]
        )
        if matrix.shape[0]
        else np.zeros(0, np.int64)
    )
    order = np.argsort(nearest, kind="stable").astype(np.int64)
    offsets = np.zeros(centroids.shape[0] + 1, np.int64)
    np.cumsum(np.bincount(nearest, minlength=centroids.shape[0]), out=offsets[1:])
    return order, offsets


@dataclass(frozen=True, slots=True)
class Ivf:
    """A trained index over rows [0, rows) of one epoch's files."""

    rows: int
    centroids: npt.NDArray[np.float32]
    order: npt.NDArray[np.int64]
    offsets: npt.NDArray[np.int64]

    def candidates(self, query: npt.NDArray[np.float32], probe: int, count: int) -> npt.NDArray[np.int64]:
        """Rows worth scoring: the nearest lists' rows and every row appended since training."""
        lists = self.centroids.shape[0]
        probe = min(probe, lists)
        nearest = np.argpartition(-(self.centroids @ query), probe - 1)[:probe]
        parts = [self.order[self.offsets[c] : self.offsets[c + 1]] for c in nearest.tolist()]
        if count > self.rows:
            parts.append(np.arange(self.rows, count, dtype=np.int64))
        return np.sort(np.concatenate(parts)) if parts else np.zeros(0, np.int64)


def save(
    folder: Path,
    name: str,
    centroids: npt.NDArray[np.float32],
    order: npt.NDArray[np.int64],
    offsets: npt.NDArray[np.int64],
) -> None:
    for suffix, array in (("centroids", centroids), ("order", order), ("offsets", offsets)):
        tmp = folder / f"{name}.{suffix}.tmp"
        array.tofile(tmp)
        tmp.replace(folder / f"{name}.{suffix}")


def load(folder: Path, name: str, rows: int, dim: int) -> Ivf:
    centroids = np.fromfile(folder / f"{name}.centroids", dtype=np.float32).reshape(-1, dim)
    order = np.memmap(folder / f"{name}.order", dtype=np.int64, mode="r").view(np.ndarray)
    offsets = np.fromfile(folder / f"{name}.offsets", dtype=np.int64)
    return Ivf(rows, centroids, order, offsets)
