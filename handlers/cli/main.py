"""The `quarry` command: serve the API locally, ingest JSONL, JSON or CSV files, search from the shell.

One function and one parser registrar per subcommand; the evaluation commands are in handlers/cli/eval_commands.py,
the governance commands in handlers/cli/governance_commands.py and `quarry mcp` in handlers/cli/mcp_command.py.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from core.errors import QuarryError
from handlers.cli import (
    eval_commands,
    governance_commands,
    mcp_command,
    openapi_command,
    reindex_command,
    remote_commands,
)
from handlers.cli.governance_commands import DATA_DIR_HELP, command_container
from handlers.local_server.local_key import DEV_TENANT

BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
INGEST_BATCH = 64  # entities embedded per batch: big enough to batch the model, small for progress


def thread_budget(workers: int, cores: int, model_on_blas: bool = False) -> dict[str, str]:
    """The thread counts each server worker runs with, so that all of them together keep to the cores.

    Parallelism comes from the worker processes: BLAS threads beyond cores/workers only spin against each
    other (measured on 2 busy cores: a query embedding took 40 ms with 1 thread, 450 ms with 2), and two
    workers of two onnxruntime threads each put four busy threads on two cores. The model gets the worker's
    share of the cores; BLAS one thread, unless the model runs on it (`model_on_blas`: the NumPy runtime):
    NumPy's own work at search time is small matrix-vector products a second thread does not speed up,
    while an idle OpenBLAS thread busy-waits (one worker on 2 cores: 26 ms of CPU per hybrid search with
    two, 16 with one, the same wall time; docs/benchmarks.md#blas-threads). Set before NumPy is first
    imported."""
    per_worker = str(max(1, cores // workers))
    blas = per_worker if model_on_blas else "1"
    return {**dict.fromkeys(BLAS_THREAD_VARIABLES, blas), "QUARRY_EMBEDDER_THREADS": per_worker}


def model_on_blas(runtime: Any) -> bool:
    """Whether the local model runs on NumPy's BLAS: the runtime `runtime` (QUARRY_EMBEDDER_RUNTIME) resolves
    to, without importing either, is `numpy`."""
    from infra.local.onnx.runtimes import resolved_runtime

    return resolved_runtime(runtime) == "numpy"


def data_dir_of(data_dir: str | None) -> Path:
    """The data directory a command works on (`--data-dir`, else QUARRY_DATA_DIR's), without loading
    anything but the settings."""
    return Path(command_container(data_dir).settings.data_dir)


def cmd_serve(args: argparse.Namespace) -> int:
    """Start the local API: `--workers` processes over one socket and the SQLite WAL file."""
    import os

    os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    if args.log_level:  # the flag wins over POWERTOOLS_LOG_LEVEL; info shows each search's log line
        os.environ.update(POWERTOOLS_LOG_LEVEL=args.log_level.upper())  # set for the workers, never read here
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    from handlers.local_server.devserver_workers import default_workers, listen, serve

    workers = args.workers or default_workers()
    c = command_container(args.data_dir)  # its settings only, so far: nothing has imported NumPy yet
    on_blas = model_on_blas(c.settings.embedder_runtime)
    for name, value in thread_budget(workers, default_workers(), on_blas).items():  # an explicit setting wins
        os.environ.setdefault(name, value)
    from handlers.local_server.local_key import local_keys, print_key
    from infra.wiring.root import Container

    c.check()  # a wrong or missing setting stops the server here, naming the variable
    settings = c.settings
    init = Container(settings)  # create the schema once, before workers race to
    _ = init.index, init.state
    keys, local = local_keys(settings.api_keys, settings.data_dir)
    sock = listen(args.host, args.port)
    url = f"http://{args.host}:{sock.getsockname()[1]}"
    print(f"Quarry API on {url}  (data: {settings.data_dir.resolve()}, {workers} worker(s))", flush=True)
    print_key(keys, local, settings.data_dir, f"{url}/whoami")
    if settings.allowed_origins:
        print(f"Cross-origin calls allowed from: {', '.join(settings.allowed_origins)}", flush=True)
    remote_commands.announce(settings.data_dir, url)  # `quarry search` and `quarry embed` send requests here
    try:
        serve(sock, workers, _worker_starter(settings, keys, args.queue))
    finally:
        remote_commands.withdraw(settings.data_dir, url)
    return 0


def _worker_starter(settings: Any, keys: dict[str, Any], queue: int) -> Any:
    """What each worker runs after the fork: its own adapters, then a server on the shared socket."""

    def start(sock: Any) -> Any:
        from handlers.lambda_functions import api
        from handlers.local_server.devserver import make_server
        from handlers.local_server.local_key import key_hint
        from handlers.local_server.query_batching import SearchBatcher
        from infra.wiring.root import Container, set_container

        c = Container(settings)
        set_container(c)
        c.resume_jobs()  # write jobs a stopped or crashed server left behind
        host, port = sock.getsockname()[:2]
        server = make_server(
            host,
            port,
            keys,
            api.lambda_handler,
            settings.max_body_bytes,
            max_ndjson_bytes=settings.ndjson_limit,
            queue=queue,
            sock=sock,
            key_hint=key_hint(settings.api_keys, settings.data_dir),
            origins=settings.allowed_origins,
            access_log=settings.access_log,
            batcher=SearchBatcher(settings.query_batch) if settings.query_batch > 1 else None,
        )
        # What the worker holds from here on (modules, schemas, its adapters: ~60k objects) is never garbage:
        # out of the collector's sight, a full collection scans only what requests leave behind (measured:
        # 39 ms per full collection of a warm worker before, one every ~150 hybrid searches; under 1 ms
        # after; docs/benchmarks.md#frozen-heap).
        gc.freeze()
        return server

    return start


def _field_map(text: str) -> dict[str, str]:
    from core.indexing.field_maps import parse_field_map

    try:
        return parse_field_map(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def readable_error(err: dict[str, Any]) -> str:
    """A bulk item's error for a person: `field: problem; …` without the batch's internal `items.<n>.`."""
    prefix = f"items.{err['index']}"
    fields = {
        path.removeprefix(prefix).lstrip("."): message for path, message in (err.get("fields") or {}).items()
    }
    named = "; ".join(f"{path}: {message}" if path else message for path, message in fields.items())
    return named or str(err["error"])


def cmd_ingest(args: argparse.Namespace) -> int:
    """Index a file of entities (JSONL, a JSON array or CSV), fields mapped as asked; bad records are
    reported by position, never dropped silently. A missing file or an unknown type fails once (exit 2)."""
    from tqdm import tqdm

    from core.indexing.field_maps import item_mapper
    from infra.user_files.record_files import read_records

    path = Path(args.file)
    if not path.is_file():
        print(f"error: {path}: no such file", file=sys.stderr)
        return 2
    c = command_container(args.data_dir)
    c.registry.get(args.type, path="--type")  # unknown: one error (main prints it, exit 2), not one a line
    total = sum(1 for _ in read_records(path))
    indexed = stale = 0
    bad: list[str] = []
    batch: list[tuple[str, dict[str, Any]]] = []
    to_item = item_mapper(args.type, args.id_field, args.map)

    def flush() -> None:
        nonlocal indexed, stale
        items = [to_item(obj) for _, obj in batch]
        with c.gate.unit(args.tenant):  # an erased tenant is refused, as by the API
            report = c.indexing.bulk(args.tenant, items, c.clock.now())
        indexed += report.indexed
        stale += report.skipped_stale
        for err in report.errors:
            bad.append(f"{batch[err['index']][0]}: {readable_error(err)}")
        batch.clear()

    with tqdm(total=total, unit="entity", disable=args.quiet) as bar:
        for where, obj in read_records(path):
            if isinstance(obj, str):
                bad.append(f"{where}: {obj}")
            else:
                batch.append((where, obj))
            if len(batch) >= INGEST_BATCH:
                flush()
            bar.update(1)
        if batch:
            flush()
    for message in bad:
        print(message, file=sys.stderr)
    summary = {"file": str(path), "lines": total, "indexed": indexed}
    print(json.dumps(summary | {"skipped_stale": stale, "errors": len(bad)}))
    return 1 if bad else 0


def cmd_search(args: argparse.Namespace) -> int:
    """Search and print the results: through the running server over the data directory when there is
    one (its model is loaded), else in this process."""
    body = {"query": args.query, "limit": args.limit, "strategy": args.strategy}
    if args.entities:
        body["entities"] = args.entities.split(",")
    server, why = (None, f"tenant {args.tenant!r} is not the local key's")
    if args.tenant == DEV_TENANT:
        server, why = remote_commands.running_server(data_dir_of(args.data_dir), args.url)
    if server is not None:
        response = remote_commands.answer_or_raise(*server.post("/search", body))
    else:
        from core.search.search_api import SearchRequest

        remote_commands.say_in_process(why)
        c = command_container(args.data_dir)
        found = c.search.search(args.tenant, SearchRequest.model_validate(body))
        response = found.model_dump(mode="json", exclude_none=True)
    if args.json:
        print(json.dumps(response, indent=2, ensure_ascii=False))
        return 0
    took, strategy = response["took_ms"], response["query_info"]["strategy"]
    print(f"{response['total']} found · strategy {strategy} · {took:.1f} ms")
    for i, r in enumerate(response["results"], 1):
        print(f"{i:>3}. [{r['entity_type']}:{r['entity_id']}] {r['title'][:80]}  ({r['score']:.3f})")
    return 0


def parser() -> argparse.ArgumentParser:
    """The argument parser (subcommands register here)."""
    p = argparse.ArgumentParser(prog="quarry", description="Hybrid search and RAG context assembly")
    p.add_argument("--data-dir", default=None, help=DATA_DIR_HELP)
    sub = p.add_subparsers(dest="command", required=True)
    _register_serve(sub)
    _register_ingest(sub)
    _register_search(sub)
    eval_commands.register(sub)  # eval, eval-cycle
    governance_commands.register(sub)  # validate, load-corpus, retrieve, schema
    mcp_command.register(sub)  # mcp
    reindex_command.register(sub)  # reindex
    openapi_command.register(sub)  # openapi
    remote_commands.register(sub, DATA_DIR_HELP)  # embed, demo
    return p


def _register_serve(sub: Any) -> None:
    """`quarry serve`: the local API."""
    s = sub.add_parser("serve", help="run the local API")
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=int, default=3000)
    s.add_argument("--data-dir", default=argparse.SUPPRESS, help=DATA_DIR_HELP)
    s.add_argument(
        "--workers", type=int, default=0, help="worker processes (default: one per available core)"
    )
    s.add_argument(
        "--queue",
        type=int,
        default=32,
        help="requests a worker holds waiting beyond the one it runs; more get 503 + Retry-After",
    )
    s.add_argument(
        "--log-level",
        type=str.lower,
        choices=["debug", "info", "warning", "error"],
        default=None,
        help="what the server logs (default: POWERTOOLS_LOG_LEVEL, else warning); info adds one line per "
        "search (strategy, cache, leg counts, alpha)",
    )
    s.set_defaults(func=cmd_serve)


def _register_ingest(sub: Any) -> None:
    """`quarry ingest FILE`: index a file of entities."""
    i = sub.add_parser("ingest", help="index a file of entities: JSONL, a JSON array, or CSV with a header")
    i.add_argument("file")
    i.add_argument("--type", required=True, help="entity type of every record")
    i.add_argument("--id-field", default="id", help="the record field holding the entity id (BEIR: _id)")
    i.add_argument(
        "--map",
        type=_field_map,
        default=None,
        metavar="FIELD=SOURCE,…",
        help="entity fields from record fields (title=title,text=abstract); only these are taken",
    )
    i.add_argument("--tenant", default="dev")
    i.add_argument("--quiet", action="store_true")
    i.add_argument("--data-dir", default=argparse.SUPPRESS, help=DATA_DIR_HELP)
    i.set_defaults(func=cmd_ingest)


def _register_search(sub: Any) -> None:
    """`quarry search QUERY`: search from the shell."""
    q = sub.add_parser("search", help="search from the shell")
    q.add_argument("query")
    q.add_argument("--tenant", default="dev")
    q.add_argument("--limit", type=int, default=10)
    q.add_argument("--strategy", default="auto", choices=["auto", "keyword", "semantic", "hybrid"])
    q.add_argument("--entities", default=None, help="comma-separated entity types")
    q.add_argument("--json", action="store_true")
    q.add_argument("--url", default=None, help="the server to ask (default: the one over the data dir)")
    q.add_argument("--data-dir", default=argparse.SUPPRESS, help=DATA_DIR_HELP)
    q.set_defaults(func=cmd_search)


# Third-party progress bars and chatter that would interleave with our own tqdm bar on stderr.
QUIET_THIRD_PARTY = {
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "TRANSFORMERS_VERBOSITY": "error",
    "TOKENIZERS_PARALLELISM": "false",
}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `quarry` console script."""
    import os

    for name, value in QUIET_THIRD_PARTY.items():
        os.environ.setdefault(name, value)
    args = parser().parse_args(argv)
    try:
        return int(args.func(args))
    except QuarryError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        named = getattr(exc, "fields", None) or getattr(exc, "variables", None) or {}
        for path, message in named.items():
            print(f"  {path}: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
