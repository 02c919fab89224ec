"""The OpenSearch index layout: field names, the mapping, the index template and the alias.

One document per entity; its chunks are `nested` objects, each with three english-analysed text tiers
(boost 3, 2, 1) and a `knn_vector`. One document per entity means a new version replaces every chunk
atomically (no stale chunk stays searchable), and every write is one conditional write of that document
(compare-and-set on its `_seq_no`, see `bodies`), so a stale write loses even under races.

k-NN engine: Lucene HNSW with `cosinesimil`. Lucene supports efficient (in-graph) filtering since
OpenSearch 2.4 and nested fields with a filter on parent fields, and it accepts `cosinesimil` on every
version; Faiss rejects `cosinesimil` before 2.19 ("does not support space type"), and for our
per-tenant filters Lucene switches to exact search when the filter is selective, which is exactly the
local index's behaviour (exact cosine over the tenant's vectors).
"""

from __future__ import annotations

from typing import Any

from infra.opensearch.layout import Layout

# Field names (top level = the entity, `chunks.*` = one chunk).
TENANT = "tenant_id"
ENTITY_TYPE = "entity_type"
ENTITY_ID = "entity_id"
VERSION = "version"
DELETED = "deleted"
SOURCE = "source"
OWNER = "owner"
NAMESPACE = "namespace"
METADATA = "metadata_terms"  # filter copy: one `key=value` keyword per value (see documents.metadata_terms)
METADATA_RAW = "metadata_raw"  # the values as given, returned to callers
CHUNKS = "chunks"
CHUNK_NO = f"{CHUNKS}.chunk_no"
CHUNK_TEXT = f"{CHUNKS}.text"
# Searches read no `_source`: it holds every chunk's vector, and loading it (stored fields, decompressed and
# parsed) was most of a search's time on the node (bench/opensearch_profile.py). What a result shows comes
# from doc values instead: keyword copies of the title and chunk text (`copy_to`, not in `_source`) and the
# metadata as compact JSON. Lucene refuses a doc value above 32,766 bytes, so longer values are left out
# (`ignore_above`, in UTF-16 units of at most 3 UTF-8 bytes) and the document says so (DISPLAY_CLIPPED):
# its hits read `_source` instead.
TITLE_VALUE = "title_value"
METADATA_VALUE = "metadata_value"
CHUNK_TEXT_VALUE = f"{CHUNKS}.text_value"
DISPLAY_CLIPPED = "display_clipped"
DISPLAY_VALUE_UNITS = 8191
EMBEDDING = f"{CHUNKS}.embedding"
# Every chunk's vector again, compact, as one doc value of the entity: per chunk its number (int32) and the
# vector as float16, little-endian, base64 in `_source` and in a hit's `fields`. A search asks for it with
# its hits, so vector feedback has the top results' vectors with the first answer and reads nothing more
# (docs/benchmarks.md#compact-feedback-vectors). An index made before it is searched as before.
FEEDBACK_VECTORS = "feedback_vectors"
TIER_FIELDS = tuple(f"{CHUNKS}.text_b{boost}" for boost in (3, 2, 1))  # order of Chunk.tiers
TIER_BOOSTS = (3, 2, 1)  # core.indexing.entity_types.BOOST_TIERS
PLAIN_SUBFIELD = "plain"  # unstemmed copy for prefix and fuzzy matching
CANDIDATE_FIELDS = (
    TENANT,
    DELETED,
    ENTITY_TYPE,
    ENTITY_ID,
    "title",
    SOURCE,
    OWNER,
    NAMESPACE,
    "created_at",
    "updated_at",
    METADATA_RAW,
)
# The same, as doc values (what a search reads of each hit; mapping.TITLE_VALUE says why).
CANDIDATE_VALUES = (
    TENANT,
    DELETED,
    ENTITY_TYPE,
    ENTITY_ID,
    TITLE_VALUE,
    SOURCE,
    OWNER,
    NAMESPACE,
    "created_at",
    "updated_at",
    METADATA_VALUE,
    DISPLAY_CLIPPED,
)

