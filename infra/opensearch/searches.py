"""The searches, a part of OpenSearchIndex: every lexical (BM25 over the boosted tiers) and vector (cosine k-NN)
list a search or a context assembly needs, in ONE `_msearch` round trip; results read back into
candidates (responses.py), completed from `_source` where doc values could not show them whole."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from core.errors import QuarryError, UnavailableError
from core.models import (
    ALL_CHUNKS,
    Candidate,
    CandidateLists,
    CandidateQuery,
    EntityKey,
    Filters,
    LexicalQuery,
    Vector,
)
from infra.opensearch import documents, mapping, query_bodies, responses
from infra.opensearch.calls import IndexCalls
from infra.opensearch.index_lifecycle import IndexLifecycle

_log = logging.getLogger(__name__)
Search = tuple[int, str, int, dict[str, Any]]  # spec position, kind, k, body
Lists = list[dict[str, list[Candidate]]]  # per spec: "lexical" and "vector" candidates
Raw = list[dict[EntityKey, str]]  # per spec: the hits' compact feedback vectors, undecoded


class IndexSearches:
    """The searches, a part of OpenSearchIndex: lexical, vector and retrieve(_many) (see module
    docstring)."""

    def __init__(self, calls: IndexCalls, lifecycle: IndexLifecycle) -> None:
        self._calls = calls
        self._lifecycle = lifecycle

    def lexical(self, tenant_id: str, query: LexicalQuery, filters: Filters, k: int) -> list[Candidate]:
        """BM25 over the boosted tiers, best chunk per entity, at most k."""
        return list(self.retrieve(tenant_id, query, None, filters, k).lexical)

    def vector(self, tenant_id: str, embedding: Vector, filters: Filters, k: int) -> list[Candidate]:
        """Cosine k-NN (scores converted back to raw cosine), best chunk per entity, at most k."""
        return list(self.retrieve(tenant_id, None, embedding, filters, k).vector)

    def retrieve(
        self,
        tenant_id: str,
        query: LexicalQuery | None,
        embedding: Vector | None,
        filters: Filters,
        k: int,
    ) -> CandidateLists:
        """The lexical and the vector list in ONE `_msearch` round trip."""
        return self.retrieve_many(tenant_id, [CandidateQuery(query, embedding, filters, k)])[0]

    def retrieve_many(self, tenant_id: str, specs: Sequence[CandidateQuery]) -> list[CandidateLists]:
        """Every spec's lexical and vector list in ONE `_msearch` round trip (a context assembly's sources).

        One search the cluster refuses as invalid (a zero query vector, which cosinesimil rejects) empties
        only its own list; only when every search fails is the failure raised. A search the cluster could
        not answer whole (a shard unavailable, throttled past the retries, answered from some shards only)
        fails them all: never a list silently shorter than the index holds."""
        searches = self._searches(tenant_id, specs)
        lists: Lists = [{"lexical": [], "vector": []} for _ in specs]
        raw: Raw = [{} for _ in specs]
        if searches:
            results = self._calls.msearch([body for *_, body in searches], self._lifecycle.route(tenant_id))
            failed = [r for r in results if isinstance(r, QuarryError)]
            unavailable = [r for r in failed if isinstance(r, UnavailableError)]
            if unavailable or (failed and len(failed) == len(results)):
                raise (unavailable or failed)[0]  # never an answer from some of the searches only
            incomplete = _fill_lists(tenant_id, searches, results, lists)
            if incomplete:
                self._complete(tenant_id, incomplete, lists)
            for (n, *_), result in zip(searches, results, strict=True):
                if specs[n].with_vectors and isinstance(result, Mapping):
                    responses.hit_vectors(result, tenant_id, raw[n])
        dimension = self._lifecycle.dimension
        return [
            CandidateLists(
                tuple(got["lexical"]), tuple(got["vector"]), responses.HitVectors(found, dimension)
            )
            for got, found in zip(lists, raw, strict=True)
        ]

    def _searches(self, tenant_id: str, specs: Sequence[CandidateQuery]) -> list[Search]:
        """(spec position, kind, k, body) of every search the specs need: "lexical", "vector", or "ranking"
        (a vector list wanted for its ranking only, on an index with display values)."""
        searches: list[Search] = []
        lean = self._lifecycle.display_values
        for n, spec in enumerate(specs):
            k = query_bodies.clamp(spec.k)
            # The compact feedback vectors come with the hits where the index keeps them (doc values).
            vectors = spec.with_vectors and lean and self._lifecycle.feedback_vectors
            if spec.query is not None and not spec.query.empty and k > 0:
                body = query_bodies.lexical_body(tenant_id, spec.query, spec.filters, k, lean, vectors)
                searches.append((n, "lexical", k, body))
            vector = spec.embedding
            if vector is not None and k > 0 and self._matches_dimension(vector) and any(vector):
                if spec.vector_ranking_only and lean:
                    body = query_bodies.vector_ranking_body(tenant_id, vector, spec.filters, k, vectors)
                    searches.append((n, "ranking", k, body))
                else:
                    body = query_bodies.vector_body(tenant_id, vector, spec.filters, k, lean, vectors)
                    searches.append((n, "vector", k, body))
        return searches

    def _matches_dimension(self, embedding: Vector) -> bool:
        """A query vector of another dimension finds nothing (as in the local index), and is logged."""
        if len(embedding) == self._lifecycle.dimension:
            return True
        self._lifecycle.recheck_model()  # the query's model may be the one a reindex just swapped in (or out)
        _log.warning(
            "query vector has %d dimensions, the index %d: no vector results",
            len(embedding),
            self._lifecycle.dimension,
        )
        return False

    def _complete(self, tenant_id: str, keys: set[EntityKey], lists: Lists) -> None:
        """Fill in, from `_source`, the candidates whose doc values could not show them whole (rare: a
        value too long for a doc value, or a document an older writer wrote)."""
        sources = {
            documents.stored_entity(s).key: s
            for s in self._calls.fetch(
                tenant_id, [documents.doc_id(tenant_id, k) for k in sorted(keys)], with_chunks=True
            )
            if s.get(mapping.TENANT) == tenant_id
        }
        for got in lists:
            for kind, found in got.items():
                got[kind] = [
                    responses.with_source(c, sources[c.key]) if c.key in sources else c for c in found
                ]


def _fill_lists(
    tenant_id: str,
    searches: Sequence[Search],
    results: Sequence[Mapping[str, Any] | QuarryError | None],
    lists: Lists,
) -> set[EntityKey]:
    """Each search's result into its spec's list (a failed search, logged, leaves its list empty); the
    keys of candidates whose doc values could not show them whole."""
    incomplete: set[EntityKey] = set()
    for (n, kind, k, _), result in zip(searches, results, strict=True):
        if isinstance(result, QuarryError):
            _log.warning("%s search failed, returning the other lists only: %s", kind, result)
            continue
        if result is None:
            continue
        if kind == "ranking":  # who and how similar only: nothing of it is shown
            found = responses.candidates(result, k, tenant_id, responses.cosine)
            lists[n]["vector"] = [c._replace(chunk_no=ALL_CHUNKS) for c in found]
            continue
        convert = responses.bm25 if kind == "lexical" else responses.cosine
        lists[n][kind] = responses.candidates(result, k, tenant_id, convert)
        incomplete |= responses.incomplete(result, tenant_id)
    return incomplete
