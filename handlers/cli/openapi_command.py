"""`quarry openapi`: print (or write) this deployment's OpenAPI document, as GET /openapi.json serves it,
without a server: what client generators read (clients/python/openapi.json is written with it)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from handlers.cli.governance_commands import DATA_DIR_HELP, command_container


def cmd_openapi(args: argparse.Namespace) -> int:
    """Print the document, or write it to `--write FILE` (sorted keys, so a diff shows what changed)."""
    from handlers.lambda_functions.api import published_openapi

    c = command_container(args.data_dir)
    text = json.dumps(published_openapi(c), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    if args.write:
        Path(args.write).write_text(text, encoding="utf-8")
        print(args.write)
    else:
        print(text, end="")
    return 0


def register(sub: Any) -> None:
    """Add the `openapi` subcommand."""
    o = sub.add_parser("openapi", help="print this deployment's OpenAPI document (what /openapi.json serves)")
    o.add_argument("--write", metavar="FILE", default=None, help="write it to FILE instead")
    o.add_argument("--data-dir", default=argparse.SUPPRESS, help=DATA_DIR_HELP)
    o.set_defaults(func=cmd_openapi)