ENGINE = "lucene"
SPACE_TYPE = "cosinesimil"
# HNSW graph parameters: OpenSearch's defaults (k-NN docs, "Supported methods": m 16, ef_construction 100).
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 100
METADATA_KEYWORD_MAX = (
    2048  # longer `key=value` terms are stored but not indexed (Lucene term limit is 32 KB)
)
TEMPLATE_PRIORITY = 100  # above the default 0 so our template wins over catch-all templates
FIRST_GENERATION = 1
META_KEY = "quarry_model"  # mapping `_meta` key naming the model a reindexed generation was built with


def index_name(prefix: str, generation: int = FIRST_GENERATION) -> str:
    """The concrete index behind the alias: `<prefix>-v<generation>`."""
    return f"{prefix}-v{generation}"


def template_name(prefix: str) -> str:
    """Name of the index template covering every generation of the index."""
    return f"{prefix}-template"


def _keyword() -> dict[str, Any]:
    return {"type": "keyword"}


def _stored_only(kind: str, copy_to: str | None = None) -> dict[str, Any]:
    field: dict[str, Any] = {"type": kind, "index": False}
    if copy_to is not None:
        field["copy_to"] = copy_to
    return field


def _display_value() -> dict[str, Any]:
    """A doc value only (not searchable, not in `_source` unless written there)."""
    return {"type": "keyword", "index": False, "ignore_above": DISPLAY_VALUE_UNITS}


def _tier_field() -> dict[str, Any]:
    return {
        "type": "text",
        "analyzer": "english",
        "fields": {PLAIN_SUBFIELD: {"type": "text", "analyzer": "standard"}},
    }


def chunk_properties(dimension: int) -> dict[str, Any]:
    """Mapping of one nested chunk: number, display text, three text tiers, the vector."""
    properties: dict[str, Any] = {
        "chunk_no": {"type": "integer"},
        "text": _stored_only("text", copy_to=CHUNK_TEXT_VALUE),
        "text_value": _display_value(),
        "embedding": {
            "type": "knn_vector",
            "dimension": dimension,
            "method": {
                "name": "hnsw",
                "space_type": SPACE_TYPE,
                "engine": ENGINE,
                "parameters": {"m": HNSW_M, "ef_construction": HNSW_EF_CONSTRUCTION},
            },
        },
    }
    for field in TIER_FIELDS:
        properties[field.removeprefix(f"{CHUNKS}.")] = _tier_field()
    return properties


def mappings(dimension: int) -> dict[str, Any]:
    """The type mapping: strict, a fixed set of fields whatever the tenants' metadata keys.

    Metadata is filtered through ONE keyword field of `key=value` terms, so no tenant's keys become
    fields: none can exhaust `index.mapping.total_fields.limit` (1,000) nor block another's key
    (`a` as a keyword would refuse `a.b` as an object).
    """
    return {
        "dynamic": "strict",
        "properties": {
            TENANT: _keyword(),
            ENTITY_TYPE: _keyword(),
            ENTITY_ID: _keyword(),
            VERSION: {"type": "long"},
            DELETED: {"type": "boolean"},
            SOURCE: _keyword(),
            OWNER: _keyword(),
            NAMESPACE: _keyword(),
            "created_at": _keyword(),
            "updated_at": _keyword(),
            "title": _stored_only("text", copy_to=TITLE_VALUE),
            TITLE_VALUE: _display_value(),
            METADATA_VALUE: _display_value(),
            DISPLAY_CLIPPED: {"type": "boolean"},
            FEEDBACK_VECTORS: {"type": "binary", "doc_values": True},
            "content_hash": _stored_only("keyword"),
            "body": {"type": "object", "enabled": False},
            METADATA: {"type": "keyword", "ignore_above": METADATA_KEYWORD_MAX},
            METADATA_RAW: {"type": "object", "enabled": False},
            CHUNKS: {"type": "nested", "properties": chunk_properties(dimension)},
        },
    }


def settings(derived_source_setting: bool = False, layout: Layout | None = None) -> dict[str, Any]:
    """Index settings: k-NN on (required by the k-NN plugin for knn_vector fields), and the layout's
    shards, replicas and routing partition (layout.py).

    From OpenSearch 3.0 the k-NN plugin's derived source (`index.knn.derived_source.enabled`) is on by
    default: vectors leave `_source` and are rebuilt on read. A metadata update reads the stored document
    and writes it back whole, so it is pinned off where the setting exists (2.x refuses it as unknown).
    """
    index: dict[str, Any] = {"knn": True, **(layout or Layout()).index_settings()}
    if derived_source_setting:
        index["knn.derived_source.enabled"] = False
    return {"index": index}


