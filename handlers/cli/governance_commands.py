"""`quarry` subcommands of governed retrieval: validate, load-corpus, retrieve, schema."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from core.errors import InvalidInputError

SCHEMA_DIR = Path(__file__).resolve().parents[2] / "schemas"  # committed copies of the published schemas


# Sub-command copies of the top-level --data-dir: SUPPRESS keeps the top-level value when absent here.
DATA_DIR_HELP = "local data directory (default QUARRY_DATA_DIR or ./.quarry)"


def _read_json(path: str) -> Any:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise InvalidInputError(f"cannot read {path}: {exc.strerror}", {"file": str(exc.strerror)}) from exc
    except ValueError as exc:
        raise InvalidInputError(
            f"{path} is not valid JSON: {exc}", {"file": f"is not valid JSON: {exc}"}
        ) from exc


def command_container(data_dir: str | None) -> Any:
    """The container a command works with: with --data-dir, one on that directory, installed for the
    process's handlers (the MCP server, the API a command calls in-process); else the process's own."""
    from infra.wiring.root import Container, container, set_container

    if not data_dir:
        return container()
    from infra.config.settings import load_settings

    c = Container(load_settings(data_dir=data_dir))
    set_container(c)
    return c


def cmd_validate(args: argparse.Namespace) -> int:
    """Print `{valid, errors}` for an overlay or bundle file; exit 0 when valid, 1 when not."""
    from core.governance.schema_validation import validate_document

    try:
        result = validate_document(args.kind, _read_json(args.file))
    except InvalidInputError as exc:
        result = {"valid": False, "errors": [{"path": p, "message": m} for p, m in exc.fields.items()]}
    print(json.dumps(result, indent=2))
    return 0 if result["valid"] else 1


def cmd_load_corpus(args: argparse.Namespace) -> int:
    """Load `{documents: [...]}` from a JSON file; print the report; exit 1 when any document failed."""
    from tqdm import tqdm

    from core.governance.corpus import corpus_documents, load_corpus

    documents = corpus_documents(_read_json(args.file))
    c = command_container(args.data_dir)
    with (
        tqdm(total=len(documents), unit="doc", disable=args.quiet, file=sys.stderr) as bar,
        c.gate.unit(args.tenant),
    ):
        report = load_corpus(c.indexing, c.registry, args.tenant, documents, c.clock.now(), bar.update)
    print(report.model_dump_json(indent=2))
    return 1 if report.errors else 0


def cmd_retrieve(args: argparse.Namespace) -> int:
    """Run governed retrieval from the shell and print the bundle (JSON) or a short summary."""
    from core.governance.requests import RetrieveRequest

    c = command_container(args.data_dir)
    given = {"overlay": _read_json(args.overlay)} if args.overlay else {}  # absent: the stored overlay
    request = RetrieveRequest.model_validate(
        {
            "role_id": args.role_id,
            "task_text": args.task,
            "context_summary": args.context,
            "lexical_only": args.lexical_only,
            **given,
        }
    )
    bundle = c.governed_retrieval.retrieve(args.tenant, request)
    if args.json:
        print(bundle.model_dump_json(indent=2))
        return 0
    states = ", ".join(s.value for s in bundle.summary.states)
    print(
        f"{bundle.summary.selected} selected · {bundle.summary.rejected} rejected · {bundle.query.mode} · {states}"
    )
    for chunk in bundle.selected:
        print(
            f"{chunk.rank:>3}. [{chunk.chunk_id}] {chunk.title[:60]} ({chunk.source}, {chunk.scores.final:.3f})"
        )
    for warning in bundle.warnings:
        print(f"  {warning.state.value}: {warning.message}")
    return 0


def cmd_schema(args: argparse.Namespace) -> int:
    """Print a published JSON Schema, or write every schema into a directory (`--write DIR`)."""
    from core.governance.schema_validation import json_schema, schema_names

    if args.write:
        out = Path(args.write)
        out.mkdir(parents=True, exist_ok=True)
        for name in schema_names():
            (out / f"{name}.schema.json").write_text(json.dumps(json_schema(name), indent=2) + "\n")
            print(out / f"{name}.schema.json")
        return 0
    print(json.dumps(json_schema(args.name), indent=2))
    return 0


def register(sub: Any) -> None:
    """Add the governance subcommands to the `quarry` parser's subparsers."""
    v = sub.add_parser("validate", help="validate an overlay or bundle JSON file: {valid, errors}")
    v.add_argument("kind", choices=["overlay", "bundle"])
    v.add_argument("file")
    v.set_defaults(func=cmd_validate)
    lc = sub.add_parser("load-corpus", help="load {documents: [...]} from a JSON file")
    lc.add_argument("file")
    lc.add_argument("--tenant", default="dev")
    lc.add_argument("--quiet", action="store_true")
    lc.add_argument("--data-dir", default=argparse.SUPPRESS, help=DATA_DIR_HELP)
    lc.set_defaults(func=cmd_load_corpus)
    r = sub.add_parser("retrieve", help="governed retrieval for a role")
    r.add_argument("role_id")
    r.add_argument("task")
    r.add_argument("--overlay", default=None, help="overlay JSON file (default: the stored overlay)")
    r.add_argument("--context", default=None, help="context summary")
    r.add_argument("--lexical-only", action="store_true")
    r.add_argument("--tenant", default="dev")
    r.add_argument("--json", action="store_true")
    r.add_argument("--data-dir", default=argparse.SUPPRESS, help=DATA_DIR_HELP)
    r.set_defaults(func=cmd_retrieve)
    s = sub.add_parser("schema", help="print a JSON Schema (role_overlay | retrieval_bundle)")
    s.add_argument("name", nargs="?", default="role_overlay", choices=["role_overlay", "retrieval_bundle"])
    s.add_argument(
        "--write", default=None, metavar="DIR", help=f"write every schema into DIR (e.g. {SCHEMA_DIR.name}/)"
    )
    s.set_defaults(func=cmd_schema)
