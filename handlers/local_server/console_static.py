"""The browser console's static files (handlers/local_server/console/), served by the local server at `/` without a
bearer token: the page holds no data, every API call it makes carries the user's key. Only `quarry
serve` serves them; the Lambda handler never does (a deployment hosts the files where it likes).

Every answer carries a Content-Security-Policy that allows the console's own files and nothing else: no
inline script or style, no other origin, no framing."""

from __future__ import annotations

from importlib import resources
from urllib.parse import urlsplit

PREFIX = "/console/"
TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".png": "image/png",
    ".svg": "image/svg+xml",
}
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-cache",
}


def is_console_path(target: str) -> bool:
    """Whether a request target names the console (`/`, `/console`, `/console/...`)."""
    path = urlsplit(target).path
    return path in ("/", "/console", "/index.html") or path.startswith(PREFIX)


def console_file(target: str) -> tuple[int, bytes, dict[str, str]]:
    """Status, body and headers for a console path: the file, or a plain 404 for anything else."""
    path = urlsplit(target).path
    name = "index.html" if path in ("/", "/console", "/index.html", PREFIX) else path[len(PREFIX) :]
    suffix = name[name.rfind(".") :] if "." in name else ""
    root = resources.files("handlers.local_server") / "console"
    # Only plain names in the folder itself: no `..`, no subfolders, no hidden files, known types only.
    if "/" in name or name.startswith(".") or suffix not in TYPES or not (root / name).is_file():
        return 404, b"not found\n", {"Content-Type": "text/plain; charset=utf-8", **HEADERS}
    return 200, (root / name).read_bytes(), {"Content-Type": TYPES[suffix], **HEADERS}