def has_derived_source_setting(version_number: str) -> bool:
    """True for OpenSearch versions whose k-NN plugin knows `index.knn.derived_source.enabled` (3.x on)."""
    major = version_number.split(".", 1)[0]
    return major.isdigit() and int(major) >= 3


def template_body(
    prefix: str, dimension: int, derived_source_setting: bool = False, layout: Layout | None = None
) -> dict[str, Any]:
    """PUT _index_template/<prefix>-template: settings and mappings for every `<prefix>-v*` index."""
    layout = layout or Layout()
    return {
        "index_patterns": [f"{prefix}-v*"],
        "priority": TEMPLATE_PRIORITY,
        "template": {
            "settings": settings(derived_source_setting, layout),
            "mappings": {**layout.mapping(), **mappings(dimension)},
        },
        "_meta": {"managed_by": "quarry", "dimension": dimension},
    }


def create_index_body(
    prefix: str,
    dimension: int,
    derived_source_setting: bool = False,
    model: dict[str, Any] | None = None,
    layout: Layout | None = None,
) -> dict[str, Any]:
    """PUT <prefix>-v1: the same settings and mappings (explicit, so no template is needed) and the alias.

    With `model` (a reindexed generation: `quarry reindex` names the model that built it), the mapping's
    `_meta` records it and no alias is added: the reindex swaps the alias when the copy is complete."""
    layout = layout or Layout()
    body: dict[str, Any] = {
        "settings": settings(derived_source_setting, layout),
        "mappings": {**layout.mapping(), **mappings(dimension)},
    }
    if model is None:
        body["aliases"] = {prefix: {"is_write_index": True}}
    else:
        body["mappings"]["_meta"] = {META_KEY: {**model, "dimension": dimension}}
    return body


def index_model(live_mappings: dict[str, Any]) -> dict[str, Any] | None:
    """The model a reindexed generation records in its mapping `_meta` (model_dir, model_id, dimension), or
    None for an index built with the configured model."""
    meta = ((live_mappings.get("mappings") or {}).get("_meta") or {}).get(META_KEY)
    return dict(meta) if isinstance(meta, dict) and isinstance(meta.get("dimension"), int) else None


def has_display_values(live_mappings: dict[str, Any]) -> bool:
    """True when an index (its GET `_mapping` entry) keeps what results show in doc values; an index made
    before them is searched reading `_source`, as it was (a reindex brings them)."""
    properties = (live_mappings.get("mappings") or {}).get("properties") or {}
    return TITLE_VALUE in properties


def has_feedback_vectors(live_mappings: dict[str, Any]) -> bool:
    """True when an index (its GET `_mapping` entry) keeps the compact feedback vectors (FEEDBACK_VECTORS);
    an older one refuses the field (its mapping is strict) and its searches read the vectors by `_mget`."""
    properties = (live_mappings.get("mappings") or {}).get("properties") or {}
    return FEEDBACK_VECTORS in properties


def generation_of(prefix: str, name: str) -> int | None:
    """The generation number of `<prefix>-v<n>`, or None for another name."""
    head, _, number = name.rpartition("-v")
    return int(number) if head == prefix and number.isdigit() else None


def layout_problem(live_mappings: dict[str, Any], dimension: int) -> str | None:
    """Why an existing index (its GET `_mapping` entry) cannot take this adapter's documents, or None.

    A changed embedding model (another dimension) or an index from an older layout would otherwise fail
    every write with a 400 and every vector search: both need a new index generation and a reindex.
    """
    properties = (live_mappings.get("mappings") or {}).get("properties") or {}
    chunk = ((properties.get(CHUNKS) or {}).get("properties") or {}).get("embedding") or {}
    live = chunk.get("dimension")
    if live != dimension:
        return f"its vectors have {live} dimensions, the embedder makes {dimension}"
    if (properties.get(METADATA) or {}).get("type") != "keyword":
        return f"it predates the `{METADATA}` field (an older index layout)"
    return None
