"""`quarry reindex`: re-embed the local data file with another model folder, searches answering throughout."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import Any

from core.cache_key import generation_key
from core.errors import InvalidInputError
from handlers.cli_governance import DATA_DIR_HELP


def cmd_reindex(args: argparse.Namespace) -> int:
    """Shadow-embed every chunk with the new model, swap vectors and model at once, then settle."""
    from infra.local.embedder import LocalEmbedder
    from infra.local.reindex import SqliteReindexer, reindex
    from infra.wiring import container

    c = container(data_dir=args.data_dir) if args.data_dir else container()
    if c.settings.index_kind != "sqlite":
        raise InvalidInputError(
            "quarry reindex works on the embedded (SQLite) index; on OpenSearch it is not built yet",
            {"QUARRY_INDEX": "must be sqlite for quarry reindex"},
        )
    folder = Path(args.model_dir).resolve()
    if not folder.is_dir():
        raise InvalidInputError(f"no model folder at {folder}", {"--model-dir": "must be a directory"})
    s = c.settings
    embedder = LocalEmbedder(
        folder, threads=s.embedder_threads, runtime=s.embedder_runtime, cache_dir=s.embedder_cache_dir
    )
    reindexer = SqliteReindexer(c.settings.sqlite_path, c.registry, tenant=args.tenant)
    if not reindexer.has_tenant():
        reindexer.close()
        raise InvalidInputError(
            f"tenant {args.tenant!r} has nothing indexed in {c.settings.sqlite_path}",
            {"--tenant": "must name a tenant with indexed entities"},
        )

    def invalidate() -> None:
        for tenant in reindexer.tenants():
            c.cache.incr(generation_key(tenant))  # cached searches and page cursors of the old model

    try:
        report = reindex(reindexer, embedder, str(folder), args.settle_seconds, on_swap=invalidate)
        invalidate()
    finally:
        reindexer.close()
    print(json.dumps(dataclasses.asdict(report)))
    return 0


def register(sub: Any) -> None:
    """Add the `reindex` subcommand."""
    r = sub.add_parser("reindex", help="re-embed every entity with another model folder (no downtime)")
    r.add_argument("--model-dir", required=True, help="a BERT-family sentence-transformers folder")
    r.add_argument(
        "--tenant",
        default=None,
        help="re-embed only this tenant (embedded backend; other tenants keep their model)",
    )
    r.add_argument(
        "--settle-seconds",
        type=float,
        default=30.0,
        help="wait this long after the swap, then re-embed chunks written meanwhile (default 30)",
    )
    r.add_argument("--data-dir", default=argparse.SUPPRESS, help=DATA_DIR_HELP)
    r.set_defaults(func=cmd_reindex)
