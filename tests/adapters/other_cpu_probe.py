"""Embeds groups of texts in a process of its own and prints the vectors as JSON, for tests that run it on
another CPU (`qemu-x86_64 -cpu Haswell`, or another OpenBLAS kernel set) and judge the vectors at home.

    python tests/adapters/other_cpu_probe.py RUNTIME CACHE_DIR < calls.json > vectors.json

stdin: a JSON list of calls, each a list of texts embedded by one `embed`; stdout: one list of vectors per
call. It imports nothing but the embedder (no pytest, no conftest): under QEMU every import costs seconds.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from infra.local.onnx.embedder import LocalEmbedder  # noqa: E402


def main() -> int:
    runtime, cache_dir = sys.argv[1], Path(sys.argv[2])
    calls: list[list[str]] = json.load(sys.stdin)
    embedder = LocalEmbedder(runtime=runtime, cache_dir=cache_dir)  # type: ignore[arg-type]
    out = [[vector.tolist() for vector in embedder.embed(texts)] for texts in calls]
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
