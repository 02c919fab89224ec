"""Where Quarry's API spells a concept of the specifications it started from (docs/conformance.md#spellings)
differently, and what a request in their spelling is told.

Quarry keeps one spelling per concept (snake_case fields, no `/api` prefix, string assembly ids). A request in
a specification's spelling is refused with a 400 (or 404 for a path) whose message names Quarry's form, rather
than silently accepted under a second name or answered "is not a known field".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

# Body fields and query parameters of the specifications → (Quarry's name, or None when it has none;
# what to say).
SEED_SPELLINGS: Mapping[str, tuple[str | None, str]] = {
    # The role-overlay retrieval API's request: retrieve({roleId, taskText, overlay, packetContextSummary,
    # lexicalOnly, embeddingModel, ollamaUrl, store})
    "roleId": ("role_id", "use `role_id`"),
    "taskText": ("task_text", "use `task_text`"),
    "packetContextSummary": ("context_summary", "use `context_summary`"),
    "lexicalOnly": ("lexical_only", "use `lexical_only`"),
    "embeddingModel": (
        None,
        "is not a request field: the deployment's embedder is configured (QUARRY_EMBEDDER_MODEL_DIR; "
        "`quarry reindex` moves stored vectors to another model)",
    ),
    "ollamaUrl": (
        None,
        "is not a request field: Quarry embeds with its own configured model, no Ollama server",
    ),
    "store": (None, "is not a request field: the corpus is the tenant's (load it with POST /corpus)"),
    # The context-assembly module's assemble body and GET /log's query
    "mission_namespace": ("namespace", "use `namespace`"),
    "offset": (
        "cursor",
        "use `cursor`: pass back the previous page's `next_cursor` (pages are keyset, so writes between pages "
        "never shift one)",
    ),
}
# Other engines' spellings of what Quarry names once (the README's table "Coming from another engine"):
# a body field spelled so is told Quarry's name. Only a field a route does not know reaches this, so
# `embedding`, a write's field, is hinted only where it is unknown (a search, an assembly).
NEAR_MISSES: Mapping[str, str] = {
    "embedding": "a search takes its own vector as `query_vector` (`embedding` is a write's field)",
    "vector": "use `query_vector` on a search, `embedding` on a write",
    "query_embedding": "use `query_vector`",
    "knn": "use `query_vector` with `strategy: semantic`",
    "q": "use `query`",
    "filter": "use `filters`",
    "top_k": "use `limit`",
    "k": "use `limit`",
    "size": "use `limit`",
    "score_threshold": "use `min_score`",
    "with_payload": "use `return_fields`",
    "_source": "use `return_fields`",
    "attributesToRetrieve": "use `return_fields`",
}
# The context-assembly module and the search data flow mount their routes under /api
# (docs/conformance.md#api-prefix).
SEED_PATH_PREFIX = "/api"
# The context-assembly module's assembly_id is an integer > 0, and 0 marks an unlogged assembly
# (docs/conformance.md#assembly-ids).
INTEGER_ASSEMBLY_ID = (
    "must be the string `assembly_id` that POST /context/assemble returned (integer assembly ids are not "
    "Quarry's; an unlogged assembly answers `assembly_id: null`, not 0)"
)


def seed_spelling(name: str, known: Iterable[str] | None = None) -> str | None:
    """What to tell a request that used a specification's `name` for a field or parameter (when Quarry's
    form is among `known`, if given), or None."""
    found = SEED_SPELLINGS.get(name)
    if found is None or (known is not None and found[0] is not None and found[0] not in known):
        return None
    return found[1]


def field_hint(name: str) -> str | None:
    """What to tell a body that used an unknown field `name`: Quarry's form of a specification's or
    another engine's spelling, or None."""
    return seed_spelling(name) or NEAR_MISSES.get(name)


def unknown_parameters(given: Iterable[str], allowed: Iterable[str]) -> dict[str, str]:
    """{parameter: message} for each query parameter a route does not take (a specification's spelling
    named)."""
    known = set(allowed)
    takes = "it takes " + ", ".join(sorted(known)) if known else "it takes none"
    return {
        name: seed_spelling(name, known) or f"is not a parameter of this route; {takes}"
        for name in given
        if name not in known
    }


def unprefixed(path: str) -> str | None:
    """The path without the specifications' `/api` prefix, or None when it has none."""
    if path.startswith(SEED_PATH_PREFIX + "/"):
        return path[len(SEED_PATH_PREFIX) :]
    return None
