"""How long `quarry reindex` takes on OpenSearch: ingest synthetic memories into a fresh alias on a live
node, reindex them to a model folder (by default the packaged all-MiniLM-L6-v2 itself: same model, so
the time is the copy's: scroll, re-embed, bulk, catch up, swap), print the service's report, delete the
indices.

    QUARRY_OPENSEARCH_URL=http://127.0.0.1:9200 .venv/bin/python bench/reindex_speed.py [--entities 1000]
    QUARRY_OPENSEARCH_URL=... .venv/bin/python bench/reindex_speed.py --smoke   # 20 entities
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")

INGEST_BATCH = 200  # entities per bulk call while seeding


def main(argv: Sequence[str] | None = None) -> None:
    """Seed, reindex, report, clean up."""
    from infra.config.settings import load_settings
    from infra.local.onnx.embedder import default_model_dir
    from infra.opensearch import build_client, mapping
    from infra.text_models.model_switch import reindex_store
    from infra.wiring.root import Container

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entities", type=int, default=1000)
    parser.add_argument("--model-dir", default=str(default_model_dir()))
    parser.add_argument("--smoke", action="store_true", help="20 entities")
    args = parser.parse_args(argv)
    if args.smoke:
        args.entities = 20
    url = os.environ.get("QUARRY_OPENSEARCH_URL", "http://127.0.0.1:9200")
    prefix = f"quarry-bench-{uuid.uuid4().hex[:8]}"
    data = Path(tempfile.mkdtemp(prefix="quarry-reindex-bench-"))
    c = Container(
        load_settings(data_dir=data, index="opensearch", opensearch_url=url, opensearch_index_prefix=prefix)
    )
    items = [
        {
            "type": "memory",
            "id": f"m{i}",
            "content": f"note {i} on harbor cranes, berth {i % 13}, ship {i % 41}",
        }
        for i in range(args.entities)
    ]
    try:
        started = time.perf_counter()
        for start in range(0, len(items), INGEST_BATCH):
            c.indexing.bulk("bench", items[start : start + INGEST_BATCH], 0.0)
        print(f"ingested {len(items)} entities in {time.perf_counter() - started:.1f} s")
        report = reindex_store(c, args.model_dir, settle_seconds=0)
        print(json.dumps(report))
        print(f"{report['documents'] / report['took_s']:.1f} documents/s re-embedded and copied")
    finally:
        shutil.rmtree(data, ignore_errors=True)
        client = build_client(url)
        for generation in (1, 2):
            client.indices.delete(index=mapping.index_name(prefix, generation), ignore=404)
        client.indices.delete_index_template(name=mapping.template_name(prefix), ignore=404)


if __name__ == "__main__":
    main()
