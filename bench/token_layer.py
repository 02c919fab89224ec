"""What TokenEncodings=openai costs the API function as Lambda runs it: the layer's size, and cold starts
with and without it, alternated (deploy/lambda_local.py: the artifact in the Lambda Runtime Interface
Emulator, DynamoDB on moto_server, the OpenSearch node).

Both stacks run Embedder=bedrock (the template's rule for the layer); no Bedrock is reachable here, so the
tenant brings its own vectors and assemblies search its keyword leg. Per fresh emulator of each stack:
`first answer` (start to the answer of a first context assembly counted in the estimate: the runtime's
start, Quarry's import and the request; bpe-openai is not imported), then the first assembly counted in
cl100k_base (the layer's import and the encoding's tables), then the same again warm.

    scripts/with-opensearch.sh .venv/bin/python bench/token_layer.py [--starts 5] [--json PATH]
    ... --smoke    one start of each (tests/lambda_runtime/test_cold_start_bench.py)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import ExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import percentile, write_json  # noqa: E402
from deploy.lambda_builds import build_layer  # noqa: E402
from deploy.lambda_emulator import EmulatedFunction  # noqa: E402
from deploy.lambda_local import deployment  # noqa: E402

EVENTS = Path(__file__).resolve().parent.parent / "events"
TENANT = "tokens-bench"
TEXT = "Rotate the signing keys every quarter; the vault's audit log records each rotation and who did it."
STACKS = {"estimate": "without the layer", "openai": "with the layer"}


def event(method: str, path: str, body: Any) -> dict[str, Any]:
    """An HTTP API (payload 2.0) event with the authorizer's context, as bench/lambda_cold_start.py sends."""
    sample = json.loads((EVENTS / "search.json").read_text())
    sample["rawPath"] = sample["requestContext"]["http"]["path"] = path
    sample["requestContext"]["http"]["method"] = method
    sample["requestContext"]["authorizer"] = {"lambda": {"tenant": TENANT, "scopes": ["read", "write"]}}
    sample["body"] = json.dumps(body)
    return sample


def answer_ms(function: EmulatedFunction, body: dict[str, Any]) -> float:
    began = time.perf_counter()
    answer = function.invoke(event("POST", "/context/assemble", body))
    payload = answer.payload
    if answer.function_error or payload["statusCode"] != 200:
        raise RuntimeError(f"assembly failed: {answer.body[:500]!r}")
    return (time.perf_counter() - began) * 1000


def layer_size(stack: Any) -> dict[str, float]:
    folder = build_layer(stack, "TokenEncodingsLayer")
    unzipped = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    with tempfile.TemporaryDirectory() as tmp:
        archive = Path(tmp) / "layer.zip"
        subprocess.run(["zip", "-qr", str(archive), "."], cwd=folder, check=True)
        zipped = archive.stat().st_size
    return {"unzipped_mb": round(unzipped / 1e6, 1), "zipped_mb": round(zipped / 1e6, 1)}


def run(starts: int, url: str) -> dict[str, Any]:
    ask = {"query": "signing keys", "caller": "bench", "log": False, "token_budget": 400}
    times: dict[str, dict[str, list[float]]] = {
        k: {"cold": [], "first_cl100k": [], "warm_cl100k": []} for k in STACKS
    }
    report: dict[str, Any] = {"load_average": [round(x, 2) for x in os.getloadavg()], "starts": starts}
    with ExitStack() as stack:
        deployments = {}
        for kind in STACKS:
            name = f"quarry-tb{uuid.uuid4().hex[:6]}"
            env = {
                "QUARRY_OPENSEARCH_INDEX_PREFIX": name,
                "QUARRY_BYO_VECTOR_TENANTS": json.dumps({TENANT: 8}),
            }
            overrides = {"Embedder": "bedrock", "TokenEncodings": kind}
            deployments[kind] = stack.enter_context(
                deployment("local_invoke", url, overrides=overrides, stack_name=name, environment=env)
            )
            seeded = deployments[kind].function("ApiFunction")
            seeded.invoke(event("PUT", "/entities/memory/keys", {"content": TEXT}))
            time.sleep(2)  # the node's refresh
            seeded.stop()
        report["layer"] = layer_size(deployments["openai"].stack)
        for _ in range(starts):
            for kind, local in deployments.items():
                function = local.function("ApiFunction")
                began = time.perf_counter()
                function.start()
                answer_ms(function, ask)
                times[kind]["cold"].append((time.perf_counter() - began) * 1000)
                if kind == "openai":
                    times[kind]["first_cl100k"].append(
                        answer_ms(function, {**ask, "token_encoding": "cl100k_base"})
                    )
                    times[kind]["warm_cl100k"].append(
                        answer_ms(function, {**ask, "token_encoding": "cl100k_base"})
                    )
                function.stop()
    for kind, label in STACKS.items():
        report[label] = {k: round(percentile(v, 50), 1) for k, v in times[kind].items() if v}
    report["cold_with_over_without"] = round(
        report[STACKS["openai"]]["cold"] / report[STACKS["estimate"]]["cold"], 2
    )
    report["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--starts", type=int, default=5, help="fresh emulators per stack (alternated)")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--smoke", action="store_true", help="one start of each stack")
    args = parser.parse_args()
    if args.smoke:
        args.starts = 1
    url = os.environ.get("QUARRY_OPENSEARCH_URL", "")
    if not url:
        sys.exit("QUARRY_OPENSEARCH_URL is not set: run through scripts/with-opensearch.sh")
    report = run(args.starts, url)
    if args.json:
        write_json(args.json, report)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
