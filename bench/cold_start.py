"""Cold start: the import time of each Lambda handler with the AWS backend settings, beyond the runtime.

Each run is a fresh interpreter (as Lambda's init is): `python -c "import handlers.lambda_functions.api"` timed from the
inside (perf_counter around the import), next to a bare `python -c pass` start for scale. Prints min /
median / max over --runs per handler. Quote the median; on a machine shared with other work the spread
says how noisy it was. The goal (docs/architecture.md, Performance goals): `import handlers.lambda_functions.api` ≤ 300 ms.

    .venv/bin/python bench/cold_start.py [--runs 9] [--json FILE]                 # this source tree
    python3.12 deploy/lambda_artifact.py /tmp/art --platform manylinux2014_x86_64  # the artifact, importable here
    .venv/bin/python bench/cold_start.py --artifact /tmp/art --python python3.12   # ... measured as Lambda runs it
    .venv/bin/python bench/cold_start.py --smoke   # one run of handlers.lambda_functions.api: that it runs

Bytecode counts: Lambda's code directory is read-only, so modules without shipped .pyc files are compiled
at every cold start. The source-tree mode lets one warm-up run write bytecode first; the artifact mode
forbids writing (PYTHONDONTWRITEBYTECODE), as Lambda does, and uses what the build shipped.
Tracing is off here (as outside Lambda); in Lambda with Tracing: Active the X-Ray SDK adds its own import
(`--tracing` measures that case by pretending to be in Lambda).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._common import write_json  # noqa: E402
from tests.infra.test_cold_start import AWS_SETTINGS  # noqa: E402  the same settings the budget test uses

HANDLERS = (
    "handlers.lambda_functions.api",
    "handlers.lambda_functions.indexing_consumer",
    "handlers.lambda_functions.nightly",
    "handlers.lambda_functions.pretoken",
)
PROBE = "import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"


def environment(tracing: bool, artifact: Path | None) -> dict[str, str]:
    skip = ("QUARRY_", "POWERTOOLS_", "AWS_", "PYTHONDONTWRITEBYTECODE", "PYTHONPATH")
    clean = {k: v for k, v in os.environ.items() if not k.startswith(skip)}
    env = {**clean, **AWS_SETTINGS, "PYTHONPATH": str(artifact or ROOT)}
    if artifact is not None:
        env["PYTHONDONTWRITEBYTECODE"] = "1"  # read-only, as /var/task is
    if tracing:
        env.update(LAMBDA_TASK_ROOT=str(ROOT), AWS_LAMBDA_FUNCTION_NAME="quarry-bench")
    return env


def import_ms(python: str, module: str, env: dict[str, str]) -> float:
    out = subprocess.run([python, "-s", "-c", PROBE.format(module=module)], env=env, cwd="/",
                         capture_output=True, text=True, check=True)  # fmt: skip
    return float(out.stdout.strip()) * 1000


def runtime_ms(python: str, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run([python, "-s", "-c", "pass"], env=env, cwd="/", check=True)
    return (time.perf_counter() - start) * 1000


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--tracing", action="store_true", help="as in Lambda with tracing on")
    parser.add_argument("--artifact", type=Path, help="a built artifact folder (deploy/lambda_artifact.py)")
    parser.add_argument("--python", default=sys.executable, help="the interpreter (3.12 for an artifact)")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--smoke", action="store_true", help="one run, handlers.lambda_functions.api only")
    args = parser.parse_args(argv)
    handlers = HANDLERS[:1] if args.smoke else HANDLERS
    args.runs = 1 if args.smoke else args.runs
    env = environment(args.tracing, args.artifact)
    py = args.python
    for module in handlers:
        import_ms(py, module, env)  # warm the OS file cache (and, for the source tree, write bytecode)
    results: dict[str, dict[str, float]] = {}
    rows = {"python -c pass (process)": [runtime_ms(py, env) for _ in range(args.runs)]}
    rows.update({f"import {m}": [import_ms(py, m, env) for _ in range(args.runs)] for m in handlers})
    print(f"{'':34} {'min':>8} {'median':>8} {'max':>8}   (ms, {args.runs} runs, tracing {args.tracing})")
    for name, times in rows.items():
        results[name] = {"min": min(times), "median": statistics.median(times), "max": max(times)}
        print(f"{name:34} {min(times):8.0f} {statistics.median(times):8.0f} {max(times):8.0f}")
    if args.json:
        write_json(args.json, results)


if __name__ == "__main__":
    main()
