"""Walk one request from the Lambda handler to the index and count how it moves through the code: which
modules ("rooms") of core/, infra/ and handlers/ it enters, how often it comes back into a room it already
left ("returns"), and which rooms it enters most ("hubs"). A structural measure, not a timing: the counts
depend on the code only, not on the machine.

    .venv/bin/python scripts/request_walk.py [--json PATH]

Each request (a hybrid search, a PUT of one task) runs once untraced (the container's parts are built on first
use) and then once under `sys.setprofile`, on the embedded backend in a fresh data directory with the
configured local model. A room is a module (`--by module`) or a package (`--by package`). A *stop* is a call into a project function from another module (a hop between
rooms); a room's *entries* are the stops into it; *returns* are entries beyond a room's first.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
ROOMS = ("core", "infra", "handlers")
EVENTS = ROOT / "events"


def room_of(filename: str, by: str = "module") -> str | None:
    """'core/search/fusion.py' (by module) or 'core/search' (by package) for a file of the project's
    layers, else None."""
    try:
        relative = Path(filename).resolve().relative_to(ROOT)
    except ValueError:
        return None
    if relative.parts[0] not in ROOMS:
        return None
    return str(relative if by == "module" else relative.parent)


def walk(handler: Any, event: dict[str, Any], context: Any, by: str) -> dict[str, Any]:
    """The stops one invocation makes between rooms, in order, and the counts above."""
    stack: list[str | None] = []
    stops: list[str] = []

    def profile(frame: FrameType, what: str, arg: Any) -> None:
        if what == "call":
            room = room_of(frame.f_code.co_filename, by)
            caller = next((r for r in reversed(stack) if r is not None), None)
            if room is not None and caller is not None and room != caller:
                stops.append(room)
            stack.append(room)
        elif what == "return" and stack:
            stack.pop()

    sys.setprofile(profile)
    try:
        answer = handler(event, context)
    finally:
        sys.setprofile(None)
    status = answer["statusCode"]
    entries = Counter(stops)
    hubs = {room: n for room, n in entries.most_common() if n > 4}
    return {
        "status": status,
        "stops": len(stops),
        "rooms": len(entries),
        "returns": sum(n - 1 for n in entries.values()),
        "most_entered": entries.most_common(5),
        "rooms_entered_more_than_4_times": hubs,
        "path": stops,
    }


def event(name: str, body: Any, path: str | None = None) -> dict[str, Any]:
    sample: dict[str, Any] = json.loads((EVENTS / f"{name}.json").read_text())
    if path:
        sample["rawPath"] = sample["requestContext"]["http"]["path"] = path
    sample["body"] = json.dumps(body)
    return sample


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--paths", action="store_true", help="print each request's stops in order")
    parser.add_argument("--by", choices=("module", "package"), default="module", help="what a room is")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as data:
        os.environ["QUARRY_DATA_DIR"] = data
        os.environ.setdefault("QUARRY_CACHE_TTL_SECONDS", "0")
        sys.path.insert(0, str(ROOT))
        from handlers.lambda_functions.api import lambda_handler
        from handlers.local_server.devserver import FakeLambdaContext

        context = FakeLambdaContext(aws_request_id="walk")
        put = {"title": "Rotate the signing keys", "description": "every quarter"}
        requests = {
            "PUT /entities/task/{id}": event("put_entity", put, "/entities/task/walk"),
            "POST /search (hybrid)": event("search", {"query": "signing keys", "strategy": "hybrid"}),
        }
        report = {}
        for name, request in requests.items():
            untraced = lambda_handler(json.loads(json.dumps(request)), context)
            assert untraced["statusCode"] in (200, 201), untraced
            report[name] = walk(lambda_handler, request, context, args.by)
    for name, figures in report.items():
        print(f"{name}: {figures['stops']} stops in {figures['rooms']} rooms, {figures['returns']} returns")
        print(f"  most entered: {figures['most_entered']}")
        if args.paths:
            print("  " + " → ".join(figures["path"]))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
