"""The index lifecycle of OpenSearchIndex: create the template, the first index and its alias on first use,
check an existing index's layout on a cold start (and write nothing), drop an index (evaluation, tests)."""

from __future__ import annotations

from typing import Any

from core.errors import ConfigurationError
from infra.opensearch import mapping
from infra.opensearch.errors import error_parts, translated

_RESOURCE_EXISTS = "resource_already_exists_exception"


class IndexLifecycle:
    """Mixed into OpenSearchIndex, whose constructor sets these attributes."""

    _client: Any
    _alias: str
    _prefix: str
    _dimension: int
    _ready: bool

    def ensure_index(self) -> bool:
        """Check the live index, or create the template, the first index and its alias; True when created.

        A cold start on an existing index costs two reads (alias, mapping) and writes nothing; an index
        whose vector dimension differs from the embedder's is refused here, naming both (a server-side
        misconfiguration: a logged 500, never the caller's 400).
        """
        with translated():
            exists = self._client.indices.exists_alias(name=self._alias)
        if exists:
            self._check_layout()
            self._ready = True
            return False
        with translated():
            version = str(((self._client.info() or {}).get("version") or {}).get("number") or "")
            pin = mapping.has_derived_source_setting(version)
            self._client.indices.put_index_template(
                name=mapping.template_name(self._prefix),
                body=mapping.template_body(self._prefix, self._dimension, pin),
            )
        created = self._create_first_index(pin)
        self._ready = True
        return created

    def drop(self) -> None:
        """Delete every index generation behind the alias, and the template (evaluation and test indices)."""
        with translated():
            if self._client.indices.exists_alias(name=self._alias):
                for name in self._client.indices.get_alias(name=self._alias):
                    self._client.indices.delete(index=name)
            self._client.indices.delete_index_template(name=mapping.template_name(self._prefix), ignore=404)
        self._ready = False

    def _check_layout(self) -> None:
        with translated():
            live = self._client.indices.get_mapping(index=self._alias)
        for name, entry in live.items():
            problem = mapping.layout_problem(entry, self._dimension)
            if problem is not None:
                message = (
                    f"index {name} (alias {self._alias}) cannot be used: {problem}; create a new index "
                    "generation and reindex, or restore the embedder it was built with"
                )
                raise ConfigurationError(message, {"QUARRY_OPENSEARCH_INDEX_PREFIX": message})

    def _ensure_for_reads(self) -> None:
        """Before the first search: check an existing index's layout (a missing one reads as empty)."""
        if self._ready:
            return
        with translated():
            exists = self._client.indices.exists_alias(name=self._alias)
        if exists:
            self._check_layout()
            self._ready = True

    def _create_first_index(self, derived_source_setting: bool) -> bool:
        from opensearchpy.exceptions import RequestError

        with translated():
            try:
                self._client.indices.create(
                    index=mapping.index_name(self._prefix),
                    body=mapping.create_index_body(self._prefix, self._dimension, derived_source_setting),
                )
            except RequestError as exc:
                if error_parts(exc.info)[0] == _RESOURCE_EXISTS:
                    return False  # another container won the race: same index, same alias
                raise
        return True
