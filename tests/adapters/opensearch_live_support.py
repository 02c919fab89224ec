"""A fresh index on the live node for one test: `quarry-test-<random>-v1` behind alias `quarry-test-<random>`,
deleted afterwards with its template. Writes refresh at once (`refresh=true`), so a test sees them."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from infra.config.settings import load_settings
from infra.opensearch import OpenSearchIndex, build_client, build_opensearch_index, mapping


def live_client(url: str) -> Any:
    settings = load_settings()
    return build_client(
        url,
        region=settings.opensearch_region,
        service=settings.opensearch_service,
        timeout=settings.opensearch_timeout,
        max_retries=settings.opensearch_max_retries,
    )


@contextmanager
def fresh_live_index(client: Any, dimension: int, **options: Any) -> Iterator[OpenSearchIndex]:
    prefix = f"quarry-test-{uuid.uuid4().hex[:10]}"
    index = build_opensearch_index(client, dimension=dimension, prefix=prefix, refresh=True, **options)
    index.ensure_index()
    try:
        yield index
    finally:
        for generation in (1, 2):  # by name: wildcard deletes may be refused (destructive_requires_name)
            client.indices.delete(index=mapping.index_name(prefix, generation), ignore=404)
        client.indices.delete_index_template(name=mapping.template_name(prefix), ignore=404)
