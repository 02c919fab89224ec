"""Pseudo-relevance feedback for the vector leg (Rocchio 1971), with no extra model call.

The query vector moves toward the stored vectors of the first fused ranking's top results, and the
vector leg is searched again with the moved vector: q' = (q + β · mean(top-k result vectors)) / ‖…‖.
The stored vector of a result is that of the chunk the vector retriever matched (the chunk that made it
similar to the query), else the chunk the lexical retriever matched. A vector list retrieved for its ranking
only (`CandidateQuery.vector_ranking_only`) does not name the matched chunk: it is then the entity's stored
chunk nearest the query (what a k-NN search's best chunk per entity is), read with the others.

Measured in bench/prf_study.py (bench/QUALITY.md §6): k = 2, β = 1.0 and the final convex fusion at
α = 0.8 raised nDCG@10 on SciFact train and Cranfield, the development sets (k 1–3 and β 0.5–2 studied).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from core.models import ALL_CHUNKS, Candidate, CandidateQuery, EntityKey, Filters, Vector
from core.ports import Retriever
from core.search.fusion import Fused

FEEDBACK_DOCS = 2  # k: the top fused results whose vectors move the query (0 turns feedback off)
FEEDBACK_WEIGHT = 1.0  # β: how far toward their mean (the original query keeps weight 1)
# "search": the vector leg searched again with the moved query (a second k-NN); "rescore": the candidates
# already in hand (both legs' entities) scored by their best chunk's cosine with the moved query, no second
# search (docs/benchmarks.md#feedback-without-a-second-k-nn-search).
FEEDBACK_MODES = ("search", "rescore")
FEEDBACK_MODE = "search"


def feedback_chunks(
    fused: Sequence[Fused], vector: Sequence[Candidate], docs: int
) -> list[tuple[EntityKey, int]]:
    """(entity, chunk) of the top `docs` fused results: the vector-matched chunk where there is one."""
    matched: dict[EntityKey, int] = {}
    for cand in vector:
        matched.setdefault(cand.key, cand.chunk_no)
    out = []
    for f in fused[: max(0, docs)]:
        key = f.candidate.key
        out.append((key, matched.get(key, f.candidate.chunk_no)))
    return out


def rocchio(query: Vector, feedback: Sequence[Vector], weight: float = FEEDBACK_WEIGHT) -> Vector:
    """The query moved toward the mean of `feedback`, unit length (cosine search); unchanged without any."""
    import numpy as np  # here, not at import: settings name this module's defaults at a handler's init

    q: Vector = np.asarray(query, dtype=np.float32)
    if not feedback or weight == 0:
        return q
    moved = q + np.float32(weight) * np.mean(np.stack([np.asarray(v, np.float32) for v in feedback]), axis=0)
    norm = float(np.linalg.norm(moved))
    if norm == 0.0:
        return q
    unit: Vector = (moved / norm).astype(np.float32)
    return unit


def _matched(
    chunk: tuple[EntityKey, int], stored: dict[tuple[EntityKey, int], Vector], query: Vector
) -> Vector | None:
    """The stored vector of `chunk`; for (entity, ALL_CHUNKS), of the entity's chunk nearest `query`
    (highest cosine, then the lowest chunk number)."""
    import numpy as np

    key, chunk_no = chunk
    if chunk_no != ALL_CHUNKS:
        return stored.get(chunk)
    q = np.asarray(query, dtype=np.float32)
    best: tuple[float, int] | None = None
    for (other, number), vector in stored.items():
        if other != key:
            continue
        v = np.asarray(vector, dtype=np.float32)
        norm = float(np.linalg.norm(v))
        similarity = float(q @ v) / norm if norm else -1.0  # the query is unit length (Embedder)
        if best is None or (-similarity, number) < (-best[0], best[1]):
            best = (similarity, number)
    return None if best is None else stored[(key, best[1])]


def stored_vectors(
    index: Retriever,
    tenant_id: str,
    chunks: Sequence[tuple[EntityKey, int]],
    with_hits: Mapping[EntityKey, Mapping[int, Vector]],
) -> dict[tuple[EntityKey, int], Vector]:
    """The stored vectors of `chunks` ((entity, ALL_CHUNKS): all of its chunks): from the copies that came
    with the hits (CandidateLists.vectors), the entities without one read from the index in one request."""
    out: dict[tuple[EntityKey, int], Vector] = {}
    missing = [(key, number) for key, number in chunks if key not in with_hits]
    if missing:
        out.update(index.chunk_vectors(tenant_id, missing))
    for key, number in chunks:
        held = with_hits.get(key)
        if held is None:
            continue
        if number == ALL_CHUNKS:
            out.update(((key, n), v) for n, v in held.items())
        elif number in held:
            out[(key, number)] = held[number]
    return out


def feedback_vectors(
    query: Vector,
    chunks: Sequence[tuple[EntityKey, int]],
    stored: dict[tuple[EntityKey, int], Vector],
) -> list[Vector]:
    """The stored vectors of the feedback `chunks` (each entity's nearest to `query` for ALL_CHUNKS), only
    those of the query's model: during a reindex to another model the stored ones may not be."""
    import numpy as np

    dimension = np.shape(query)[-1]
    usable = {c: v for c, v in stored.items() if len(v) == dimension}
    return [v for v in (_matched(c, usable, query) for c in chunks) if v is not None]


def rescored(
    candidates: Sequence[Candidate],
    stored: dict[tuple[EntityKey, int], Vector],
    moved: Vector,
    depth: int,
) -> list[Candidate]:
    """What a k-NN search with `moved` returns, restricted to `candidates`: one candidate per entity scored
    by its best stored chunk's cosine with `moved` (ties: the lowest chunk number), best first (ties: the
    earlier candidate), at most `depth`. An entity without a stored vector of the query's model is left
    out, as the k-NN search would. Display values stay those of the entity's first candidate."""
    import numpy as np

    q = np.asarray(moved, dtype=np.float32)
    first: dict[EntityKey, Candidate] = {}
    for cand in candidates:
        first.setdefault(cand.key, cand)
    dimension = q.shape[-1]
    keys: list[EntityKey] = []
    numbers: list[int] = []
    vectors: list[Vector] = []
    for (key, number), v in stored.items():
        if key in first and len(v) == dimension:
            keys.append(key)
            numbers.append(number)
            vectors.append(v)
    if not vectors:
        return []
    matrix = np.asarray(vectors, dtype=np.float32)  # one (rows × dimension) array
    norms = np.linalg.norm(matrix, axis=1)
    sims = ((matrix @ q) / np.where(norms == 0, 1.0, norms)).tolist()
    best: dict[EntityKey, tuple[float, int]] = {}
    for key, number, sim in zip(keys, numbers, sims, strict=True):
        held = best.get(key)
        if held is None or (-sim, number) < (-held[0], held[1]):
            best[key] = (sim, number)
    order = {key: n for n, key in enumerate(first)}
    ranked = sorted(best.items(), key=lambda item: (-item[1][0], order[item[0]]))
    return [first[key]._replace(score=sim) for key, (sim, _) in ranked[: max(0, depth)]]


def feedback_rescore(
    index: Retriever,
    tenant_id: str,
    query: Vector,
    fused: Sequence[Fused],
    lexical: Sequence[Candidate],
    vector: Sequence[Candidate],
    depth: int,
    docs: int = FEEDBACK_DOCS,
    weight: float = FEEDBACK_WEIGHT,
    with_hits: Mapping[EntityKey, Mapping[int, Vector]] | None = None,
) -> list[Candidate] | None:
    """The vector list the moved query would find among the candidates in hand (`rescored`): every chunk
    vector of both legs' entities (`stored_vectors`: those that came `with_hits`, the rare entity without
    one read), the feedback vectors among them. None when the hits brought no vectors at all (an index
    that keeps no compact copy: reading every candidate's would cost more than a second search) or none of
    the feedback documents has a stored vector."""
    chunks = feedback_chunks(fused, vector, docs)
    if not chunks or not with_hits:
        return None
    pool = [*vector, *lexical]
    wanted = list(dict.fromkeys((c.key, ALL_CHUNKS) for c in pool))
    stored = stored_vectors(index, tenant_id, wanted, with_hits or {})
    found = feedback_vectors(query, chunks, stored)
    if not found:
        return None
    return rescored(pool, stored, rocchio(query, found, weight), depth)


def feedback_search(
    index: Retriever,
    tenant_id: str,
    query: Vector,
    fused: Sequence[Fused],
    vector: Sequence[Candidate],
    filters: Filters,
    depth: int,
    docs: int = FEEDBACK_DOCS,
    weight: float = FEEDBACK_WEIGHT,
    with_hits: Mapping[EntityKey, Mapping[int, Vector]] | None = None,
) -> list[Candidate] | None:
    """The vector leg searched again with the query moved toward the top `docs` fused results' stored
    vectors (those that came `with_hits`, else one read of them; then one k-NN search); None when none of
    them has a stored vector."""
    chunks = feedback_chunks(fused, vector, docs)
    if not chunks:
        return None
    found = feedback_vectors(query, chunks, stored_vectors(index, tenant_id, chunks, with_hits or {}))
    if not found:
        return None
    # Its display values are read for the shown candidates only (CandidateQuery.display).
    moved = CandidateQuery(None, rocchio(query, found, weight), filters, depth, display=False)
    (again,) = index.retrieve_many(tenant_id, [moved])
    return list(again.vector)
