"""The local API key of a data directory: generated once, kept in `<data dir>/local-api-key` (mode 0600),
so `quarry serve` and `quarry mcp --transport http` over the same data accept the same key across
restarts (an exported key, a browser tab's console and an agent's configuration keep working). Used only
when QUARRY_API_KEYS is not set."""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from core.errors import ConfigurationError

KEY_FILE = "local-api-key"
KEY_PREFIX = "qk_"
KEY_BYTES = 24  # 192 bits, URL-safe: far beyond guessing, short enough to paste
PRIVATE = 0o600
ALL_SCOPES = ["read", "write", "admin"]
DEV_TENANT = "dev"
CONFIGURED_KEY_HINT = "must be 'Bearer <key>' with a key from QUARRY_API_KEYS"


def key_path(data_dir: Path) -> Path:
    """Where a data directory keeps its local key."""
    return data_dir / KEY_FILE


def local_key(data_dir: Path) -> str:
    """The data directory's key, made on first use. Two processes starting at once agree on one key: each
    writes its candidate to a private temporary file and links it into place, which only the first does."""
    path = key_path(data_dir)
    if not path.exists():
        data_dir.mkdir(parents=True, exist_ok=True)
        candidate = path.with_name(f".{KEY_FILE}.{os.getpid()}.{secrets.token_hex(4)}")
        fd = os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE)
        try:
            with os.fdopen(fd, "w") as handle:
                handle.write(KEY_PREFIX + secrets.token_urlsafe(KEY_BYTES) + "\n")
            with contextlib.suppress(FileExistsError):  # another process made the key first: use its key
                os.link(candidate, path)
        finally:
            candidate.unlink()
    return _read(path)


def _read(path: Path) -> str:
    """The key in `path`, the file made private if it was not (a refused file names what to do)."""
    if stat.S_IMODE(path.stat().st_mode) & 0o077:
        os.chmod(path, PRIVATE)
    key = path.read_text(encoding="utf-8", errors="replace").strip()
    if not key or any(c.isspace() for c in key):
        problem = f"{path} holds no usable key (delete the file and a new key is made at the next start)"
        raise ConfigurationError(
            f"invalid configuration: QUARRY_DATA_DIR: {problem}", {"QUARRY_DATA_DIR": problem}
        )
    return key


def local_keys(configured: Mapping[str, Any], data_dir: Path) -> tuple[dict[str, Any], str | None]:
    """The keys a local server accepts: QUARRY_API_KEYS when set, else the data directory's key for tenant
    `dev` with every scope (returned second, to print)."""
    if configured:
        return dict(configured), None
    key = local_key(data_dir)
    return {key: {"tenant": DEV_TENANT, "scopes": ALL_SCOPES}}, key


def key_hint(configured: Mapping[str, Any], data_dir: Path) -> str:
    """What a 401 says about where the key comes from."""
    if configured:
        return CONFIGURED_KEY_HINT
    return f"must be 'Bearer <key>' with the local key the server printed at start (kept in {key_path(data_dir)})"


def print_key(keys: dict[str, Any], local: str | None, data_dir: Path, url: str, file: Any = None) -> None:
    """Say which key the server accepts: the data directory's local key (the same at every start), or
    the number of QUARRY_API_KEYS entries."""
    out = file or sys.stdout
    if local is None:
        print(f"Accepting {len(keys)} key(s) from QUARRY_API_KEYS", file=out, flush=True)
        return
    print(f"Local API key (tenant 'dev', scopes read/write/admin; kept in {key_path(data_dir)}):", file=out)
    print(
        f'  export QUARRY_KEY={local}; curl -H "Authorization: Bearer $QUARRY_KEY" {url}',
        file=out,
        flush=True,
    )
