"""The console's load time to first results on loopback for a 10k-entity tenant: headless Chromium opens
`/#q=<query>` (the key already in the tab's sessionStorage) and we read the `quarry:first-results`
performance mark — from navigation start to the first result list drawn, which covers the page, its
scripts, GET /whoami and POST /search (a different query each time, so the search cache never answers).

    PYTHONPATH=. .venv/bin/python bench/console_load.py [--entities 10000] [--runs 20] [--fake-embedder]
    PYTHONPATH=. .venv/bin/python bench/console_load.py --smoke   # 30 entities, 2 loads, hashing vectors
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench._common import TOPICS, VERBS, HashingEmbedder, synthetic_entities, write_json
from handlers.lambda_functions import api
from handlers.local_server.devserver import make_server
from infra.config.settings import load_settings
from infra.wiring.root import Container, set_container
from tests.browser.driver import require_browser, start_browser

KEY = "qk_console_bench"
TENANT = "bench"


def build(data_dir: Path, n: int, fake: bool) -> Container:
    c = Container(load_settings(data_dir=data_dir))
    if fake:
        c.override(embedder=HashingEmbedder())
    items = synthetic_entities(n)
    started = time.perf_counter()
    for at in range(0, n, 500):
        report = c.indexing.bulk(TENANT, items[at : at + 500], c.clock.now())
        assert not report.errors, report.errors[:3]
    print(f"indexed {n} entities in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return c


def queries(runs: int) -> list[str]:
    words = sorted({w for ws in TOPICS.values() for w in ws})
    return [
        f"{VERBS[i % len(VERBS)]} {words[i % len(words)]} {words[(i * 7 + 3) % len(words)]}"
        for i in range(runs)
    ]


def measure(driver: Any, url: str, query: str) -> float:
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get("about:blank")
    driver.get(f"{url}/#q={urllib.parse.quote(query)}")
    mark = "return (performance.getEntriesByName('quarry:first-results')[0] || {}).startTime"
    WebDriverWait(driver, 30).until(lambda d: d.execute_script(mark))
    return float(driver.execute_script(mark))


def phases(driver: Any) -> dict[str, float]:
    """Where the last load's time went: the page, its scripts, /whoami and /search (ms from start)."""
    script = """
      const out = {page: performance.getEntriesByType('navigation')[0].responseEnd,
                   dom_ready: performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd};
      for (const r of performance.getEntriesByType('resource')) {
        const name = new URL(r.name).pathname;
        if (name === '/search' || name === '/whoami') { out[name + ' start'] = r.startTime; out[name + ' end'] = r.responseEnd; }
        else out.scripts_end = Math.max(out.scripts_end || 0, r.responseEnd);
      }
      return out;"""
    return {k: round(float(v), 1) for k, v in driver.execute_script(script).items()}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entities", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--fake-embedder", action="store_true", help="hashing vectors: no model needed")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--smoke", action="store_true", help="30 entities, 2 loads, hashing vectors")
    args = parser.parse_args(argv)
    if args.smoke:
        args.entities, args.runs, args.fake_embedder = 30, 2, True
    with tempfile.TemporaryDirectory() as tmp:
        container = build(Path(tmp) / "data", args.entities, args.fake_embedder)
        set_container(container)
        keys = {KEY: {"tenant": TENANT, "scopes": ["read"]}}
        httpd = make_server("127.0.0.1", 0, keys, api.lambda_handler, 1 << 20)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{httpd.server_address[1]}"
        driver = start_browser(require_browser())
        try:
            driver.get(url + "/")
            driver.execute_script("sessionStorage.setItem('quarry.key', arguments[0])", KEY)
            measure(driver, url, "warm up the model and the page")
            times = [measure(driver, url, q) for q in queries(args.runs)]
            last = phases(driver)
        finally:
            driver.quit()
            httpd.shutdown()
            httpd.server_close()
            set_container(None)
            container.close()  # before the directory goes: its keyword follower may still be running
    times.sort()
    result = {
        "entities": args.entities,
        "runs": len(times),
        "embedder": "fake" if args.fake_embedder else "local",
        "first_results_ms": {
            "median": round(statistics.median(times), 1),
            "p90": round(times[int(0.9 * (len(times) - 1))], 1),
            "max": round(times[-1], 1),
        },
        "last_load_phases_ms": last,
    }
    print(json.dumps(result, indent=2))
    if args.json:
        write_json(args.json, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
