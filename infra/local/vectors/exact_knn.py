"""Exact cosine k-NN over one tenant's chunk vectors, read from memory-mapped columns (vector_store.py).

Filters never copy the matrix: type/source/owner/namespace are integer codes in arrays aligned with the
rows, a filter is a boolean mask over them, and scores are computed either for every row (the mask then
drops the rest) or, for a selective filter, only for the selected rows in bounded blocks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from core.models import Filters
from infra.local.vectors.ivf import Ivf

CODED = ("type", "source", "owner", "namespace")  # the filterable columns kept as int32 codes
SELECTIVE = 0.3  # below this share of rows selected, score only those rows (gathered in blocks)
GATHER_BLOCK = 8192  # rows gathered per block: bounds the temporary copy (12 MB at 384 dims)
KEPT_EXCLUSIONS = 4  # exclusion masks a snapshot keeps: the superseded chunks, the same for every search


@dataclass(frozen=True, slots=True)
class VectorSnapshot:
    """A tenant's rows as of one index generation: views over the shared columns, never copies.

    Rows past `count` do not exist yet; rows with `live == 0` are tombstones (deleted or replaced chunks)
    awaiting compaction. Chunk ids are ascending, so `ids` is sorted.
    """

    generation: int
    matrix: npt.NDArray[np.float32]
    ids: npt.NDArray[np.int64]
    entity: npt.NDArray[np.int64]  # the entity row each chunk belongs to: one result per entity
    live: npt.NDArray[np.uint8]
    codes: Mapping[str, npt.NDArray[np.int32]]
    lookup: Mapping[str, Mapping[str | None, int]]
    dead: int
    ivf: Ivf | None = None  # the approximate index over this epoch's rows, when the tenant is large
    # The rows outside each recent `excluded` list (a generation's superseded chunks are the same for every
    # search of it): one membership test over every row per generation instead of per search.
    _kept: dict[tuple[int, ...], npt.NDArray[np.bool_]] = field(
        default_factory=dict, compare=False, repr=False
    )

    @property
    def count(self) -> int:
        return int(self.ids.shape[0])

    def _mask(
        self, filters: Filters, allowed: Sequence[int] | None, excluded: Sequence[int] = ()
    ) -> npt.NDArray[np.bool_] | None | bool:
        """The selected rows; None = every row; False = no row can match."""
        mask: npt.NDArray[np.bool_] | None = None

        def narrow(part: npt.NDArray[np.bool_] | None) -> None:
            nonlocal mask
            if part is not None:  # None: every row
                mask = part if mask is None else (mask & part)

        def codes_of(column: str, values: Sequence[str | None]) -> list[int]:
            known = self.lookup[column]
            return [known[v] for v in values if v in known]

        wanted = (
            ("type", filters.entity_types),
            ("source", filters.sources),
            ("namespace", filters.namespaces),
            ("owner", () if filters.owner is None else (filters.owner,)),
            ("owner", filters.owners),
        )
        for column, values in wanted:
            if not values:
                continue
            codes = codes_of(column, values)
            if not codes:
                return False
            narrow(self._rows_with(column, codes))
        if filters.exclude_owner is not None:
            owners = codes_of("owner", (filters.exclude_owner,))
            if owners:
                narrow(self.codes["owner"] != owners[0])
        narrow(self._by_id(allowed, excluded))
        if self.dead:
            narrow(self.live.view(np.bool_))
        return mask

    def _rows_with(self, column: str, codes: Sequence[int]) -> npt.NDArray[np.bool_] | None:
        """The rows whose `column` holds one of `codes`; None when that is every row (a search of every
        entity type the rows hold, the default: every chunk has a type, and the None code every column's
        list starts with is never a row's)."""
        if column == "type" and set(codes) >= {c for v, c in self.lookup[column].items() if v is not None}:
            return None
        col = self.codes[column]
        return col == codes[0] if len(codes) == 1 else np.isin(col, np.asarray(codes, np.int32))

    def _by_id(self, allowed: Sequence[int] | None, excluded: Sequence[int]) -> npt.NDArray[np.bool_] | None:
        """The rows among `allowed` chunk ids (None: any) and not among `excluded` ones; None: every row."""
        mask = None if allowed is None else np.isin(self.ids, np.asarray(allowed, dtype=np.int64))
        if excluded:
            kept = self._outside(excluded)
            mask = kept if mask is None else mask & kept
        return mask

    def _outside(self, excluded: Sequence[int]) -> npt.NDArray[np.bool_]:
        """The rows whose chunk id is not among `excluded` (kept for the next search of this snapshot)."""
        key = tuple(excluded)
        kept = self._kept.get(key)
        if kept is None:
            kept = ~np.isin(self.ids, np.asarray(excluded, dtype=np.int64))
            kept.flags.writeable = False  # shared by the searches of this snapshot: `&` makes new arrays
            if len(self._kept) >= KEPT_EXCLUSIONS:
                self._kept.clear()
            self._kept[key] = kept
        return kept

    def _score(self, rows: npt.NDArray[np.int64], query: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """Scores of the given rows, gathered in bounded blocks (never a copy of the whole matrix)."""
        scores = np.empty(rows.size, dtype=np.float32)
        for b in range(0, rows.size, GATHER_BLOCK):
            scores[b : b + GATHER_BLOCK] = self.matrix[rows[b : b + GATHER_BLOCK]] @ query
        return scores

    def _pick(
        self,
        scores: npt.NDArray[np.float32],
        rows: npt.NDArray[np.int64] | None,
        valid: int,
        k: int,
        deep: int,
    ) -> list[tuple[int, float]]:
        """The best chunk of each of the k best entities among scored rows (rows None = every row)."""
        want = min(valid, deep)
        while True:
            part = np.argpartition(-scores, want - 1)[:want] if want < scores.size else np.arange(scores.size)
            part = part[np.isfinite(scores[part])]
            picked = part if rows is None else rows[part]
            order = np.lexsort((self.ids[picked], -scores[part]))
            part, picked = part[order], picked[order]
            _, first = np.unique(self.entity[picked], return_index=True)
            if first.size >= k or want >= valid:
                break
            want = min(valid, want * 4)  # many chunks of the same entities: look deeper
        best = np.sort(first)[:k]
        return list(zip(self.ids[picked[best]].tolist(), scores[part[best]].tolist(), strict=True))

    def top(
        self,
        query: npt.NDArray[np.float32],
        filters: Filters,
        allowed: Sequence[int] | None,
        k: int,
        rows_per_entity: int,
        probe: int = 0,
        excluded: Sequence[int] = (),
    ) -> list[tuple[int, float]]:
        """(chunk id, cosine) of the best chunk of each of the k best entities, best first.

        With `probe` > 0 and an approximate index, only the `probe` nearest lists (and the rows appended
        since training) are scored; if that yields fewer than k entities, the exact ranking answers.
        """
        n = self.count
        if n == 0 or query.shape[0] != self.matrix.shape[1]:
            return []
        mask = self._mask(filters, allowed, excluded)
        if mask is False:
            return []
        assert not isinstance(mask, bool)
        if probe > 0 and self.ivf is not None:
            rows = self.ivf.candidates(query, probe, n)
            if mask is not None:
                rows = rows[mask[rows]]
            if rows.size >= k:
                found = self._pick(self._score(rows, query), rows, rows.size, k, k * rows_per_entity)
                if len(found) >= k:
                    return found
        if mask is None:
            return self._pick(self.matrix @ query, None, n, k, k * rows_per_entity)
        valid = int(np.count_nonzero(mask))
        if valid == 0:
            return []
        if valid >= SELECTIVE * n:
            scores = self.matrix @ query
            scores[~mask] = -np.inf
            return self._pick(scores, None, valid, k, k * rows_per_entity)
        rows = np.flatnonzero(mask)
        return self._pick(self._score(rows, query), rows, valid, k, k * rows_per_entity)
