"""The index lifecycle, a part of OpenSearchIndex: create the template, the first index and its alias on first use,
check an existing index's layout on a cold start (and write nothing), drop an index (evaluation, tests),
and follow a `quarry reindex`: the generation behind the alias records the model that built it (mapping
`_meta`), which this process adopts (its dimension here, its folder for the SwitchingEmbedder)."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import Any

from core.errors import ConfigurationError, QuarryError
from infra.opensearch import mapping
from infra.opensearch.errors import error_parts, translated
from infra.opensearch.layout import Layout, is_routed

_RESOURCE_EXISTS = "resource_already_exists_exception"
_log = logging.getLogger(__name__)


class IndexLifecycle:
    """The part of OpenSearchIndex that knows the live generation behind the alias (see module docstring);
    the other parts ask it, never read its fields."""

    def __init__(
        self,
        client: Any,
        dimension: int,
        prefix: str,
        layout: Layout,
        auto_create: bool,
        model_check_seconds: float,
        monotonic: Callable[[], float],
    ) -> None:
        """`layout`: of the generations this process creates; `auto_create`: create the index on the first
        write (else it must exist); `model_check_seconds`: how often the live generation's model is read."""
        self._client = client
        self._prefix = prefix
        self._alias = prefix
        self._dimension = dimension
        self._layout = layout
        self._ready = not auto_create
        self._model_dir: str | None = None  # the model folder of the live generation (None: the configured)
        self._live_index: str | None = None  # the concrete index behind the alias when last checked
        self._model_checked = -math.inf  # monotonic time of that check
        self._model_check_seconds = model_check_seconds
        self._monotonic = monotonic
        # The live index keeps what results show in doc values (mapping.TITLE_VALUE): one this adapter
        # creates has them; an older one is read in _adopt.
        self._display_values = True
        self._feedback_vectors = True  # likewise the compact feedback vectors (mapping.FEEDBACK_VECTORS)
        self._routed = layout.routed  # the live index requires routing by tenant, once read (_adopt)

    @property
    def alias(self) -> str:
        """The alias every read and write goes through."""
        return self._alias

    @property
    def layout(self) -> Layout:
        """The layout of the index generations this adapter creates."""
        return self._layout

    @property
    def dimension(self) -> int:
        """The vector dimension of the live generation (the configured one until it is read)."""
        return self._dimension

    @property
    def display_values(self) -> bool:
        """The live index keeps what results show in doc values (mapping.TITLE_VALUE)."""
        return self._display_values

    @property
    def feedback_vectors(self) -> bool:
        """The live index keeps each entity's compact chunk vectors (mapping.FEEDBACK_VECTORS)."""
        return self._feedback_vectors

    @property
    def routed(self) -> bool:
        """The live index requires routing by tenant (layout.py)."""
        return self._routed

    @property
    def live_index(self) -> str | None:
        """The concrete index behind the alias when last checked (None: not read yet)."""
        return self._live_index

    def route(self, tenant_id: str) -> str | None:
        """The routing value of the tenant's requests: the tenant on a routed index (layout.py), else none
        (an existing index is read first: one made before routing is read and written without it)."""
        self.ensure_for_reads()
        return tenant_id if self._routed else None

    def ensure_for_writes(self) -> None:
        """Before a write: the index exists (created on first use)."""
        if not self._ready:
            self.ensure_index()

    def live_model_dir(self) -> str | None:
        """The model folder the generation behind the alias was built with (None: the configured model),
        read again at most every `model_check_seconds`; a failed read keeps the last answer."""
        if self._monotonic() - self._model_checked < self._model_check_seconds:
            return self._model_dir
        from opensearchpy.exceptions import NotFoundError

        try:
            with translated():
                try:
                    live = self._client.indices.get_mapping(index=self._alias)
                except NotFoundError:
                    live = {}  # nothing indexed yet: the configured model
        except QuarryError as exc:
            _log.warning("cannot read the live index's model, keeping %s: %s", self._model_dir, exc)
            return self._model_dir
        self._adopt(live)
        return self._model_dir

    def recheck_model(self) -> None:
        """Read the live generation's model on the next call (a hit came from another index, or a vector
        of another dimension was seen: a reindex may have swapped the alias)."""
        self._model_checked = -math.inf

    def _adopt(self, live: dict[str, Any]) -> None:
        """Take the dimension and model of the generation behind the alias (one index, as a swap leaves it)."""
        for name, entry in live.items():
            model = mapping.index_model(entry)
            self._live_index = name
            self._display_values = mapping.has_display_values(entry)
            self._feedback_vectors = mapping.has_feedback_vectors(entry)
            self._routed = is_routed(entry)
            if model is not None:
                self._dimension = int(model["dimension"])
                self._model_dir = model.get("model_dir")
        self._model_checked = self._monotonic()

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
                body=mapping.template_body(self._prefix, self._dimension, pin, self._layout),
            )
        created = self._create_first_index(pin)
        if created:
            self._routed, self._display_values = self._layout.routed, True
            self._feedback_vectors = True
        else:
            # another process created it, maybe with another layout: adopt that
            self._check_layout(mapping.index_name(self._prefix))
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

    def _check_layout(self, index: str | None = None) -> None:
        with translated():
            live = self._client.indices.get_mapping(index=index or self._alias)
        self._adopt(live)  # a reindexed generation names its model: its dimension is the one to check
        for name, entry in live.items():
            problem = mapping.layout_problem(entry, self._dimension)
            if problem is not None:
                message = (
                    f"index {name} (alias {self._alias}) cannot be used: {problem}; create a new index "
                    "generation and reindex, or restore the embedder it was built with"
                )
                raise ConfigurationError(message, {"QUARRY_OPENSEARCH_INDEX_PREFIX": message})

    def ensure_for_reads(self) -> None:
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
                    body=mapping.create_index_body(
                        self._prefix, self._dimension, derived_source_setting, layout=self._layout
                    ),
                )
            except RequestError as exc:
                if error_parts(exc.info)[0] == _RESOURCE_EXISTS:
                    return False  # another container won the race: same index, same alias
                raise
        return True
