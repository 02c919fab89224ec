"""`quarry reindex`: re-embed what is stored with another model folder, searches answering throughout
(the embedded data file, one tenant of it, or the OpenSearch index behind its alias; infra/text_models/model_switch.py)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from handlers.cli.governance_commands import DATA_DIR_HELP, command_container


def cmd_reindex(args: argparse.Namespace) -> int:
    """Switch the configured index (or one tenant) to the model in --model-dir; print what was done."""
    from infra.text_models.model_switch import reindex_store

    c = command_container(args.data_dir)
    print(json.dumps(reindex_store(c, args.model_dir, args.tenant, args.settle_seconds)))
    return 0


def register(sub: Any) -> None:
    """Add the `reindex` subcommand."""
    r = sub.add_parser("reindex", help="re-embed every entity with another model folder (no downtime)")
    r.add_argument("--model-dir", required=True, help="a BERT-family sentence-transformers folder")
    r.add_argument(
        "--tenant",
        default=None,
        help="re-embed only this tenant (embedded backend; the others keep their model)",
    )
    r.add_argument(
        "--settle-seconds",
        type=float,
        default=30.0,
        help="wait this long after the swap, then re-embed what was written meanwhile (default 30)",
    )
    r.add_argument("--data-dir", default=argparse.SUPPRESS, help=DATA_DIR_HELP)
    r.set_defaults(func=cmd_reindex)
