"""The CLI as a client of a running `quarry serve`: `quarry search` and `quarry embed` send their request
to the server over the same data directory when one is running (its model is loaded already: an answer
in milliseconds, not the seconds a process takes to load it), and `quarry demo` loads the demo corpus.

A server says where it listens in `<data dir>/server-url` while it runs; `--url` names another one. The
local key of the data directory (handlers/local_server/local_key.py) authenticates, as for any client. Without a
server (or a key) the command runs in-process and says it is loading the model.
"""

from __future__ import annotations

import contextlib
import json
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from handlers.local_server.local_key import key_path

URL_FILE = "server-url"
HEALTH_TIMEOUT_SECONDS = 1.0  # a server on loopback answers /health in milliseconds; a stale file, never
REQUEST_TIMEOUT_SECONDS = 60.0  # the first search of a fresh server loads the model (a few seconds)


def url_path(data_dir: Path) -> Path:
    """Where a running server over `data_dir` writes its URL."""
    return data_dir / URL_FILE


def announce(data_dir: Path, url: str) -> None:
    """Record that a server over `data_dir` listens at `url` (read by the CLI's client commands)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    url_path(data_dir).write_text(url + "\n", encoding="utf-8")


def withdraw(data_dir: Path, url: str) -> None:
    """Remove the record when it is still this server's (another server may have started since)."""
    path = url_path(data_dir)
    with contextlib.suppress(OSError):
        if path.read_text(encoding="utf-8").strip() == url:
            path.unlink()


class Server:
    """A running Quarry API and the key to call it with."""

    def __init__(self, url: str, key: str) -> None:
        self.url = url.rstrip("/")
        self.key = key

    def post(self, path: str, body: Any) -> tuple[int, Any]:
        """POST a JSON body; (status, parsed answer)."""
        request = urllib.request.Request(
            self.url + path,
            data=json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {self.key}", "Content-Type": "application/json"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_SECONDS) as answer:  # noqa: S310
                return answer.status, json.loads(answer.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read() or b"null")


def _alive(url: str) -> bool:
    try:
        with urllib.request.urlopen(url.rstrip("/") + "/health", timeout=HEALTH_TIMEOUT_SECONDS) as answer:  # noqa: S310
            return bool(answer.status == 200)
    except (OSError, ValueError):
        return False


def running_server(data_dir: Path, url: str | None) -> tuple[Server | None, str]:
    """The server to send requests to (`url`, else the one over `data_dir`), or None and why not."""
    if url is None:
        try:
            url = url_path(data_dir).read_text(encoding="utf-8").strip()
        except OSError:
            return None, f"no server is running over {data_dir} (`quarry serve` writes {url_path(data_dir)})"
    if not _alive(url):
        return None, f"no server answers at {url}"
    try:
        key = key_path(data_dir).read_text(encoding="utf-8").strip()
    except OSError:
        return None, f"no local key in {key_path(data_dir)} (a server with QUARRY_API_KEYS is not used)"
    return Server(url, key), ""


def say_in_process(why: str) -> None:
    """Tell the user the command runs without a server, and what that costs."""
    print(f"{why}: loading the model in this process (a few seconds)…", file=sys.stderr, flush=True)


def answer_or_raise(status: int, body: Any) -> Any:
    """A server's answer, or its error as the CLI prints errors (exit 2)."""
    if status == 200:
        return body
    from core.errors import InvalidInputError, QuarryError

    error = (body or {}).get("error", {}) if isinstance(body, dict) else {}
    message = f"the server answered {status}: {error.get('message', body)}"
    if status == 400:
        raise InvalidInputError(message, error.get("fields"))
    raise QuarryError(message)


DEMO_DIR = Path(__file__).resolve().parents[2] / "demo"  # the repository's demo corpus (demo/README.md)
DEMO_ENTITIES = DEMO_DIR / "entities.jsonl"


def demo_items() -> list[dict[str, Any]]:
    """The demo corpus: one bulk item a line."""
    lines = DEMO_ENTITIES.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def cmd_demo(args: Any) -> int:
    """Load the demo corpus into the running server (else into the data directory); print the report.
    Every item carries version 1, so loading again changes nothing (`duplicate`)."""
    from handlers.cli.main import data_dir_of

    items = demo_items()
    server, why = running_server(data_dir_of(args.data_dir), args.url)
    if server is not None:
        report = answer_or_raise(*server.post("/entities", {"items": items}))
        where = server.url
    else:
        say_in_process(why)
        from handlers.cli.governance_commands import command_container

        c = command_container(args.data_dir)
        with c.gate.unit(args.tenant):
            done = c.indexing.bulk(args.tenant, items, c.clock.now())
        report = {"indexed": done.indexed, "skipped_stale": done.skipped_stale, "errors": done.errors}
        where = str(c.settings.data_dir)
    print(json.dumps({"loaded_into": where, "items": len(items), **report}))
    return 1 if report.get("errors") else 0


def cmd_embed(args: Any) -> int:
    """Print each text's vector as a JSON array, one line per text (for `query_vector` or `embedding`)."""
    from handlers.cli.main import data_dir_of

    body = {"texts": args.texts, "kind": args.kind}
    server, why = running_server(data_dir_of(args.data_dir), args.url)
    if server is not None:
        answer = answer_or_raise(*server.post("/embed", body))
    else:
        say_in_process(why)
        from core.search.embedding import EmbedRequest
        from handlers.cli.governance_commands import command_container

        c = command_container(args.data_dir)
        answer = c.embedding.embed(args.tenant, EmbedRequest.model_validate(body)).model_dump()
    for vector in answer["vectors"]:
        print(json.dumps(vector))
    return 0


def register(sub: Any, data_dir_help: str) -> None:
    """Add the `embed` and `demo` subcommands."""
    import argparse

    e = sub.add_parser("embed", help="print the deployment's vector of each text (one JSON array a line)")
    e.add_argument("texts", nargs="+", metavar="TEXT")
    e.add_argument(
        "--kind",
        choices=["query", "passage"],
        default="query",
        help="query: for a search's query_vector (default); passage: for a write's embedding",
    )
    e.add_argument("--tenant", default="dev", help="without a server: whose model (default dev)")
    e.add_argument("--url", default=None, help="the server to ask (default: the one over the data dir)")
    e.add_argument("--data-dir", default=argparse.SUPPRESS, help=data_dir_help)
    e.set_defaults(func=cmd_embed)
    d = sub.add_parser("demo", help="load the demo corpus (demo/entities.jsonl) into the running server")
    d.add_argument("--tenant", default="dev", help="without a server: into which tenant (default dev)")
    d.add_argument("--url", default=None, help="the server to load into (default: the one over the data dir)")
    d.add_argument("--data-dir", default=argparse.SUPPRESS, help=data_dir_help)
    d.set_defaults(func=cmd_demo)
