"""`quarry mcp`: serve the MCP tools over stdio (default) or streamable HTTP."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from typing import Any

from core.errors import InvalidInputError
from handlers.cli.governance_commands import DATA_DIR_HELP, command_container
from handlers.http_api.auth import Principal

MCP_KEY_VARIABLE = "QUARRY_MCP_KEY"


def stdio_principal(keys: Mapping[str, Mapping[str, Any]], key: str | None) -> Principal:
    """Who a stdio server acts as: the QUARRY_API_KEYS entry named by `key` (--key / QUARRY_MCP_KEY).

    With no keys configured at all (a local, single-user setup) it is tenant `dev` with every scope,
    like `quarry serve`'s fresh key; with keys configured a key must be named, and must be one of them.
    """
    from handlers.local_server.local_key import ALL_SCOPES, DEV_TENANT
    from handlers.mcp.server import grant_principal

    if key is None:
        if keys:
            raise InvalidInputError(
                f"invalid configuration: {MCP_KEY_VARIABLE} must name one of QUARRY_API_KEYS for stdio",
                {MCP_KEY_VARIABLE: "is required when QUARRY_API_KEYS is set"},
            )
        return Principal(DEV_TENANT, frozenset(ALL_SCOPES))
    grant = keys.get(key)
    if grant is None:
        raise InvalidInputError(
            f"invalid configuration: {MCP_KEY_VARIABLE} is not a key of QUARRY_API_KEYS",
            {MCP_KEY_VARIABLE: "must be one of the keys of QUARRY_API_KEYS"},
        )
    return grant_principal(grant)


def cmd_mcp(args: argparse.Namespace) -> int:
    """Run the MCP server until the client disconnects (stdio) or until interrupted (http)."""
    os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    from handlers.local_server.local_key import key_hint, local_keys, print_key
    from handlers.mcp.server import Gate, build_server

    c = command_container(args.data_dir)
    c.check()  # a wrong or missing setting stops here, naming the variable (exit 2), as `quarry serve`
    if args.transport == "stdio":
        gate = Gate(c.settings.api_keys, stdio_principal(c.settings.api_keys, args.key or c.settings.mcp_key))
        build_server(lambda: c, gate).run("stdio")
        return 0
    from handlers.mcp.http import serve_http

    keys, local = local_keys(c.settings.api_keys, c.settings.data_dir)  # the key `quarry serve` prints
    gate = Gate(keys, None, key_hint(c.settings.api_keys, c.settings.data_dir))
    url = f"http://{args.host}:{args.port}/mcp"
    print(f"Quarry MCP (streamable HTTP) on {url}", file=sys.stderr, flush=True)
    print_key(keys, local, c.settings.data_dir, url, file=sys.stderr)
    serve_http(build_server(lambda: c, gate), gate, args.host, args.port)
    return 0


def register(sub: Any) -> None:
    """Add the `mcp` subcommand."""
    m = sub.add_parser("mcp", help="serve the MCP tools (stdio for local agents, or streamable HTTP)")
    m.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    m.add_argument(
        "--key", default=None, help=f"stdio: act as this QUARRY_API_KEYS key (default {MCP_KEY_VARIABLE})"
    )
    m.add_argument("--host", default="127.0.0.1")
    m.add_argument("--port", type=int, default=3001)
    m.add_argument("--data-dir", default=argparse.SUPPRESS, help=DATA_DIR_HELP)
    m.set_defaults(func=cmd_mcp)
