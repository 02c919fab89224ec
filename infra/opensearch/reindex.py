"""`quarry reindex` on OpenSearch: a new index generation built with another embedding model behind the same
alias, swapped in with one `_aliases` call; searches through the alias answer throughout (docs/reindexing.md).

1. Create `<prefix>-v<n+1>` (the template and mapping of the new dimension; its mapping `_meta` names the
   model). Creating it is the run's lock: a second run finds it and stops.
2. Copy: scan the old generation (a scroll: one consistent snapshot, every page checked whole) without
   its vectors, embed every chunk's text with the new model (the input IndexingService embeds), and bulk the documents
   into the new generation (`helpers.streaming_bulk`). Each copied document's `_seq_no` in the old index
   is kept (and the one it got in the new index).
3. Catch up: refresh the old index and list every document's `_seq_no` (no sources); a document written
   since it was copied, or a new one, is copied again, one gone (a tenant erased) is deleted. Repeat
   until a pass finds nothing (or `MAX_CATCH_UP_PASSES`), then refresh the new index.
4. Swap: ONE `_aliases` call removes the old generation from the alias and adds the new one as its write
   index. A search sees either generation whole, never neither.
5. Settle: after `settle_seconds` (longer than a write takes and than `model_check_seconds`, the time a
   server process takes to follow the new model), copy what still landed on the old index (a write that
   resolved the alias before the swap) unless the new one holds that entity at a version as new, and
   re-embed with the new model every document the servers wrote in the new generation since the swap
   (one whose `_seq_no` is not the copy's: it may have been embedded with the old model just before the
   process noticed). Then the old generation is deleted.

Guarantee: every write acknowledged before or during the run is in the new generation, embedded with the
new model, once the run returns, provided in-flight writes finish within `settle_seconds`.
Tenants share one index, so a reindex is of the whole index: every tenant moves to the new model.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from core.errors import ConflictError, InvalidInputError, UnavailableError
from core.indexing.chunking import embedding_input
from core.indexing.entity_types import EntityTypeRegistry
from core.ports import Embedder
from infra.opensearch import documents, mapping
from infra.opensearch.errors import BACKEND, UNAVAILABLE_RETRY_AFTER, error_parts, translated
from infra.opensearch.layout import Layout
from infra.opensearch.responses import partial

_log = logging.getLogger(__name__)
COPY_BATCH = 64  # documents per scroll page and per embedding call (as the local reindex batches chunks)
MAX_CATCH_UP_PASSES = 10  # catch-up passes before the swap; writes past them are settled after it
SCROLL_KEEPALIVE = "10m"
SEQ_NO_PAGE = 1000  # ids and `_seq_no`s per scroll page (no sources: small pages)  # a scroll page is embedded before the next is asked for
DEFAULT_SETTLE_SECONDS = 30.0  # > DEFAULT_MODEL_CHECK_SECONDS + the time a bulk write takes
SeqNos = dict[str, int]  # document id → _seq_no (a document's changes with every write to it)


class ReindexRunningError(ConflictError):
    """The next generation already exists: another reindex runs, or one crashed (delete it to retry)."""


class OpenSearchReindexer:
    """The copy/catch-up/swap/settle steps on one alias (see module docstring)."""

    def __init__(
        self,
        client: Any,
        prefix: str,
        registry: EntityTypeRegistry,
        embedder: Embedder,
        model_dir: str,
        batch: int = COPY_BATCH,
        layout: Layout | None = None,
    ) -> None:
        self._client = client
        self._layout = layout or Layout()  # of the new generation; the old one keeps its own
        # Each document's routing in each generation (None: not routed), from every scan and copy: a
        # routed document is found, rewritten or deleted only on its routing's shard.
        self._routes: dict[str, dict[str, str | None]] = {}
        self._alias = prefix
        self._registry = registry
        self._embedder = embedder
        self._model_dir = model_dir
        self._batch = batch
        self._copied: SeqNos = {}  # old index: the _seq_no each document had when copied
        self._written: dict[str, tuple[int, int]] = {}  # new index: (_seq_no, _primary_term) of our copy
        self._tenants: set[str] = set()
        self.old = ""
        self.new = ""

    @property
    def embedder(self) -> Embedder:
        """The new model."""
        return self._embedder

    @property
    def model_dir(self) -> str:
        """The new model's folder (recorded in the new generation's `_meta`)."""
        return self._model_dir

    # -- steps ------------------------------------------------------------------------------------------

    def create(self) -> None:
        """Find the generation behind the alias and create the next one (refused when it exists)."""
        from opensearchpy.exceptions import RequestError

        with translated():
            names = sorted(self._client.indices.get_alias(name=self._alias, ignore=404) or {})
            names = [n for n in names if n != "error" and n != "status"]
        if len(names) != 1 or mapping.generation_of(self._alias, names[0]) is None:
            raise InvalidInputError(
                f"alias {self._alias} must point at one index <alias>-v<n> to reindex; it points at {names}",
                {"QUARRY_OPENSEARCH_INDEX_PREFIX": "names the alias to reindex"},
            )
        self.old = names[0]
        generation = (mapping.generation_of(self._alias, self.old) or 0) + 1
        self.new = mapping.index_name(self._alias, generation)
        dimension = self._embedder.dimension
        model = {"model_dir": self._model_dir, "model_id": self._embedder.model_id, "generation": generation}
        with translated():
            version = str(((self._client.info() or {}).get("version") or {}).get("number") or "")
            pin = mapping.has_derived_source_setting(version)
            self._client.indices.put_index_template(
                name=mapping.template_name(self._alias),
                body=mapping.template_body(self._alias, dimension, pin, self._layout),
            )
            try:
                body = mapping.create_index_body(
                    self._alias, dimension, pin, model=model, layout=self._layout
                )
                self._client.indices.create(index=self.new, body=body)
            except RequestError as exc:
                if error_parts(exc.info)[0] == "resource_already_exists_exception":
                    raise ReindexRunningError(
                        f"index {self.new} exists: another quarry reindex is running, or one stopped "
                        f"before its swap (if none is running, delete {self.new} and run again)"
                    ) from exc
                raise

    def copy(self) -> tuple[int, int]:
        """Copy every document of the old generation, re-embedded; (documents, chunks)."""
        with translated():
            self._client.indices.refresh(index=self.old)  # the scroll then sees every acknowledged write
        hits = self._scan(self.old, {"_source": {"excludes": [mapping.EMBEDDING]}}, self._batch)
        return self._put(self._routed(self.old, hits))

    def catch_up(self) -> tuple[int, bool]:
        """One pass over the old generation's `_seq_no`s: copy what changed, delete what went; (how many,
        whether anything did)."""
        live = self._seq_nos(self.old)
        changed = [i for i, seq in live.items() if self._copied.get(i) != seq]
        gone = [i for i in self._copied if i not in live]
        self._put(self._fetch(self.old, changed))
        self._delete_new(gone, only_ours=False)
        return len(changed) + len(gone), bool(changed or gone)

    def swap(self) -> None:
        """Refresh the new generation (every copy searchable), then move the alias in one call."""
        with translated():
            self._client.indices.refresh(index=self.new)
            self._client.indices.update_aliases(
                body={
                    "actions": [
                        {"remove": {"index": self.old, "alias": self._alias}},
                        {"add": {"index": self.new, "alias": self._alias, "is_write_index": True}},
                    ]
                }
            )

    def settle(self) -> int:
        """After the swap: bring over late writes to the old generation, re-embed what servers wrote to the
        new one since the swap; how many documents."""
        live = self._seq_nos(self.old)
        late = [i for i, seq in live.items() if self._copied.get(i) != seq]
        count = self._put_if_newer(self._fetch(self.old, late))
        self._delete_new([i for i in self._copied if i not in live], only_ours=True)
        since = [i for i, seq in self._seq_nos(self.new).items() if (self._written.get(i) or (-1,))[0] != seq]
        count += self._reembed_in_place(since)
        with translated():
            self._client.indices.refresh(index=self.new)
        return count

    def drop_old(self) -> None:
        """Delete the old generation (only ever after the swap)."""
        with translated():
            self._client.indices.delete(index=self.old)

    def tenants(self) -> list[str]:
        """The tenants whose documents were copied (whose cached searches the swap invalidates)."""
        return sorted(self._tenants)

    # -- helpers ----------------------------------------------------------------------------------------

    def _seq_nos(self, index: str) -> SeqNos:
        with translated():
            self._client.indices.refresh(index=index)
        hits = self._scan(index, {"_source": False}, SEQ_NO_PAGE)
        return {str(h["_id"]): int(h["_seq_no"]) for h in self._routed(index, hits)}

    def _scan(self, index: str, body: dict[str, Any], size: int) -> Iterator[Mapping[str, Any]]:
        """Every document of `index` (a scroll in index order, with `_seq_no`). A page some shards did not
        answer stops the run as unavailable: the last, empty page too, which opensearch-py's helpers.scan
        never checks — after a node loss its scan can end early without a word, and a pass that takes
        the missing documents for deleted ones would delete their copies."""
        request = {**body, "query": {"match_all": {}}, "sort": ["_doc"], "seq_no_primary_term": True}
        with translated():
            page = self._client.search(index=index, body=request, size=size, scroll=SCROLL_KEEPALIVE)
        scroll_id = page.get("_scroll_id")
        try:
            while True:
                why = partial(page)
                if why is not None:
                    raise UnavailableError(
                        BACKEND, f"a scan of {index} answered partially: {why}", UNAVAILABLE_RETRY_AFTER
                    )
                hits = (page.get("hits") or {}).get("hits") or []
                if not hits:
                    return
                yield from hits
                with translated():
                    page = self._client.scroll(body={"scroll_id": scroll_id, "scroll": SCROLL_KEEPALIVE})
                scroll_id = page.get("_scroll_id", scroll_id)
        finally:
            if scroll_id:
                self._client.clear_scroll(body={"scroll_id": [scroll_id]}, ignore=(404,))

    def _routed(self, index: str, hits: Iterable[Mapping[str, Any]]) -> Iterator[Mapping[str, Any]]:
        """The hits of a scan of `index`, each one's routing noted on the way."""
        routes = self._routes.setdefault(index, {})
        for hit in hits:
            routes[str(hit["_id"])] = hit.get("_routing")
            yield hit

    def _route(self, index: str, doc_id: str) -> dict[str, str]:
        """The `routing` of one document of `index`, for a request or bulk action (none when unrouted)."""
        value = self._routes.get(index, {}).get(doc_id)
        return {} if value is None else {"routing": value}

    def _fetch(self, index: str, ids: Sequence[str]) -> Iterator[dict[str, Any]]:
        """The documents `ids` of `index` with `_seq_no` (vectors left out), in batches; missing ones skipped."""
        for start in range(0, len(ids), self._batch):
            docs = [{"_id": i, **self._route(index, i)} for i in ids[start : start + self._batch]]
            with translated():
                got = self._client.mget(
                    index=index, body={"docs": docs}, _source_excludes=[mapping.EMBEDDING]
                )
            yield from (d for d in got.get("docs") or [] if d.get("found"))

    def _embedded(self, hits: Sequence[Mapping[str, Any]]) -> tuple[list[dict[str, Any]], int]:
        """The hits' sources with every chunk embedded by the new model (one embedding call); chunk count."""
        sources = [documents.with_display(dict(h["_source"])) for h in hits]
        texts: list[str] = []
        for source in sources:
            etype = str(source.get(mapping.ENTITY_TYPE) or "")
            chunked = etype in self._registry.names() and self._registry.get(etype).chunked
            title = str(source.get("title") or "")
            source[mapping.CHUNKS] = [dict(c) for c in source.get(mapping.CHUNKS) or []]
            texts.extend(
                embedding_input(chunked, title, str(c.get("text") or "")) for c in source[mapping.CHUNKS]
            )
        vectors = iter(self._embedder.embed(texts) if texts else [])
        for source in sources:
            for chunk in source[mapping.CHUNKS]:
                chunk["embedding"] = [float(x) for x in next(vectors)]
        return [documents.with_feedback_vectors(s) for s in sources], len(texts)

    def _put(self, hits: Iterable[Mapping[str, Any]]) -> tuple[int, int]:
        """Copy hits (each with `_id`, `_seq_no`, `_source`) into the new generation, re-embedded."""
        documents = chunks = 0
        for page in _pages(hits, self._batch):
            sources, n = self._embedded(page)
            actions = [
                {"_op_type": "index", "_id": h["_id"], "_source": s, **self._new_route(h["_id"], s)}
                for h, s in zip(page, sources, strict=True)
            ]
            self._bulk(actions)
            for hit, source in zip(page, sources, strict=True):
                self._copied[str(hit["_id"])] = int(hit["_seq_no"])
                self._tenants.add(str(source.get(mapping.TENANT)))
            documents, chunks = documents + len(page), chunks + n
        return documents, chunks

    def _put_if_newer(self, hits: Iterable[Mapping[str, Any]]) -> int:
        """Copy late writes of the old generation where the new one holds nothing as new (compare-and-set)."""
        count = 0
        for page in _pages(hits, self._batch):
            for hit in page:
                self._new_route(hit["_id"], hit["_source"])  # where each one lives in the new generation
            current = {d["_id"]: d for d in self._fetch(self.new, [str(h["_id"]) for h in page])}
            newer = [h for h in page if _version(h) > _version(current.get(h["_id"]))]
            sources, _ = self._embedded(newer)
            actions = [
                {**_conditional(h["_id"], s, current.get(h["_id"])), **self._new_route(h["_id"], s)}
                for h, s in zip(newer, sources, strict=True)
            ]
            self._bulk(actions)
            for hit in page:
                self._copied[str(hit["_id"])] = int(hit["_seq_no"])
            count += len(newer)
        return count

    def _reembed_in_place(self, ids: Sequence[str]) -> int:
        """Re-embed documents of the new generation where they are (a write since then wins: skipped)."""
        count = 0
        for page in _pages(self._fetch(self.new, ids), self._batch):
            sources, _ = self._embedded(page)
            self._bulk(
                [
                    {**_conditional(h["_id"], s, h), **self._new_route(h["_id"], s)}
                    for h, s in zip(page, sources, strict=True)
                ]
            )
            count += len(page)
        return count

    def _new_route(self, doc_id: str, source: Mapping[str, Any]) -> dict[str, str]:
        """The routing of a document written to the new generation (its tenant, when that is routed)."""
        value = str(source.get(mapping.TENANT)) if self._layout.routed else None
        self._routes.setdefault(self.new, {})[str(doc_id)] = value
        return {} if value is None else {"routing": value}

    def _delete_new(self, ids: Sequence[str], only_ours: bool) -> None:
        """Delete documents from the new generation (after the swap, only copies no server rewrote)."""
        actions = []
        for doc_id in ids:
            action: dict[str, Any] = {"_op_type": "delete", "_id": doc_id, **self._route(self.new, doc_id)}
            if only_ours and doc_id in self._written:
                seq_no, term = self._written[doc_id]
                action.update(if_seq_no=seq_no, if_primary_term=term)
            actions.append(action)
            self._copied.pop(doc_id, None)
        self._bulk(actions)

    def _bulk(self, actions: Sequence[dict[str, Any]]) -> None:
        """Send actions to the new generation; a version conflict (a newer server write) or a missing
        document is expected, any other failure stops the run before the old generation is touched."""
        from opensearchpy import helpers

        if not actions:
            return
        with translated():
            for ok, item in helpers.streaming_bulk(
                self._client, actions, index=self.new, raise_on_error=False, max_retries=3
            ):
                result = next(iter(item.values()))
                if ok and "_seq_no" in result:
                    self._written[str(result["_id"])] = (int(result["_seq_no"]), int(result["_primary_term"]))
                elif not ok and result.get("status") not in (404, 409):
                    detail = f"reindex write to {self.new} failed: {result.get('error')}"
                    raise UnavailableError(BACKEND, detail, UNAVAILABLE_RETRY_AFTER)


def _pages(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    page: list[Any] = []
    for item in items:
        page.append(item)
        if len(page) == size:
            yield page
            page = []
    if page:
        yield page


def _version(hit: Mapping[str, Any] | None) -> int:
    return -1 if hit is None else int((hit.get("_source") or {}).get(mapping.VERSION, -1))


def _conditional(doc_id: str, source: dict[str, Any], stored: Mapping[str, Any] | None) -> dict[str, Any]:
    """An index action that applies only if the stored document is still `stored` (absent: create)."""
    if stored is None:
        return {"_op_type": "create", "_id": doc_id, "_source": source}
    return {
        "_op_type": "index",
        "_id": doc_id,
        "_source": source,
        "if_seq_no": stored["_seq_no"],
        "if_primary_term": stored["_primary_term"],
    }
